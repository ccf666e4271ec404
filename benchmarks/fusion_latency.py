"""Interleaved p50 of vector, hybrid ``evidence`` and hybrid ``adaptive`` on one cached
database (wall and CPU per query; for each query the three run one after the other).

Usage::

    uv run python benchmarks/fusion_latency.py DB EMBEDDER [N]

``DB``: a database built by ``benchmarks/search_latency.py`` (under
``/tmp/memlens-bench-cache``), ``EMBEDDER`` the one it was built with, ``N`` queries
(default 200, generated with the latency benchmark's seed).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from memlens import bench
from memlens.core.config.settings import load_settings
from memlens.core.embedders.registry import make_embedder
from memlens.core.service import MemoryService

sys.path.insert(0, str(Path(__file__).resolve().parent))
import search_latency  # noqa: E402


def main(argv: list[str]) -> int:
    db, emb_name = Path(argv[0]), argv[1]
    n = int(argv[2]) if len(argv) > 2 else 200
    emb = make_embedder(emb_name, search_latency._embedder_opts(emb_name))
    svcs = {}
    for fusion in ("evidence", "adaptive"):
        s = load_settings(db.parent / "none.toml", env={},
                          overrides={"db": str(db), "search.fusion": fusion})
        svcs[fusion] = MemoryService(s, embedder=emb, install_key=bench.FIXED_INSTALL_KEY)
    queries = bench.generate_queries(n, seed=3)
    for svc in svcs.values():
        for q in queries[:10]:
            svc.search(q, mode="hybrid", k=10)
            svc.search(q, mode="vector", k=10)
        svc.vector_cache().wait_loaded()
    runs = (("vector", svcs["evidence"], "vector"), ("hybrid evidence", svcs["evidence"], "hybrid"),
            ("hybrid adaptive", svcs["adaptive"], "hybrid"))
    wall: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    cpu: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    for q in queries:
        for name, svc, mode in runs:
            w, c = time.perf_counter(), time.process_time()
            svc.search(q, mode=mode, k=10)
            wall[name].append(1000 * (time.perf_counter() - w))
            cpu[name].append(1000 * (time.process_time() - c))
    chunks = svcs["evidence"].conn().execute("SELECT count(*) FROM knowledge_nodes").fetchone()[0]
    print(f"chunks {chunks}, {n} queries interleaved, embedder {emb_name}")
    floor = statistics.median(wall["vector"])
    for name, _, _ in runs:
        p50 = statistics.median(wall[name])
        print(f"{name:16s} wall p50 {p50:7.1f} ms ({p50 / floor:.2f}x vector)"
              f"  cpu p50 {statistics.median(cpu[name]):7.1f} ms"
              f"  wall p95 {bench.percentile(wall[name], 95):7.1f} ms")
    for svc in svcs.values():
        svc.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
