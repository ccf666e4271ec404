"""Fusion evaluation: mode x fusion x question kind, doc-level Hit@1 / MRR, per corpus.

Usage: uv run python benchmarks/fusion_eval.py [--embedder static|hashing] [CORPUS_DIR ...]
Default corpora: corpus/ (dev) and corpus_validation/ (validation, if present).
Tune on dev only; the validation column is for reporting.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from memlens.core.config.settings import load_settings
from memlens.core.embedders.registry import make_embedder
from memlens.core.ingest.sources import roots_for_path
from memlens.core.search import engine as search_mod
from memlens.core.service import MemoryService

ROOT = Path(__file__).resolve().parent.parent
CONFIGS: list[tuple[str, dict[str, object]]] = [
    ("lexical", {}), ("vector", {}),
    ("hybrid convex", {"fusion": "convex"}),
    ("hybrid minmax", {"fusion": "minmax", "lexical_weight": 1.0, "vector_weight": 1.0}),
    ("hybrid zscore", {"fusion": "zscore", "lexical_weight": 1.0, "vector_weight": 1.0}),
    ("hybrid rrf", {"fusion": "rrf", "lexical_weight": 1.0, "vector_weight": 1.0}),
]


def evaluate(corpus: Path, embedder_name: str) -> dict[str, dict[str, tuple[float, float, int]]]:
    queries = [json.loads(x) for x in (corpus / "queries.jsonl").read_text().splitlines() if x.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        shutil.copytree(corpus, base / "c", ignore=shutil.ignore_patterns("*.jsonl", "*.md.txt"))
        s = load_settings(base / "none.toml", env={}, overrides={"db": str(base / "m.db")})
        svc = MemoryService(s, embedder=make_embedder(embedder_name, {}), install_key=b"k" * 32)
        svc.ingest(roots_for_path(base / "c"))
        out: dict[str, dict[str, tuple[float, float, int]]] = {}
        conn = svc.conn()
        for name, opts in CONFIGS:
            mode = name.split()[0]
            per: dict[str, list[float]] = {}
            for q in queries:
                res = search_mod.search(conn, q["query"], mode=mode,
                                        embedder=None if mode == "lexical" else svc.embedder,
                                        k=10, fusion_options=opts or None)
                docs: list[tuple[str, str]] = []
                for h in res.hits:
                    if (h.repository, h.path) not in docs:
                        docs.append((h.repository, h.path))
                want = (q["repository"], q["path"])
                per.setdefault(q["kind"], []).append(1 / (docs.index(want) + 1) if want in docs else 0.0)
            out[name] = {k: (sum(1 for x in v if x == 1) / len(v), sum(v) / len(v), len(v))
                         for k, v in per.items()}
        svc.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedder", default="static")
    ap.add_argument("corpora", nargs="*")
    a = ap.parse_args()
    corpora = [Path(c) for c in a.corpora] or [p for p in (ROOT / "corpus", ROOT / "corpus_validation")
                                               if (p / "queries.jsonl").exists()]
    print(f"embedder={a.embedder}; cells are Hit@1 / MRR (doc level, k=10)")
    for c in corpora:
        r = evaluate(c, a.embedder)
        kinds = sorted({k for v in r.values() for k in v})
        head = " | ".join(f"{k} (n={r['lexical'][k][2]})" for k in kinds)
        print(f"\n## {c.name}\n| config | {head} |")
        print("|---|" + "---:|" * len(kinds))
        for name, v in r.items():
            print(f"| {name} | " + " | ".join(f"{v[k][0]:.2f} / {v[k][1]:.2f}" for k in kinds) + " |")


if __name__ == "__main__":
    main()
