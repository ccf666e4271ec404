"""Each table has one owner package: the only code that writes it. Others call the owner.

The map below is the rule (ARCHITECTURE: "each table has one owner package; SQL lives in
core"). The test reads every string literal of ``src/memlens`` (implicit concatenation is
one literal to :mod:`ast`; an f-string's ``{NAME}`` is resolved when ``NAME`` is a string
constant of the module, and a ``{…vec…}`` placeholder is a ``vec_nodes_<space>`` table) and
finds each ``INSERT INTO`` / ``REPLACE INTO`` / ``UPDATE`` / ``DELETE FROM``; the writing
module must sit in the table's owner package.

``memory_documents`` is shared by column: the store owns the row (content, identity,
revisions), the projection owns its ``projection_*`` and ``vector_*`` status columns and
``active_revision_id``. The store may set the projection status too, in the transaction
that records a new revision (``pending``) or a tombstone (``ready``): that is a store write
of a whole document change, not a projection step.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

STORE = "memlens.core.store"
PROJECTION = "memlens.core.projection"

TABLE_OWNERS = {
    # documents, immutable revisions and their chunks: the durable source records
    "memory_documents": STORE,
    "memory_revisions": STORE,
    "memory_chunks": STORE,
    # the search projection: nodes, their FTS rows, vectors, the junction, the spaces,
    # the embedding cache and the vector generation counter in meta
    "knowledge_nodes": PROJECTION,
    "knowledge_nodes_fts": PROJECTION,
    "knowledge_node_memory_chunks": PROJECTION,
    "vec_nodes_*": PROJECTION,
    "vector_spaces": PROJECTION,
    "embedding_cache": PROJECTION,
    "meta": PROJECTION,
    # remembered rechunk choices
    "chunker_choices": "memlens.core.chunking",
    # recent queries, and the search's own per-connection TEMP FTS tables
    "search_history": "memlens.core.search",
    # the registry of running watchers (doctor's watcher_heartbeat), issue 42
    "memlens_processes": STORE,
    "temp.*": "memlens.core.search",
}

# memory_documents columns the projection writes (everything else there is the store's)
PROJECTION_DOCUMENT_COLUMNS = re.compile(r"^(projection_\w+|vector_\w+|active_revision_id)$")

# Modules that may write any table, and why.
ANY_TABLE = {
    # the schema and its migrations create and rewrite every table, once, at open
    "memlens.core.store.schema",
}
# (module, table): writes that change nothing, and why they are allowed where they are.
NO_OP_WRITES = {
    # FTS5 'integrity-check' command row inside a savepoint that is rolled back: a check
    ("memlens.core.doctor", "knowledge_nodes_fts"),
    # a DELETE of rowid -1 in a transaction that is rolled back: makes FTS5 drop cached
    # per-connection totals after SQLite rolled a transaction back on its own
    ("memlens.core.store.rows", "knowledge_nodes_fts"),
}

WRITE = re.compile(r"\b(INSERT(?:\s+OR\s+[A-Z]+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+[A-Z]+)?"
                   r"|DELETE\s+FROM)\s+([\w.]+|\{[^}]*\})")


def _module(py: Path) -> str:
    parts = list(py.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _constants(tree: ast.Module) -> dict[str, str]:
    """Name -> its value for ``NAME = "text"`` at module level, and ``{expr}`` for a
    name assigned an expression anywhere (``vt = vec_table_name(space)``)."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            v = node.value
            text = v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) \
                else "{" + ast.unparse(v) + "}"
            out.setdefault(node.targets[0].id, text)
    return out


def _texts(tree: ast.Module) -> list[str]:
    """Every string literal, f-strings with ``{expr}`` placeholders kept as text."""
    consts = _constants(tree)
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue):
                    src = ast.unparse(v.value)
                    parts.append(consts.get(src, "{" + src + "}"))  # unknown: kept as is
            out.append("".join(parts))
    return out


def _table(raw: str) -> str:
    if raw.startswith("{"):
        return "vec_nodes_*" if "vec" in raw else raw
    if raw.startswith("temp."):
        return "temp.*"
    return raw.removeprefix("main.")


def _set_columns(sql: str, start: int) -> list[str]:
    """The columns an ``UPDATE … SET`` assigns (split at top-level commas)."""
    m = re.compile(r"\s+SET\s+(.*?)(?:\s+WHERE\b|$)", re.S).match(sql, start)
    if m is None:
        return []
    cols, depth, cur = [], 0, ""
    for ch in m.group(1) + ",":
        if ch == "," and depth == 0:
            cols.append(cur.split("=")[0].strip())
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    return cols


def writes() -> list[tuple[str, str, list[str]]]:
    """(module, table, columns set) for every write statement in src/memlens."""
    out = []
    for py in sorted((SRC / "memlens").rglob("*.py")):
        tree = ast.parse(py.read_text(encoding="utf-8"))
        for text in _texts(tree):
            for m in WRITE.finditer(text):
                if m.group(1).startswith("UPDATE") and m.group(2) in ("ON", "SET"):
                    continue  # a trigger's "AFTER UPDATE ON t"; an upsert's "DO UPDATE SET"
                cols = _set_columns(text, m.end()) if m.group(1).startswith("UPDATE") else []
                out.append((_module(py), _table(m.group(2)), cols))
    return out


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_each_table_is_written_by_its_owner_only() -> None:
    found = writes()
    assert any(t == "vector_spaces" for _, t, _ in found)  # the scan sees writes at all
    bad = []
    for mod, table, cols in found:
        if mod in ANY_TABLE or (mod, table) in NO_OP_WRITES:
            continue
        owner = TABLE_OWNERS.get(table)
        if owner is None:
            bad.append(f"{mod}: writes {table}, which has no owner in TABLE_OWNERS")
        elif table == "memory_documents" and _in(mod, PROJECTION):
            alien = [c for c in cols if not PROJECTION_DOCUMENT_COLUMNS.match(c)] or \
                ([] if cols else ["(not an UPDATE)"])
            if alien:
                bad.append(f"{mod}: sets memory_documents {alien}, the store's columns")
        elif not _in(mod, owner):
            bad.append(f"{mod}: writes {table}, owned by {owner}")
    assert bad == [], "\n".join(bad)


def test_the_scan_reads_columns_and_placeholders() -> None:
    """The scanner itself: SET columns split at top-level commas; placeholders resolved."""
    sql = ("UPDATE memory_documents SET vector_done=?, vector_total=CASE WHEN ? THEN ? ELSE"
           " MAX(vector_total, ?) END, vector_error=NULL WHERE id=?")
    m = WRITE.search(sql)
    assert m is not None and m.group(2) == "memory_documents"
    assert _set_columns(sql, m.end()) == ["vector_done", "vector_total", "vector_error"]
    tree = ast.parse('T = "temp.x"\nq = f"DELETE FROM {T}"\nvt = vec_table_name(s)\n'
                     'v = f"INSERT INTO {vt}"\n'
                     'u = "INSERT INTO t(a) VALUES (1) ON CONFLICT DO UPDATE SET a=2"\n')
    texts = _texts(tree)
    assert "DELETE FROM temp.x" in texts
    tables = [_table(m.group(2)) for t in texts for m in WRITE.finditer(t)]
    assert tables == ["temp.*", "vec_nodes_*", "t", "SET"]  # writes() skips the upsert's SET
