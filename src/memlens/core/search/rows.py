"""The SQL of lexical search on plain rows: the bm25 statement, the node reads, FTS5
snippets and the project look-up, with no import beyond ``os`` and ``apsw``.

:mod:`memlens.core.search.engine` and :mod:`memlens.core.search.hits` build their typed hits
from these reads; :mod:`memlens.core.search.quick` (the one-shot ``memlens search --mode
lexical``) uses them as they are, so both paths run the same statements. The tables
read here are owned by :mod:`memlens.core.projection.swap` (``knowledge_nodes*``) and
:mod:`memlens.core.store.records` (``memory_chunks``, ``memory_documents``).
"""

from __future__ import annotations

import os

import apsw

from memlens.core.store.rows import DAMAGE, FTS_TOKENIZER, rows

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any, TypeVar

    T = TypeVar("T")

HL_START = "\x02"
HL_END = "\x03"
BM25_WEIGHTS = "2.0, 1.0, 0.5"  # bm25 column weights: heading, text, logical path

HIT_KEYS = ("repository", "path", "heading_path", "ordinal", "start_char", "end_char",
            "score", "snippet", "highlights", "ranks", "document_id", "node_id", "chunk_id",
            "doc_type", "lexical_match", "match")
"""The keys of a hit's JSON, in order (the fields of
:class:`memlens.core.search.hits.SearchHit`; ``tests/test_quick.py`` checks they agree)."""


def valid_text(text: str) -> str:
    """``text`` with lone surrogates (undecodable argv bytes) replaced by U+FFFD, so it can
    be searched, stored and printed as UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "replace")


def claude_slug(path: str | os.PathLike[str]) -> str:
    """The folder name Claude Code gives a project under ``~/.claude/projects``.

    Claude Code keeps ASCII letters and digits and turns every other character
    into one ``-`` (runs are not collapsed): ``/home/dev/my_app`` gives
    ``-home-dev-my-app``. Characters outside the Basic Multilingual Plane count
    twice, as in JavaScript, where the rule comes from.
    """
    out = []
    for ch in str(path):
        if ch.isascii() and ch.isalnum():
            out.append(ch)
        else:
            out.append("-" if ord(ch) <= 0xFFFF else "--")
    return "".join(out)


def _ancestors(start: str) -> Iterator[str]:
    folder = start
    while True:
        yield folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def project_repository(conn: apsw.Connection, start: str) -> str | None:
    """The first Claude slug of ``start`` (a resolved folder) or one of its ancestors that
    names a repository with a live document, or None."""
    # One indexed look-up per ancestor (idx_documents_hash leads with repository): a
    # DISTINCT over every document row cost ~40 ms per search at 40k documents.
    for folder in _ancestors(start):
        slug = claude_slug(folder)
        if conn.execute("SELECT 1 FROM memory_documents WHERE repository=? AND"
                        " tombstoned_at IS NULL LIMIT 1", (slug,)).fetchone() is not None:
            return slug
    return None


def filters(repository: str | None, doc_type: str | None, alias: str = "n",
            ) -> tuple[str, list[Any]]:
    """`` AND repository=? AND doc_type=?`` for the filters given (columns of ``alias``,
    or bare with ``alias=""``), and their parameters."""
    col = f"{alias}." if alias else ""
    sql = ""
    params: list[Any] = []
    if repository:
        sql += f" AND {col}repository=?"
        params.append(repository)
    if doc_type:
        sql += f" AND {col}doc_type=?"
        params.append(doc_type)
    return sql, params


def lexical_top(conn: apsw.Connection, fts: str, k: int, repository: str | None = None,
                doc_type: str | None = None) -> list[tuple[int, float]]:
    """``(node_id, bm25)`` of the best ``k`` FTS5 matches of the FTS query ``fts`` (bm25
    is "lower is better"; ties by node id). Raises ``apsw.SQLError`` when ``fts`` does
    not parse."""
    fsql, fparams = filters(repository, doc_type)
    if fsql:
        sql = (f"SELECT n.id AS id, bm25(knowledge_nodes_fts, {BM25_WEIGHTS}) AS score"
               " FROM knowledge_nodes_fts JOIN knowledge_nodes n ON n.id=knowledge_nodes_fts.rowid"
               f" WHERE knowledge_nodes_fts MATCH ?{fsql} ORDER BY score, id LIMIT ?")
    else:
        sql = (f"SELECT rowid AS id, bm25(knowledge_nodes_fts, {BM25_WEIGHTS}) AS score"
               " FROM knowledge_nodes_fts WHERE knowledge_nodes_fts MATCH ?"
               " ORDER BY score, id LIMIT ?")
    # through ``rows`` (one place to observe the first read; see test_concurrency)
    return [(int(r["id"]), float(r["score"])) for r in rows(conn, sql, [fts, *fparams, int(k)])]


NODE_COLS = (
    "n.id AS node_id, n.document_id, n.ordinal, n.repository, n.logical_path, n.heading,"
    " n.text, n.doc_type, c.id AS chunk_id, c.start_char, c.end_char, c.heading_path"
)
NODE_JOIN = (
    " JOIN knowledge_node_memory_chunks j ON j.node_id=n.id"
    " JOIN memory_chunks c ON c.id=j.chunk_id"
)


def node_rows(conn: apsw.Connection, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Node, chunk and location columns of these nodes, by node id (one query)."""
    if not ids:
        return {}
    uniq = list(dict.fromkeys(ids))
    ph = ",".join("?" * len(uniq))
    return {int(r["node_id"]): r for r in rows(
        conn, f"SELECT {NODE_COLS} FROM knowledge_nodes n{NODE_JOIN} WHERE n.id IN ({ph})", uniq)}


def light(conn: apsw.Connection, ids: Sequence[int]) -> dict[int, tuple[int, str]]:
    """``node_id -> (document_id, repository)`` of these nodes (same join as the full
    read, so a node missing here would be missing there too)."""
    if not ids:
        return {}
    uniq = list(dict.fromkeys(ids))
    ph = ",".join("?" * len(uniq))
    return {int(nid): (int(doc), str(repo)) for nid, doc, repo in conn.execute(
        f"SELECT n.id, n.document_id, n.repository FROM knowledge_nodes n{NODE_JOIN}"
        f" WHERE n.id IN ({ph})", uniq)}


def lead_snippet(text: str, n: int = 200) -> str:
    """The first ``n`` characters of a node's body (after its heading line), one line."""
    body = text.split("\n\n", 1)[-1] if "\n\n" in text else text
    s = " ".join(body.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def split_snippet(raw: str) -> tuple[str, list[tuple[int, int]]]:
    """An FTS5 snippet marked with :data:`HL_START` / :data:`HL_END` as plain text and
    the ``(start, end)`` spans of its highlights."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    pos = 0
    start = -1
    for ch in raw:
        if ch == HL_START:
            start = pos
        elif ch == HL_END:
            if start >= 0:
                spans.append((start, pos))
            start = -1
        else:
            out.append(ch)
            pos += 1
    return "".join(out), spans


def cap_per_document(items: Iterable[T], limit: int, document: Callable[[T], int]) -> list[T]:
    """Keep at most ``limit`` items of one document (``document(item)``), preserving
    order; ``limit`` <= 0 keeps them all."""
    if limit <= 0:
        return list(items)
    seen: dict[int, int] = {}
    out = []
    for item in items:
        d = document(item)
        n = seen.get(d, 0)
        if n < limit:
            out.append(item)
            seen[d] = n + 1
    return out


def hit_snippets(conn: apsw.Connection, fts: str, ids: list[int],
                 ) -> dict[int, tuple[str, list[tuple[int, int]]]]:
    """Per node of ``ids``, its FTS5 snippet as plain text and highlight spans; a node
    whose snippet is empty (or all blank) is left out, so its lead snippet stays."""
    out: dict[int, tuple[str, list[tuple[int, int]]]] = {}
    for nid, raw in snippets(conn, fts, ids).items():
        if raw:
            snip, spans = split_snippet(raw)
            if snip.strip():
                out[nid] = (snip, spans)
    return out


SNIP_TABLE = "temp.memlens_snippets"


def snippet_sql(table: str) -> str:
    """The ``snippet()`` call of a hit (text column, 24 tokens, highlight marks)."""
    return f"snippet({table}, 1, '{HL_START}', '{HL_END}', '…', 24)"


def snippets(conn: apsw.Connection, fts: str, ids: list[int]) -> dict[int, str]:
    """Raw FTS5 snippets of these nodes for the FTS query ``fts`` (see
    :func:`memlens.core.search.engine.attach_snippets`); a query that does not parse gives none."""
    try:
        return temp_snippets(conn, fts, ids)
    except DAMAGE:
        raise
    except apsw.Error:  # defensive: the TEMP table is unusable; the slower main-index read
        return main_snippets(conn, fts, ids)


def temp_snippets(conn: apsw.Connection, fts: str, ids: list[int]) -> dict[int, str]:
    """Snippets computed in a small TEMP FTS5 table holding only these rows."""
    ph = ",".join("?" * len(ids))
    fill = (f"INSERT INTO {SNIP_TABLE}(rowid, heading, text, logical_path)"
            f" SELECT id, heading, text, logical_path FROM main.knowledge_nodes WHERE id IN ({ph})")
    try:
        conn.execute(fill, ids)
    except apsw.SQLError:  # first use on this connection: the TEMP table does not exist yet
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {SNIP_TABLE} USING fts5("
                     f"heading, text, logical_path, tokenize='{FTS_TOKENIZER}')")
        conn.execute(f"DELETE FROM {SNIP_TABLE}")
        conn.execute(fill, ids)
    try:
        return {int(r["id"]): r["snip"] or "" for r in rows(
            conn, f"SELECT rowid AS id, {snippet_sql('memlens_snippets')} AS snip"
            f" FROM {SNIP_TABLE} WHERE memlens_snippets MATCH ?", [fts])}
    except apsw.SQLError:  # the query text did not parse: no snippets, as before
        return {}
    finally:
        conn.execute(f"DELETE FROM {SNIP_TABLE}")  # empty between uses


def main_snippets(conn: apsw.Connection, fts: str, ids: list[int]) -> dict[int, str]:
    """Snippets read from the main index (the fallback of :func:`temp_snippets`)."""
    ph = ",".join("?" * len(ids))
    try:
        return {int(r["id"]): r["snip"] or "" for r in rows(
            conn, f"SELECT rowid AS id, {snippet_sql('knowledge_nodes_fts')} AS snip"
            f" FROM knowledge_nodes_fts WHERE knowledge_nodes_fts MATCH ? AND rowid IN ({ph})",
            [fts, *ids])}
    except apsw.SQLError:
        return {}

