"""An in-RAM float32 copy of one vector space, for exact nearest-neighbour search.

sqlite-vec's ``vec0`` table stays the store of record; this is a read cache of it
(vectors, node ids, and the ``repository`` / ``doc_type`` metadata the SQL path
filters on) held by a long-lived :class:`~memlens.core.service.MemoryService`.
A query scores every allowed row with one float32 matrix-vector product, which is
the same brute-force search ``vec0`` does, without reading 100 MB of pages and
re-decoding them per query.

Consistency. A cached copy is used only when its *change fingerprint* equals the
one read inside the caller's own read transaction, so a search sees the vectors of
its snapshot and never a half-applied projection swap. The fingerprint is
``(space, sqlite_sequence.seq of knowledge_nodes, COUNT(*) of knowledge_nodes)``:
node ids are ``AUTOINCREMENT`` and never reused, every vector is written together
with a new node (``projection.swap._swap``) and removed together with its node
(``projection.delete_nodes``), so any insert moves ``seq`` and any delete without
an insert moves the count. A re-projection that replaces vectors with the same
number of new ones still moves ``seq``. ``COUNT(*)`` of a table is a b-tree page
count walk in SQLite (no row decoding), well under a millisecond at 100k nodes.

When to load. Loading reads every vector once (about 0.4 s at 104k 256-d vectors
from vec0's chunk tables, 0.65 s through the vec0 interface), several times one
``vec0`` scan (about 50 ms), so a one-shot command must not pay it: a space is
loaded only when the fingerprint of the previous query equals the current one (the
second search of a process whose store has not changed in between), or at once with
``eager=True`` / :meth:`VectorMatrixCache.warm`. With a ``connect`` factory (the
service passes one) the load runs on a background thread and connection, and queries
keep using ``vec0`` until it is ready. While projection keeps changing the store,
queries use ``vec0`` and the matrix is rebuilt once the store is quiet again. Until
a copy is usable, :meth:`VectorMatrixCache.knn` returns ``None`` and the caller runs
the SQL KNN.

Results are those of ``vec0``: cosine distance ``1 - cos`` (rows and query
normalised) or L2, and among equal distances vec0's own scan order (chunk
ascending, newest slot of a chunk first); the float32 sums run in another order,
so distances agree to about 1e-7 and only neighbours closer than that can swap.
numpy is imported only on vector paths.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import apsw

from memlens.core.projection.changes import FilterCodes, encode, filter_mask
from memlens.core.projection.changes import Fingerprint as Fingerprint
from memlens.core.projection.changes import vector_fingerprint as fingerprint
from memlens.core.store.db import read_txn, scalar, vec_table_name

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

METRICS = ("cosine", "l2")


@dataclass
class VectorMatrix:
    """One space's vectors as a float32 matrix (normalised rows for cosine).

    The ``repository`` / ``doc_type`` of each row are read from ``knowledge_nodes``
    (written from the same document row as the ``vec0`` metadata columns) on the
    first filtered query, inside that query's snapshot, which has this matrix's
    fingerprint and so the same nodes.
    """

    fp: Fingerprint
    metric: str
    ids: npt.NDArray[np.int64]          # node ids, ascending
    matrix: npt.NDArray[np.float32]     # (n, dim), read-only
    sq_norms: npt.NDArray[np.float32] | None = None  # |row|^2 (l2 only)
    # vec0's order among equal distances: chunk ascending, slot descending (None: by id)
    tie: npt.NDArray[np.int64] | None = None
    source: str = "vec0"                # "shadow": read from vec0's chunk tables
    _codes: FilterCodes | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        n = self.ids.nbytes + self.matrix.nbytes
        n += self.sq_norms.nbytes if self.sq_norms is not None else 0
        if self._codes is not None:
            n += self._codes[0].nbytes + self._codes[1].nbytes
        return int(n)

    def _filter_codes(self, conn: apsw.Connection) -> FilterCodes:
        import numpy as np

        with self._lock:
            if self._codes is None:
                repos: dict[str, int] = {}
                types: dict[str, int] = {}
                n = len(self.ids)
                rc = np.full(n, -1, dtype=np.int32)  # -1: vector without a node
                tc = np.full(n, -1, dtype=np.int32)
                got = list(conn.execute(
                    "SELECT id, repository, doc_type FROM knowledge_nodes WHERE vector_space=?",
                    (self.fp[0],)))
                if got and n:
                    nid = np.fromiter((r[0] for r in got), np.int64, len(got))
                    pos = np.minimum(np.searchsorted(self.ids, nid), n - 1)
                    ok = self.ids[pos] == nid
                    r_all, repos = encode((r[1] for r in got), len(got))
                    t_all, types = encode((r[2] for r in got), len(got))
                    rc[pos[ok]], tc[pos[ok]] = r_all[ok], t_all[ok]
                self._codes = (rc, tc, repos, types)
            return self._codes

    def allowed(self, conn: apsw.Connection, repository: str | None,
                doc_type: str | None) -> Any:
        """Row positions allowed by the filters, or ``None`` for every row."""
        import numpy as np

        if not repository and not doc_type:
            return None
        mask = filter_mask(self._filter_codes(conn), len(self.ids), repository, doc_type)
        if mask is False:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(mask)

    def knn(self, query: npt.NDArray[np.float32], k: int,
            rows_idx: Any = None) -> list[tuple[int, float]]:
        """The ``k`` nearest rows (of ``rows_idx``, default all) as
        ``(node_id, distance)``, nearest first; equal distances in vec0's scan order
        (node id order when the matrix was read through the vec0 interface)."""
        import numpy as np

        m = self.matrix if rows_idx is None else self.matrix[rows_idx]
        if k <= 0 or len(m) == 0:
            return []
        dist = self._distances(m, query, rows_idx)
        n = len(dist)
        kk = min(int(k), n)
        top = np.argpartition(dist, kk - 1)[:kk] if kk < n else np.arange(n)
        pos = top if rows_idx is None else rows_idx[top]
        ids, d = self.ids[pos], dist[top]
        if kk < n:  # rows tied with the k-th: vec0 keeps the first ones in its order
            d_k = d.max()
            tied = np.flatnonzero(dist == d_k)
            if len(tied) > int((d == d_k).sum()):
                keep = d < d_k
                tpos = tied if rows_idx is None else rows_idx[tied]
                tpos = tpos[np.lexsort((self._tie(tpos),))][: kk - int(keep.sum())]
                pos = np.concatenate([pos[keep], tpos])
                ids, d = self.ids[pos], np.concatenate([d[keep], np.full(len(tpos), d_k)])
        order = np.lexsort((self._tie(pos), d))  # distance, then vec0's scan order
        return [(int(ids[i]), float(d[i])) for i in order]

    def _tie(self, pos: Any) -> Any:
        return self.ids[pos] if self.tie is None else self.tie[pos]

    def _distances(self, m: Any, query: Any, rows_idx: Any) -> Any:
        import numpy as np

        q = np.asarray(query, dtype=np.float32)
        if self.metric == "cosine":
            qn = float(np.linalg.norm(q))
            if qn == 0.0:
                return np.ones(len(m), dtype=np.float32)
            return np.float32(1.0) - m @ (q / np.float32(qn))
        assert self.sq_norms is not None
        sq = self.sq_norms if rows_idx is None else self.sq_norms[rows_idx]
        d2 = sq - np.float32(2.0) * (m @ q) + np.float32(float(q @ q))
        return np.sqrt(np.maximum(d2, np.float32(0.0)))


def _read_public(conn: apsw.Connection, space: str, dim: int) -> tuple[Any, Any, Any]:
    """Ids and vectors through vec0's own interface (slow: ~12 us per row), written row
    by row into one matrix that grows by doubling (no list of blobs)."""
    import numpy as np

    t = vec_table_name(space)
    n = 0
    ids = np.empty(1024, dtype=np.int64)
    mat = np.empty((1024, dim), dtype=np.float32)
    for nid, emb in conn.execute(f"SELECT node_id, embedding FROM {t}"):
        if n == len(ids):
            ids = np.resize(ids, 2 * n)
            grown = np.empty((2 * n, dim), dtype=np.float32)
            grown[:n] = mat
            mat = grown
        ids[n] = nid
        mat[n] = np.frombuffer(emb, dtype=np.float32)
        n += 1
    if n < len(ids):  # one copy of the used part, then the big buffer is freed
        ids, mat = ids[:n].copy(), mat[:n].copy()
    return ids, mat, None


def _read_shadow(conn: apsw.Connection, space: str, dim: int,
                 ) -> tuple[Any, Any, Any] | None:
    """Ids and vectors straight from vec0's chunk tables (sqlite-vec 0.1.x layout:
    ``_chunks`` holds per chunk a validity bitmap and the rowids, ``_vector_chunks00``
    the vectors of its slots). ``None`` when the layout is not the one expected; the
    live-row count is checked against ``_rowids``, so a mismatch falls back too.

    Streaming, so the peak is the matrix plus one chunk: the small per-chunk parts
    (validity, rowids) are read first and only the ids are sorted; then the cursor over
    the vector blobs is iterated and each chunk's valid rows are written straight to
    their sorted place in one preallocated float32 matrix (no mask when every slot of
    the chunk is valid, no list of blobs, no reordering copy of the matrix)."""
    import numpy as np

    version = str(scalar(conn, "SELECT vec_version()"))
    if not version.startswith("v0.1."):
        return None
    t = vec_table_name(space)
    try:
        live = int(scalar(conn, f"SELECT COUNT(*) FROM {t}_rowids") or 0)
        meta = list(conn.execute(
            f"SELECT chunk_id, size, validity, rowids FROM {t}_chunks ORDER BY chunk_id"))
    except apsw.SQLError:
        return None
    ids = np.empty(live, dtype=np.int64)
    tie = np.empty(live, dtype=np.int64)
    slots: dict[int, tuple[int, int, Any]] = {}  # chunk -> (size, first row, valid or None)
    o = 0
    for rank, (cid, size, val, rids) in enumerate(meta):
        size = int(size)
        if size <= 0 or len(rids) != size * 8 or len(val) * 8 < size:
            return None
        ok = np.unpackbits(np.frombuffer(val, np.uint8), bitorder="little")[:size].astype(bool)
        valid = np.flatnonzero(ok)
        if o + len(valid) > live:
            return None
        ids[o:o + len(valid)] = np.frombuffer(rids, np.int64)[valid]
        # vec0 scans chunks in id order and, among equal distances, takes the
        # highest slot of a chunk first: the tie key is (chunk rank, -slot).
        tie[o:o + len(valid)] = rank * (1 << 32) + (size - 1 - valid)
        slots[int(cid)] = (size, o, None if len(valid) == size else valid)
        o += len(valid)
    del meta
    if o != live:
        return None
    order = np.argsort(ids, kind="stable")
    if bool(np.all(order[1:] > order[:-1])):  # already ascending (the usual case)
        dest: Any = None
    else:
        ids, tie = ids[order], tie[order]
        dest = np.empty(live, dtype=np.int64)  # scan position -> sorted position
        dest[order] = np.arange(live, dtype=np.int64)
    del order
    mat = np.empty((live, dim), dtype=np.float32)
    seen = 0
    try:
        for cid, vec in conn.execute(f"SELECT rowid, vectors FROM {t}_vector_chunks00"):
            got = slots.get(int(cid))
            if got is None or len(vec) != got[0] * dim * 4:
                return None
            size, first, valid = got
            block = np.frombuffer(vec, np.float32).reshape(size, dim)
            rows = block if valid is None else block[valid]
            k = len(rows)
            if dest is None:
                mat[first:first + k] = rows
            else:
                mat[dest[first:first + k]] = rows
            seen += 1
            del block, rows, vec
    except apsw.SQLError:
        return None
    if seen != len(slots):
        return None
    return ids, mat, tie


def load(conn: apsw.Connection, space: str, dim: int, metric: str, *,
         shadow: bool = True) -> VectorMatrix:
    """Read ``space``'s vectors into a :class:`VectorMatrix` (caller's snapshot).

    ``shadow``: read vec0's chunk tables directly (about 10x faster than selecting
    every row through vec0), falling back to the vec0 interface if their layout is
    not the expected one. The matrix is written once and normalised in place: the
    load's peak is the matrix plus one vec0 chunk (shadow) or the matrix's doubling
    buffer (vec0 interface).
    """
    import numpy as np

    if metric not in METRICS:
        raise ValueError(f"unsupported metric {metric!r}")
    fp = fingerprint(conn, space)
    got = _read_shadow(conn, space, dim) if shadow else None
    source = "shadow" if got is not None else "vec0"
    ids, mat, tie = got if got is not None else _read_public(conn, space, dim)
    if len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        order = np.argsort(ids, kind="stable")
        ids, mat = ids[order], mat[order]
        tie = tie[order] if tie is not None else None
    sq: Any = None
    if metric == "cosine":
        _normalise_rows(mat)
    else:
        sq = np.einsum("ij,ij->i", mat, mat).astype(np.float32)
    mat.flags.writeable = False
    return VectorMatrix(fp=fp, metric=metric, ids=ids, matrix=mat, sq_norms=sq, tie=tie,
                        source=source)


def _normalise_rows(mat: Any) -> None:
    """Divide every row of ``mat`` by its L2 norm, in place (zero rows stay zero), a
    slice of about 1 MiB at a time so no temporary of the matrix's size is made."""
    import numpy as np

    step = max(1, (1 << 20) // max(1, 4 * mat.shape[1]))
    for s in range(0, len(mat), step):
        part = mat[s:s + step]
        norms = np.sqrt(np.add.reduce(part * part, axis=1))  # as np.linalg.norm
        norms[norms == 0] = 1.0
        part /= norms[:, None]


class VectorMatrixCache:
    """Per-service cache of :class:`VectorMatrix` by vector space, thread-safe.

    ``eager``: load on the first query instead of the first query at a fingerprint
    already seen (see the module docstring). ``connect``: opens a new connection to
    the same database; given, loads run on a background thread in their own read
    transaction while queries keep using ``vec0``, so no search waits for a load
    (without it, the query that triggers a load waits for it). ``loads`` counts
    finished matrix loads and ``served`` the queries a matrix answered (tests and
    benchmarks read them).
    """

    def __init__(self, *, eager: bool = False,
                 connect: Callable[[], apsw.Connection] | None = None) -> None:
        self.eager = eager
        self.loads = 0
        self.served = 0  # queries answered from a matrix
        self._connect = connect
        self._entries: dict[str, VectorMatrix] = {}
        self._seen: dict[str, Fingerprint] = {}
        self._loading: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def get(self, conn: apsw.Connection, space: str, dim: int, metric: str,
            ) -> VectorMatrix | None:
        """The matrix of ``space`` valid for ``conn``'s current snapshot, loading it
        when the policy says so; ``None`` means "use the SQL KNN this time"."""
        if metric not in METRICS:
            return None
        fp = fingerprint(conn, space)
        with self._lock:
            entry = self._entries.get(space)
            if entry is not None and entry.fp == fp:
                self.served += 1
                return entry
            quiet = self._seen.get(space) == fp
            self._seen[space] = fp
            if not (self.eager or quiet):
                return None
            if self._connect is not None:
                self._start_background_load(space, dim, metric)
                return None
            entry = load(conn, space, dim, metric)
            self.loads += 1
            self._entries[space] = entry
            return entry

    def _start_background_load(self, space: str, dim: int, metric: str) -> None:
        """Start loading ``space`` on its own thread and connection (lock held)."""
        running = self._loading.get(space)
        if running is not None and running.is_alive():
            return
        t = threading.Thread(target=self._background_load, args=(space, dim, metric),
                             name="memlens-vector-load", daemon=True)
        self._loading[space] = t
        t.start()

    def _background_load(self, space: str, dim: int, metric: str) -> None:
        assert self._connect is not None
        try:
            conn = self._connect()
            try:
                with read_txn(conn):
                    entry = load(conn, space, dim, metric)
            finally:
                conn.close()
        except (apsw.Error, ValueError, MemoryError):
            return  # queries keep using vec0; the next quiet query tries again
        with self._lock:
            self._entries[space] = entry
            self.loads += 1

    def wait_loaded(self, timeout: float | None = None) -> None:
        """Wait for background loads in progress (tests, benchmarks)."""
        with self._lock:
            threads = list(self._loading.values())
        for t in threads:
            t.join(timeout)

    def knn(self, conn: apsw.Connection, space: str, dim: int, metric: str,
            query: npt.NDArray[np.float32], k: int, *, repository: str | None = None,
            doc_type: str | None = None) -> list[tuple[int, float]] | None:
        """``(node_id, distance)`` of the ``k`` nearest, or ``None`` to use SQL."""
        entry = self.get(conn, space, dim, metric)
        if entry is None:
            return None
        return entry.knn(query, k, entry.allowed(conn, repository, doc_type))

    def knn_later(self, conn: apsw.Connection, space: str, dim: int, metric: str,
                  query: npt.NDArray[np.float32] | Callable[[], npt.NDArray[np.float32] | None],
                  k: int, *, repository: str | None = None,
                  doc_type: str | None = None, background: bool = False,
                  ) -> Callable[[], list[tuple[int, float]]] | None:
        """Like :meth:`knn`, as a callable giving the result; with ``background`` the
        scan runs on this cache's worker thread meanwhile (the fingerprint check and
        any SQL stay on the caller's thread, inside its transaction). ``query`` may be
        a callable giving the vector (``None``: no neighbours): it is then called on the
        worker too, so a query embedding overlaps the caller's own work (hybrid's FTS5
        ranking); its exception is raised by the returned callable."""
        entry = self.get(conn, space, dim, metric)
        if entry is None:
            return None
        rows_idx = entry.allowed(conn, repository, doc_type)

        def scan() -> list[tuple[int, float]]:
            q = query() if callable(query) else query
            return [] if q is None else entry.knn(q, k, rows_idx)

        if not background:
            found = scan()
            return lambda: found
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1,
                                                thread_name_prefix="memlens-vectors")
            fut = self._pool.submit(scan)
        return fut.result

    def warm(self, conn: apsw.Connection, space: str, dim: int, metric: str) -> bool:
        """Load ``space`` now (inside the caller's read transaction); False if the
        metric is not supported."""
        if metric not in METRICS:
            return False
        with self._lock:
            entry = self._entries.get(space)
            if entry is not None and entry.fp == fingerprint(conn, space):
                return True
            self._entries[space] = load(conn, space, dim, metric)
            self.loads += 1
            return True

    def clear(self) -> None:
        """Drop every cached matrix (frees the memory) and stop the worker thread."""
        self.wait_loaded()
        with self._lock:
            self._entries.clear()
            self._seen.clear()
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def nbytes(self) -> int:
        """Bytes held by all cached matrices."""
        with self._lock:
            return sum(e.nbytes for e in self._entries.values())
