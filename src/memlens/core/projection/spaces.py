"""Vector spaces: one per embedder fingerprint, each a vec0 table ``vec_nodes_<name>``
(:func:`memlens.core.store.db.vec_table_name`). The projection owns the ``vector_spaces``
table and creates a space the first time an embedder's nodes are written.

Storage (issue 43): a cosine space made at schema v10 or later stores int8 codes (one
byte a dimension instead of four, :func:`quantize_int8`); a float32 space of an older
database is rewritten as int8 by :func:`compact_space`, which the projection runs before
its vector stage (one transaction; the old vectors serve until it commits)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING

import apsw

from memlens.core.store.db import DatabaseError, row, scalar, vec_table_name, write_txn

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


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
        element = element_for(metric)
        kind = "int8" if element == "int8" else "float"
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {vec_table_name(name)} USING vec0("
            f"node_id INTEGER PRIMARY KEY, embedding {kind}[{int(dim)}] "
            f"distance_metric={metric}, repository TEXT, doc_type TEXT)"
        )
        conn.execute(
            "INSERT INTO vector_spaces(name, fingerprint, dim, metric, created_at, element) "
            "VALUES (?,?,?,?,?,?)",
            (name, fingerprint, int(dim), metric, now(), element),
        )
    return name

ELEMENTS = ("float32", "int8")
"""How a space's vec0 table stores a vector (``vector_spaces.element``, schema v10):
``float32`` (4 bytes a dimension; every space made before v10, and l2 spaces) or
``int8`` (1 byte a dimension; new cosine spaces, and old ones once compacted)."""


def element_for(metric: str) -> str:
    """The element type a new space of ``metric`` is made with: ``int8`` for cosine (a
    vector's direction is all cosine sees, and one scale per vector keeps it to within
    the rounding of 127 steps), ``float32`` otherwise (scaling would change L2/L1)."""
    return "int8" if metric == "cosine" else "float32"


def quantize_int8(vecs: npt.ArrayLike) -> npt.NDArray[np.int8]:
    """int8 codes of float vectors (one per row): each row scaled so its largest
    absolute component is 127, then rounded. A zero row stays zero. The codes of a row
    of codes are the same codes (the largest is already 127), so a vector read back
    from an int8 space and stored again does not drift."""
    import numpy as np

    a = np.asarray(vecs, dtype=np.float32)
    one = a.ndim == 1
    a = np.atleast_2d(a)
    peak = np.abs(a).max(axis=1, keepdims=True) if a.shape[1] else np.zeros((len(a), 1))
    scale = np.divide(np.float32(127.0), peak, out=np.zeros_like(peak, dtype=np.float32),
                      where=peak > 0)
    q = np.clip(np.rint(a * scale), -127, 127).astype(np.int8)
    return q[0] if one else q


def as_float32(blob: bytes, dim: int) -> npt.NDArray[np.float32] | None:
    """A stored vector as float32: a float32 blob (``4 * dim`` bytes) as it is, int8
    codes (``dim`` bytes) as their values (the same direction); ``None`` for any other
    length."""
    import numpy as np

    if len(blob) == 4 * dim:
        return np.frombuffer(blob, dtype=np.float32)
    if len(blob) == dim:
        return np.frombuffer(blob, dtype=np.int8).astype(np.float32)
    return None


def stored_blob(vec: npt.ArrayLike | bytes, element: str, dim: int) -> bytes:
    """The bytes of one vector as a space of ``element`` stores it (a float32 or int8
    blob is converted as needed)."""
    import numpy as np

    if isinstance(vec, bytes | bytearray | memoryview):
        got = as_float32(bytes(vec), dim)
        if got is None:
            raise ValueError(f"a stored vector has {len(vec)} bytes, expected {4 * dim} or {dim}")
        if element == "int8" and len(vec) == dim:
            return bytes(vec)  # int8 codes already
        vec = got
    if element == "int8":
        return bytes(quantize_int8(vec).tobytes())
    return bytes(np.asarray(vec, dtype=np.float32).tobytes())


def vector_param(element: str) -> str:
    """The SQL parameter of a vector for a vec0 column of ``element`` (sqlite-vec takes
    an int8 vector only typed by ``vec_int8``)."""
    return "vec_int8(?)" if element == "int8" else "?"


def space_element(conn: apsw.Connection, space: str) -> str:
    """The element type of ``space`` (``float32`` for an unknown one)."""
    got = scalar(conn, "SELECT element FROM vector_spaces WHERE name=?", (space,))
    return str(got) if got in ELEMENTS else "float32"


def compact_space(conn: apsw.Connection, space: str, dim: int) -> bool:
    """Rewrite a float32 cosine space as int8, in ONE write transaction: a new vec0 table
    gets every vector quantized, the old table is dropped and the new one (with its
    shadow tables) takes its name. Readers see the float32 vectors until the commit and
    the int8 ones after it (the vector fingerprint moves, so cached matrices reload);
    nothing is embedded again. Returns whether the space was rewritten (False: already
    int8, not cosine, or gone). Any failure rolls back and leaves the space as it was."""
    import numpy as np

    t, vec_next = vec_table_name(space), vec_table_name(space) + "_next"
    with write_txn(conn):
        got = row(conn, "SELECT metric, element FROM vector_spaces WHERE name=?", (space,))
        if got is None or got["element"] != "float32" or element_for(got["metric"]) != "int8":
            return False
        conn.execute(
            f"CREATE VIRTUAL TABLE {vec_next} USING vec0(node_id INTEGER PRIMARY KEY,"
            f" embedding int8[{int(dim)}] distance_metric=cosine, repository TEXT,"
            " doc_type TEXT)")
        n = 0
        batch: list[tuple[int, bytes, str, str]] = []

        def flush() -> None:
            conn.executemany(f"INSERT INTO {vec_next}(node_id, embedding, repository, doc_type)"
                             " VALUES (?,vec_int8(?),?,?)", batch)
            batch.clear()

        for nid, emb, repo, dt in conn.execute(
                f"SELECT node_id, embedding, repository, doc_type FROM {t}"):
            vec = np.frombuffer(emb, dtype=np.float32)
            batch.append((int(nid), bytes(quantize_int8(vec).tobytes()), repo, dt))
            n += 1
            if len(batch) >= 1024:
                flush()
        flush()
        if int(scalar(conn, f"SELECT COUNT(*) FROM {vec_next}_rowids") or 0) != n:
            raise DatabaseError(f"compacting vector space {space}: rows lost")
        shadows = [str(r[0]) for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE ? ESCAPE '\\'",
            (vec_next.replace("_", "\\_") + "\\_%",))]
        conn.execute(f"DROP TABLE {t}")
        conn.execute(f"ALTER TABLE {vec_next} RENAME TO {t}")
        for s in shadows:  # vec0 has no rename of its own: its shadow tables follow by hand
            conn.execute(f"ALTER TABLE {s} RENAME TO {t}{s[len(vec_next):]}")
        if int(scalar(conn, f"SELECT COUNT(*) FROM {t}") or 0) != n:
            raise DatabaseError(f"compacting vector space {space}: the renamed table differs")
        conn.execute("UPDATE vector_spaces SET element='int8' WHERE name=?", (space,))
        # the vectors changed under the same nodes: move the vector fingerprint
        # (memlens.core.projection.changes.vector_fingerprint) so cached matrices reload
        conn.execute("INSERT INTO meta(key, value) VALUES ('vector_generation', '1')"
                     " ON CONFLICT(key) DO UPDATE SET value=CAST(value AS INTEGER)+1")
    return True
