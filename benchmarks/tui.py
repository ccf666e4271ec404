"""Terminal UI responsiveness at 10,000 documents / ~100,000 chunks, timed on the screen.

Usage::

    uv run python benchmarks/tui.py [--docs 10000] [--cache /tmp/memlens-tui-bench]
        [--rebuild] [--queries 30] [--rounds 2] [--spawns 3] [--key-gap-ms 0]
        [--find-stalls] [--valve-only] [--repeat-queries 1] [--first-paint-only] [--json]

**Database.** A synthetic corpus (:func:`memlens.bench.generate_corpus`, the
real auto-memory size mix) is ingested and projected through ``MemoryService``
with the **384-d hashing embedder** (not the shipped static model: the figures
are about the UI, and the hashing vectors cost the same per chunk at search time
as any 384-d model) and a 75/15-token chunker, which gives about ten chunks per
file (10,000 files -> 102,827 chunks). It is cached under ``--cache``; building
it takes about a minute on two cores.

**What "on screen" means.** Headless Textual (``App.run_test``) still lays out
and renders: every refresh ends in ``Screen._compositor_refresh`` building a
``CompositorUpdate`` (the strips of the changed lines) and handing it to
``App._display``, which in a real terminal turns it into escape sequences
(``update.render_segments(console)``) and writes them. Headless, ``_display``
skips that last step. :class:`FrameTap` wraps ``App._display`` on the instance:
it calls the original, then does the terminal step itself (``render_segments``,
the same code and cost as in a terminal; the bytes are counted, not written),
stamps the frame with ``perf_counter`` and applies the update's strips to a
character grid — a model of the terminal's screen. A frame "shows the results"
when the grid's results area (the ``#search-info`` line and the
``#search-results`` list) is identical to what that area holds once the app has
settled; between queries the box is emptied and the area goes back to
"type to search", so a frame of the previous query can never match.

**What is measured**

* **search** (per mode hybrid / lexical / vector, ``--queries`` each): from just
  before ``pilot.press`` of the *last* character of the query (the earlier ones
  are pressed right before it, each restarting the search debounce, 100 ms) to the
  first frame showing its results. Debounce included. Beside it: the
  service's own time for that query inside the worker, the in-app "debounce
  fired -> results handler done" time, and the process CPU time per query.
* **first paint, out of process**: the real ``memlens tui`` (the venv's entry
  point; ``--no-ingest --no-watch`` over an empty memory folder, the bench
  database and a config with the bench chunker and embedder) spawned in a
  tmux pane 140x45 (``tmux new-session -d ... -x 140 -y 45``, stderr not
  redirected: Textual draws there); ``tmux capture-pane -p`` is polled every
  5 ms. Reported: spawn -> first non-empty pane (the header drawn) and spawn ->
  pane listing the documents (the repository rows). A pane running
  ``python -c "print(...)"`` gives the harness's own floor (tmux + interpreter).
* **first paint, in process**: app constructed -> first frame, and -> first frame
  whose tree area shows the listed documents (as settled).
* **detail** (30 cursor moves in the tree) and **filter** (five fuzzy filters typed):
  keystroke -> the frame in which the detail / tree area stops changing. The ``/``
  that moves the focus to the filter box is its own phase, **focus_filter** (stalls
  only).
* **loop stall**: the longest time the event loop was blocked during each phase
  (a 5 ms asyncio ticker measures its own lateness). ``--find-stalls`` adds a
  watchdog thread that samples the loop thread's stack whenever the ticker is
  more than 30 ms late and prints the sampled frames (what blocked the loop),
  and times every garbage collection per generation (``gc.callbacks``), per phase
  too, the longest with the collector's counts before them. Each stall over 50 ms
  is listed with the collection time inside it, the loop thread's CPU and the
  process's CPU over it (loop CPU near the wall: the loop computed; process CPU
  well above the loop's: another thread of ours held the interpreter lock; both
  far below the wall: other processes had the cores) and whether a lexical-cache
  build (``memlens.core.search.lexical_cache``: phrase postings, node arrays; timed by
  wrapping the service's instance) overlapped it. Each phase ends with the
  collector's counts, the objects it tracks and the RSS (memory must stay bounded)
  and the collections the app's heap keeper ran.

Like ``memlens tui``, the harness gives numpy's OpenBLAS one thread unless
``OPENBLAS_NUM_THREADS`` is set (``memlens.cli.tui.limit_blas_threads``); the JSON
says which (``openblas_threads``).

``--rounds`` repeats the in-process measurement and the spawns alternately
(spawn, in-process, spawn, ...) so a noisy neighbour on the shared cores shows
as a spread between rounds rather than a bias of one method. Percentiles are
over all rounds; each round's p50 is listed too.

Targets (issue 17): keystroke -> results on screen p50 <= 250 ms (debounce
included), first paint from process start <= 1.5 s, longest stall <= 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlens import bench
from memlens.core.config.settings import load_settings
from memlens.core.embedders.registry import make_embedder
from memlens.core.service import MemoryService

SIZE = (140, 45)
CHUNKER = {"chunker.max_tokens": 75, "chunker.overlap_tokens": 15}
EMBEDDER = ("hashing", {"dim": 384})
SEED = 0
MODES = ("hybrid", "lexical", "vector")
STALL_TARGET_MS = 50.0


def _service(db: Path) -> MemoryService:
    settings = load_settings(db.parent / "none.toml", env={},
                             overrides={"db": str(db), **CHUNKER})
    return MemoryService(settings, embedder=make_embedder(*EMBEDDER), install_key=b"k" * 32)


def db_path(cache: Path, n_docs: int) -> Path:
    """Where the cached database for ``n_docs`` lives."""
    return cache / (f"tui-{n_docs}-g{bench.GENERATOR_VERSION}-s{SEED}-"
                    f"{CHUNKER['chunker.max_tokens']}x{CHUNKER['chunker.overlap_tokens']}"
                    f"-{EMBEDDER[0]}{EMBEDDER[1]['dim']}.db")


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


# -- the event loop ------------------------------------------------------------------
class LoopWatch:
    """Measures how late a 5 ms ticker wakes up: the longest event-loop stall.

    With ``sample`` a watchdog thread looks every 2 ms how long ago the ticker last
    ran; past ``sample_after`` seconds it records the loop thread's stack (once per
    stall, again every 20 ms while it lasts): :attr:`samples` says what blocked.
    """

    PERIOD = 0.005
    LONG_GC = 0.02

    def __init__(self, *, sample: bool = False, sample_after: float = 0.03) -> None:
        self.worst = 0.0
        self.stalls: list[float] = []  # every lateness over the target, this phase
        # The same lateness less the harness's own work on the loop since the last tick
        # (FrameTap's grid model, which a real terminal does not do): see FrameTap.on_tap.
        self.worst_app = 0.0
        self.last_worst_app = 0.0
        self.harness_since_tick = 0.0
        self.samples: Counter[str] = Counter()
        self.others: Counter[str] = Counter()  # other threads' memlens frames during stalls
        self._task: asyncio.Task[None] | None = None
        self._last = time.perf_counter()
        self._sample = sample
        self._sample_after = sample_after
        self._stop = threading.Event()
        self._loop_thread = threading.get_ident()
        # generation: [count, longest wall s, longest CPU s, total wall s, on other threads]
        self.gc_pauses: dict[int, list[float]] = {}
        self.phase_gc: dict[int, list[float]] = {}  # the same, this phase
        self._gc_started = (0.0, 0.0)
        self._gc_count = (0, 0, 0)
        self.long_gc: list[dict[str, Any]] = []  # collections over LONG_GC s of CPU
        self._gc_since_tick = 0.0  # collection wall time since the ticker last ran
        # With ``sample``: every stall over the target as (ended at, late s, of which
        # collections s), this phase; intervals (start, end, what) of other work that
        # may hold the interpreter lock (lexical-cache builds), to match against them.
        self.stall_log: list[tuple[float, float, float, float, float]] = []
        self.busy: list[tuple[float, float, str]] = []
        self.builds: list[tuple[str, float, float]] = []  # (what, wall s, thread CPU s)

    async def _tick(self) -> None:
        period = self.PERIOD
        self._last = last = time.perf_counter()
        loop_cpu, proc_cpu = time.thread_time(), time.process_time()
        while True:
            await asyncio.sleep(period)
            now = time.perf_counter()
            late = now - last - period
            if late > STALL_TARGET_MS / 1000:
                self.stalls.append(late)
                if self._sample:
                    # CPU beside wall: the loop thread's own (it computed: a handler, a
                    # render, a collection) and the process's (another thread of ours
                    # ran, holding the interpreter lock the loop waited for); neither
                    # near the wall: other processes had the cores.
                    self.stall_log.append((now, late, self._gc_since_tick,
                                           time.thread_time() - loop_cpu,
                                           time.process_time() - proc_cpu))
            if self._sample:
                loop_cpu, proc_cpu = time.thread_time(), time.process_time()
            self._gc_since_tick = 0.0
            self.worst = max(self.worst, late)
            self.worst_app = max(self.worst_app, late - self.harness_since_tick)
            self.harness_since_tick = 0.0
            self._last = last = now

    def _watchdog(self) -> None:
        sampled_at = 0.0
        while not self._stop.wait(0.002):
            now = time.perf_counter()
            if now - self._last > self._sample_after and now - sampled_at > 0.02 \
                    and sampled_at < self._last + self._sample_after:
                frames = sys._current_frames()
                frame = frames.get(self._loop_thread)
                if frame is not None:
                    stack = traceback.extract_stack(frame)[-14:]
                    self.samples["\n".join(
                        f"    {Path(f.filename).name}:{f.lineno} {f.name}" for f in stack)] += 1
                # What our other threads were doing meanwhile (a worker's memlens frames:
                # it may hold the interpreter lock the loop waits for).
                for ident, other in frames.items():
                    if ident in (self._loop_thread, threading.get_ident()):
                        continue
                    ours = [f for f in traceback.extract_stack(other)
                            if "memlens" in f.filename and "benchmarks" not in f.filename]
                    if ours:
                        self.others[" < ".join(
                            f"{f.name}:{f.lineno}" for f in reversed(ours[-4:]))] += 1
                sampled_at = now

    def _gc(self, phase: str, info: dict[str, int]) -> None:
        """``gc.callbacks``: time every collection (a full one can stall the loop)."""
        # CPU beside wall: on shared cores a collection's wall time includes the time
        # the thread waited for a core. A collection in a worker thread holds the
        # interpreter lock too, so it stalls the loop just the same (counted apart).
        if phase == "start":
            self._gc_count = gc.get_count()
            self._gc_started = (time.perf_counter(), time.thread_time())
            return
        took = time.perf_counter() - self._gc_started[0]
        cpu = time.thread_time() - self._gc_started[1]
        gen = info.get("generation", -1)
        if cpu > self.LONG_GC:
            self.long_gc.append({"gen": gen, "cpu_ms": round(cpu * 1000, 1),
                                 "wall_ms": round(took * 1000, 1),
                                 "count_before": list(self._gc_count),
                                 "collected": info.get("collected", 0)})
        self._gc_since_tick += took
        worker = threading.get_ident() != self._loop_thread
        for table in (self.gc_pauses, self.phase_gc):
            n, worst, worst_cpu, total, other = table.get(gen, [0, 0.0, 0.0, 0.0, 0])
            table[gen] = [n + 1, max(worst, took), max(worst_cpu, cpu), total + took,
                          other + worker]

    def add_harness(self, seconds: float) -> None:
        """The harness worked ``seconds`` on the loop (not app work: subtracted from the
        lateness in :attr:`worst_app`)."""
        self.harness_since_tick += seconds

    def start(self) -> None:
        """Start ticking (on the running loop) and, if asked, the watchdog and GC timing."""
        self._loop_thread = threading.get_ident()
        self._task = asyncio.get_running_loop().create_task(self._tick())
        if self._sample:
            threading.Thread(target=self._watchdog, daemon=True, name="stall-watchdog").start()
            gc.callbacks.append(self._gc)

    def reset(self) -> float:
        """The worst lateness since the last reset (seconds); starts a new phase."""
        worst, self.worst = self.worst, 0.0
        self.last_worst_app, self.worst_app = self.worst_app, 0.0
        self.stalls = []
        self.stall_log = []
        self.phase_gc = {}
        return worst

    def stall_report(self) -> dict[str, Any]:
        """This phase's collections per generation, and its stalls over the target
        with the collection time inside each and whether a cache build overlapped."""
        stalls = []
        for end, late, in_gc, loop_cpu, proc_cpu in self.stall_log:
            start = end - late - self.PERIOD
            overlap = sorted({what for b0, b1, what in self.busy if b0 < end and b1 > start})
            stalls.append({"ms": round(late * 1000, 1), "gc_ms": round(in_gc * 1000, 1),
                           "loop_cpu_ms": round(loop_cpu * 1000, 1),
                           "process_cpu_ms": round(proc_cpu * 1000, 1),
                           **({"during": overlap} if overlap else {})})
        return {"stalls": stalls, "gc": _gc_table(self.phase_gc)}

    def stop(self) -> None:
        """Stop the ticker and the watchdog."""
        self._stop.set()
        if self._gc in gc.callbacks:
            gc.callbacks.remove(self._gc)
        if self._task is not None:
            self._task.cancel()


# -- the screen ----------------------------------------------------------------------
@dataclass
class Frame:
    """One update that reached the (modelled) terminal."""

    t: float  # perf_counter once its escape sequences were built
    screen: str  # the screen class
    # The whole terminal grid after the update, one cell per item. Tuples of strings:
    # the collector untracks them, so thousands of kept frames do not lengthen the
    # full garbage collections of the app being measured (lists of lists did: 3,300
    # frames made a generation-2 collection take ~430 ms at 10k documents).
    rows: tuple[tuple[str, ...], ...]


@dataclass
class FrameTap:
    """Wraps ``app._display``: builds the terminal bytes, stamps and models each frame."""

    width: int
    height: int
    frames: list[Frame] = field(default_factory=list)
    bytes_out: int = 0
    tap_seconds: float = 0.0  # time spent modelling the grid (not in a real terminal)
    on_tap: Any = None  # called with each frame's modelling seconds (LoopWatch subtracts them)
    _grid: list[list[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._grid = [[" "] * self.width for _ in range(self.height)]

    def install(self, app: Any) -> None:
        """Hook the app instance (before it runs)."""
        from textual._compositor import CompositorUpdate

        original = app._display

        def display(screen: Any, renderable: Any) -> None:
            original(screen, renderable)
            if not isinstance(renderable, CompositorUpdate) or app._batch_count:
                return
            # What App._display does in a terminal: the escape sequences of the update.
            self.bytes_out += len(renderable.render_segments(app.console))
            t = time.perf_counter()
            self._apply(renderable)
            self.frames.append(Frame(t, type(screen).__name__, self.snapshot()))
            took = time.perf_counter() - t
            self.tap_seconds += took
            if self.on_tap is not None:
                self.on_tap(took)

        app._display = display

    def snapshot(self) -> tuple[tuple[str, ...], ...]:
        """The grid now, as tuples of strings (untracked by the collector once seen)."""
        return tuple(tuple(r) for r in self._grid)

    def _put(self, x: int, y: int, strips: Iterable[Any], limit: int | None = None) -> None:
        if not 0 <= y < self.height:
            return
        from rich.cells import cell_len

        row = self._grid[y]
        end = self.width if limit is None else min(limit, self.width)
        for strip in strips:
            for seg in strip:
                if seg.control:
                    continue
                text = seg.text
                if text.isascii():
                    n = min(len(text), end - x)
                    if n > 0:
                        row[x:x + n] = text[:n]
                    x += len(text)
                else:
                    for ch in text:
                        w = cell_len(ch)
                        if x + w <= end:
                            row[x] = ch
                            if w == 2:
                                row[x + 1] = ""
                        x += w

    def _apply(self, update: Any) -> None:
        from textual._compositor import ChopsUpdate, LayoutUpdate

        if isinstance(update, LayoutUpdate):
            for y, line in enumerate(update.strips, update.region.y):
                self._put(update.region.x, y, line)
        elif isinstance(update, ChopsUpdate):
            for y, x1, x2 in update.spans:
                line = update.chops[y]
                for end, (x, strip) in zip(update.chop_ends[y], line.items(), strict=False):
                    if strip is None or x > x2 or end <= x1:
                        continue
                    self._put(x, y, [strip], limit=min(end, x2))

    def text(self, region: Any, rows: Sequence[Sequence[str]] | None = None) -> str:
        """The characters in ``region`` (x, y, width, height) of a frame (default: now)."""
        grid: Sequence[Sequence[str]] = self._grid if rows is None else rows
        x, y, w, h = region
        return "\n".join("".join(r[x:x + w]) for r in grid[y:y + h])

    def since(self, t: float) -> list[Frame]:
        """Frames stamped after ``t``."""
        return [f for f in self.frames if f.t >= t]

    def first_showing(self, t: float, regions: Sequence[Any], screen: str | None = None,
                      want: Sequence[str] | None = None) -> Frame | None:
        """The first frame after ``t`` whose ``regions`` read ``want`` (default: now)."""
        want = [self.text(r) for r in regions] if want is None else want
        for f in self.since(t):
            if screen is not None and f.screen != screen:
                continue
            if [self.text(r, f.rows) for r in regions] == list(want):
                return f
        return None


def _region(widget: Any) -> tuple[int, int, int, int]:
    r = widget.region
    return (r.x, r.y, r.width, r.height)


# -- statistics ----------------------------------------------------------------------
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


async def _settled(app: Any, pilot: Any, tap: FrameTap, quiet: float = 0.08,
                   timeout: float = 30.0) -> None:
    """Idle (no debounce, no worker) and no frame for ``quiet`` seconds."""
    deadline = time.monotonic() + timeout
    await _idle(app, pilot, timeout)
    while time.monotonic() < deadline:
        last = tap.frames[-1].t if tap.frames else 0.0
        await pilot.pause(quiet / 2)
        if time.perf_counter() - last >= quiet and app.is_idle() \
                and (not tap.frames or tap.frames[-1].t == last):
            return
    raise TimeoutError("the screen did not settle")


def _gc_table(pauses: dict[int, list[float]]) -> dict[str, dict[str, float]]:
    return {f"gen{g}": {"count": int(n), "longest_ms": round(w * 1000, 1),
                        "longest_cpu_ms": round(c * 1000, 1), "total_ms": round(t * 1000, 1),
                        "in_workers": int(o)}
            for g, (n, w, c, t, o) in sorted(pauses.items())}


def _heap_state(app: Any) -> dict[str, Any]:
    """What the collector holds at the end of a phase (memory must stay bounded), and
    the collections the app's heap keeper ran (older trees have none)."""
    out: dict[str, Any] = {"gc_count": list(gc.get_count()),
                           "tracked_objects": len(gc.get_objects())}
    try:
        with open("/proc/self/statm") as f:
            out["rss_mb"] = round(int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20,
                                  1)
    except (OSError, ValueError):
        pass
    kept = getattr(getattr(app, "heap", None), "collections", None)
    if kept is not None:
        out["keeper_collections"] = {f"{r}{g}": n for (r, g), n in sorted(kept.items())}
    cache = getattr(getattr(app, "service", None), "_lexical_cache", None)
    if cache is not None:
        out["lexical_cache"] = {"builds": cache.builds, "served": cache.served}
    return out


def _time_lexical_builds(svc: Any, watch: LoopWatch) -> None:
    """Record when the service's lexical-cache builds (phrase postings, node arrays)
    run, wall and thread CPU, so stalls can be matched against them (instrumentation
    of the instance and module; the cache itself is unchanged)."""
    try:
        from memlens.core.search import lexical_cache as lc
    except ImportError:
        return
    getter = getattr(svc, "lexical_cache", None)
    if getter is None:
        return
    cache = getter()

    def timed(what: str, fn: Any) -> Any:
        def run(*args: Any) -> Any:
            t, c = time.perf_counter(), time.thread_time()
            try:
                return fn(*args)
            finally:
                end = time.perf_counter()
                watch.busy.append((t, end, what))
                watch.builds.append((what, end - t, time.thread_time() - c))
        return run

    # The phrase read is a method in older trees, a module function (run on the cache's
    # own background thread) in newer ones.
    if hasattr(cache, "_fetch"):
        cache._fetch = timed("phrase postings", cache._fetch)
    elif hasattr(lc, "_read"):
        lc._read = timed("phrase postings", lc._read)  # type: ignore[attr-defined,unused-ignore]
    if hasattr(lc, "_load_nodes"):
        lc._load_nodes = timed("node arrays", lc._load_nodes)  # type: ignore[attr-defined,unused-ignore]


class SearchStamps:
    """Stamps a search screen's work from outside (the app keeps no timing hooks): when
    its debounce fired (``run_search`` called on the event loop) and when the results
    handler had shown the outcome, by wrapping the screen's own methods.

    ``stamps`` holds the last search shown ({"fired", "handled"}: ``perf_counter``
    seconds); ``in_app`` each fired -> handled time.
    """

    def __init__(self, screen: Any) -> None:
        from memlens.tui.messages import SearchResults

        self.fired: tuple[str, str, float] | None = None
        self.stamps: dict[str, float] = {}
        self.in_app: list[float] = []
        run_search, on_message = screen.run_search, screen._on_message

        def run(query: str, mode: str, *args: Any, **kwargs: Any) -> Any:
            self.fired = (query, mode, time.perf_counter())
            return run_search(query, mode, *args, **kwargs)

        async def handled(message: Any) -> None:
            await on_message(message)
            if not isinstance(message, SearchResults):
                return
            out, fired = message.outcome, self.fired
            if screen.last is not out or out.error or fired is None \
                    or fired[:2] != (out.query, out.mode):
                return  # stale (not shown), failed, or not the search last fired
            done = time.perf_counter()
            self.in_app.append(done - fired[2])
            self.stamps = {"fired": fired[2], "handled": done}
            self.fired = None

        # Instance attributes win over the class's: ``_start`` calls ``self.run_search``
        # and Textual's dispatch awaits ``self._on_message`` for every message.
        screen.run_search = run
        screen._on_message = handled


class Phase:
    """Wall and process CPU time of one phase, and its worst loop stall."""

    def __init__(self, watch: LoopWatch, app: Any = None) -> None:
        self.watch = watch
        self.app = app
        watch.reset()
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()

    def end(self) -> dict[str, float]:
        """``wall_s``, ``cpu_s``, ``loop_stall_ms``, ``stalls_over_50ms``."""
        stalls = len(self.watch.stalls)
        wall, cpu = time.perf_counter() - self.wall0, time.process_time() - self.cpu0
        extra = self.watch.stall_report() if self.watch._sample else {}
        if self.app is not None:
            extra.update(_heap_state(self.app))
        worst = self.watch.reset()
        return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                "loop_stall_ms": round(worst * 1000, 1),
                # the same, less the harness's grid model inside it (the app's own stall)
                "loop_stall_ms_app": round(self.watch.last_worst_app * 1000, 1),
                "stalls_over_50ms": stalls, **extra}


# -- in process ----------------------------------------------------------------------
async def measure(db: Path, n_queries: int, *, modes: Sequence[str] = MODES,
                  key_gap: float = 0.0, find_stalls: bool = False,
                  detail_moves: int = 30, repeat_queries: int = 1,
                  filters: Sequence[str] = ("auth", "deploy", "cach", "runbook 12", "p0042"),
                  ) -> dict[str, Any]:
    """Run the app over ``db`` and time first paint, navigation, filter and search."""
    from textual.widgets import Input

    from memlens.tui.app import MemlensApp
    from memlens.tui.screens.search import SearchScreen

    out: dict[str, Any] = {}
    queries = bench.generate_queries(n_queries, seed=1) * max(1, repeat_queries)
    svc = _service(db)
    watch = LoopWatch(sample=find_stalls)
    if find_stalls:
        _time_lexical_builds(svc, watch)
    tap = FrameTap(*SIZE)
    tap.on_tap = watch.add_harness
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    app = MemlensApp(svc, watch=False, ingest=False)
    app.animation_level = "none"
    tap.install(app)
    async with app.run_test(size=SIZE) as pilot:
        watch.start()
        phase = Phase(watch, app)
        await _settled(app, pilot, tap)
        tree = _region(app.doc_tree)
        listed = tap.first_showing(t0, [tree], "BrowserScreen")
        out["first_frame_s"] = round(tap.frames[0].t - t0, 3)
        out["documents_on_screen_s"] = round(listed.t - t0, 3) if listed else None
        out["startup_cpu_s"] = round(time.process_time() - cpu0, 2)
        out["documents_listed"] = app.doc_tree.document_count
        out["startup"] = phase.end()

        # Cursor moves in the tree: each shows a document's chunks, timeline, projection.
        phase = Phase(watch, app)
        detail = _region(app.browser.query_one("#detail")) \
            if app.browser.query("#detail") else (tree[2], 0, SIZE[0] - tree[2], SIZE[1])
        times = []
        for _ in range(detail_moves):
            t = time.perf_counter()
            await pilot.press("down")
            await _settled(app, pilot, tap)
            shown = tap.first_showing(t, [detail], "BrowserScreen")
            if shown is not None:
                times.append(shown.t - t)
        out["detail"] = {**_summary(times), **phase.end()}

        # "/" moves the focus from the tree to the filter box: its own phase (Textual
        # redraws every tree line when the tree loses the focus).
        phase = Phase(watch, app)
        await pilot.press("slash")
        await _settled(app, pilot, tap)
        out["focus_filter"] = phase.end()

        # Fuzzy filter, typed key by key (the debounce keeps only the last keystroke).
        phase = Phase(watch, app)
        flt = app.query_one("#filter", Input)
        times = []
        for text in filters:
            flt.value = ""
            await _settled(app, pilot, tap)
            for c in text[:-1]:
                await pilot.press(c)
                if key_gap:
                    await asyncio.sleep(key_gap)
            t = time.perf_counter()
            await pilot.press(text[-1])
            await _settled(app, pilot, tap)
            shown = tap.first_showing(t, [tree], "BrowserScreen")
            if shown is not None:
                times.append(shown.t - t)
        out["filter"] = {**_summary(times), **phase.end()}
        await pilot.press("escape", "escape")
        await _settled(app, pilot, tap)

        # Live search per mode: type each query; last keystroke -> results on screen.
        await pilot.press("s")
        await _settled(app, pilot, tap)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        stamper = SearchStamps(screen)
        box = screen.query_one("#search-input", Input)
        area = [_region(screen.query_one("#search-info")),
                _region(screen.query_one("#search-results"))]
        for mode in modes:
            screen.set_mode(mode)
            await _settled(app, pilot, tap)
            phase = Phase(watch, app)
            times, service, in_app, missed = [], [], [], 0
            to_fired, to_frame = [], []
            for q in queries:
                box.value = ""
                await _settled(app, pilot, tap)
                stamper.in_app.clear()
                for c in q[:-1]:
                    await pilot.press(c)
                    if key_gap:
                        await asyncio.sleep(key_gap)
                t = time.perf_counter()
                await pilot.press(q[-1])
                await _settled(app, pilot, tap)
                shown = tap.first_showing(t, area, "SearchScreen")
                if shown is None or screen.last is None or screen.last.query != q:
                    missed += 1
                    continue
                times.append(shown.t - t)
                service.append(screen.last.elapsed)
                in_app.extend(stamper.in_app[-1:])
                stamps = stamper.stamps
                if stamps.get("fired", 0) >= t:
                    to_fired.append(stamps["fired"] - t)
                    to_frame.append(shown.t - stamps["handled"])
            res = phase.end()
            out[f"search_{mode}"] = {**_summary(times), **res, "missed": missed,
                                     "service_p50_ms": _summary(service)["p50_ms"],
                                     "fired_to_handled_p50_ms": _summary(in_app)["p50_ms"],
                                     "press_to_fired_p50_ms": _summary(to_fired)["p50_ms"],
                                     "handled_to_frame_p50_ms": _summary(to_frame)["p50_ms"]}
        watch.stop()
    svc.close()
    out["frames"] = len(tap.frames)
    out["terminal_bytes"] = tap.bytes_out
    out["tap_ms_per_frame"] = round(tap.tap_seconds / max(1, len(tap.frames)) * 1000, 3)
    if find_stalls:
        out["stall_samples"] = [{"count": n, "stack": s} for s, n in watch.samples.most_common(8)]
        out["other_threads"] = [{"count": n, "frames": s} for s, n in watch.others.most_common(8)]
        out["gc_pauses"] = _gc_table(watch.gc_pauses)
        out["long_collections"] = sorted(watch.long_gc, key=lambda c: -c["cpu_ms"])[:12]
        out["lexical_builds"] = [{"what": w, "wall_ms": round(t * 1000, 1),
                                  "cpu_ms": round(c * 1000, 1)} for w, t, c in watch.builds]
    return out


async def _settled_without_pilot(app: Any, tap: FrameTap, quiet: float = 0.08,
                                 timeout: float = 30.0) -> None:
    """:func:`_settled` without the Pilot: ``pilot.pause`` posts a callback to every
    widget and forces a screen update each time (at start-up ~3,000 of the phase's ~3,300
    messages came from the harness's waits), which a user's terminal never sees. Plain
    sleeps until the app is idle and no frame came for ``quiet`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await asyncio.sleep(quiet / 2)
        last = tap.frames[-1].t if tap.frames else 0.0
        if tap.frames and app.is_idle() and time.perf_counter() - last >= quiet:
            return
    raise TimeoutError("the screen did not settle")


async def measure_startup(db: Path, *, find_stalls: bool = False) -> dict[str, Any]:
    """Only the start-up phase of :func:`measure`: the app over ``db`` until the screen
    settles (listing, index-file marks, filter candidates, stats), with its stalls.
    Waits with plain sleeps, not the Pilot (:func:`_settled_without_pilot`)."""
    from memlens.tui.app import MemlensApp

    svc = _service(db)
    watch = LoopWatch(sample=find_stalls)
    tap = FrameTap(*SIZE)
    tap.on_tap = watch.add_harness
    t0 = time.perf_counter()
    app = MemlensApp(svc, watch=False, ingest=False)
    app.animation_level = "none"
    tap.install(app)
    async with app.run_test(size=SIZE):
        watch.start()
        phase = Phase(watch, app)
        await _settled_without_pilot(app, tap)
        listed = tap.first_showing(t0, [_region(app.doc_tree)], "BrowserScreen")
        out: dict[str, Any] = {
            "documents_on_screen_s": round(listed.t - t0, 3) if listed else None,
            "startup": phase.end()}
        watch.stop()
    svc.close()
    if find_stalls:
        out["stall_samples"] = [{"count": n, "stack": s} for s, n in watch.samples.most_common(4)]
        out["other_threads"] = [{"count": n, "frames": s} for s, n in watch.others.most_common(6)]
    return out


def core_search(db: Path, n_queries: int) -> dict[str, Any]:
    """The same queries straight through the service (no UI): the UI's floor."""
    queries = bench.generate_queries(n_queries, seed=1)
    core = _service(db)
    out: dict[str, Any] = {}
    try:
        for mode in MODES:
            core.search("warm up", mode=mode)
            times, cpu = [], time.process_time()
            for q in queries:
                t = time.perf_counter()
                core.search(q, mode=mode, k=20)
                times.append(time.perf_counter() - t)
            out[mode] = {**_summary(times),
                         "cpu_ms_per_query": round((time.process_time() - cpu) / len(queries)
                                                   * 1000, 1)}
    finally:
        core.close()
    return out


# -- out of process: a real terminal (tmux) ------------------------------------------------
def _memlens_argv() -> list[str]:
    script = Path(sys.executable).with_name("memlens")
    return [str(script)] if script.exists() else [sys.executable, "-m", "memlens.cli.main"]


def _config(cache: Path) -> Path:
    cfg = cache / "tui-bench.toml"
    cfg.write_text(f"[chunker]\nmax_tokens = {CHUNKER['chunker.max_tokens']}\n"
                   f"overlap_tokens = {CHUNKER['chunker.overlap_tokens']}\n\n"
                   f"[embedder]\nname = \"{EMBEDDER[0]}\"\ndim = {EMBEDDER[1]['dim']}\n\n"
                   "[watch]\nenabled = false\n")
    (cache / "empty-project" / "memory").mkdir(parents=True, exist_ok=True)
    return cfg


def _tmux(*args: str) -> subprocess.CompletedProcess[str]:
    # A server of our own (socket per process): kill-server ends only our panes.
    return subprocess.run(["tmux", "-L", f"memlens-tui-bench-{os.getpid()}", *args], check=False,
                          capture_output=True, text=True)


def spawn_first_paint(cmd: Sequence[str], ready: Sequence[str], *, timeout: float = 30.0,
                      env: dict[str, str] | None = None) -> dict[str, Any]:
    """Spawn ``cmd`` in a fresh 140x45 tmux pane; time the first non-empty pane and the
    first pane containing every string of ``ready`` (seconds from the spawn)."""
    name = f"p{os.getpid()}-{time.monotonic_ns()}"
    shell = " ".join(_quote(c) for c in cmd)
    run_env = " ".join(f"{k}={_quote(v)}" for k, v in (env or {}).items())
    t0 = time.perf_counter()
    r = _tmux("new-session", "-d", "-s", name, "-x", str(SIZE[0]), "-y", str(SIZE[1]),
              f"{run_env} exec {shell}".strip())
    if r.returncode:
        raise RuntimeError(f"tmux new-session failed: {r.stderr.strip()}")
    first = done = None
    pane = ""
    try:
        while time.perf_counter() - t0 < timeout:
            pane = _tmux("capture-pane", "-p", "-t", name).stdout
            now = time.perf_counter()
            if first is None and pane.strip():
                first = now - t0
            if all(s in pane for s in ready):
                done = now - t0
                break
            time.sleep(0.005)
    finally:
        _tmux("kill-session", "-t", name)
    return {"first_output_s": None if first is None else round(first, 3),
            "ready_s": None if done is None else round(done, 3),
            "pane": "" if done is not None else pane}


def _quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


PRINT_READY = "import time; print('ready', flush=True); time.sleep(60)"


def first_paint_spawned(db: Path, cache: Path, n: int) -> dict[str, Any]:
    """``memlens tui`` in tmux, ``n`` times: first output and documents listed."""
    if shutil.which("tmux") is None:
        return {"skipped": "tmux not installed (apt-get install -y tmux)"}
    cfg = _config(cache)
    svc = _service(db)
    try:
        docs = svc.list_documents()
    finally:
        svc.close()
    # The listing's handler fills the tree (first repository expanded) and the count
    # line above it in one go: both on screen = the documents are listed.
    ready = [f"{len(docs):,} documents in", docs[0].repository[-40:]]
    argv = [*_memlens_argv(), "tui", str(cache / "empty-project" / "memory"),
            "--repository", "bench-empty", "--db", str(db), "--config", str(cfg),
            "--no-ingest", "--no-watch"]
    # Textual takes COLUMNS/LINES over the pty's size when they are set (pytest sets them).
    env = {"TERM": "xterm-256color", "MEMLENS_CONFIG": str(cfg),
           "COLUMNS": str(SIZE[0]), "LINES": str(SIZE[1])}
    if os.environ.get("PYTHONPATH"):  # comparing two source trees with the same venv
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    _tmux("new-session", "-d", "-s", "keep", "-x", "20", "-y", "5", "sleep 3600")  # server up
    runs, floors = [], []
    try:
        for _ in range(n):
            floors.append(spawn_first_paint([sys.executable, "-c", PRINT_READY],
                                            ["ready"], env=env))
            runs.append(spawn_first_paint(argv, ready, env=env))
    finally:
        _tmux("kill-server")
    ok = [r for r in runs if r["ready_s"] is not None]
    return {"command": " ".join(argv), "runs": runs,
            "first_output_s": [r["first_output_s"] for r in runs],
            "documents_on_screen_s": [r["ready_s"] for r in runs],
            "median_documents_on_screen_s": round(statistics.median(
                r["ready_s"] for r in ok), 3) if ok else None,
            "python_print_floor_s": [f["ready_s"] for f in floors]}


# -- report --------------------------------------------------------------------------
def _merge(rounds: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """One phase over all rounds: per-round figures and the extremes."""
    parts = [r[key] for r in rounds]
    return {"per_round": parts,
            "p50_ms": [p["p50_ms"] for p in parts], "p95_ms": [p["p95_ms"] for p in parts],
            "max_ms": max(p["max_ms"] for p in parts),
            "loop_stall_ms": max(p["loop_stall_ms"] for p in parts)}


def _limit_blas_threads() -> None:
    """What ``memlens tui`` does before numpy loads (one BLAS thread unless set), so the
    in-process app runs as the spawned one does; an older source tree may not have it."""
    try:
        from memlens.cli.tui import limit_blas_threads
    except ImportError:
        return
    limit_blas_threads()


def main(argv: list[str] | None = None) -> int:
    """Build (or reuse) the database, measure (rounds interleaved with spawns), print."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memlens-tui-bench")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--spawns", type=int, default=3, help="tmux spawns per round (0: none)")
    ap.add_argument("--key-gap-ms", type=float, default=0.0,
                    help="pause between the keystrokes of a query (0: as fast as Pilot goes)")
    ap.add_argument("--find-stalls", action="store_true",
                    help="sample the loop thread's stack during stalls over 30 ms")
    ap.add_argument("--repeat-queries", type=int, default=1,
                    help="type the query list this many times per mode (a long-lived service"
                         " builds lexical phrase postings for phrases it has seen before)")
    ap.add_argument("--valve-only", action="store_true",
                    help="the app never sees the UI idle (memlens.tui.heap.IDLE_AFTER = inf):"
                         " only the heap keeper's safety valve collects; the tracked"
                         " objects and RSS per phase show whether memory stays bounded")
    ap.add_argument("--first-paint-only", action="store_true",
                    help="only spawn `memlens tui` in tmux --spawns times (this venv's entry point)")
    ap.add_argument("--startup-only", type=int, default=0, metavar="N",
                    help="only the in-process start-up phase, N times (fresh app each time):"
                         " longest stall, stalls over 50 ms with loop/process CPU, and with"
                         " --find-stalls what the loop and our other threads ran meanwhile")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    _limit_blas_threads()
    if args.valve_only:
        from memlens.tui import heap

        if not hasattr(heap, "IDLE_AFTER"):
            ap.error("--valve-only: this tree's heap keeper has no idle collection")
        heap.IDLE_AFTER = float("inf")  # type: ignore[attr-defined,unused-ignore]
    args.cache.mkdir(parents=True, exist_ok=True)
    db = db_path(args.cache, args.docs)
    result: dict[str, Any] = {"command": "uv run python benchmarks/tui.py " + " ".join(
        argv if argv is not None else sys.argv[1:]), "database": str(db),
        "embedder": f"{EMBEDDER[0]} {EMBEDDER[1]['dim']}-d", "cores": os.cpu_count(),
        "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS")}
    if args.rebuild or not db.exists():
        print(f"building {db} (generate, ingest, project; takes minutes)…", file=sys.stderr)
        result["build"] = build(db, args.docs)
    if args.first_paint_only:
        fp = first_paint_spawned(db, args.cache, max(1, args.spawns))
        print(json.dumps({**result, "spawned": fp,
                          "pythondontwritebytecode": os.environ.get("PYTHONDONTWRITEBYTECODE")},
                         indent=2 if args.json else None))
        return 0
    if args.startup_only:
        starts = [asyncio.run(measure_startup(db, find_stalls=args.find_stalls))
                  for _ in range(args.startup_only)]
        stalls = [st["startup"]["loop_stall_ms"] for st in starts]
        app_stalls = [st["startup"]["loop_stall_ms_app"] for st in starts]
        result.update(startups=starts, longest_stall_ms=stalls,
                      median_longest_stall_ms=statistics.median(stalls),
                      longest_stall_ms_app=app_stalls,
                      median_longest_stall_ms_app=statistics.median(app_stalls),
                      runs_with_a_stall_over_50ms=sum(
                          st["startup"]["stalls_over_50ms"] > 0 for st in starts))
        print(json.dumps(result, indent=2 if args.json else None))
        return 0
    rounds: list[dict[str, Any]] = []
    spawned: list[dict[str, Any]] = []
    for i in range(args.rounds):
        if args.spawns:
            spawned.append(first_paint_spawned(db, args.cache, args.spawns))
        modes = MODES[i % 3:] + MODES[:i % 3]  # rotate which mode runs first
        rounds.append(asyncio.run(measure(db, args.queries, modes=modes,
                                          key_gap=args.key_gap_ms / 1000,
                                          find_stalls=args.find_stalls,
                                          repeat_queries=args.repeat_queries)))
        print(f"round {i + 1}/{args.rounds} done", file=sys.stderr)
    result["core_search"] = core_search(db, args.queries)
    result["rounds"] = rounds
    result["spawned"] = spawned
    for key in ("detail", "filter", *(f"search_{m}" for m in MODES)):
        result[key] = _merge(rounds, key)
    focus = [r["focus_filter"] for r in rounds]
    result["focus_filter"] = {"per_round": focus,
                              "loop_stall_ms": max(p["loop_stall_ms"] for p in focus)}
    result["startup"] = {
        "in_process_first_frame_s": [r["first_frame_s"] for r in rounds],
        "in_process_documents_on_screen_s": [r["documents_on_screen_s"] for r in rounds],
        "loop_stall_ms": max(r["startup"]["loop_stall_ms"] for r in rounds),
        "spawned_documents_on_screen_s": [x for s in spawned
                                          for x in s.get("documents_on_screen_s", [])],
        "spawned_first_output_s": [x for s in spawned for x in s.get("first_output_s", [])],
        "python_print_floor_s": [x for s in spawned for x in s.get("python_print_floor_s", [])],
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    _print(result)
    return 0


def _print(result: dict[str, Any]) -> None:
    print(f"database: {result['database']} ({result['embedder']})")
    if "build" in result:
        print(f"build: {result['build']}")
    st = result["startup"]
    print(f"first paint, memlens tui spawned in tmux: documents on screen "
          f"{st['spawned_documents_on_screen_s']} s, first output "
          f"{st['spawned_first_output_s']} s (python -c print floor "
          f"{st['python_print_floor_s']} s)")
    print(f"first paint in process: first frame {st['in_process_first_frame_s']} s, "
          f"documents on screen {st['in_process_documents_on_screen_s']} s, "
          f"startup loop stall {st['loop_stall_ms']} ms")
    print(f"{'phase':<15} {'p50 ms (per round)':<22} {'p95 ms':<18} {'max ms':>7} "
          f"{'stall ms':>9} {'CPU/wall s':>14}")
    for key in ("detail", "filter", *(f"search_{m}" for m in MODES)):
        r = result[key]
        cw = " ".join(f"{p['cpu_s']}/{p['wall_s']}" for p in r["per_round"])
        print(f"{key:<15} {str(r['p50_ms']):<22} {str(r['p95_ms']):<18} {r['max_ms']:>7.1f} "
              f"{r['loop_stall_ms']:>9.1f} {cw:>14}")
    print(f"{'focus_filter':<15} (the '/' key: tree -> filter box) stall ms "
          f"{[p['loop_stall_ms'] for p in result['focus_filter']['per_round']]}")
    for m in MODES:
        per = result[f"search_{m}"]["per_round"]
        print(f"  {m}: last key -> debounce fired p50 "
              f"{[p.get('press_to_fired_p50_ms') for p in per]} ms, fired -> handled p50 "
              f"{[p['fired_to_handled_p50_ms'] for p in per]} ms (service "
              f"{[p['service_p50_ms'] for p in per]}), handled -> frame p50 "
              f"{[p.get('handled_to_frame_p50_ms') for p in per]} ms, missed "
              f"{[p['missed'] for p in per]}")
    for mode, r in result["core_search"].items():
        print(f"(service.search {mode:<7} without UI: p50 {r['p50_ms']:.1f} ms  "
              f"p95 {r['p95_ms']:.1f} ms  max {r['max_ms']:.1f} ms, "
              f"CPU {r['cpu_ms_per_query']} ms/query)")
    for r in result["rounds"]:
        if "gc_pauses" in r:
            print(f"garbage collections: {r['gc_pauses']}")
        for s in r.get("stall_samples", []):
            print(f"stall sample x{s['count']}:\n{s['stack']}")


if __name__ == "__main__":
    sys.exit(main())
