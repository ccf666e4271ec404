"""Vector spaces: one per embedder fingerprint, each a vec0 table ``vec_nodes_<name>``
(:func:`memlens.core.store.db.vec_table_name`). The projection owns the ``vector_spaces``
table and creates a space the first time an embedder's nodes are written."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import apsw

from memlens.core.store.db import DatabaseError, scalar, vec_table_name, write_txn


def ensure_vector_space(
    conn: apsw.Connection,
    fingerprint: str,
    dim: int,
    metric: str,
    now: Callable[[], float],
) -> str:
    """Return the vector-space name for an embedder, creating its vec0 table once."""
    existing = scalar(conn, "SELECT name FROM vector_spaces WHERE fingerprint=?", (fingerprint,))
    if existing:
        return str(existing)
    name = hashlib.sha256(fingerprint.encode()).hexdigest()[:12]
    if metric not in ("cosine", "l2", "L1"):
        raise DatabaseError(f"unsupported vector metric {metric!r}")
    with write_txn(conn):
        existing = scalar(
            conn, "SELECT name FROM vector_spaces WHERE fingerprint=?", (fingerprint,)
        )
        if existing:
            return str(existing)
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {vec_table_name(name)} USING vec0("
            f"node_id INTEGER PRIMARY KEY, embedding float[{int(dim)}] "
            f"distance_metric={metric}, repository TEXT, doc_type TEXT)"
        )
        conn.execute(
            "INSERT INTO vector_spaces(name, fingerprint, dim, metric, created_at) "
            "VALUES (?,?,?,?,?)",
            (name, fingerprint, int(dim), metric, now()),
        )
    return name
