"""CPU time of ``fusion.decide`` (the only plain-search code issue 45 touched: it records
each part's z-score, the length factor and its settings for the explanation) on the
candidate pools of the 140 bench questions.

Usage::

    uv run python benchmarks/explain_decide_cost.py DB
    PYTHONPATH=/path/to/other/src uv run python benchmarks/explain_decide_cost.py DB

``DB``: a database built from the bundled corpus (``memlens ingest corpus --db DB``, the
default ``minilm`` embedder). Prints one JSON line: the module timed, the fusion, the mean
candidates a query, and the median / minimum CPU and median wall milliseconds per decide
(7 rounds of 5 passes over the 140 pools, after 3 warm-up passes). Interleave runs of two
source trees (``PYTHONPATH``) to compare them (docs/benchmarks.md, issue 45).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from memlens.core.config.settings import load_settings
from memlens.core.search import engine, fusion
from memlens.core.service import MemoryService
from memlens.core.store import db as dbm

CORPUS = Path(__file__).resolve().parent.parent / "corpus"


def main(db: str) -> None:
    settings = load_settings(Path("/nonexistent/memlens.toml"), env={}, overrides={"db": db})
    svc = MemoryService(settings)
    queries = [json.loads(line)["query"] for name in ("queries.jsonl", "queries_hard.jsonl")
               for line in (CORPUS / name).read_text(encoding="utf-8").splitlines()
               if line.strip()]
    opts = settings.search.fusion_options(svc.embedder.name if svc.embedder else None)
    conn = svc.conn()
    pools = []
    with dbm.read_txn(conn):
        for q in queries:
            _, pool = engine.gather(conn, q, svc.embedder, n=int(opts["candidates"]),
                                    adapt_top=int(opts["adapt_top"]),
                                    semantic_min_z=opts["semantic_min_z"],
                                    index_names=fusion.INDEX_NAMES)
            pools.append((q, pool))
    params = fusion.FusionParams(method=str(opts["fusion"]),
                                 lexical_weight=float(opts["lexical_weight"]),
                                 vector_weight=float(opts["vector_weight"]),
                                 adapt_power=float(opts["adapt_power"]),
                                 adapt_knee=float(opts["adapt_knee"]))
    for _ in range(3):
        for q, pool in pools:
            fusion.decide(pool, params, q)
    cpu, wall = [], []
    for _ in range(7):
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(5):
            for q, pool in pools:
                fusion.decide(pool, params, q)
        n = 5 * len(pools)
        cpu.append((time.process_time() - c0) / n * 1000)
        wall.append((time.perf_counter() - w0) / n * 1000)
    cpu.sort()
    wall.sort()
    print(json.dumps({"module": fusion.__file__, "method": params.method, "pools": len(pools),
                      "candidates_mean": round(sum(len(p.fused) for _, p in pools) / len(pools), 1),
                      "cpu_ms_median": round(cpu[3], 4), "cpu_ms_min": round(cpu[0], 4),
                      "wall_ms_median": round(wall[3], 4)}))


if __name__ == "__main__":
    main(sys.argv[1])
