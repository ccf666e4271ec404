"""The change fingerprint of ``knowledge_nodes``, read inside a caller's transaction.

The in-RAM read caches of a long-lived service (:mod:`memlens.core.vector_matrix`,
:mod:`memlens.core.lexical_cache`) are valid for one fingerprint. It is
``(space, sqlite_sequence.seq of knowledge_nodes, COUNT(*) of knowledge_nodes)``: node
ids are ``AUTOINCREMENT`` and never reused, nodes are never updated, and every vector
and FTS row is written and deleted together with its node, so any insert moves ``seq``
and any delete without an insert moves the count. ``COUNT(*)`` of a table is a b-tree
page count walk in SQLite (no row decoding), well under a millisecond at 100k nodes.
"""

from __future__ import annotations

import apsw

Fingerprint = tuple[str, int, int]


def fingerprint(conn: apsw.Connection, space: str) -> Fingerprint:
    """The change fingerprint of ``space`` as seen by ``conn``'s current snapshot."""
    row = conn.execute(
        "SELECT (SELECT seq FROM sqlite_sequence WHERE name='knowledge_nodes'),"
        " (SELECT COUNT(*) FROM knowledge_nodes)").fetchone()
    seq, count = (row if row is not None else (None, None))
    return (space, int(seq or 0), int(count or 0))
