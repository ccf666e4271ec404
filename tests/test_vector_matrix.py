"""The in-RAM vector matrix (memlens.core.search.vector_matrix): same neighbours as sqlite-vec,
invalidated by every projection change, never mixing snapshots, loaded only when it pays."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlens.core.embedders.registry import make_embedder
from memlens.core.ingest.sources import roots_for_path
from memlens.core.search import engine as search_mod
from memlens.core.search import vector_matrix as vm
from memlens.core.service import MemoryService
from memlens.core.store import db as dbm
from tests.conftest import CORPUS, MemoryTree
from tests.test_search import _service

QUERIES = ["how do we deploy", "sqlite busy timeout", "release checklist", "cache invalidation",
           "python typing", "wal checkpoint", "zebraquokka", "test fixtures", "logging format"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryService]:
    base = tmp_path_factory.mktemp("vm")
    shutil.copytree(CORPUS, base / "corpus", ignore=shutil.ignore_patterns("*.jsonl", "*.md.txt"))
    s = _service(base, make_embedder("hashing", {}))
    s.ingest(roots_for_path(base / "corpus"))
    yield s
    s.close()


def _space(svc: MemoryService) -> str:
    space = search_mod.vector_space_for(svc.conn(), svc.embedder)
    assert space is not None
    return space


def _sql_knn(conn: Any, space: str, q: Any, k: int, repository: str | None = None,
             doc_type: str | None = None) -> list[tuple[int, float]]:
    sql = (f"SELECT node_id, distance FROM {dbm.vec_table_name(space)}"
           " WHERE embedding MATCH ? AND k=?")
    params: list[Any] = [np.asarray(q, dtype=np.float32).tobytes(), k]
    if repository:
        sql += " AND repository=?"
        params.append(repository)
    if doc_type:
        sql += " AND doc_type=?"
        params.append(doc_type)
    return [(int(a), float(b)) for a, b in conn.execute(sql + " ORDER BY distance", params)]


def _load(svc: MemoryService, **kw: Any) -> vm.VectorMatrix:
    conn = svc.conn()
    with dbm.read_txn(conn):
        return vm.load(conn, _space(svc), svc.embedder.dim, svc.embedder.metric, **kw)


def test_matrix_knn_equals_sqlite_vec(corpus: MemoryService) -> None:
    """Same neighbours, same order, same distances as vec0 at several depths."""
    conn, space = corpus.conn(), _space(corpus)
    m = _load(corpus)
    assert len(m.ids) == int(conn.execute(
        "SELECT COUNT(*) FROM knowledge_nodes WHERE vector_space=?", (space,)).fetchone()[0])
    for text in QUERIES:
        q = corpus.embedder.embed_query(text)
        for k in (1, 20, 50, 4096):
            want = _sql_knn(conn, space, q, k)
            got = m.knn(np.asarray(q, dtype=np.float32), k)
            assert [i for i, _ in got] == [i for i, _ in want], (text, k)
            assert np.allclose([d for _, d in got], [d for _, d in want], atol=1e-5)


def test_filters_match_the_sql_path(corpus: MemoryService) -> None:
    """repository / doc_type filters: the top rows among the allowed rows only, as vec0."""
    conn, space = corpus.conn(), _space(corpus)
    repos = [r[0] for r in conn.execute("SELECT DISTINCT repository FROM knowledge_nodes")]
    types = [r[0] for r in conn.execute(
        "SELECT DISTINCT doc_type FROM knowledge_nodes WHERE doc_type IS NOT NULL")]
    assert len(repos) >= 2 and types
    m = _load(corpus)
    cache = vm.VectorMatrixCache(eager=True)
    combos = [(r, None) for r in repos] + [(None, t) for t in types] + \
        [(repos[0], types[0]), ("no-such-repo", None), (None, "no-such-type")]
    for text in QUERIES[:5]:
        q = np.asarray(corpus.embedder.embed_query(text), dtype=np.float32)
        for repo, dtype in combos:
            want = _sql_knn(conn, space, q, 20, repo, dtype)
            with dbm.read_txn(conn):
                got = m.knn(q, 20, m.allowed(conn, repo, dtype))
                via_cache = cache.knn(conn, space, corpus.embedder.dim, "cosine", q, 20,
                                      repository=repo, doc_type=dtype)
            assert [i for i, _ in got] == [i for i, _ in want], (text, repo, dtype)
            assert via_cache == got
    assert cache.loads == 1


def test_search_results_identical_with_and_without_matrix(corpus: MemoryService) -> None:
    """Vector and hybrid return the same hits, ranks, notes and scores on either path."""
    conn = corpus.conn()
    cache = vm.VectorMatrixCache(eager=True)
    repo = str(conn.execute("SELECT repository FROM knowledge_nodes LIMIT 1").fetchone()[0])
    for text in QUERIES:
        for mode in ("vector", "hybrid"):
            for filt in ({}, {"repository": repo}):
                with dbm.read_txn(conn):
                    a = search_mod.search(conn, text, mode=mode, embedder=corpus.embedder,
                                          k=10, **filt)
                    b = search_mod.search(conn, text, mode=mode, embedder=corpus.embedder,
                                          k=10, matrix=cache, **filt)
                ja, jb = a.as_json(), b.as_json()
                sa = [h.pop("score") for h in ja["hits"]]
                sb = [h.pop("score") for h in jb["hits"]]
                assert ja == jb, (text, mode, filt)
                # float32 sums in another order: distances agree to ~1e-7
                assert np.allclose(sa, sb, rtol=1e-5, atol=1e-5)
    assert cache.loads == 1


def test_shadow_read_equals_vec0_interface(make_service: Callable[..., object],
                                           tree: MemoryTree) -> None:
    """Reading vec0's chunk tables gives exactly the rows of ``SELECT ... FROM vec0``,
    also after deletes left invalid slots behind."""
    for i in range(12):
        tree.write(f"n{i}.md", f"# Note {i}\n\nalpha beta {i} gamma\n\n## Part\n\ndelta {i * 7}\n")
    svc = make_service()
    assert isinstance(svc, MemoryService)
    svc.ingest(svc.resolve_roots([tree.memdir()]))
    for i in range(0, 12, 3):
        tree.write(f"n{i}.md", f"# Note {i}\n\nchanged words {i}\n")
    tree.remove("n1.md")
    svc.ingest(svc.resolve_roots([tree.memdir()]))
    fast, slow = _load(svc), _load(svc, shadow=False)
    assert fast.source == "shadow" and slow.source == "vec0"
    assert np.array_equal(fast.ids, slow.ids)
    assert np.array_equal(fast.matrix, slow.matrix)
    live = svc.conn().execute("SELECT COUNT(*) FROM knowledge_nodes").fetchone()[0]
    assert len(fast.ids) == live


def _ingested(make_service: Callable[..., object], tree: MemoryTree,
              files: dict[str, str]) -> tuple[MemoryService, list[Any]]:
    """A service over ``files`` written to the memory folder and ingested: (svc, roots)."""
    for name, text in files.items():
        tree.write(name, text)
    svc = make_service()
    assert isinstance(svc, MemoryService)
    roots = svc.resolve_roots([tree.memdir()])
    svc.ingest(roots)
    return svc, roots


def _fp(svc: MemoryService) -> vm.Fingerprint:
    conn = svc.conn()
    with dbm.read_txn(conn):
        return vm.fingerprint(conn, _space(svc))


def test_fingerprint_moves_on_every_projection_change(make_service: Callable[..., object],
                                                      tree: MemoryTree) -> None:
    svc, roots = _ingested(make_service, tree, {
        "a.md": "# A\n\nfirst note about ports\n\n## More\n\nsecond part\n",
        "b.md": "# B\n\nanother note\n"})
    f0 = _fp(svc)
    svc.search("ports", mode="lexical")  # a search (and its history row) changes nothing
    svc.remember_search("ports", "lexical", "cli")
    assert _fp(svc) == f0
    # Same number of vectors, replaced by new ones: seq moves, count does not.
    count0 = len(_load(svc).ids)
    tree.write("a.md", "# A\n\nfirst note about sockets\n\n## More\n\nsecond part\n")
    svc.ingest(roots)
    f1 = _fp(svc)
    assert len(_load(svc).ids) == count0
    assert f1 != f0 and f1[2] == f0[2] and f1[1] > f0[1]
    # Rechunk: the vectors of the document are replaced.
    cfg = svc.chunker_config_with({"strategy": "whole"})
    svc.rechunk_and_project(None, cfg)
    f2 = _fp(svc)
    assert f2 != f1
    # Delete only: the count moves.
    tree.remove("b.md")
    svc.ingest(roots)
    f3 = _fp(svc)
    assert f3 != f2 and f3[1] == f2[1] and f3[2] < f2[2]


def test_cache_loads_on_second_search_and_reloads_after_change(
        make_service: Callable[..., object], tree: MemoryTree) -> None:
    """A one-shot search never loads; the next search at an unchanged store starts a
    background load (and is answered by vec0); a projection change makes the next
    search use vec0 and still see the new vectors, and the matrix is rebuilt."""
    svc, roots = _ingested(make_service, tree, {
        "a.md": "# Ports\n\nthe dev server listens on port 8080\n",
        "b.md": "# Deploy\n\nwe deploy with a blue green switch\n"})
    cache = svc.vector_cache()

    def ids(mode: str = "vector") -> list[int]:
        out = [h.node_id for h in svc.search("server port", mode=mode, all_projects=True).hits]
        cache.wait_loaded(30)
        return out

    first = ids()
    assert cache.loads == 0
    second = ids()
    assert cache.loads == 1 and cache.served == 0  # loaded after the second search
    assert ids() == first == second
    assert cache.served == 1  # answered by the matrix now
    ids("hybrid")
    assert cache.loads == 1 and cache.served == 2  # reused: same fingerprint
    tree.write("a.md", "# Ports\n\nthe dev server listens on port 9090\n")
    svc.ingest(roots)
    new_ids = {int(r[0]) for r in svc.conn().execute(
        "SELECT id FROM knowledge_nodes WHERE logical_path='a.md'")}
    third = ids()
    assert cache.loads == 1 and cache.served == 2  # store changed: vec0 answers
    assert new_ids & set(third)
    fourth = ids()
    assert cache.loads == 2 and fourth == third
    assert ids() == third and cache.served == 3
    svc.close()
    assert cache.nbytes() == 0


def test_search_sees_its_own_snapshot(make_service: Callable[..., object],
                                      tree: MemoryTree) -> None:
    """A read transaction opened before another connection's projection swap keeps
    getting the old vectors from the cache; the next transaction gets the new ones."""
    tree.write("a.md", "# Ports\n\nthe dev server listens on port 8080\n")
    tree.write("b.md", "# Deploy\n\nwe deploy with a blue green switch\n")
    reader = make_service()
    writer = make_service()
    assert isinstance(reader, MemoryService) and isinstance(writer, MemoryService)
    roots = writer.resolve_roots([tree.memdir()])
    writer.ingest(roots)
    conn = reader.conn()
    cache = vm.VectorMatrixCache(eager=True)
    emb = reader.embedder

    def ids() -> set[int]:
        res = search_mod.search(conn, "dev server port", mode="vector", embedder=emb, k=10,
                                matrix=cache)
        return {h.node_id for h in res.hits}

    with dbm.read_txn(conn):
        before = ids()
        tree.write("a.md", "# Ports\n\nthe dev server listens on port 9090 now\n")
        writer.ingest(roots)  # commits a swap of a.md's nodes on another connection
        assert ids() == before  # still this transaction's snapshot
    assert cache.loads == 1
    with dbm.read_txn(conn):
        after = ids()
    assert cache.loads == 2 and after != before
    fresh = {int(r[0]) for r in conn.execute("SELECT id FROM knowledge_nodes")}
    assert after <= fresh and before - fresh  # the old a.md node is gone for good


def test_l2_metric_matches_sqlite_vec(tmp_path: Path) -> None:
    """The l2 path computes vec0's L2 distance (not used by the shipped embedders)."""
    conn = dbm.connect(tmp_path / "l2.db")
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(300, 8)).astype(np.float32)
    with dbm.write_txn(conn):
        conn.execute("CREATE VIRTUAL TABLE vec_nodes_l2 USING vec0(node_id INTEGER PRIMARY KEY,"
                     " embedding float[8] distance_metric=l2, repository TEXT, doc_type TEXT)")
        conn.executemany("INSERT INTO vec_nodes_l2(node_id, embedding, repository, doc_type)"
                         " VALUES (?,?,?,?)",
                         [(i + 1, v.tobytes(), "r", "") for i, v in enumerate(vecs)])
    with dbm.read_txn(conn):
        m = vm.load(conn, "l2", 8, "l2")
    for _ in range(5):
        q = rng.normal(size=8).astype(np.float32)
        want = _sql_knn(conn, "l2", q, 15)
        got = m.knn(q, 15)
        assert [i for i, _ in got] == [i for i, _ in want]
        assert np.allclose([d for _, d in got], [d for _, d in want], atol=1e-4)
    conn.close()


def test_ties_follow_vec0_scan_order(tmp_path: Path) -> None:
    """Equal distances come back in vec0's order (chunk ascending, newest slot first),
    also when k cuts through a group of ties and after deletes."""
    conn = dbm.connect(tmp_path / "ties.db")
    base = np.eye(4, dtype=np.float32)
    with dbm.write_txn(conn):
        conn.execute("CREATE VIRTUAL TABLE vec_nodes_t USING vec0(node_id INTEGER PRIMARY KEY,"
                     " embedding float[4] distance_metric=cosine, repository TEXT,"
                     " doc_type TEXT)")
        conn.executemany("INSERT INTO vec_nodes_t(node_id, embedding, repository, doc_type)"
                         " VALUES (?,?,?,?)",
                         [(i, base[i % 3].tobytes(), "r", "") for i in range(1, 2600)])
    with dbm.write_txn(conn):
        conn.executemany("DELETE FROM vec_nodes_t WHERE node_id=?", [(i,) for i in (3, 1026, 2049)])
    with dbm.read_txn(conn):
        m = vm.load(conn, "t", 4, "cosine")
    assert m.source == "shadow"
    for q in (base[0], base[1], base[0] + base[1], base[3]):
        for k in (1, 7, 400, 1500, 2600):
            want = _sql_knn(conn, "t", q, k)
            got = m.knn(q, k)
            assert [i for i, _ in got] == [i for i, _ in want], (q, k)
    conn.close()


def _old_read_shadow(conn: Any, space: str, dim: int) -> tuple[Any, Any, Any]:
    """The loader before issue 43 (lists every blob, masks copies, reorders the matrix):
    the reference the streaming read must equal."""
    t = dbm.vec_table_name(space)
    chunks = {int(c): (int(s), bytes(v), bytes(r)) for c, s, v, r in
              conn.execute(f"SELECT chunk_id, size, validity, rowids FROM {t}_chunks")}
    parts = []
    for cid, vec in list(conn.execute(f"SELECT rowid, vectors FROM {t}_vector_chunks00"
                                      " ORDER BY rowid")):
        size, val, rids = chunks[int(cid)]
        ok = np.unpackbits(np.frombuffer(val, np.uint8), bitorder="little")[:size].astype(bool)
        key = len(parts) * (1 << 32) + (size - 1 - np.flatnonzero(ok))
        parts.append((np.frombuffer(rids, np.int64)[ok],
                      np.frombuffer(vec, np.float32).reshape(size, dim)[ok], key))
    ids = np.concatenate([p[0] for p in parts])
    mat = np.concatenate([p[1] for p in parts])
    tie = np.concatenate([p[2] for p in parts])
    order = np.argsort(ids, kind="stable")
    mat = np.array(mat[order], dtype=np.float32)
    norms = np.linalg.norm(mat, axis=1)
    norms[norms == 0] = 1.0
    mat /= norms[:, None].astype(np.float32)
    return ids[order], mat, tie[order]


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(1, 40)), min_size=1, max_size=40),
       seed=st.integers(0, 2**16))
def test_streaming_load_equals_the_old_loader(tmp_path: Path, ops: list[tuple[bool, int]],
                                              seed: int) -> None:
    """Mixed valid and invalid slots (inserts, deletes, slots refilled in the last chunk,
    chunks of 8): the streamed matrix, ids and tie keys equal the old loader's (which
    copied the matrix four times) and the vec0 interface's rows; zero vectors stay zero."""
    rng = np.random.default_rng(seed)
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "s.db"  # one per example
    conn = dbm.connect(path)
    try:
        with dbm.write_txn(conn):
            conn.execute("CREATE VIRTUAL TABLE vec_nodes_s USING vec0(node_id INTEGER PRIMARY"
                         " KEY, embedding float[6] distance_metric=cosine, repository TEXT,"
                         " doc_type TEXT, chunk_size=8)")
        live: list[int] = []
        next_id = 1
        for insert, n in ops:
            with dbm.write_txn(conn):
                if insert or not live:
                    vecs = rng.normal(size=(n, 6)).astype(np.float32)
                    vecs[rng.random(n) < 0.1] = 0.0
                    for v in vecs:
                        conn.execute("INSERT INTO vec_nodes_s(node_id, embedding, repository,"
                                     " doc_type) VALUES (?,?,?,?)",
                                     (next_id, v.tobytes(), "r", ""))
                        live.append(next_id)
                        next_id += 1
                else:
                    for i in rng.choice(live, size=min(n, len(live)), replace=False):
                        conn.execute("DELETE FROM vec_nodes_s WHERE node_id=?", (int(i),))
                        live.remove(int(i))
        with dbm.read_txn(conn):
            m = vm.load(conn, "s", 6, "cosine")
            public = vm.load(conn, "s", 6, "cosine", shadow=False)
            if not live:
                assert len(m.ids) == 0
                return
            ids, mat, tie = _old_read_shadow(conn, "s", 6)
        assert m.source == "shadow"
        assert np.array_equal(m.ids, ids) and np.array_equal(m.ids, sorted(live))
        assert np.array_equal(m.matrix, mat)
        assert m.tie is not None and np.array_equal(m.tie, tie)
        assert np.array_equal(public.ids, ids) and np.array_equal(public.matrix, mat)
    finally:
        conn.close()


def test_load_peak_is_the_matrix_plus_one_chunk(tmp_path: Path) -> None:
    """The load allocates the matrix once: its peak traced allocation stays under 1.5x
    the matrix (the loader before issue 43 held every chunk blob, masked copies, the
    concatenated matrix and a reordered one: about 4x). Deletes and a refilled slot make
    the rows need both the mask and the id sort."""
    n, dim = 20_000, 64
    conn = dbm.connect(tmp_path / "peak.db")
    rng = np.random.default_rng(3)
    with dbm.write_txn(conn):
        conn.execute("CREATE VIRTUAL TABLE vec_nodes_p USING vec0(node_id INTEGER PRIMARY KEY,"
                     f" embedding float[{dim}] distance_metric=cosine, repository TEXT,"
                     " doc_type TEXT)")
        conn.executemany("INSERT INTO vec_nodes_p(node_id, embedding, repository, doc_type)"
                         " VALUES (?,?,?,?)",
                         [(i + 1, v.tobytes(), "r", "") for i, v in
                          enumerate(rng.normal(size=(n, dim)).astype(np.float32))])
    with dbm.write_txn(conn):
        conn.executemany("DELETE FROM vec_nodes_p WHERE node_id=?",
                         [(i,) for i in (5, 700, 2049, n - 3)])
        conn.execute("INSERT INTO vec_nodes_p(node_id, embedding, repository, doc_type)"
                     " VALUES (?,?,?,?)", (n + 1, np.ones(dim, np.float32).tobytes(), "r", ""))
    import tracemalloc

    with dbm.read_txn(conn):
        vm.load(conn, "p", dim, "cosine")  # numpy's lazy imports happen outside the trace
        tracemalloc.start()
        try:
            m = vm.load(conn, "p", dim, "cosine")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert m.source == "shadow" and len(m.ids) == n - 3
    assert bool(np.all(m.ids[1:] > m.ids[:-1]))
    assert peak <= 1.5 * m.matrix.nbytes, (peak, m.matrix.nbytes)
    conn.close()
