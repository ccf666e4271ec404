"""Watch latency: from a file write to the new text being searchable.

A real :class:`memlens.watch.watcher.Watcher` (watchfiles/inotify) runs in a thread
over a copy of the bundled corpus; this script edits files and polls
``search(token, mode="lexical")`` through a *separate* service (its own SQLite
connection, like a second process would) until each edit's unique token is found.

* single: one file edited at a time, the next edit after the previous one is
  searchable (``--edits`` samples);
* burst: ``--burst-size`` files written at once; every file is one sample,
  measured from the start of the burst (``--bursts`` bursts);
* while embedding (``--while-embedding N`` samples, default 20): a large file
  (``--big-sections`` sections, one chunk each) is rewritten, and once its words are
  searchable (its vectors are being computed now) one small file is edited; the sample
  is that edit's latency. Before issue 43 the watcher computed the large file's vectors
  in its loop, so the edit waited for them.

The floor (issue 43): a bare :func:`watchfiles.watch` over the edited folder, with the
watcher's own debounce, step and poll settings, runs in another thread during the whole
run and notes when each write's event arrives. ``raw`` is that time from the write, for
the same writes; the script prints the ratio of the p50s (``searchable / raw``). With
``--load N`` it first starts N busy loops (``python -c "while True: pass"``, killed at
the end): "under load" in issue 43 is ``--load 2`` on 2 cores. For a before/after, run it
with ``PYTHONPATH`` pointing at another source tree (``git archive REV src``).

Run::

    uv run python benchmarks/watch_latency.py            # defaults from config
    uv run python benchmarks/watch_latency.py --json
    uv run python benchmarks/watch_latency.py --debounce-ms 20 --stable-ms 50
    uv run python benchmarks/watch_latency.py --load 2   # under load (issue 43)

Prints p50/p95/max in milliseconds, the raw event floor of the same writes, their ratio,
the number of ingest batches, CPU time of this process and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import watchfiles

from memlens.core.config.settings import load_settings
from memlens.core.embedders.registry import make_embedder
from memlens.core.service import MemoryService
from memlens.watch.events import MAX_BATCH_MS, POLL_MS
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


class RawEvents:
    """A bare ``watchfiles.watch`` over one folder, in a thread: when each path's events
    arrived (``perf_counter``), with the watcher's debounce / step / poll settings."""

    def __init__(self, folder: Path, step_ms: int) -> None:
        self.seen: dict[str, list[float]] = {}
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._th = threading.Thread(target=self._run, args=(folder, step_ms), daemon=True)
        self._th.start()
        self._ready.wait(10)

    def _run(self, folder: Path, step_ms: int) -> None:
        for changes in watchfiles.watch(folder, debounce=MAX_BATCH_MS, step=step_ms,
                                        stop_event=self._stop, rust_timeout=POLL_MS,
                                        yield_on_timeout=True, raise_interrupt=False):
            t = time.perf_counter()
            self._ready.set()
            with self._lock:
                for _, p in changes:
                    self.seen.setdefault(os.path.basename(p), []).append(t)

    def first_after(self, name: str, t0: float, timeout: float = 15.0) -> float:
        """Seconds from ``t0`` to the first event of ``name`` at or after ``t0``."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                ts = [t for t in self.seen.get(name, []) if t >= t0]
            if ts:
                return min(ts) - t0
            time.sleep(0.002)
        raise SystemExit(f"no raw event for {name} after {timeout}s")

    def close(self) -> None:
        self._stop.set()
        self._th.join(5)


def busy_loops(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` processes that spin on a CPU each (the issue's "under load")."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


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
    ap.add_argument("--while-embedding", type=int, default=20,
                    help="edits made while a large file's vectors are computed (20)")
    ap.add_argument("--big-sections", type=int, default=40,
                    help="sections (chunks) of that large file (40)")
    ap.add_argument("--load", type=int, default=0,
                    help="busy loops to run meanwhile (issue 43's 'under load': 2)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    loops = busy_loops(args.load)
    try:
        return _measure(args)
    finally:
        for p in loops:
            p.kill()
            p.wait()


def _measure(args: argparse.Namespace) -> int:
    cpu0 = time.process_time()
    load0 = os.getloadavg()[0]

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
        raw_events = RawEvents(bench, w._debounce_ms)
        time.sleep(0.5)  # the start-up reconcile and its vectors settle first
        raw_single: list[float] = []
        raw_burst: list[float] = []

        single: list[float] = []
        b0 = w.batches
        target = bench / "b00.md"
        for n in range(args.edits):
            tok = f"wlsingle{n:04}x"
            t0 = time.perf_counter()
            target.write_text(f"# Bench 0\n\nedit {n} {tok}\n")
            single.extend(wait_searchable(reader, {tok: t0}).values())
            raw_single.append(raw_events.first_after(target.name, t0))
            time.sleep(0.05)
        single_batches = w.batches - b0

        embedding: list[float] = []
        raw_embedding: list[float] = []
        big = bench / "big.md"
        for n in range(args.while_embedding):
            btok = f"wlbig{n:04}x"
            big.write_text("# Big\n\n" + "".join(
                f"## Part {k}\n\n{btok} part {k} of round {n}: " + " ".join(
                    f"w{(k * 7919 + j * 104729 + n) % 100003}" for j in range(60)) + "\n\n"
                for k in range(args.big_sections)))
            wait_searchable(reader, {btok: time.perf_counter()})
            tok = f"wlembed{n:04}x"
            t0 = time.perf_counter()
            target.write_text(f"# Bench 0\n\nwhile embedding {n} {tok}\n")
            embedding.extend(wait_searchable(reader, {tok: t0}, timeout=60).values())
            raw_embedding.append(raw_events.first_after(target.name, t0))

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
            raw_burst.extend(raw_events.first_after(f"b{i:02}.md", t0)
                             for i in range(args.burst_size))
            whole.append(max(lat.values()))
            time.sleep(0.3)
        burst_batches = w.batches - b0
        raw_events.close()
        stop.set()
        th.join(300)  # the vector thread ends its slice in hand first
        out: dict[str, Any] = {
            "settings": {"debounce_ms": w._debounce_ms, "stable_ms": int(w._stable_s * 1000),
                         "embedder": svc.embedder_label(), "busy_loops": args.load},
            "single": {**summary(single), "batches": single_batches,
                       "raw_p50_ms": round(pct(raw_single, 50) * 1000, 1),
                       "raw_p95_ms": round(pct(raw_single, 95) * 1000, 1),
                       "ratio_p50": round(pct(single, 50) / pct(raw_single, 50), 2)},
            "while_embedding": ({**summary(embedding), "big_sections": args.big_sections,
                                 "raw_p50_ms": round(pct(raw_embedding, 50) * 1000, 1),
                                 "ratio_p50": round(pct(embedding, 50)
                                                    / pct(raw_embedding, 50), 2)}
                                if embedding else None),
            "burst": {**summary(burst), "burst_size": args.burst_size, "bursts": args.bursts,
                      "whole_burst_p50_ms": round(pct(whole, 50) * 1000, 1),
                      "batches": burst_batches,
                      "raw_p50_ms": round(pct(raw_burst, 50) * 1000, 1),
                      "ratio_p50": round(pct(burst, 50) / pct(raw_burst, 50), 2)},
            "cpu_s": round(time.process_time() - cpu0, 2),
            "load": [round(load0, 2), round(os.getloadavg()[0], 2)],
        }
        svc.close()
        reader.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        s, b = out["single"], out["burst"]
        print(f"settings: {out['settings']}; load average {out['load'][0]} -> "
              f"{out['load'][1]}; CPU of this process {out['cpu_s']} s")
        print(f"single edit  n={s['n']:<4} p50 {s['p50_ms']:>6} ms  p95 {s['p95_ms']:>6} ms  "
              f"max {s['max_ms']:>6} ms  ({s['batches']} batches)")
        print(f"             raw watchfiles event p50 {s['raw_p50_ms']} ms  p95 "
              f"{s['raw_p95_ms']} ms  -> ratio p50 {s['ratio_p50']}x the raw event")
        e = out["while_embedding"]
        if e:
            print(f"while embedding ({e['big_sections']} sections) n={e['n']:<4} p50 "
                  f"{e['p50_ms']:>6} ms  p95 {e['p95_ms']:>6} ms  max {e['max_ms']:>6} ms")
            print(f"             raw watchfiles event p50 {e['raw_p50_ms']} ms  -> ratio p50 "
                  f"{e['ratio_p50']}x the raw event")
        print(f"burst x{b['burst_size']:<3} n={b['n']:<4} p50 {b['p50_ms']:>6} ms  p95 "
              f"{b['p95_ms']:>6} ms  max {b['max_ms']:>6} ms  whole burst p50 "
              f"{b['whole_burst_p50_ms']} ms  ({b['batches']} batches for {b['bursts']} bursts)")
        print(f"             raw watchfiles event p50 {b['raw_p50_ms']} ms  -> ratio p50 "
              f"{b['ratio_p50']}x the raw event")
    return 0


if __name__ == "__main__":
    sys.exit(main())
