"""Keeping Python's full garbage collections short while the UI runs.

A generation-2 collection walks every container object the collector tracks and
holds the interpreter lock while it does, so it stalls the event loop (and every
worker) for as long as it takes. At 10,000 documents the app holds a few hundred
thousand long-lived objects: the listing (``DocumentSummary`` rows, tree nodes) and
the fuzzy filter's candidates (~40,000 objects); walking them all took 100-370 ms
at random moments, e.g. while typing a search.

Two measures, both measured with ``benchmarks/tui.py --find-stalls`` (which times
every collection, wall and CPU):

* ``gc.freeze()`` moves every object that exists now into the permanent generation,
which no collection walks; frozen objects are still freed by reference counting
when they die. :class:`HeapKeeper` freezes right after each of those big,
long-lived structures is built. Only *cyclic* garbage among frozen objects would
stay, so every tenth full reload first collects once (unfreeze, collect, freeze),
at a moment when the list is being redrawn anyway. Freezing is for those big
structures only, never for what a frame leaves behind: Textual's strips cache
themselves (``adjust_cell_length`` of a strip already that long stores the strip in its
own cache), so most rendering garbage is cyclic; freezing after every search kept
~3,500 such objects per search alive.
* A youngest-generation threshold of :data:`YOUNG_THRESHOLD` allocations instead
of Python's 700. Rendering allocates tens of thousands of short-lived containers
per second; with 700, strips still referenced by the frame being built survive
young collections, pile up in the oldest generation and trigger a full collection
every few searches (each walking ~60,000 objects: 50-90 ms of CPU at 10,000
documents). With 10,000 almost all of it dies before its first collection: 20
cursor moves and 20 searches at 10,000 documents ran 6 full collections (47-50 ms
CPU the longest) with 700 and none with 10,000, whose longest pauses were a 10 ms
young and a 28 ms middle collection (CPU; total collection time about the same).
The previous thresholds are put back when the app stops (tests run many apps).
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000
"""Allocations (minus deallocations) of containers between two young collections."""


class HeapKeeper:
    """When the app freezes its heap and when it runs a full collection."""

    FULL_COLLECT_EVERY = 10
    """Full listings between two collections of everything (frozen objects included)."""

    def __init__(self) -> None:
        self.full_loads = 0
        self.freezes = 0
        self.full_collections = 0
        self._saved: tuple[int, int, int] | None = None

    def start(self) -> None:
        """Raise the youngest generation's threshold (while the app runs)."""
        if self._saved is None:
            self._saved = gc.get_threshold()
            young, middle, old = self._saved
            if young:  # 0: collection is off; leave it so
                gc.set_threshold(max(YOUNG_THRESHOLD, young), middle, old)

    def stop(self) -> None:
        """Put the thresholds found at :meth:`start` back."""
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None

    def keep_long_lived(self) -> None:
        """Freeze what exists now (constant time: the generations' lists are spliced).

        Safe from a worker thread: the call is atomic under the interpreter lock."""
        gc.freeze()
        self.freezes += 1

    def full_listing_shown(self) -> None:
        """A full listing replaced the old one: freeze it (every tenth time after
        collecting everything once, so cyclic garbage of old listings is reclaimed)."""
        self.full_loads += 1
        if self.full_loads % self.FULL_COLLECT_EVERY == 0:
            gc.unfreeze()
            gc.collect()
            self.full_collections += 1
        self.keep_long_lived()
