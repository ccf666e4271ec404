"""When Python's garbage collector runs while the UI is up: when nothing else does.

A collection holds the interpreter lock for as long as it walks its generations, so
it stalls the event loop (and every worker) for that long. Left automatic, it runs
whenever enough containers have been allocated, which is exactly in the middle of a
keystroke burst, a search render or a worker building results (a third of them ran
in worker threads, holding the lock the loop waited for), and its pause adds to that
work's. At 10,000 documents the app holds a few hundred thousand long-lived objects:
the listing (``DocumentSummary`` rows, tree nodes), the fuzzy filter's candidates
(~40,000 objects), Textual's caches. Three measures, all measured with
``benchmarks/tui.py --find-stalls`` (which times every collection, wall and CPU, and
how much of each stall over 50 ms was collection):

* ``gc.freeze()`` moves every object that exists now into the permanent generation,
  which no collection walks; frozen objects are still freed by reference counting
  when they die. :class:`HeapKeeper` freezes right after each of those big,
  long-lived structures is built. Only *cyclic* garbage among frozen objects would
  stay, so every tenth full reload asks for one collection of everything (unfreeze,
  collect, freeze), run at the next long idle moment. Freezing is for those big
  structures only, never for what a frame leaves behind: Textual's strips cache
  themselves (``adjust_cell_length`` of a strip already that long stores the strip in
  its own cache), so most rendering garbage is cyclic; freezing after every search
  kept ~3,500 such objects per search alive.
* **Collection when idle.** While the app runs, automatic collection is off
  (``gc.disable()``; put back when it stops) and :meth:`HeapKeeper.tick`, called by
  an app timer every :data:`TICK` seconds on the event loop, collects instead: the
  youngest generation once :data:`IDLE_YOUNG` containers are pending, the middle one
  when Python's own count says it is due, everything only after :data:`FULL_IDLE`
  seconds of quiet, and all of it only when no key or mouse event came for
  :data:`IDLE_AFTER` seconds and nothing is in flight (no debounce waiting, no worker
  running: :meth:`MemlensApp.is_idle`). By then a frame's temporaries are dead, so
  little survives into older generations, and the pause no longer adds to a render.
  No collection runs in a worker thread any more.
* **Safety valve.** Memory stays bounded when the UI is never idle (a long burst of
  searches, a watcher reloading all the time): once a generation's count is
  :data:`VALVE` times past what automatic collection allows (youngest
  :data:`YOUNG_THRESHOLD` containers; middle and oldest Python's thresholds), that
  generation is collected on the next tick whatever the UI is doing (on the loop,
  between two frames: never in a worker, never in the middle of a render).
  :data:`YOUNG_THRESHOLD` is also the youngest threshold when automatic collection is
  on (it was what the app ran with before collection moved to idle moments: with
  Python's 700, strips still referenced by the frame being built survived young
  collections and piled up into a full collection every few searches).
"""

from __future__ import annotations

import gc
import time
from collections import Counter

YOUNG_THRESHOLD = 10_000
"""Allocations (minus deallocations) of containers between two young collections when
automatic collection decides (the valve counts in multiples of it)."""

TICK = 0.05
"""Seconds between two looks at the collector's counts (app timer; short, so that the
valve catches a pile early)."""

IDLE_AFTER = 0.3
"""Seconds without a key or mouse event before an idle collection may run (longer than
the gap between two keys of ordinary typing, 150-250 ms)."""

FULL_IDLE = 2.0
"""Seconds without input before a collection of the oldest generation may run."""

IDLE_YOUNG = 2_000
"""Pending young containers worth an idle collection (fewer: not worth waking up for)."""

VALVE = (2, 1, 4)
"""Per generation (young, middle, old): it is collected whatever the UI does once its
count reaches this many times its automatic threshold. Measured with nothing ever idle
(``benchmarks/tui.py --valve-only``): a young valve of 4x (40,000 containers, ~30,000
of them cyclic garbage) took 40-68 ms of CPU and a middle one after 40 young ones
162 ms, so the young valve is 2x, the middle one Python's own 10 young collections;
the oldest waits for 40 middle ones (Python's own rule skips most of them too)."""


class HeapKeeper:
    """When the app freezes its heap and when the collector runs (see the module)."""

    FULL_COLLECT_EVERY = 10
    """Full listings between two collections of everything (frozen objects included)."""

    def __init__(self) -> None:
        self.full_loads = 0
        self.freezes = 0
        self.full_collections = 0
        self.reclaim_due = False  # a collection of everything, frozen included, is asked for
        # (reason, generation) -> collections run by tick(): reason "idle" or "valve"
        self.collections: Counter[tuple[str, int]] = Counter()
        self.ticks = 0
        self.collecting = False  # tick() is collecting now (a gc.callbacks hook can tell)
        self.last_input = time.perf_counter()
        self._saved: tuple[int, int, int] | None = None
        self._was_enabled = False
        self._managed = False  # automatic collection is off and tick() collects

    # -- lifecycle -----------------------------------------------------------
    def start(self) -> None:
        """Turn automatic collection off (tick() collects) while the app runs; a
        collector the process already turned off (``gc.disable()`` or a youngest
        threshold of 0) stays off and tick() never collects."""
        if self._saved is not None:
            return
        self._saved = gc.get_threshold()
        self._was_enabled = gc.isenabled()
        young = self._saved[0]
        self._managed = self._was_enabled and young > 0
        if self._managed:
            gc.set_threshold(max(YOUNG_THRESHOLD, young), *self._saved[1:])
            gc.disable()

    def stop(self) -> None:
        """Put the thresholds and the enabled state found at :meth:`start` back."""
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            if self._was_enabled:
                gc.enable()
            self._saved = None
            self._managed = False

    @property
    def managed(self) -> bool:
        """Automatic collection is off and :meth:`tick` collects."""
        return self._managed

    # -- the idle collector ----------------------------------------------------
    def input_seen(self, now: float | None = None) -> None:
        """A key or mouse event arrived (``now``: ``perf_counter`` seconds)."""
        self.last_input = time.perf_counter() if now is None else now

    def due(self, now: float, busy: bool) -> tuple[str, int] | None:
        """What :meth:`tick` would collect now: ``(reason, generation)`` or ``None``.

        ``busy``: a debounce is waiting or a worker runs (the app knows)."""
        if not self._managed or self._saved is None:
            return None
        counts, limits = gc.get_count(), gc.get_threshold()
        c0, c1, c2 = counts
        quiet = now - self.last_input
        idle: int | None = None
        if not busy and quiet >= IDLE_AFTER:
            if quiet >= FULL_IDLE and (c2 >= limits[2] or self.reclaim_due):
                idle = 2
            elif c1 >= limits[1]:
                idle = 1
            elif c0 >= IDLE_YOUNG:
                idle = 0
        valve = next((g for g in (2, 1, 0) if counts[g] >= VALVE[g] * limits[g]), None)
        if valve is not None and (idle is None or valve > idle):
            return ("valve", valve)
        return None if idle is None else ("idle", idle)

    def tick(self, now: float | None = None, busy: bool = False) -> tuple[str, int] | None:
        """Collect what :meth:`due` says (on the event loop); returns it."""
        self.ticks += 1
        now = time.perf_counter() if now is None else now
        what = self.due(now, busy)
        if what is None:
            return None
        self.collecting = True
        try:
            if what[1] == 2 and self.reclaim_due:
                self._reclaim()
            else:
                gc.collect(what[1])
        finally:
            self.collecting = False
        self.collections[what] += 1
        return what

    # -- long-lived structures -------------------------------------------------
    def keep_long_lived(self) -> None:
        """Freeze what exists now (constant time: the generations' lists are spliced).

        Safe from a worker thread: the call is atomic under the interpreter lock."""
        gc.freeze()
        self.freezes += 1

    def full_listing_shown(self) -> None:
        """A full listing replaced the old one: freeze it. Every tenth time a
        collection of everything (frozen objects included) is asked for, so cyclic
        garbage of old listings is reclaimed; it runs at the next long idle moment
        (at once when the collector is not the keeper's, or when ten more listings
        came without one)."""
        self.full_loads += 1
        if self.full_loads % self.FULL_COLLECT_EVERY == 0:
            if self.reclaim_due or not self._managed:
                self._reclaim()
            else:
                self.reclaim_due = True
        self.keep_long_lived()

    def _reclaim(self) -> None:
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        self.freezes += 1
        self.full_collections += 1
        self.reclaim_due = False
