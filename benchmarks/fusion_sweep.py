"""Adaptive-fusion sweep through the real engine: knee x power x vector weight.

Usage::

    uv run python benchmarks/fusion_sweep.py [--corpus corpus] [--queries FILE ...]
        [--embedder minilm]

Ingests the corpus into a temporary database with the embedder (default: minilm, what
``auto`` uses), then prints document-level Hit@1 / MRR per question kind for lexical,
vector, hybrid zscore (the old default) and every adaptive setting of the grid. Tune on
the dev corpus only; held-out sets are for ``memlens bench --validation``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from memlens.core.config.settings import load_settings
from memlens.core.embedders.registry import make_embedder
from memlens.core.ingest.sources import roots_for_path
from memlens.core.search import engine as search_mod
from memlens.core.service import MemoryService

ROOT = Path(__file__).resolve().parent.parent


def judge(svc: MemoryService, queries: list[dict[str, Any]], mode: str,
          opts: dict[str, Any] | None) -> dict[str, tuple[float, float]]:
    per: dict[str, list[float]] = defaultdict(list)
    conn = svc.conn()
    for q in queries:
        res = search_mod.search(conn, q["query"], mode=mode, k=10, fusion_options=opts,
                                embedder=None if mode == "lexical" else svc.embedder)
        docs: list[tuple[str, str]] = []
        for h in res.hits:
            if (h.repository, h.path) not in docs:
                docs.append((h.repository, h.path))
        want = (q["repository"], q["path"])
        per[q["kind"]].append(1 / (docs.index(want) + 1) if want in docs else 0.0)
    return {k: (sum(1 for x in v if x == 1) / len(v), sum(v) / len(v)) for k, v in per.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=ROOT / "corpus")
    ap.add_argument("--queries", type=Path, nargs="*", default=None)
    ap.add_argument("--embedder", default="minilm")
    a = ap.parse_args()
    files = a.queries or [a.corpus / "queries.jsonl"]
    queries = [json.loads(x) for f in files for x in f.read_text().splitlines() if x.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        shutil.copytree(a.corpus, base / "c", ignore=shutil.ignore_patterns("*.jsonl", "README.md"))
        s = load_settings(base / "none.toml", env={}, overrides={"db": str(base / "m.db")})
        svc = MemoryService(s, embedder=make_embedder(a.embedder, {}), install_key=b"k" * 32)
        svc.ingest(roots_for_path(base / "c"))
        common = {"candidates": 50, "semantic_min_z": 1.0, "rrf_k": 60.0, "lexical_weight": 1.0}
        rows: list[tuple[str, str, dict[str, Any] | None]] = [
            ("lexical", "lexical", None), ("vector", "vector", None),
            ("zscore vw0.5", "hybrid", {**common, "fusion": "zscore", "vector_weight": 0.5})]
        for knee, power, vw in itertools.product([0.4, 0.6, 0.8], [1.0, 2.0, 3.0], [0.5, 1.0]):
            rows.append((f"adaptive knee{knee} p{power} vw{vw}", "hybrid",
                         {**common, "fusion": "adaptive", "vector_weight": vw,
                          "adapt_knee": knee, "adapt_power": power, "adapt_top": 3}))
        for name, mode, opts in rows:
            got = judge(svc, queries, mode, opts)
            print(f"{name:32s}" + "  ".join(f"{k} {h:.2f}/{m:.2f}" for k, (h, m) in got.items()))
        svc.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
