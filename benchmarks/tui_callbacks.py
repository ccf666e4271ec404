"""Which event-loop callbacks make up the TUI's stalls: the filter phase, the ``/`` key and
live search.

    uv run python benchmarks/tui_callbacks.py [--docs 10000] [--cache /tmp/memlens-tui-bench]
        [--queries 10]

Same app, database and screen size as ``benchmarks/tui.py`` (and the same Pilot-driven
keys and queries). The probes:

* **stalls**: a 5 ms asyncio ticker like the benchmark's; every time it comes more than
  ``--late-ms`` late, the callbacks that ran in that window (over 2 ms each, timed by a
  wrapper around ``asyncio.events.Handle._run``) are listed with their task: a Textual
  message pump (``message pump DocumentTree(id='tree')``), the screen's update timer, the
  harness's own task (``Task-1 main``: the Pilot's forced screen updates).
* **focus**: ``--presses`` times ``/`` (tree -> filter box) and back, the time per press in
  the screen's update timer, the compositor, the stylesheet and each widget's
  ``render_lines``.
* **search** (``--queries`` per mode, lexical and hybrid, typed as ``tui.py`` types them):
  stalls by phase (``search MODE clear`` / ``keys`` / ``results``, the last from the last
  key until the screen settles) and the same breakdown per query for ``results``.
* **tree draw**: one full draw of the tree's visible lines with its line caches emptied
  (``tree_draw_ms``, 50 draws).

Prints JSON. No figure here is a target; it says where a stall's time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import asyncio.events
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tui as bench_tui  # noqa: E402


class CallbackLog:
    """Callbacks over ``min_s`` seconds while :attr:`phase` is set, with their task."""

    def __init__(self, min_s: float = 0.002) -> None:
        self.min_s = min_s
        self.phase: str | None = None
        self.records: list[tuple[str, float, float, str]] = []  # phase, start, seconds, name

    @staticmethod
    def name(handle: Any) -> str:
        cb = getattr(handle, "_callback", None)
        owner = getattr(cb, "__self__", None)
        if isinstance(owner, asyncio.Task):
            coro = owner.get_coro()
            return f"task {owner.get_name()} {getattr(coro, '__qualname__', coro)}"
        return str(getattr(cb, "__qualname__", repr(cb)))

    @contextmanager
    def installed(self) -> Iterator[None]:
        original = asyncio.events.Handle._run
        log = self

        def run(handle: Any) -> None:
            t = time.perf_counter()
            try:
                original(handle)
            finally:
                d = time.perf_counter() - t
                if log.phase is not None and d > log.min_s:
                    log.records.append((log.phase, t, d, log.name(handle)))

        asyncio.events.Handle._run = run  # type: ignore[method-assign,assignment]
        try:
            yield
        finally:
            asyncio.events.Handle._run = original  # type: ignore[method-assign]


async def _ticker(log: CallbackLog, late_s: float, out: list[tuple[str, float, float]]) -> None:
    while True:
        t = time.perf_counter()
        await asyncio.sleep(0.005)
        late = time.perf_counter() - t - 0.005
        if late > late_s and log.phase is not None:
            out.append((log.phase, t + 0.005, late))


def _windows(log: CallbackLog, late: list[tuple[str, float, float]]) -> list[dict[str, Any]]:
    rows = []
    for phase, due, lateness in late:
        cbs = [{"at_ms": round((start - due) * 1000, 1), "ms": round(d * 1000, 1), "what": name}
               for _, start, d, name in log.records
               if due - 0.005 <= start + d and start <= due + lateness]
        rows.append({"phase": phase, "late_ms": round(lateness * 1000, 1), "callbacks": cbs})
    return rows


Label = str | Callable[[tuple[Any, ...]], str]


@contextmanager
def _timed(targets: list[tuple[Any, str, Label]], totals: dict[str, dict[str, float]],
           counts: dict[str, Counter[str]], bucket: Callable[[], str | None]) -> Iterator[None]:
    """Wrap ``getattr(owner, attr)`` to add its time to ``totals[bucket()][label]`` while
    ``bucket()`` names one (``label``: a name, or a function of the call's positional
    arguments)."""
    saved = []
    for owner, attr, label in targets:
        original = getattr(owner, attr)
        saved.append((owner, attr, original))

        def wrapper(*a: Any, _o: Any = original, _l: Label = label, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return _o(*a, **k)
            finally:
                b = bucket()
                if b is not None:
                    name = _l if isinstance(_l, str) else _l(a)
                    totals[b][name] += time.perf_counter() - t
                    counts[b][name] += 1

        setattr(owner, attr, wrapper)
    try:
        yield
    finally:
        for owner, attr, original in reversed(saved):
            setattr(owner, attr, original)


def _per(totals: dict[str, float], counts: Counter[str], n: int) -> list[dict[str, Any]]:
    """``totals`` and ``counts`` per one of ``n`` events, longest first."""
    n = max(1, n)
    rows = sorted(((label, round(totals[label] / n * 1000, 2), round(counts[label] / n, 1))
                   for label in totals), key=lambda r: -r[1])
    return [{"what": w, "ms": ms, "calls": c} for w, ms, c in rows]


def _tree_draw_ms(tree: Any, rounds: int = 50) -> dict[str, float]:
    """One full draw of the document tree's visible lines with its caches emptied (what a
    focus change, a filter result or a new listing costs it), wall and CPU, ms."""
    from textual.geometry import Region

    region = Region(0, 0, tree.size.width, tree.size.height)

    def draw() -> None:
        tree._line_cache.clear()
        tree._styles_cache.clear()
        tree.render_lines(region)

    for _ in range(5):
        draw()
    t, c = time.perf_counter(), time.thread_time()
    for _ in range(rounds):
        draw()
    return {"wall": round((time.perf_counter() - t) / rounds * 1000, 2),
            "cpu": round((time.thread_time() - c) / rounds * 1000, 2),
            "lines": tree.size.height, "width": tree.size.width}


async def probe(db: Path, *, late_ms: float = 40.0, presses: int = 6,
                filters: tuple[str, ...] = ("auth", "deploy", "cach", "runbook 12", "p0042"),
                queries: int = 10, modes: tuple[str, ...] = ("lexical", "hybrid"),
                ) -> dict[str, Any]:
    """Run the probes over ``db``; see the module."""
    from textual._compositor import Compositor
    from textual.css.stylesheet import Stylesheet
    from textual.screen import Screen
    from textual.widget import Widget
    from textual.widgets import Input

    from memlens import bench
    from memlens.tui.app import MemlensApp
    from memlens.tui.screens.search import SearchScreen

    svc = bench_tui._service(db)
    tap = bench_tui.FrameTap(*bench_tui.SIZE)
    app = MemlensApp(svc, watch=False, ingest=False)
    app.animation_level = "none"
    tap.install(app)
    log = CallbackLog()
    late: list[tuple[str, float, float]] = []
    totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    targets: list[tuple[Any, str, Label]] = [
        (Screen, "_on_timer_update", "screen update timer"),
        (Compositor, "render_update", "compositor render_update"),
        (Compositor, "reflow", "compositor reflow"),
        (Stylesheet, "update_nodes", "stylesheet update_nodes"),
        (Widget, "render_lines", lambda a: f"render_lines {type(a[0]).__name__}#{a[0].id}")]

    def bucket() -> str | None:
        """Per-event breakdowns: the focus change, and each mode's last key -> results."""
        phase = log.phase
        if phase == "focus_filter" or (phase or "").endswith(" results"):
            return phase
        return None

    texts = bench.generate_queries(queries, seed=1) if queries else []
    with log.installed(), _timed(targets, totals, counts, bucket):
        ticker = asyncio.create_task(_ticker(log, late_ms / 1000, late))
        try:
            async with app.run_test(size=bench_tui.SIZE) as pilot:
                await bench_tui._settled(app, pilot, tap)
                for _ in range(presses):
                    await pilot.press("down")
                    await bench_tui._settled(app, pilot, tap)
                    log.phase = "focus_filter"
                    await pilot.press("slash")
                    await bench_tui._settled(app, pilot, tap)
                    log.phase = None
                    await pilot.press("escape")
                    await bench_tui._settled(app, pilot, tap)
                tree_draw = _tree_draw_ms(app.doc_tree)
                await pilot.press("slash")
                await bench_tui._settled(app, pilot, tap)
                box = app.query_one("#filter", Input)
                for text in filters:
                    log.phase = "clear"
                    box.value = ""
                    await bench_tui._settled(app, pilot, tap)
                    log.phase = f"filter {text}"
                    for c in text:
                        await pilot.press(c)
                    await bench_tui._settled(app, pilot, tap)
                log.phase = None
                if texts:
                    # As benchmarks/tui.py types them: clear, every key but the last, then
                    # the last key until the results are on screen.
                    await pilot.press("escape", "escape", "s")
                    await bench_tui._settled(app, pilot, tap)
                    screen = app.screen
                    assert isinstance(screen, SearchScreen)
                    search_box = screen.query_one("#search-input", Input)
                    for mode in modes:
                        screen.set_mode(mode)
                        await bench_tui._settled(app, pilot, tap)
                        for q in texts:
                            log.phase = f"search {mode} clear"
                            search_box.value = ""
                            await bench_tui._settled(app, pilot, tap)
                            log.phase = f"search {mode} keys"
                            for c in q[:-1]:
                                await pilot.press(c)
                            log.phase = f"search {mode} results"
                            await pilot.press(q[-1])
                            await bench_tui._settled(app, pilot, tap)
                        log.phase = None
        finally:
            ticker.cancel()
            svc.close()
    return {"database": str(db), "late_ms": late_ms, "tree_draw_ms": tree_draw,
            "stalls": _windows(log, late),
            "focus_filter_per_press": _per(totals["focus_filter"], counts["focus_filter"],
                                           presses),
            "results_per_query": {
                mode: _per(totals[f"search {mode} results"], counts[f"search {mode} results"],
                           len(texts)) for mode in modes if texts}}


def main(argv: list[str] | None = None) -> int:
    """Probe the benchmark's database (built by ``benchmarks/tui.py`` when missing)."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "memlens-tui-bench")
    ap.add_argument("--late-ms", type=float, default=40.0)
    ap.add_argument("--presses", type=int, default=6)
    ap.add_argument("--queries", type=int, default=10,
                    help="search queries per mode, lexical and hybrid (0: no search probe)")
    args = ap.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    db = bench_tui.db_path(args.cache, args.docs)
    if not db.exists():
        print(f"building {db} (generate, ingest, project; takes minutes)…", file=sys.stderr)
        bench_tui.build(db, args.docs)
    print(json.dumps(asyncio.run(probe(db, late_ms=args.late_ms, presses=args.presses,
                                           queries=args.queries)),
                     indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
