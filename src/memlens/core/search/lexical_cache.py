"""In-RAM bm25 postings of frequent FTS5 phrases, for long-lived services (TUI, MCP).

FTS5 has no early termination: ``ORDER BY bm25(...) LIMIT k`` scores every row that
matches any phrase of the query, about 0.4 µs a row, so two words that each occur in
half of 104k chunks cost 25–40 ms whatever ``k`` is. This cache keeps, for a phrase
that matches at least :data:`MIN_ROWS` rows, the bm25 contribution of that phrase to
every row it matches (one FTS5 statement over the phrase alone), and answers a query
whose phrases are all known by adding those contributions with numpy.

Exact, not approximate. FTS5's bm25 of an OR query is a sum over the query's phrases of
``idf(phrase) * f*(k1+1) / (f + k1*(1-b+b*D/avgdl))``, where ``idf`` depends only on
the phrase (its own row count), ``f`` on the phrase and the row, and ``D``/``avgdl`` on
the row and the table; a row that does not match a phrase gets 0 for it. The score of
a row for the phrase alone is therefore exactly its term of the sum, and adding the
terms in the query's phrase order gives the same float64 value FTS5 returns (``-(a+b)``
and ``(-a)+(-b)`` are the same IEEE value, and ``x + 0.0 == x``). Ties are broken by
node id, as the SQL statement does (``ORDER BY score, id``). ``tests/test_lexical_cache.py``
compares ids and scores bit for bit with the statement.

Consistency. Entries belong to one change fingerprint of ``knowledge_nodes``
(:mod:`memlens.core.projection.changes`: FTS rows are node rows, written and deleted with
them, never updated), read inside the caller's read transaction; any change drops
every entry, since the table statistics (row count, average length, each phrase's idf)
move with it. What was searched survives a change: a phrase that had been built (seen
:data:`BUILD_AFTER` + 1 times) is read again, in the background, at its first search
after the change, so a session where Claude keeps writing memory (every watched save is
a change) keeps its frequent words in RAM instead of starting each word from first
sight. Sighting counts are capped at :data:`MAX_SEEN` phrases (past it the once-seen
are dropped, then all but the most seen half).

When to build. Fetching every row of a phrase into RAM costs about twice one query, so
a phrase is built only the third time it is searched at an unchanged store
(:data:`BUILD_AFTER`: words a user or Claude keeps searching; building at the second
sight made hybrid searches of once-repeated queries 16.5 -> 22.1 ms p50 at 104k chunks
while the builds took the second core): a one-shot command never pays, and never imports numpy. Until then
its queries run the SQL statement.
With a ``connect`` factory (the service passes one) the build runs on a background
thread while that query runs the statement, so no search waits for a build.
Phrases under :data:`MIN_ROWS` rows are not kept; their row count is remembered and,
in a query that also has a kept phrase, their contributions are read per query
(cheap, by definition); a query of rare phrases only runs the statement. Entries are evicted
least recently used beyond ``budget_bytes`` (12 bytes a posting: 4-byte row position,
8-byte score).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import apsw

from memlens.core.projection.changes import FilterCodes, Fingerprint, encode, filter_mask
from memlens.core.projection.changes import fingerprint as _nodes_fingerprint

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import numpy.typing as npt

MIN_ROWS = 2000  # phrases matching fewer rows are cheap for FTS5 itself
BUDGET_BYTES = 128 * 1024 * 1024
BUILD_AFTER = 2  # earlier queries with a phrase (at this store) before it is built
FIXED_ROWS = 2000  # the postings' fixed cost, in rows FTS5 would score meanwhile
MAX_SEEN = 20000  # phrases whose sightings are counted; past it the once-seen go
_SPACE = "fts"  # the fingerprint's space slot: node ids and count only


@dataclass
class _Postings:
    """One phrase: positions into the node id array and the phrase's bm25 term."""

    pos: npt.NDArray[np.int32]
    score: npt.NDArray[np.float64]

    @property
    def nbytes(self) -> int:
        return int(self.pos.nbytes + self.score.nbytes)


class _Nodes:
    """Node ids (ascending) of one fingerprint; their filter columns are read on the
    first filtered query (inside that query's snapshot, which has this fingerprint)."""

    def __init__(self, ids: npt.NDArray[np.int64]) -> None:
        self.ids = ids
        self._codes: FilterCodes | None = None

    @property
    def nbytes(self) -> int:
        n = int(self.ids.nbytes)
        if self._codes is not None:
            n += int(self._codes[0].nbytes + self._codes[1].nbytes)
        return n

    def _filter_codes(self, conn: apsw.Connection) -> FilterCodes:
        if self._codes is None:
            got = conn.execute(
                "SELECT repository, doc_type FROM knowledge_nodes ORDER BY id").fetchall()
            n = len(got)
            if n != len(self.ids):
                raise ValueError("node count moved inside one fingerprint")
            rc, repos = encode((r[0] for r in got), n)
            tc, types = encode((r[1] for r in got), n)
            self._codes = (rc, tc, repos, types)
        return self._codes

    def allowed(self, conn: apsw.Connection, repository: str | None,
                doc_type: str | None) -> Any:
        """Boolean mask of the rows the filters allow, ``None`` for all, or ``False``
        when a filter names a value no node has."""
        if not repository and not doc_type:
            return None
        return filter_mask(self._filter_codes(conn), len(self.ids), repository, doc_type)


class LexicalCache:
    """Per-service cache of phrase postings (thread-safe); see the module docstring.

    ``weights``: the bm25 column weights of the search statement (the same SQL text).
    ``min_rows``: phrases matching fewer rows are not kept; ``fixed_rows``: the postings
    answer only when their rows outnumber twice the rare phrases' rows plus this many.
    ``build_after``: how many earlier queries (at an unchanged store) must have had a
    phrase before it is read into RAM.
    ``connect``: opens a connection to the same database; given, phrases are read on a
    background thread in its own read transaction (at the same fingerprint) while the
    query that asked for them runs the statement, so no search waits for a build;
    without it the query that reaches a phrase's building sight reads it (about twice
    the statement). :meth:`wait_built` waits for background builds (tests, benchmarks).

    ``served`` counts queries answered from the cache, ``builds`` phrases fetched
    (tests and benchmarks read them).
    """

    def __init__(self, *, weights: str, min_rows: int = MIN_ROWS,
                 budget_bytes: int = BUDGET_BYTES, fixed_rows: int = FIXED_ROWS,
                 connect: Callable[[], apsw.Connection] | None = None,
                 build_after: int = BUILD_AFTER) -> None:
        self.min_rows = int(min_rows)
        self.build_after = max(1, int(build_after))
        self.fixed_rows = int(fixed_rows)
        self.budget_bytes = int(budget_bytes)
        self.weights = weights
        self.served = 0
        self.builds = 0
        self._lock = threading.Lock()
        self._fp: Fingerprint | None = None
        self._nodes: _Nodes | None = None
        self._seen: dict[str, int] = {}  # phrase -> queries it was in, at this store
        self._small: dict[str, int] = {}  # phrase -> rows matched (< min_rows)
        self._entries: OrderedDict[str, _Postings] = OrderedDict()
        self._bytes = 0
        self._connect = connect
        self._pending: set[str] = set()  # phrases a background build is reading
        self._pool: ThreadPoolExecutor | None = None
        self._worker_conn: apsw.Connection | None = None

    def _reset(self, fp: Fingerprint) -> None:
        """Start the store ``fp``: entries and row counts go, the hot sightings stay."""
        self._fp, self._nodes = fp, None
        self._seen = {p: n for p, n in self._seen.items() if n > self.build_after}
        self._small.clear()
        self._entries.clear()
        self._bytes = 0

    def _prune_seen(self) -> None:
        """Forget the once-seen phrases; if that leaves more than half of
        :data:`MAX_SEEN`, keep only the most seen half (lock held), so pruning runs at
        most once per ``MAX_SEEN // 2`` new phrases."""
        seen = {p: n for p, n in self._seen.items() if n > 1}
        if len(seen) > MAX_SEEN // 2:
            import heapq

            seen = dict(heapq.nlargest(MAX_SEEN // 2, seen.items(), key=lambda kv: kv[1]))
        self._seen = seen

    def nbytes(self) -> int:
        """Bytes held by the postings and the node arrays."""
        with self._lock:
            n = self._bytes
            if self._nodes is not None:
                n += self._nodes.nbytes
            return n

    def clear(self) -> None:
        """Drop every entry and sighting (frees the memory), stop the worker, close its
        connection."""
        with self._lock:
            self._reset(("", 0, 0))
            self._seen = {}
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.submit(self._close_worker_conn)
            pool.shutdown(wait=True)

    def wait_built(self) -> None:
        """Wait until the background builds submitted so far have finished."""
        with self._lock:
            pool = self._pool
        if pool is not None:
            pool.submit(lambda: None).result()

    def _close_worker_conn(self) -> None:
        if self._worker_conn is not None:
            self._worker_conn.close()
            self._worker_conn = None

    def top(self, conn: apsw.Connection, phrases: list[str], k: int,
            repository: str | None = None, doc_type: str | None = None,
            ) -> list[tuple[int, float]] | None:
        """``(node_id, bm25)`` of the best ``k`` rows matching any of ``phrases`` (in
        the query's order), best (lowest) first, ties by node id; ``None`` means "run
        the SQL statement this time". Reads happen in ``conn``'s current transaction."""
        if not phrases or k <= 0:
            return None
        with self._lock:
            # Which phrases were seen is only a policy (when to build), so it is decided
            # before the fingerprint is read: a query that will run the statement anyway
            # does not pay for the read (the node index it walks is often out of SQLite's
            # page cache after an FTS query: ~0.5-0.7 ms at 104k nodes). Entries are used
            # only after the fingerprint check below.
            first = [p for p in phrases if self._seen.get(p, 0) < self.build_after
                     and p not in self._entries and p not in self._small]
            for p in phrases:
                self._seen[p] = self._seen.get(p, 0) + 1
            if len(self._seen) > MAX_SEEN:
                self._prune_seen()
            if first or all(p in self._small for p in phrases):
                return None  # new phrases, or only rare ones: FTS5 itself is cheap
            fp = _nodes_fingerprint(conn, _SPACE)
            if self._fp is None:  # the sightings so far are this store's
                self._fp = fp
            elif fp != self._fp:  # the store changed: entries go, hot phrases are read again
                self._reset(fp)
            need = [p for p in phrases if p not in self._entries and p not in self._small]
            if need and self._connect is not None:
                self._schedule(fp, need)
                return None
            parts = self._parts(conn, phrases)
            if parts is None:
                return None
            nodes = self._nodes
            assert nodes is not None
            try:
                allowed = nodes.allowed(conn, repository, doc_type)
            except ValueError:  # defensive: filter columns of another snapshot
                return None
            self.served += 1
        return _rank(nodes, parts, k, allowed)

    def _parts(self, conn: apsw.Connection, phrases: list[str],
               ) -> list[_Postings] | None:
        """Each phrase's postings, building those seen before (lock held); ``None``
        when the statement is expected to be cheaper (see :meth:`_worth_it`)."""
        if self._nodes is None:
            self._nodes = _load_nodes(conn)
        got: dict[str, _Postings] = {}
        for p in phrases:  # build what was seen before: kept, or known to be rare
            if p not in self._entries and p not in self._small:
                entry = self._read(conn, p)
                if entry is None:
                    return None
                got[p] = entry
                self._store(p, entry)
        if not self._worth_it(phrases, got):
            return None
        out: list[_Postings] = []
        for p in phrases:
            entry = got.get(p) or self._entries.get(p)
            if entry is None:  # rare: read its terms for this query only
                entry = self._read(conn, p)
                if entry is None:
                    return None
            elif p in self._entries:
                self._entries.move_to_end(p)
            out.append(entry)
        return out

    def _store(self, p: str, entry: _Postings) -> None:
        """Keep ``entry`` (or only its row count when the phrase is rare); lock held."""
        if len(entry.pos) < self.min_rows:
            self._small[p] = len(entry.pos)
        else:
            self.builds += 1
            self._entries[p] = entry
            self._bytes += entry.nbytes
            self._evict()

    def _schedule(self, fp: Fingerprint, need: list[str]) -> None:
        """Read ``need`` on the worker thread (lock held)."""
        todo = [p for p in need if p not in self._pending]
        if not todo:
            return
        self._pending.update(todo)
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memlens-lexical")
        self._pool.submit(self._build_background, fp, todo)

    def _build_background(self, fp: Fingerprint, todo: list[str]) -> None:
        from memlens.core.store.db import read_txn

        assert self._connect is not None
        try:
            if self._worker_conn is None:
                self._worker_conn = self._connect()
            conn = self._worker_conn
            with read_txn(conn):
                if _nodes_fingerprint(conn, _SPACE) != fp:
                    return  # the store moved on: the next sightings start again
                with self._lock:
                    nodes = self._nodes if self._fp == fp else None
                if nodes is None:
                    nodes = _load_nodes(conn)
                read = {p: _read(conn, nodes, p, self.weights) for p in todo}
            with self._lock:
                if self._fp != fp:
                    return
                if self._nodes is None:
                    self._nodes = nodes
                for p, entry in read.items():
                    if entry is not None and p not in self._entries and p not in self._small:
                        self._store(p, entry)
        except (apsw.Error, ValueError, MemoryError):
            return  # queries keep using the statement; a later sighting tries again
        finally:
            with self._lock:
                self._pending.difference_update(todo)

    def _worth_it(self, phrases: list[str], got: dict[str, _Postings]) -> bool:
        """Whether adding postings beats the statement: FTS5 scores every matching row
        (~0.4 µs), the postings cost a fixed ~0.5 ms over all nodes plus, for each rare
        phrase not already read, its own statement and fetch (~0.8 µs a row)."""
        kept = sum(len(self._entries[p].pos) if p in self._entries else len(got[p].pos)
                   for p in phrases if p in self._entries or p in got)
        rare = sum(self._small[p] for p in phrases if p in self._small and p not in got)
        return kept >= 2 * rare + self.fixed_rows

    def _read(self, conn: apsw.Connection, p: str) -> _Postings | None:
        assert self._nodes is not None
        return _read(conn, self._nodes, p, self.weights)

    def _evict(self) -> None:
        while self._bytes > self.budget_bytes and len(self._entries) > 1:
            _, old = self._entries.popitem(last=False)
            self._bytes -= old.nbytes


def _load_nodes(conn: apsw.Connection) -> _Nodes:
    import numpy as np

    # No ORDER BY: SQLite then reads the ids from its smallest covering index instead of
    # walking the table's pages (88 -> 25 ms at 104k nodes); numpy sorts them.
    return _Nodes(np.sort(np.fromiter(conn.execute("SELECT id FROM knowledge_nodes"),
                                      dtype=[("id", np.int64)])["id"]))


def _read(conn: apsw.Connection, nodes: _Nodes, phrase: str, weights: str,
          ) -> _Postings | None:
    """One phrase's bm25 terms at ``conn``'s snapshot, as positions into ``nodes``;
    ``None`` when FTS5 rejects the phrase or a row is not one of ``nodes``."""
    import numpy as np

    try:
        got = np.fromiter(conn.execute(
            f"SELECT rowid, bm25(knowledge_nodes_fts, {weights})"
            " FROM knowledge_nodes_fts WHERE knowledge_nodes_fts MATCH ?", (phrase,)),
            dtype=[("id", np.int64), ("score", np.float64)])
    except apsw.SQLError:
        return None
    ids, score = np.ascontiguousarray(got["id"]), np.ascontiguousarray(got["score"])
    if len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        order = np.argsort(ids, kind="stable")
        ids, score = ids[order], score[order]
    pos = np.searchsorted(nodes.ids, ids)
    if len(ids) and (int(pos.max()) >= len(nodes.ids)
                     or not bool(np.array_equal(nodes.ids[pos], ids))):
        return None  # a row that is not a node: let SQL answer
    return _Postings(pos=pos.astype(np.int32), score=score)


def _rank(nodes: _Nodes, parts: list[_Postings], k: int,
          allowed: Any) -> list[tuple[int, float]]:
    """Sum the phrases' terms in query order; the best ``k`` by (score, node id)."""
    import numpy as np

    if allowed is False:
        return []
    n = len(nodes.ids)
    acc = np.zeros(n, dtype=np.float64)
    hit = np.zeros(n, dtype=bool)
    for part in parts:
        acc[part.pos] += part.score  # positions are unique within a phrase
        hit[part.pos] = True
    if allowed is not None:
        hit &= allowed
    cand = np.flatnonzero(hit)
    if len(cand) == 0:
        return []
    sc = acc[cand]
    if len(cand) > k:
        kth = np.partition(sc, k - 1)[k - 1]
        keep = sc <= kth  # every row tied with the k-th, then cut by id below
        cand, sc = cand[keep], sc[keep]
    order = np.lexsort((cand, sc))[:k]  # score, then node id (ids ascend with positions)
    return [(int(nodes.ids[cand[i]]), float(sc[i])) for i in order]
