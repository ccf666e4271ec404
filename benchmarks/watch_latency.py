"""Watch latency: from a file write to the new text being searchable.

A real :class:`memlens.watch.watcher.Watcher` (watchfiles/inotify) runs in a thread
over a copy of the bundled corpus; this script edits files and polls
``search(token, mode="lexical")`` through a *separate* service (its own SQLite
connection, like a second process would) until each edit's unique token is found.

* single: one file edited at a time, the next edit after the previous one is
  searchable (``--edits`` samples);
* burst: ``--burst-size`` files written at once; every file is one sample,
  measured from the start of the burst (``--bursts`` bursts).

Run::

    uv run python benchmarks/watch_latency.py            # defaults from config
    uv run python benchmarks/watch_latency.py --json
    uv run python benchmarks/watch_latency.py --debounce-ms 20 --stable-ms 50

Prints p50/p95/max in milliseconds and the number of ingest batches.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from memlens.core.config.settings import load_settings
from memlens.core.embedders.registry import make_embedder
from memlens.core.service import MemoryService
from memlens.watch.watcher import Watcher

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "corpus"


def pct(xs: list[float], q: float) -> float:
    """The q-th percentile (nearest rank) of xs."""
    s = sorted(xs)
    k = max(0, min(len(s) - 1, round(q / 100 * len(s) + 0.5) - 1))
    return s[k]


def summary(xs: list[float]) -> dict[str, float]:
    """p50 / p95 / max / mean in ms."""
    return {"n": len(xs), "p50_ms": round(pct(xs, 50) * 1000, 1),
            "p95_ms": round(pct(xs, 95) * 1000, 1), "max_ms": round(max(xs) * 1000, 1),
            "mean_ms": round(statistics.fmean(xs) * 1000, 1)}


def wait_searchable(reader: MemoryService, tokens: dict[str, float], timeout: float = 15.0
                    ) -> dict[str, float]:
    """Poll lexical search until every token is found; returns token -> latency (s)."""
    found: dict[str, float] = {}
    end = time.monotonic() + timeout
    while len(found) < len(tokens) and time.monotonic() < end:
        for tok, t0 in tokens.items():
            if tok not in found and reader.search(tok, mode="lexical", k=1).hits:
                found[tok] = time.perf_counter() - t0
        time.sleep(0.002)
    missing = set(tokens) - set(found)
    if missing:
        raise SystemExit(f"not searchable after {timeout}s: {sorted(missing)[:5]}")
    return found


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edits", type=int, default=50, help="single-edit samples (50)")
    ap.add_argument("--burst-size", type=int, default=20, help="files per burst (20)")
    ap.add_argument("--bursts", type=int, default=3, help="bursts (3)")
    ap.add_argument("--debounce-ms", type=int, default=None, help="default: config (50)")
    ap.add_argument("--stable-ms", type=int, default=None, help="default: config (100)")
    ap.add_argument("--embedder", default=None,
                    help="embedder name (default: config 'auto' = shipped static model)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="memlens-watchbench-"))
    try:
        projects = work / "projects"
        shutil.copytree(CORPUS, projects, ignore=shutil.ignore_patterns("*.jsonl", "README.md"))
        mem = sorted(projects.glob("*/memory"))[0]
        bench = mem / "bench"
        bench.mkdir()
        for i in range(max(args.burst_size, 1)):
            (bench / f"b{i:02}.md").write_text(f"# Bench {i}\n\nstarting text\n")
        settings = load_settings(work / "none.toml", env={}, overrides={
            "db": str(work / "bench.db"), "embedder.name": args.embedder})
        emb = make_embedder(args.embedder, {}) if args.embedder else None
        svc = MemoryService(settings, embedder=emb)
        reader = MemoryService(settings, embedder=emb)
        svc.ingest(svc.resolve_roots([projects]))  # warm: initial projection not measured
        w = Watcher(svc, scan_paths=[projects], debounce_ms=args.debounce_ms,
                    stable_ms=args.stable_ms, reconcile_seconds=0)
        stop = threading.Event()
        th = threading.Thread(target=w.run, args=(stop,), daemon=True)
        th.start()
        while w.state != "watching":
            time.sleep(0.01)
        reader.search("warmup", mode="lexical")

        single: list[float] = []
        b0 = w.batches
        target = bench / "b00.md"
        for n in range(args.edits):
            tok = f"wlsingle{n:04}x"
            t0 = time.perf_counter()
            target.write_text(f"# Bench 0\n\nedit {n} {tok}\n")
            single.extend(wait_searchable(reader, {tok: t0}).values())
            time.sleep(0.05)
        single_batches = w.batches - b0

        burst: list[float] = []
        whole: list[float] = []
        b0 = w.batches
        for r in range(args.bursts):
            toks: dict[str, float] = {}
            t0 = time.perf_counter()
            for i in range(args.burst_size):
                tok = f"wlburst{r:02}f{i:02}x"
                (bench / f"b{i:02}.md").write_text(f"# Bench {i}\n\nburst {r} {tok}\n")
                toks[tok] = t0
            lat = wait_searchable(reader, toks)
            burst.extend(lat.values())
            whole.append(max(lat.values()))
            time.sleep(0.3)
        burst_batches = w.batches - b0
        stop.set()
        th.join(10)
        out: dict[str, Any] = {
            "settings": {"debounce_ms": w._debounce_ms, "stable_ms": int(w._stable_s * 1000),
                         "embedder": svc.embedder_label()},
            "single": {**summary(single), "batches": single_batches},
            "burst": {**summary(burst), "burst_size": args.burst_size, "bursts": args.bursts,
                      "whole_burst_p50_ms": round(pct(whole, 50) * 1000, 1),
                      "batches": burst_batches},
        }
        svc.close()
        reader.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        s, b = out["single"], out["burst"]
        print(f"settings: {out['settings']}")
        print(f"single edit  n={s['n']:<4} p50 {s['p50_ms']:>6} ms  p95 {s['p95_ms']:>6} ms  "
              f"max {s['max_ms']:>6} ms  ({s['batches']} batches)")
        print(f"burst x{b['burst_size']:<3} n={b['n']:<4} p50 {b['p50_ms']:>6} ms  p95 "
              f"{b['p95_ms']:>6} ms  max {b['max_ms']:>6} ms  whole burst p50 "
              f"{b['whole_burst_p50_ms']} ms  ({b['batches']} batches for {b['bursts']} bursts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
