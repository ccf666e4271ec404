"""The change fingerprint of ``knowledge_nodes``, read inside a caller's transaction,
and the repository / type filter both in-RAM caches apply to their rows.

The in-RAM read caches of a long-lived service (:mod:`memlens.core.search.vector_matrix`,
:mod:`memlens.core.search.lexical_cache`) are valid for one fingerprint. It is
``(space, sqlite_sequence.seq of knowledge_nodes, COUNT(*) of knowledge_nodes)``: node
ids are ``AUTOINCREMENT`` and never reused, nodes are never updated, and every vector
and FTS row is written and deleted together with its node, so any insert moves ``seq``
and any delete without an insert moves the count. ``COUNT(*)`` of a table is a b-tree
page count walk in SQLite (no row decoding), well under a millisecond at 100k nodes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import apsw

Fingerprint = tuple[str, int, int]
# Per row: repository code, type code; and the codes of the values seen.
FilterCodes = tuple[Any, Any, dict[str, int], dict[str, int]]


def fingerprint(conn: apsw.Connection, space: str) -> Fingerprint:
    """The change fingerprint of ``space`` as seen by ``conn``'s current snapshot."""
    row = conn.execute(
        "SELECT (SELECT seq FROM sqlite_sequence WHERE name='knowledge_nodes'),"
        " (SELECT COUNT(*) FROM knowledge_nodes)").fetchone()
    seq, count = (row if row is not None else (None, None))
    return (space, int(seq or 0), int(count or 0))


def vector_fingerprint(conn: apsw.Connection, space: str) -> Fingerprint:
    """:func:`fingerprint` for a cache of *vectors*: since the two-stage projection
    (issue 37) vectors are also added to existing nodes (stage 2), and each such commit
    bumps ``meta.vector_generation``. It is added to ``seq``: both only grow, so any node
    insert or vector slice moves the sum and any delete moves the count."""
    row = conn.execute(
        "SELECT (SELECT seq FROM sqlite_sequence WHERE name='knowledge_nodes'),"
        " (SELECT COUNT(*) FROM knowledge_nodes),"
        " (SELECT CAST(value AS INTEGER) FROM meta WHERE key='vector_generation')").fetchone()
    seq, count, gen = (row if row is not None else (None, None, None))
    return (space, int(seq or 0) + int(gen or 0), int(count or 0))


_REDACTION_KEY = "redaction_fingerprint"


def redaction_mark(conn: apsw.Connection) -> str | None:
    """The redaction fingerprint (:mod:`memlens.core.redact.fingerprint`) everything
    stored, and so every node built from it, was last redacted with; None before the
    first ingest that recorded one. Kept in ``meta`` (this package's key/value table)."""
    row = conn.execute("SELECT value FROM meta WHERE key=?", (_REDACTION_KEY,)).fetchone()
    return None if row is None else str(row[0])


def set_redaction_mark(conn: apsw.Connection, fingerprint: str) -> None:
    """Record that everything stored is redacted with ``fingerprint`` (after the pass)."""
    conn.execute("INSERT INTO meta(key, value) VALUES (?, ?)"
                 " ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                 (_REDACTION_KEY, fingerprint))


def vectors_waiting(conn: apsw.Connection) -> int:
    """Live documents whose vectors are not all written yet (stage 2 of the projection
    still to run); they are searchable lexically meanwhile. Uses the partial index
    ``idx_documents_vectors_waiting``."""
    row = conn.execute("SELECT COUNT(*) FROM memory_documents WHERE vector_done < vector_total"
                       " AND tombstoned_at IS NULL").fetchone()
    return int(row[0]) if row is not None else 0


def vectors_left(conn: apsw.Connection) -> list[tuple[int, int]]:
    """(document id, vectors still to write) of every document :func:`vectors_waiting`
    counts, by id (the same partial index)."""
    return [(int(i), int(n)) for i, n in conn.execute(
        "SELECT id, vector_total - vector_done FROM memory_documents"
        " WHERE vector_done < vector_total AND tombstoned_at IS NULL ORDER BY id")]


def encode(values: Iterable[object], n: int) -> tuple[Any, dict[str, int]]:
    """Dictionary-encode ``n`` values (``None`` as ``""``): int32 codes and the code
    of each distinct value."""
    import numpy as np

    known: dict[str, int] = {}
    codes = np.fromiter((known.setdefault(str(v or ""), len(known)) for v in values),
                        np.int32, n)
    return codes, known


def filter_mask(codes: FilterCodes, n: int, repository: str | None,
                doc_type: str | None) -> Any:
    """Boolean mask of the ``n`` rows whose codes match the filters; ``None`` when no
    filter is given, ``False`` when a filter names a value no row has."""
    import numpy as np

    if not repository and not doc_type:
        return None
    rc, tc, repos, types = codes
    mask = np.ones(n, dtype=bool)
    for value, col, known in ((repository, rc, repos), (doc_type, tc, types)):
        if value:
            if value not in known:
                return False
            mask &= col == known[value]
    return mask
