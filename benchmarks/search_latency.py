"""Search latency per mode at 1k, 10k and 100k chunks, with peak memory.

Usage::

    uv run python benchmarks/search_latency.py [--chunks 1000,10000,100000]
        [--embedder hashing,static] [--queries 200] [--cache /tmp/memlens-bench-cache]
        [--json] [--rebuild]

For each target size a synthetic corpus with the real auto-memory size mix
(:func:`memlens.bench.generate_corpus`; median ~1.5 KB, p90 ~4 KB, max 14 KB)
is generated with enough files to give about that many chunks under the default
chunker (adaptive 400/80), ingested and projected through ``MemoryService`` (the
product path) with a 384-d hashing embedder and, when it loads, the shipped static
model (256-d). Databases are cached under ``--cache`` keyed by everything that
changes them, because building 100k chunks takes minutes; the build time is
reported when a database is built.

Search is timed through ``MemoryService.search`` (k=10, per-document cap 2) over
generated queries, after a warm-up (which also loads the service's in-RAM vector
matrix, so vector and hybrid are timed on it), in a **fresh subprocess per database**, so
the peak RSS it reports (``ru_maxrss``) is that of opening the database and
searching it, not of building it. The hybrid time is also broken down into its
parts (lexical candidate query, query embedding, sqlite-vec KNN, node metadata
fetch) to show where the time goes.

``--lexical`` instead times lexical search against its own bm25 statement (same FTS5
expression, same depth), per query and interleaved, on the generated queries and on
two-word queries of the most frequent index terms (rows matching: tens of thousands at
100k chunks), wall and CPU.

``--matrix`` instead compares, per query and interleaved, the vector paths on each
database: sqlite-vec's ``vec0`` KNN, the in-RAM matrix of
:mod:`memlens.core.search.vector_matrix` and the floor (numpy float32 brute force over the
same vectors already in RAM, no database), the KNN alone (k = 50, the hybrid depth)
and whole ``search`` calls (vector and hybrid, k = 10) with and without the matrix,
wall and CPU time; recall@20 of each against exact float64 cosine; matrix load time
(chunk tables and the vec0 interface) and its RAM.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memlens import bench
from memlens.core.chunking.chunker import CHUNKER_VERSION, DEFAULT_CONFIG, chunk_markdown
from memlens.core.search import engine as search_mod
from memlens.core.store.db import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parent.parent
SEED = 0


def _embedder_opts(name: str) -> dict[str, Any]:
    return {"dim": 384} if name == "hashing" else {}


def chunks_per_file(sample: int = 2000) -> float:
    """Chunks per generated file under the default chunker (no database needed)."""
    with tempfile.TemporaryDirectory() as d:
        bench.generate_corpus(Path(d) / "s", sample, seed=SEED + 99)
        n = 0
        files = sorted((Path(d) / "s").rglob("*.md"))
        for p in files:
            n += len(chunk_markdown(p.read_text(), DEFAULT_CONFIG, path=p.name).chunks)
    return n / len(files)


def _key(files: int, fingerprint: str) -> str:
    raw = json.dumps([files, SEED, fingerprint, DEFAULT_CONFIG.canonical_json(), CHUNKER_VERSION,
                      SCHEMA_VERSION, bench.GENERATOR_VERSION])
    return hashlib.sha256(raw.encode()).hexdigest()[:12]


def build(db: Path, files: int, embedder_name: str) -> dict[str, Any]:
    """Generate ``files`` files and ingest + project them into ``db`` (child process)."""
    from memlens.core.config.settings import load_settings
    from memlens.core.embedders.registry import make_embedder
    from memlens.core.ingest.sources import roots_for_path
    from memlens.core.service import MemoryService

    emb = make_embedder(embedder_name, _embedder_opts(embedder_name))
    corpus = db.parent / f"corpus-{files}-{SEED}"
    t0 = time.perf_counter()
    if not corpus.exists():
        bench.generate_corpus(corpus, files, seed=SEED)
    t1 = time.perf_counter()
    tmp = db.with_suffix(".building")
    for suffix in ("", "-wal", "-shm"):
        Path(str(tmp) + suffix).unlink(missing_ok=True)
    settings = load_settings(db.parent / "none.toml", env={}, overrides={"db": str(tmp)})
    svc = MemoryService(settings, clock=bench.FixedClock(), embedder=emb,
                        install_key=bench.FIXED_INSTALL_KEY)
    svc.ingest(roots_for_path(corpus), project=False)
    t2 = time.perf_counter()
    bench.project_all(svc)
    t3 = time.perf_counter()
    size = bench.index_size(svc.conn(), tmp)
    chunks = int(svc.conn().execute("SELECT COUNT(*) FROM knowledge_nodes").fetchone()[0])
    svc.close()
    tmp.rename(db)
    return {"files": files, "chunks": chunks, "generate_seconds": round(t1 - t0, 2),
            "ingest_seconds": round(t2 - t1, 2), "project_seconds": round(t3 - t2, 2),
            "build_seconds": round(t3 - t0, 2), "build_maxrss_mb": _maxrss_mb(), **size}


def _maxrss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _stats(times: list[float]) -> dict[str, float]:
    return {"p50_ms": round(bench.percentile(times, 50), 3),
            "p95_ms": round(bench.percentile(times, 95), 3),
            "mean_ms": round(statistics.fmean(times), 3)}


def measure(db: Path, embedder_name: str, n_queries: int) -> dict[str, Any]:
    """Time every mode and the parts of hybrid on one database (child process)."""
    from memlens.core.config.settings import load_settings
    from memlens.core.embedders.registry import make_embedder
    from memlens.core.service import MemoryService

    rss0 = _maxrss_mb()
    emb = make_embedder(embedder_name, _embedder_opts(embedder_name))
    settings = load_settings(db.parent / "none.toml", env={}, overrides={"db": str(db)})
    svc = MemoryService(settings, embedder=emb, install_key=bench.FIXED_INSTALL_KEY)
    conn = svc.conn()
    queries = bench.generate_queries(n_queries, seed=3)
    out: dict[str, Any] = {"modes": {}, "parts": {}}
    out["chunks"] = int(conn.execute("SELECT COUNT(*) FROM knowledge_nodes").fetchone()[0])
    for mode in search_mod.MODES:
        for q in queries[:10]:
            svc.search(q, mode=mode, k=10)
        svc.vector_cache().wait_loaded()  # steady state: the in-RAM matrix is loaded
        times = []
        hits = 0
        for q in queries:
            t = time.perf_counter()
            r = svc.search(q, mode=mode, k=10)
            times.append(1000 * (time.perf_counter() - t))
            hits += len(r.hits)
        out["modes"][mode] = {**_stats(times), "mean_hits": round(hits / len(queries), 2)}
    # Parts of hybrid (k=10 -> 50 candidates from each side).
    n = max(search_mod.CANDIDATES, 30)
    parts: dict[str, list[float]] = {"lexical_candidates": [], "embed_query": [],
                                     "vector_candidates": [], "knn_sql_only": []}
    space = search_mod.vector_space_for(conn, emb)
    from memlens.core.store.db import vec_table_name

    for q in queries:
        t = time.perf_counter()
        search_mod.lexical(conn, q, k=n)
        parts["lexical_candidates"].append(1000 * (time.perf_counter() - t))
        t = time.perf_counter()
        vec = emb.embed_query(q)
        parts["embed_query"].append(1000 * (time.perf_counter() - t))
        t = time.perf_counter()
        search_mod.vector(conn, q, emb, k=n)
        parts["vector_candidates"].append(1000 * (time.perf_counter() - t))
        if space is not None:
            t = time.perf_counter()
            list(conn.execute(f"SELECT node_id, distance FROM {vec_table_name(space)}"
                              " WHERE embedding MATCH ? AND k=?", (vec.tobytes(), n)))
            parts["knn_sql_only"].append(1000 * (time.perf_counter() - t))
    out["parts"] = {k: _stats(v) for k, v in parts.items() if v}
    svc.close()
    out["maxrss_mb"] = _maxrss_mb()
    out["start_rss_mb"] = rss0
    return out


def _timed(f: Any) -> tuple[Any, float, float]:
    w, c = time.perf_counter(), time.process_time()
    r = f()
    return r, 1000 * (time.perf_counter() - w), 1000 * (time.process_time() - c)


def _wc(wall: list[float], cpu: list[float]) -> dict[str, float]:
    return {"wall_p50_ms": round(bench.percentile(wall, 50), 3),
            "wall_p95_ms": round(bench.percentile(wall, 95), 3),
            "cpu_p50_ms": round(bench.percentile(cpu, 50), 3),
            "cpu_p95_ms": round(bench.percentile(cpu, 95), 3)}


def _matrix_case(name: str, conn: Any, table: str, cache: Any, emb: Any, floor_m: Any,
                 ids: Any, text: str, q: Any, qn: Any) -> list[int]:
    """One timed case of :func:`measure_matrix`: the node ids it returns."""
    import numpy as np

    if name == "knn_vec0":
        return [int(a) for a, _ in conn.execute(
            f"SELECT node_id, distance FROM {table} WHERE embedding MATCH ? AND k=50"
            " ORDER BY distance", (q.tobytes(),))]
    if name == "knn_matrix":
        space = table.removeprefix("vec_nodes_")
        return [i for i, _ in cache.knn(conn, space, emb.dim, emb.metric, q, 50) or []]
    if name == "knn_floor":
        s = floor_m @ qn
        top = np.argpartition(-s, 50)[:50]
        return [int(x) for x in ids[top[np.argsort(-s[top])]]]
    mode, path = name.split("_")
    res = search_mod.search(conn, text, mode=mode, embedder=emb, k=10,
                            matrix=cache if path == "matrix" else None)
    return [h.node_id for h in res.hits]


def measure_matrix(db: Path, embedder_name: str, n_queries: int) -> dict[str, Any]:
    """vec0 KNN vs the in-RAM matrix vs the numpy floor on one database (child process)."""
    import numpy as np

    from memlens.core.embedders.registry import make_embedder
    from memlens.core.search import vector_matrix as vm
    from memlens.core.store import db as dbm

    emb = make_embedder(embedder_name, _embedder_opts(embedder_name))
    conn = dbm.connect(db, create=False)
    space = search_mod.vector_space_for(conn, emb)
    assert space is not None
    table = dbm.vec_table_name(space)
    out: dict[str, Any] = {"load": {}}
    rss0 = _maxrss_mb()
    for how in ("shadow", "vec0"):
        walls, cpus = [], []
        for _ in range(3):
            with dbm.read_txn(conn):
                m, w, c = _timed(lambda h=how: vm.load(conn, space, emb.dim, emb.metric,
                                                       shadow=h == "shadow"))
            walls.append(w)
            cpus.append(c)
        out["load"][how] = {"wall_p50_ms": round(statistics.median(walls), 1),
                            "cpu_p50_ms": round(statistics.median(cpus), 1),
                            "source": m.source}
        del m
    cache = vm.VectorMatrixCache(eager=True)
    with dbm.read_txn(conn):
        cache.warm(conn, space, emb.dim, emb.metric)
        mat = cache.get(conn, space, emb.dim, emb.metric)
    assert mat is not None
    out["rows"] = len(mat.ids)
    out["matrix_mb"] = round(mat.nbytes / 2**20, 1)
    out["rss_after_loads_mb"] = _maxrss_mb()
    out["rss_before_loads_mb"] = rss0
    floor_m = np.array(mat.matrix)  # the floor's own copy: plain float32, in RAM
    exact = floor_m.astype(np.float64)
    queries = bench.generate_queries(n_queries, seed=3)
    names = ("knn_vec0", "knn_matrix", "knn_floor", "vector_sql", "vector_matrix",
             "hybrid_sql", "hybrid_matrix")
    t: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in names}
    recall: dict[str, list[float]] = {"vec0": [], "matrix": [], "floor": []}
    same_top10 = 0
    differing: list[str] = []

    def add(name: str, w: float, c: float) -> None:
        t[name][0].append(w)
        t[name][1].append(c)

    for qi, text in enumerate(queries):
        q = np.asarray(emb.embed_query(text), dtype=np.float32)
        if not np.any(q):
            continue
        qn = q / np.linalg.norm(q)
        truth = set(mat.ids[np.argsort(-(exact @ qn.astype(np.float64)), kind="stable")[:20]]
                    .tolist())
        order = names if qi % 2 == 0 else tuple(reversed(names))  # interleave, alternate
        got: dict[str, Any] = {}
        for name in order:
            with dbm.read_txn(conn):
                r, w, c = _timed(functools.partial(_matrix_case, name, conn, table, cache, emb,
                                                   floor_m, mat.ids, text, q, qn))
            got[name] = r
            add(name, w, c)
        for key, name in (("vec0", "knn_vec0"), ("matrix", "knn_matrix"), ("floor", "knn_floor")):
            recall[key].append(len(truth & set(got[name][:20])) / 20)
        same = got["hybrid_sql"] == got["hybrid_matrix"] and \
            got["vector_sql"] == got["vector_matrix"]
        same_top10 += same
        if not same:
            differing.append(text)
    out["times"] = {n: _wc(*t[n]) for n in names}
    out["recall_at_20"] = {k: round(statistics.fmean(v), 4) for k, v in recall.items()}
    out["identical_search_results"] = f"{same_top10}/{len(t['knn_vec0'][0])}"
    out["differing_queries"] = differing[:5]
    out["blas_threads_env"] = os.environ.get("OPENBLAS_NUM_THREADS")
    fl = out["times"]["knn_floor"]
    out["ratio_to_floor"] = {n: {"wall": round(out["times"][n]["wall_p50_ms"] / fl["wall_p50_ms"], 2),
                                 "cpu": round(out["times"][n]["cpu_p50_ms"] / fl["cpu_p50_ms"], 2)}
                             for n in ("knn_vec0", "knn_matrix", "vector_matrix")}
    out["loads_during_queries"] = cache.loads - 1
    conn.close()
    return out


LEXICAL_STATEMENT = (
    "SELECT rowid, bm25(knowledge_nodes_fts, {w}) AS s FROM knowledge_nodes_fts"
    " WHERE knowledge_nodes_fts MATCH ? ORDER BY s, rowid LIMIT ?")


def common_term_queries(conn: Any, n: int, seed: int = 5, top: int = 60) -> list[str]:
    """Two-word queries drawn from the ``top`` most frequent index terms of 4+ letters
    (porter stems as the index holds them; stop words are never indexed terms here)."""
    import random

    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.bench_vocab"
                 " USING fts5vocab(main, knowledge_nodes_fts, row)")
    terms = [str(t) for (t,) in conn.execute(
        "SELECT term FROM temp.bench_vocab WHERE length(term) > 3 AND term GLOB '[a-z]*'"
        " ORDER BY doc DESC LIMIT ?", (top,))]
    terms = [t for t in terms if t not in search_mod.STOP_WORDS]
    rnd = random.Random(seed)
    return [" ".join(rnd.sample(terms, 2)) for _ in range(n)]


def measure_lexical(db: Path, n_queries: int, cache_mb: int | None = None) -> dict[str, Any]:
    """``MemoryService.search(mode="lexical", k=10)`` against its own bm25 statement
    (the same FTS5 expression, top 40 = the depth the service asks for k = 10 with
    the per-document cap), per query, interleaved (forward / reversed), on generated
    queries and on two-word common-term queries (child process)."""
    from memlens.core.config.settings import load_settings
    from memlens.core.service import MemoryService
    from memlens.core.store import db as dbm

    overrides: dict[str, Any] = {"db": str(db)}
    if cache_mb is not None:
        overrides["search.lexical_cache_mb"] = cache_mb
    settings = load_settings(db.parent / "none.toml", env={}, overrides=overrides)
    svc = MemoryService(settings, embedder=None, install_key=bench.FIXED_INSTALL_KEY)
    conn = svc.conn()
    sql = LEXICAL_STATEMENT.format(w=search_mod.BM25_WEIGHTS)
    out: dict[str, Any] = {"chunks": int(conn.execute(
        "SELECT COUNT(*) FROM knowledge_nodes").fetchone()[0]), "sets": {}}
    sets = {"generated": bench.generate_queries(n_queries, seed=3),
            "common_terms": common_term_queries(conn, n_queries)}
    for q in sets["generated"][:10]:
        svc.search(q, mode="lexical", k=10)
    cache = svc.lexical_cache()
    assert cache is not None  # the default [search] lexical_cache_mb is 128
    out["lexical_cache_mb"] = settings.search.lexical_cache_mb
    # Each set runs four times. A phrase is read into RAM the third time it is searched
    # at an unchanged store (on the service's background thread, while that query runs
    # the statement), so pass 1 is what a long-lived service pays for words it has not
    # searched before, passes 2-3 are the statement while builds are scheduled (and run
    # on the other core), pass 4 is the steady state (every phrase known). Between
    # passes the background builds finish.
    for label, queries in [(f"{name}, pass {i}", qs) for name, qs in sets.items()
                           for i in (1, 2, 3, 4)]:
        t: dict[str, tuple[list[float], list[float]]] = {"search": ([], []), "statement": ([], [])}
        matches: list[int] = []
        cache.wait_built()  # builds of the previous pass finish in the pause between passes
        served0, builds0 = cache.served, cache.builds
        same = compared = 0
        for qi, text in enumerate(queries):
            fts = search_mod.build_fts_query(text)
            if fts is None:
                continue
            def statement(f: str = fts) -> list[Any]:
                with dbm.read_txn(conn):  # the service reads in one transaction too
                    return conn.execute(sql, (f, 40)).fetchall()

            cases = [("search", lambda q=text: svc.search(q, mode="lexical", k=10)),
                     ("statement", statement)]
            got: dict[str, Any] = {}
            for name, f in (cases if qi % 2 == 0 else cases[::-1]):
                got[name], w, c = _timed(f)
                t[name][0].append(w)
                t[name][1].append(c)
            if label.endswith("4"):  # steady state: compare bit for bit (served: no sighting)
                with dbm.read_txn(conn):
                    top = cache.top(conn, search_mod.fts_phrases(fts), 40)
                if top is not None:  # None: rare phrases only, the statement answers
                    compared += 1
                    same += top == [(int(r[0]), float(r[1])) for r in got["statement"]]
            if qi < 50 and label.endswith("1"):
                matches.append(int(conn.execute(
                    "SELECT count(*) FROM knowledge_nodes_fts WHERE knowledge_nodes_fts MATCH ?",
                    (fts,)).fetchone()[0]))
        times = {n: _wc(*v) for n, v in t.items()}
        out["sets"][label] = {
            "queries": len(t["search"][0]), "examples": queries[:3], "times": times,
            "matching_rows_p50": statistics.median(matches) if matches else None,
            "matching_rows_p90": bench.percentile([float(m) for m in matches], 90) if matches else None,
            "served_from_postings": cache.served - served0 - compared,
            "phrases_built": cache.builds - builds0,
            "postings_mb": round(cache.nbytes() / 1e6, 1),
            "top40_identical_to_statement": f"{same}/{compared}" if compared else None,
            "ratio_p50": {k: round(times["search"][f"{k}_p50_ms"] / times["statement"][f"{k}_p50_ms"], 2)
                          for k in ("wall", "cpu")}}
    svc.close()
    return out


def measure_lexical_churn(db: Path, embedder_name: str, n_queries: int) -> dict[str, Any]:
    """Common-term lexical search while the store keeps changing, on a copy of ``db``:
    three passes of the same queries (the third schedules every phrase), the steady
    pass, then twice: ingest one new file (a store change: entries dropped, sightings
    kept), search 1 (the statement; hot phrases are scheduled again), search 2."""
    import shutil
    import tempfile

    from memlens.core.config.settings import load_settings
    from memlens.core.embedders.registry import make_embedder
    from memlens.core.ingest.sources import roots_for_path
    from memlens.core.service import MemoryService

    out: dict[str, Any] = {"passes": {}}
    with tempfile.TemporaryDirectory(prefix="memlens-churn-") as tmp:
        copy = Path(tmp) / db.name
        shutil.copyfile(db, copy)
        settings = load_settings(Path(tmp) / "none.toml", env={}, overrides={"db": str(copy)})
        svc = MemoryService(settings, embedder=make_embedder(embedder_name, _embedder_opts(embedder_name)),
                            install_key=bench.FIXED_INSTALL_KEY)
        conn = svc.conn()
        out["chunks"] = int(conn.execute("SELECT COUNT(*) FROM knowledge_nodes").fetchone()[0])
        queries = common_term_queries(conn, n_queries)
        cache = svc.lexical_cache()
        assert cache is not None
        root = Path(tmp) / "churn" / "memory"
        root.mkdir(parents=True)

        def run(label: str) -> None:
            cache.wait_built()
            served0, builds0 = cache.served, cache.builds
            wall: list[float] = []
            cpu: list[float] = []
            for text in queries:
                _, w, c = _timed(lambda q=text: svc.search(q, mode="lexical", k=10))
                wall.append(w)
                cpu.append(c)
            out["passes"][label] = {**_wc(wall, cpu), "served_from_postings": cache.served - served0,
                                    "phrases_built": cache.builds - builds0}

        for i in (1, 2, 3, 4):
            run(f"unchanged store, pass {i}")
        for change in (1, 2):
            (root / f"note{change}.md").write_text(
                f"# Churn note {change}\n\nA new memory file written during the session.\n")
            svc.ingest(roots_for_path(root.parent))
            for search in (1, 2):
                run(f"after store change {change}, search {search}")
        svc.close()
    return out


def _child(args: list[str]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                          cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"child {args} failed:\n{proc.stderr}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", default="1000,10000,100000")
    ap.add_argument("--embedder", default="hashing,static")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/memlens-bench-cache"))
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--matrix", action="store_true",
                    help="compare vec0 KNN, the in-RAM matrix and the numpy floor")
    ap.add_argument("--_build", nargs=3, metavar=("DB", "FILES", "EMBEDDER"), help=argparse.SUPPRESS)
    ap.add_argument("--_measure", nargs=3, metavar=("DB", "EMBEDDER", "Q"), help=argparse.SUPPRESS)
    ap.add_argument("--lexical", action="store_true",
                    help="lexical search against its own bm25 statement, generated and"
                         " common-term queries")
    ap.add_argument("--_matrix", nargs=3, metavar=("DB", "EMBEDDER", "Q"), help=argparse.SUPPRESS)
    ap.add_argument("--_lexical", nargs=3, metavar=("DB", "Q", "MB"), help=argparse.SUPPRESS)
    ap.add_argument("--lexical-cache-mb", type=int, default=None,
                    help="--lexical: [search] lexical_cache_mb for the run (default: the setting's)")
    ap.add_argument("--lexical-churn", action="store_true",
                    help="common-term lexical search while the store changes (on a copy)")
    ap.add_argument("--_churn", nargs=3, metavar=("DB", "EMBEDDER", "Q"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a._build:
        print(json.dumps(build(Path(a._build[0]), int(a._build[1]), a._build[2])))
        return 0
    if a._matrix:
        print(json.dumps(measure_matrix(Path(a._matrix[0]), a._matrix[1], int(a._matrix[2]))))
        return 0
    if a._measure:
        print(json.dumps(measure(Path(a._measure[0]), a._measure[1], int(a._measure[2]))))
        return 0
    if a._lexical:
        mb = None if a._lexical[2] == "default" else int(a._lexical[2])
        print(json.dumps(measure_lexical(Path(a._lexical[0]), int(a._lexical[1]), mb)))
        return 0
    if a._churn:
        print(json.dumps(measure_lexical_churn(Path(a._churn[0]), a._churn[1], int(a._churn[2]))))
        return 0

    from memlens.core.embedders.registry import EmbeddingError, make_embedder

    a.cache.mkdir(parents=True, exist_ok=True)
    ratio = chunks_per_file()
    rows: list[dict[str, Any]] = []
    for name in bench.split_list(a.embedder):
        try:
            emb = make_embedder(name, _embedder_opts(name))
        except EmbeddingError as exc:
            print(f"skipping {name}: {exc}", file=sys.stderr)
            continue
        for target in [int(x) for x in bench.split_list(a.chunks)]:
            files = max(1, math.ceil(target / ratio))
            db = a.cache / f"search-{_key(files, emb.fingerprint())}-{name}-{files}.db"
            built: dict[str, Any] | None = None
            if a.rebuild or not db.exists():
                print(f"building {db.name} ({files} files)...", file=sys.stderr, flush=True)
                built = _child(["--_build", str(db), str(files), name])
            print(f"measuring {db.name}...", file=sys.stderr, flush=True)
            if a.lexical_churn:
                rows.append({"target_chunks": target, "files": files, "embedder": name, "db": str(db),
                             **_child(["--_churn", str(db), name, str(a.queries)])})
                if not a.json:
                    print(json.dumps(rows[-1], indent=2), flush=True)
                continue
            if a.lexical:
                lx = _child(["--_lexical", str(db), str(a.queries),
                             "default" if a.lexical_cache_mb is None else str(a.lexical_cache_mb)])
                rows.append({"target_chunks": target, "files": files, "embedder": name,
                             "db": str(db), "build": built, **lx})
                if not a.json:
                    print(json.dumps(rows[-1], indent=2), flush=True)
                continue
            if a.matrix:
                mm = _child(["--_matrix", str(db), name, str(a.queries)])
                rows.append({"target_chunks": target, "files": files, "embedder": name,
                             "db": str(db), "build": built, **mm})
                if not a.json:
                    print(json.dumps(rows[-1], indent=2), flush=True)
                continue
            m = _child(["--_measure", str(db), name, str(a.queries)])
            row = {"target_chunks": target, "files": files, "embedder": name,
                   "fingerprint": emb.fingerprint(), "db": str(db),
                   "db_bytes": db.stat().st_size, "build": built, **m}
            rows.append(row)
            if not a.json:
                md = " | ".join(f"{row['modes'][mo]['p50_ms']:.2f} / {row['modes'][mo]['p95_ms']:.2f}"
                                for mo in search_mod.MODES)
                chunks = row["chunks"]
                print(f"| {target} | {chunks} | {name} | {md} | {row['maxrss_mb']:.0f} MB |",
                      flush=True)
    report = {"chunks_per_file": round(ratio, 3), "cpu_count": os.cpu_count(),
              "queries": a.queries, "rows": rows}
    if a.json:
        print(json.dumps(report, indent=2))
    else:
        print(json.dumps(report, indent=2), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
