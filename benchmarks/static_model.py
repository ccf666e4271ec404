"""Startup cost and speed of the shipped static embedding model.

Measures, in fresh subprocesses (so nothing is cached in-process):
* ``StaticModel.load()`` alone, and the whole ``make_embedder("static")`` call;
* embedding throughput over the bundled corpus' heading sections.

Usage: ``uv run python benchmarks/static_model.py [--runs 5] [--json]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

PROBE = r"""
import json, time
t0 = time.perf_counter()
from memlens.core.embedders.static_model import StaticModel, default_model_path
t1 = time.perf_counter()
m = StaticModel.load(default_model_path())
t2 = time.perf_counter()
from memlens.core.embedders.registry import make_embedder
t3 = time.perf_counter()
e = make_embedder("static", {})
t4 = time.perf_counter()
from pathlib import Path
texts = []
for p in sorted(Path("corpus").rglob("*.md")):
    if p.name == "README.md" and p.parent.name == "corpus":
        continue
    texts.extend(s for s in p.read_text().split("\n#") if s.strip())
t5 = time.perf_counter()
e.embed_documents(texts)
t6 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "make_embedder_s": t4 - t3,
                  "sections": len(texts), "embed_s": t6 - t5, "dim": m.dim}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    runs = []
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                             check=True, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
        runs.append(json.loads(out.stdout))
    summary = {k: statistics.median(r[k] for r in runs)
               for k in ("import_s", "load_s", "make_embedder_s", "embed_s")}
    summary["sections"] = runs[0]["sections"]
    summary["dim"] = runs[0]["dim"]
    summary["sections_per_s"] = summary["sections"] / summary["embed_s"]
    if args.json:
        print(json.dumps({"runs": runs, "median": summary}, indent=2))
    else:
        print(f"median of {args.runs} fresh processes:")
        print(f"  StaticModel.load()       {summary['load_s'] * 1000:7.1f} ms  (target < 500 ms)")
        print(f"  make_embedder('static')  {summary['make_embedder_s'] * 1000:7.1f} ms")
        print(f"  embed {summary['sections']} sections  {summary['embed_s'] * 1000:7.1f} ms "
              f"({summary['sections_per_s']:,.0f}/s, {summary['dim']}-d)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
