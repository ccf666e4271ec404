"""Consistency checks for a memlens database (``memlens doctor``).

Each check names the problem it finds. FTS5 is checked with
``integrity-check`` *and rank 1*: the plain form does not compare an
external-content index against its content table, so it misses drift.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import asdict, dataclass

import apsw

from memlens.core.store.db import read_txn, rows, scalar, vec_table_name, vector_spaces


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the database."""

    check: str
    message: str
    fix: str | None = None  # what to do, for the invariants (memlens.core.invariants)

    def as_json(self) -> dict[str, str | None]:
        """JSON shape: ``{"check","message","fix"}``."""
        return asdict(self)


QUICK_CHECK_MAX_BYTES = 16 * 1024 * 1024
"""A writing run checks the database first (``PRAGMA quick_check``) only up to this size
(database + WAL): ~6 ms per MB here, so at most ~0.1 s; a larger database relies on
SQLite's own detection of a damaged page it reads (docs/benchmarks.md, issue 42)."""


def quick_check(conn: apsw.Connection, path: str | None, *,
                max_bytes: int = QUICK_CHECK_MAX_BYTES) -> bool:
    """``PRAGMA quick_check`` when the file at ``path`` (with its WAL) is at most
    ``max_bytes``; raises :class:`apsw.CorruptError` with SQLite's first finding when it
    is not ok. Returns whether the check ran."""
    import os

    if path is None:
        return False
    size = 0
    for f in (path, f"{path}-wal"):
        with contextlib.suppress(OSError):
            size += os.path.getsize(f)
    if size > max_bytes:
        return False
    found = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)")]
    if found != ["ok"]:
        first = " ".join(found[0].replace("*** in database main ***", "").split())
        raise apsw.CorruptError(f"quick_check: {first}")
    return True


REBUILD_FIX = ("rebuild the database from your memory folders: `memlens ingest --db NEW.db`,"
               " then use NEW.db (the revision history stays in this file)")


def run_checks(conn: apsw.Connection) -> tuple[list[str], list[Problem]]:
    """Run every check; returns (names of checks run, problems found)."""
    checks: list[str] = []
    problems: list[Problem] = []

    def check(name: str) -> None:
        checks.append(name)

    check("sqlite_integrity")  # the invariants (memlens.core.invariants) follow in reads
    res = [r[0] for r in conn.execute("PRAGMA integrity_check")]
    if res != ["ok"]:
        problems.extend(Problem("sqlite_integrity", str(m)) for m in res[:20])

    check("fts_integrity")
    try:
        conn.execute("SAVEPOINT doctor_fts")
        try:
            conn.execute(
                "INSERT INTO knowledge_nodes_fts(knowledge_nodes_fts, rank) VALUES('integrity-check', 1)"
            )
        finally:
            conn.execute("ROLLBACK TO doctor_fts")
            conn.execute("RELEASE doctor_fts")
    except apsw.Error as exc:
        problems.append(Problem("fts_integrity", f"FTS index does not match node rows: {exc}"))

    # Everything below reads one snapshot, so a swap committed by another process
    # meanwhile cannot look like a half-applied projection. (The FTS check above is a
    # write statement and must stay outside a read transaction.)
    with contextlib.nullcontext() if conn.in_transaction else read_txn(conn):
        _snapshot_checks(conn, check, problems)
    return checks, problems


def _snapshot_checks(conn: apsw.Connection, check: Callable[[str], None],
                     problems: list[Problem]) -> None:
    check("vectors")
    for sp in vector_spaces(conn):
        t = vec_table_name(sp["name"])
        n_vec = int(scalar(conn, f"SELECT COUNT(*) FROM {t}") or 0)
        n_nodes = int(scalar(conn, "SELECT COUNT(*) FROM knowledge_nodes WHERE vector_space=?",
                             (sp["name"],)) or 0)
        orphan_vecs = int(scalar(
            conn, f"SELECT COUNT(*) FROM {t} WHERE node_id NOT IN (SELECT id FROM knowledge_nodes)"
        ) or 0)
        # Two-stage projection (issue 37): a node without a vector is normal while its
        # document's vector stage is pending (vector_done < vector_total) or when the
        # per-document cap left it out (vector_capped); the counts must match the rows.
        have_sql = (f"SELECT k.document_id AS doc, COUNT(*) AS n, SUM(k.id IN (SELECT node_id"
                    f" FROM {t})) AS have FROM knowledge_nodes k WHERE k.vector_space=?"
                    " GROUP BY k.document_id")
        missing = 0
        for r in rows(conn, "SELECT c.doc, c.n, c.have, d.logical_path, d.vector_done,"
                      " d.vector_total, d.vector_capped FROM (" + have_sql + ") c"
                      " JOIN memory_documents d ON d.id=c.doc", (sp["name"],)):
            n, have = int(r["n"]), int(r["have"] or 0)
            done, total, capped = (int(r["vector_done"]), int(r["vector_total"]),
                                   int(r["vector_capped"]))
            where = f"{r['logical_path']} (document {r['doc']})"
            if have != done:
                problems.append(Problem("vectors", f"{where}: records {done} vectors, has {have}"))
            elif done >= total and n - have != capped:
                missing += n - have - capped
                problems.append(Problem("vectors", f"{where}: vector stage done but "
                                        f"{n - have - capped} node(s) lack a vector"))
            elif total + capped != n:
                problems.append(Problem("vectors", f"{where}: {total} planned + {capped} capped"
                                        f" vectors for {n} nodes"))
        pending = int(scalar(conn, "SELECT COALESCE(SUM(vector_total - vector_done), 0) FROM"
                             " memory_documents d WHERE vector_done < vector_total AND EXISTS"
                             " (SELECT 1 FROM knowledge_nodes k WHERE k.document_id=d.id"
                             " AND +k.vector_space=?)", (sp["name"],)) or 0)
        capped_all = int(scalar(conn, "SELECT COALESCE(SUM(vector_capped), 0) FROM"
                                " memory_documents d WHERE vector_capped > 0 AND EXISTS"
                                " (SELECT 1 FROM knowledge_nodes k WHERE k.document_id=d.id"
                                " AND +k.vector_space=?)", (sp["name"],)) or 0)
        if orphan_vecs:
            problems.append(Problem("vectors", f"{orphan_vecs} orphan vector rows in space "
                                    f"{sp['name']} ({sp['fingerprint']})", fix=REBUILD_FIX))
        if n_vec + pending + capped_all != n_nodes and not orphan_vecs and not missing:
            problems.append(Problem("vectors", f"space {sp['name']}: {n_vec} vectors,"
                                    f" {pending} pending, {capped_all} capped vs {n_nodes} nodes"))
    unknown = int(scalar(conn, "SELECT COUNT(*) FROM knowledge_nodes WHERE vector_space IS NOT NULL"
                         " AND vector_space NOT IN (SELECT name FROM vector_spaces)") or 0)
    if unknown:
        problems.append(Problem("vectors", f"{unknown} nodes point at an unknown vector space"))

    check("junction")
    orphan_j = int(scalar(
        conn, "SELECT COUNT(*) FROM knowledge_node_memory_chunks WHERE node_id NOT IN"
        " (SELECT id FROM knowledge_nodes) OR chunk_id NOT IN (SELECT id FROM memory_chunks)") or 0)
    if orphan_j:
        problems.append(Problem("junction", f"{orphan_j} orphan junction rows", fix=REBUILD_FIX))
    unlinked = int(scalar(
        conn, "SELECT COUNT(*) FROM knowledge_nodes WHERE id NOT IN"
        " (SELECT node_id FROM knowledge_node_memory_chunks)") or 0)
    if unlinked:
        problems.append(Problem("junction", f"{unlinked} nodes not linked to any chunk"))

    check("documents")
    for r in rows(conn, "SELECT d.id, d.repository, d.logical_path FROM memory_documents d"
                  " LEFT JOIN memory_revisions r ON r.id=d.current_revision_id"
                  " WHERE d.current_revision_id IS NULL OR r.document_id IS NOT d.id"):
        problems.append(Problem("documents", f"{r['repository']}/{r['logical_path']}: current "
                                "revision missing or belongs to another document"))
    for r in rows(conn, "SELECT d.id, d.repository, d.logical_path FROM memory_documents d"
                  " LEFT JOIN memory_revisions r ON r.id=d.active_revision_id"
                  " WHERE d.active_revision_id IS NOT NULL AND r.document_id IS NOT d.id"):
        problems.append(Problem("documents", f"{r['repository']}/{r['logical_path']}: active "
                                "revision belongs to another document"))

    check("projection")
    for r in rows(
        conn,
        "SELECT d.repository, d.logical_path, d.active_revision_id,"
        " (SELECT COUNT(*) FROM memory_chunks c WHERE c.revision_id=d.active_revision_id) AS nchunks,"
        " (SELECT COUNT(*) FROM knowledge_nodes k WHERE k.document_id=d.id) AS nnodes,"
        " (SELECT COUNT(*) FROM knowledge_nodes k WHERE k.document_id=d.id"
        "   AND k.revision_id IS NOT d.active_revision_id) AS wrongrev"
        " FROM memory_documents d WHERE d.tombstoned_at IS NULL",
    ):
        name = f"{r['repository']}/{r['logical_path']}"
        if r["active_revision_id"] is None and r["nnodes"]:
            problems.append(Problem("projection", f"{name}: nodes but no active revision"))
        elif r["active_revision_id"] is not None and r["nchunks"] != r["nnodes"]:
            problems.append(Problem("projection", f"{name}: {r['nnodes']} nodes for "
                                    f"{r['nchunks']} chunks of the active revision"))
        if r["wrongrev"]:
            problems.append(Problem("projection", f"{name}: {r['wrongrev']} nodes of a "
                                    "non-active revision are searchable"))
    ghosts = rows(conn, "SELECT d.repository, d.logical_path FROM memory_documents d WHERE"
                  " d.tombstoned_at IS NOT NULL AND EXISTS (SELECT 1 FROM knowledge_nodes k"
                  " WHERE k.document_id=d.id)")
    for g in ghosts:
        problems.append(Problem("projection", f"{g['repository']}/{g['logical_path']}: deleted "
                                "but still searchable"))
