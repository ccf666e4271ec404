"""The one-shot lexical search: ``memlens search --mode lexical`` answered without the
façade's imports.

A CLI search is a process of its own: before it runs a line of memlens, the façade
(:mod:`memlens.core.service`, :mod:`memlens.core.types`) and ``argparse`` load
``pathlib``, ``typing``, ``dataclasses``, ``threading`` and the config machinery, ~3.5x
the cost of starting Python with ``apsw``; the search itself takes a few milliseconds.
:func:`lexical_search` runs the same statements (:mod:`memlens.core.search.rows`), the
same query builder (:mod:`memlens.core.search.query`) and the same history write
(:mod:`memlens.core.search.history`) as :meth:`MemoryService.search` in lexical mode,
with nothing else loaded, and returns the same JSON object
(:meth:`memlens.core.search.hits.SearchResult.as_json`).

It answers only the plain case and says ``None`` otherwise, before it has written or
printed anything, so the caller (:mod:`memlens.launch`, the console script) hands the request to the
full CLI: a database that is missing, not a regular file, not writable, not in WAL mode
or at another schema version; a query the FTS5 parser refuses. Default paths follow
platformdirs on Linux only (:func:`default_paths`). ``tests/test_quick.py`` runs both
paths on the same requests and requires byte-identical output, exit codes and history.
"""

from __future__ import annotations

import json
import os

import apsw

from memlens.core.embedders.names import known_embedder as known_embedder
from memlens.core.search import history as search_history
from memlens.core.search import rows as search_rows
from memlens.core.search.query import build_fts_query
from memlens.core.store.rows import BUSY_TIMEOUT_MS, DAMAGE, SCHEMA_VERSION, read_txn, unpack_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The `[search]` defaults this path assumes (it never runs with a config file);
# tests/test_quick.py checks them against memlens.core.config.settings.SearchSettings.
HISTORY = 100
CANDIDATES = 50
PER_DOCUMENT = 2  # memlens.core.search.engine.search's default
K_MAX = 4096  # memlens.core.search.engine.VEC_K_MAX: search() clamps every mode's k to it


def default_paths(environ: dict[str, str] | os._Environ[str] | None = None,
                  platform: str | None = None) -> tuple[str, str] | None:
    """``(config file, database)`` where the config looks when neither ``MEMLENS_CONFIG``
    nor ``MEMLENS_DB`` says otherwise: platformdirs' ``user_config_path`` and
    ``user_data_path`` of ``memlens`` on Linux with an absolute ``HOME`` (XDG variables
    honoured when absolute), else None (the caller then asks platformdirs itself)."""
    import sys

    env = os.environ if environ is None else environ
    if (platform or sys.platform) != "linux" or "ANDROID_DATA" in env or "ANDROID_ROOT" in env:
        return None
    home = env.get("HOME", "")
    if not home.startswith("/"):
        return None
    home = home.rstrip("/")
    config = env.get("XDG_CONFIG_HOME", "")
    data = env.get("XDG_DATA_HOME", "")
    config = config if config.startswith("/") else home + "/.config"
    data = data if data.startswith("/") else home + "/.local/share"
    return (os.path.join(config, "memlens", "config.toml"),
            os.path.join(data, "memlens", "memlens.db"))


def _inflate(*args: Any) -> Any:
    """``memlens_inflate(blob)`` (as :mod:`memlens.core.store.db` registers it)."""
    return unpack_text(args[0])


def _open(db: str) -> apsw.Connection | None:
    """The database for a search and a history write, or None when it is not in the plain
    state this path handles (see the module docstring)."""
    if db == ":memory:" or db.startswith("file:") or not os.path.isfile(db):
        return None
    folder = os.path.dirname(os.path.abspath(db))
    if not (os.access(db, os.R_OK | os.W_OK) and os.access(folder, os.W_OK | os.X_OK)):
        return None
    for f in (db, db + "-wal", db + "-shm"):  # private on open, as store/db.py does
        try:
            st = os.stat(f)
            if st.st_uid == os.getuid() and st.st_mode & 0o077:
                os.chmod(f, st.st_mode & 0o700)
        except (OSError, AttributeError):
            continue
    try:
        conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_URI)
    except apsw.Error:
        return None
    try:
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        version = conn.execute("PRAGMA user_version").fetchone()
        mode = conn.execute("PRAGMA journal_mode").fetchone()
        if not version or version[0] != SCHEMA_VERSION or not mode or \
                str(mode[0]).lower() != "wal":
            conn.close()
            return None
        # Node text is stored deflated; FTS5 snippets read it through this function.
        conn.create_scalar_function("memlens_inflate", _inflate, 1, deterministic=True)
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA temp_store=MEMORY")
    except apsw.Error:
        conn.close()
        return None
    return conn


def _hits(conn: apsw.Connection, fts: str, k: int, prefer: str | None,
          ) -> list[dict[str, Any]]:
    """The hits of :func:`memlens.core.search.engine.search` in lexical mode, as JSON objects."""
    depth = max(k, CANDIDATES) if prefer else k
    top = search_rows.lexical_top(conn, fts, depth * 4)
    known = search_rows.light(conn, [nid for nid, _ in top])
    ranked = [(nid, -bm25, node[1], node[0]) for nid, bm25 in top  # (node, score, repo, doc)
              if (node := known.get(nid)) is not None]
    ranked = search_rows.cap_per_document(ranked, PER_DOCUMENT, lambda t: t[3])[:depth]
    ranks = {t[0]: i for i, t in enumerate(ranked, 1)}  # before the project sort
    if prefer:  # the current project's hits first, each group in its own order
        ranked = sorted(ranked, key=lambda t: t[2] != prefer)[:k]
    meta = search_rows.node_rows(conn, [t[0] for t in ranked])
    hits = []
    for nid, score, _, _ in ranked:
        r = meta.get(nid)
        if r is None:
            continue
        hits.append({
            "repository": r["repository"], "path": r["logical_path"],
            "heading_path": list(json.loads(r["heading_path"])), "ordinal": int(r["ordinal"]),
            "start_char": int(r["start_char"]), "end_char": int(r["end_char"]),
            "score": float(score), "snippet": search_rows.lead_snippet(r["text"]),
            "highlights": [], "ranks": {"lexical": ranks[nid], "vector": None},
            "document_id": int(r["document_id"]), "node_id": nid,
            "chunk_id": int(r["chunk_id"]), "doc_type": r["doc_type"],
            "lexical_match": True, "match": "lexical"})
    found = search_rows.hit_snippets(conn, fts, list(dict.fromkeys(h["node_id"] for h in hits)))
    for h in hits:
        snip = found.get(h["node_id"])
        if snip is not None:
            h["snippet"], h["highlights"] = snip[0], [list(s) for s in snip[1]]
    return hits


def lexical_search(db: str, query: str, *, k: int = 10, all_projects: bool = False,
                   cwd: str | None = None, now: float | None = None) -> dict[str, Any] | None:
    """``memlens search QUERY --mode lexical -k K`` on the database file ``db`` with the
    default ``[search]`` settings: the result's JSON object, the search kept in the
    history (best effort, as the CLI does), or None when the full CLI must answer (the
    database is not in the plain state; the query does not parse). Unless
    ``all_projects``, the hits of the Claude project of ``cwd`` (default: the working
    directory) rank first. ``now``: the history time (default ``time.time()``)."""
    query = search_rows.valid_text(query)
    k = max(1, min(int(k), K_MAX))
    conn = _open(db)
    if conn is None:
        return None
    try:
        fts = build_fts_query(query)
        with read_txn(conn):  # one snapshot, as MemoryService.search reads
            prefer = None
            if not all_projects:
                try:
                    start = os.path.realpath(cwd or os.getcwd())
                except OSError:  # the working directory is gone: nothing to prefer
                    start = None
                if start is not None:
                    prefer = search_rows.project_repository(conn, start)
            hits = _hits(conn, fts, k, prefer) if fts is not None else []
    except apsw.Error:  # e.g. a query FTS5 refuses: the full CLI says so in a note
        conn.close()
        return None
    try:
        import time

        search_history.record(conn, query, "lexical", "cli",
                              time.time() if now is None else now, HISTORY)
    except DAMAGE:  # a damaged page: the full CLI says so in one line (exit 1)
        conn.close()
        return None
    except apsw.Error:
        pass  # history is best effort: the search has answered (as memlens.cli.search._remember)
    finally:
        conn.close()
    return {"query": query, "mode": "lexical", "embedder": None, "notes": [],
            "matches": len(hits), "preferred_repository": prefer, "fusion": None,
            "hits": hits}
