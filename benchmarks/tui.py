"""Terminal UI responsiveness with 10,000 documents / ~100,000 chunks.

Usage::

    uv run python benchmarks/tui.py [--docs 10000] [--cache /tmp/memlens-tui-bench]
        [--rebuild] [--queries 30] [--json]

A synthetic corpus (:func:`memlens.core.bench.generate_corpus`, the real
auto-memory size mix) is ingested and projected through ``MemoryService`` with
the 384-d hashing embedder and a 75/15-token chunker, which gives about ten
chunks per file. The database is cached under ``--cache`` (building it takes a
few minutes). Then the app runs headless (``App.run_test``, 140x45) over it,
without startup ingest and without the watcher, and reports:

* **first paint**: app construction to the first frame, and to the document tree
  being listed (the list is read in a worker, so the frame comes first);
* **search**: from the moment the 150 ms debounce fires to the results being on
  screen (thread worker + message + render), per query;
* **filter**: the fuzzy document filter, debounce fired to tree rebuilt;
* **detail**: cursor moved to a document to its chunks/timeline/projection shown;
* **loop stall**: the longest time the event loop was blocked (a 5 ms ticker
  measures its own lateness) during each phase — no handler may block > 50 ms.

Targets: first paint <= 1.5 s; search results <= 150 ms after the debounce.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memlens.core import bench
from memlens.core.config import load_settings
from memlens.core.embedding import make_embedder
from memlens.core.service import MemoryService

SIZE = (140, 45)
CHUNKER = {"chunker.max_tokens": 75, "chunker.overlap_tokens": 15}
EMBEDDER = ("hashing", {"dim": 384})
SEED = 0


def _service(db: Path) -> MemoryService:
    settings = load_settings(db.parent / "none.toml", env={},
                             overrides={"db": str(db), **CHUNKER})
    return MemoryService(settings, embedder=make_embedder(*EMBEDDER), install_key=b"k" * 32)


def build(db: Path, n_docs: int) -> dict[str, Any]:
    """Generate, ingest and project the corpus into ``db``."""
    work = Path(tempfile.mkdtemp(prefix="memlens-tui-bench-"))
    try:
        t0 = time.perf_counter()
        gen = bench.generate_corpus(work / "corpus", n_docs, seed=SEED)
        tmp_db = db.with_suffix(".building")
        for p in tmp_db.parent.glob(tmp_db.name + "*"):
            p.unlink()
        svc = _service(tmp_db)
        roots = svc.resolve_roots([work / "corpus"])
        t1 = time.perf_counter()
        svc.ingest(roots, project=False)
        t2 = time.perf_counter()
        while svc.project().outcomes:  # one call claims at most 1,000 documents
            pass
        t3 = time.perf_counter()
        stats = svc.statistics().as_dict()
        svc.conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        svc.close()
        for suffix in ("-wal", "-shm"):
            Path(str(tmp_db) + suffix).unlink(missing_ok=True)
        tmp_db.rename(db)
        return {"files": gen.files, "generate_s": round(t1 - t0, 1),
                "ingest_s": round(t2 - t1, 1), "project_s": round(t3 - t2, 1),
                "documents": stats["documents"], "chunks": stats["chunks"]}
    finally:
        shutil.rmtree(work, ignore_errors=True)


class LoopWatch:
    """Measures how late a 5 ms ticker wakes up: the longest event-loop stall."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        period = 0.005
        last = time.perf_counter()
        while True:
            await asyncio.sleep(period)
            now = time.perf_counter()
            self.worst = max(self.worst, now - last - period)
            last = now

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._tick())

    def reset(self) -> float:
        worst, self.worst = self.worst, 0.0
        return worst

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()


def _pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))
    return s[k]


def _summary(values: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values]
    return {"n": len(ms), "p50_ms": round(_pct(ms, 50), 1), "p95_ms": round(_pct(ms, 95), 1),
            "max_ms": round(max(ms), 1) if ms else float("nan"),
            "mean_ms": round(statistics.fmean(ms), 1) if ms else float("nan")}


async def _idle(app: Any, pilot: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    await pilot.pause()
    while time.monotonic() < deadline:
        if app.is_idle():
            await pilot.pause()
            if app.is_idle():
                return
        await pilot.pause(0.01)
    raise TimeoutError("the app did not settle")


async def measure(db: Path, n_queries: int) -> dict[str, Any]:
    """Run the app over ``db`` and time first paint, search, filter and navigation."""
    from textual.widgets import Input

    from memlens.tui.app import MemlensApp
    from memlens.tui.screens.search import SearchScreen

    svc = _service(db)
    watch = LoopWatch()
    out: dict[str, Any] = {}
    # The same queries straight through the service (no UI), for the UI's share.
    queries = bench.generate_queries(n_queries, seed=1)
    core = _service(db)
    for mode in ("hybrid", "lexical", "vector"):
        core.search("warm up", mode=mode)
        times = []
        for q in queries:
            t = time.perf_counter()
            core.search(q, mode=mode, k=20)
            times.append(time.perf_counter() - t)
        out[f"core_search_{mode}"] = _summary(times)
    core.close()
    t0 = time.perf_counter()
    app = MemlensApp(svc, watch=False, ingest=False)
    app.animation_level = "none"
    async with app.run_test(size=SIZE) as pilot:
        watch.start()
        while app.documents_shown_at is None:
            await pilot.pause(0.005)
        await _idle(app, pilot)
        assert app.first_paint_at is not None
        out["first_paint_s"] = round(app.first_paint_at - t0, 3)
        out["documents_listed_s"] = round(app.documents_shown_at - t0, 3)
        out["documents_listed"] = app.doc_tree.document_count
        out["startup_loop_stall_ms"] = round(watch.reset() * 1000, 1)

        # Cursor moves in the tree: each shows a document's chunks, timeline, projection.
        for _ in range(30):
            await pilot.press("down")
            await _idle(app, pilot)
        out["detail"] = _summary(app.timings["detail"])
        out["detail_loop_stall_ms"] = round(watch.reset() * 1000, 1)

        # Fuzzy filter, typed key by key (the debounce keeps only the last keystroke).
        await pilot.press("slash")
        flt = app.query_one("#filter", Input)
        for text in ("auth", "deploy", "cach", "runbook 12", "p0042"):
            flt.value = ""
            await _idle(app, pilot)
            await pilot.press(*["space" if c == " " else c for c in text])
            await _idle(app, pilot)
        out["filter"] = _summary(app.timings["filter"])
        out["filter_loop_stall_ms"] = round(watch.reset() * 1000, 1)
        await pilot.press("escape", "escape")
        await _idle(app, pilot)

        # Live search per mode: type each query, measure debounce-fired -> results shown.
        await pilot.press("s")
        await _idle(app, pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        for mode in ("hybrid", "lexical", "vector"):
            screen.set_mode(mode)
            await _idle(app, pilot)
            app.timings["search"].clear()
            watch.reset()
            for q in queries:
                screen.query_one("#search-input", Input).value = ""
                await _idle(app, pilot)
                await pilot.press(*["space" if c == " " else c for c in q])
                await _idle(app, pilot)
            out[f"search_{mode}"] = _summary(app.timings["search"])
            out[f"search_{mode}_loop_stall_ms"] = round(watch.reset() * 1000, 1)
        watch.stop()
    svc.close()
    return out


def main(argv: list[str] | None = None) -> int:
    """Build (or reuse) the database, measure, print."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memlens-tui-bench")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    db = args.cache / (f"tui-{args.docs}-g{bench.GENERATOR_VERSION}-s{SEED}-"
                       f"{CHUNKER['chunker.max_tokens']}x{CHUNKER['chunker.overlap_tokens']}"
                       f"-{EMBEDDER[0]}{EMBEDDER[1]['dim']}.db")
    result: dict[str, Any] = {"command": "uv run python benchmarks/tui.py " + " ".join(
        argv if argv is not None else sys.argv[1:])}
    if args.rebuild or not db.exists():
        print(f"building {db} (generate, ingest, project; takes minutes)…", file=sys.stderr)
        result["build"] = build(db, args.docs)
    result.update(asyncio.run(measure(db, args.queries)))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"database: {db}")
    if "build" in result:
        print(f"build: {result['build']}")
    print(f"first paint: {result['first_paint_s']:.3f} s   "
          f"documents listed ({result['documents_listed']:,}): "
          f"{result['documents_listed_s']:.3f} s   "
          f"worst loop stall at startup: {result['startup_loop_stall_ms']} ms")
    for key in ("detail", "filter", "search_hybrid", "search_lexical", "search_vector"):
        r = result[key]
        print(f"{key:<15} n={r['n']:<3} p50 {r['p50_ms']:>6.1f} ms  p95 {r['p95_ms']:>6.1f} ms  "
              f"max {r['max_ms']:>6.1f} ms   worst loop stall "
              f"{result[key + '_loop_stall_ms']} ms")
    for mode in ("hybrid", "lexical", "vector"):
        r = result[f"core_search_{mode}"]
        print(f"(service.search {mode:<7} without UI: p50 {r['p50_ms']:.1f} ms  "
              f"p95 {r['p95_ms']:.1f} ms  max {r['max_ms']:.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
