"""What keeps the event loop short at 10,000 documents, tested on the bundled corpus.

* the listing goes on screen before the index files are checked (their ⚠ marks
  follow in a second message), so the first listing does not wait for ~300
  ``MEMORY.md`` reads;
* the big long-lived structures (listing, fuzzy-filter candidates) are frozen out of
  the collector's sight;
* while the app runs, automatic collection is off (put back when it stops) and the
  heap keeper collects when the UI is idle: never while keys arrive, soon after they
  stop, and, past the safety valve, whatever the UI does.

No timing is asserted: these check the behaviour the figures rest on.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message

from memlens.tui.app import MemlensApp
from memlens.tui.heap import (
    FULL_IDLE,
    IDLE_AFTER,
    IDLE_YOUNG,
    TICK,
    VALVE,
    YOUNG_THRESHOLD,
    HeapKeeper,
)
from memlens.tui.messages import DocumentsLoaded, IndexWarningsLoaded
from tests.conftest import Clock
from tests.test_tui import KESTREL, SIZE, Scenario, async_test, build_scenario, settle


@pytest.fixture
def scenario(tmp_path: Path, clock: Clock, make_service: Callable[..., Any]) -> Scenario:
    """The corpus with every state (a long MEMORY.md with index warnings among them)."""
    return build_scenario(tmp_path, clock, make_service)


def _record(app: MemlensApp) -> list[Message]:
    """Every message workers post to the app, in order (the app still handles them)."""
    seen: list[Message] = []
    original = app.post_message

    def post(message: Message) -> bool:
        seen.append(message)
        return original(message)

    app.post_message = post  # type: ignore[method-assign]
    return seen


@async_test
async def test_listing_is_posted_before_the_index_warnings(scenario: Scenario) -> None:
    index = scenario.doc_id(KESTREL, "MEMORY.md")
    app = scenario.app()
    seen = _record(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        kinds = [type(m) for m in seen if isinstance(m, DocumentsLoaded | IndexWarningsLoaded)]
        assert kinds == [DocumentsLoaded, IndexWarningsLoaded]
        first = next(m for m in seen if isinstance(m, DocumentsLoaded))
        assert first.warnings == {}  # nothing known yet: the marks come with the second
        assert app.doc_tree.warnings(index)  # ...and are on the row now
        assert index in app._warnings_cache

        # A reload shows the known marks at once, then the fresh ones replace them.
        seen.clear()
        app.action_reload()
        await settle(pilot)
        loaded = [m for m in seen if isinstance(m, DocumentsLoaded | IndexWarningsLoaded)]
        assert [type(m) for m in loaded] == [DocumentsLoaded, IndexWarningsLoaded]
        assert index in loaded[0].warnings
        assert app.doc_tree.warnings(index)


@async_test
async def test_fixed_index_file_loses_its_mark_when_warnings_arrive(scenario: Scenario) -> None:
    index = scenario.doc_id(KESTREL, "MEMORY.md")
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.doc_tree.warnings(index)
        # Fix the file and store it: the next listing still shows the old mark first
        # (known), the index check then takes it away.
        path = scenario.projects / KESTREL / "memory" / "MEMORY.md"
        topics = sorted(p.name for p in path.parent.glob("*.md") if p.name != "MEMORY.md")
        path.write_text("# Kestrel\n\n" + "".join(f"- [{t}]({t})\n" for t in topics),
                        encoding="utf-8")
        scenario.service.ingest(scenario.roots)
        app.action_reload()
        await settle(pilot)
        assert app.doc_tree.warnings(index) == []
        assert index not in app._warnings_cache


@async_test
async def test_replace_warnings_redraws_the_rows(scenario: Scenario) -> None:
    index = scenario.doc_id(KESTREL, "MEMORY.md")
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = app.doc_tree
        assert tree.reveal(index)
        await settle(pilot)
        row = tree.cursor_line
        assert "⚠" in tree.render_line(row - tree.scroll_offset.y).text
        tree.replace_warnings({})
        await pilot.pause()
        assert "⚠" not in tree.render_line(row - tree.scroll_offset.y).text
        # Warnings of documents that are not listed are not kept.
        tree.replace_warnings({10**9: app._warnings_cache[index]})
        assert tree.warnings(10**9) == []


@async_test
async def test_filter_candidates_are_frozen_and_thresholds_restored(scenario: Scenario) -> None:
    before = gc.get_threshold()
    assert gc.isenabled()
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not gc.isenabled() and app.heap.managed
        assert gc.get_threshold()[0] == max(YOUNG_THRESHOLD, before[0])
        assert gc.get_threshold()[1:] == before[1:]
        idx = app._filter_index
        assert idx is not None and idx.candidates
        # Frozen objects are in no generation gc.get_objects() lists.
        tracked = {id(o) for o in gc.get_objects()}
        assert id(idx.candidates) not in tracked
        assert id(idx.candidates[0]) not in tracked
        assert app.heap.freezes >= 2  # the listing, then the filter's candidates
    assert gc.get_threshold() == before
    assert gc.isenabled()


class _Cyclic:
    """An object in a reference cycle with itself: only the collector frees it."""

    def __init__(self) -> None:
        self.me = self


def _cyclic_garbage(n: int) -> weakref.ref[_Cyclic]:
    """``n`` unreachable objects each in a cycle (only a collection frees them); a
    weak reference to one of them."""
    junk = [_Cyclic() for _ in range(n)]
    ref = weakref.ref(junk[0])
    del junk
    return ref


@pytest.fixture
def keeper() -> Iterator[HeapKeeper]:
    """A started keeper (automatic collection off), stopped afterwards."""
    before = (gc.get_threshold(), gc.isenabled())
    k = HeapKeeper()
    k.start()
    k.start()  # twice: what the first start found is what stop puts back
    try:
        yield k
    finally:
        k.stop()
        assert (gc.get_threshold(), gc.isenabled()) == before


def test_idle_collection_policy(keeper: HeapKeeper) -> None:
    """What tick() collects, by quiet time, busyness and the collector's counts (explicit
    times: no clock involved)."""
    assert not gc.isenabled() and keeper.managed
    gc.collect()
    keeper.input_seen(100.0)
    ref = _cyclic_garbage(IDLE_YOUNG * 2)
    assert keeper.tick(100.0 + IDLE_AFTER / 2) is None  # a key came just now
    assert keeper.tick(100.0 + IDLE_AFTER * 2, busy=True) is None  # a search in flight
    assert ref() is not None and keeper.collections == {}
    assert keeper.tick(100.0 + IDLE_AFTER * 2) == ("idle", 0)
    assert ref() is None and gc.get_count()[1] == 1
    assert keeper.tick(100.0 + IDLE_AFTER * 2) is None  # nothing pending: no wake-up
    # The middle generation when Python's count says it is due; the oldest only after
    # a long quiet time.
    _, t1, t2 = gc.get_threshold()
    for _ in range(t1 - 1):
        gc.collect(0)
    assert keeper.due(100.0 + IDLE_AFTER * 2, busy=False) == ("idle", 1)
    for _ in range(t2):
        gc.collect(1)
    assert keeper.due(100.0 + IDLE_AFTER * 2, busy=False) is None
    assert keeper.due(100.0 + FULL_IDLE, busy=False) == ("idle", 2)
    assert keeper.tick(100.0 + FULL_IDLE) == ("idle", 2) and gc.get_count()[2] == 0


def test_valve_collects_while_the_ui_is_busy(keeper: HeapKeeper) -> None:
    gc.collect()
    keeper.input_seen(100.0)
    ref = _cyclic_garbage(VALVE[0] * YOUNG_THRESHOLD - 1000)
    assert keeper.tick(100.0, busy=True) is None  # short of the valve: waits for idle
    assert ref() is not None
    ref = _cyclic_garbage(2000)
    assert keeper.tick(100.0, busy=True) == ("valve", 0)
    assert ref() is None
    # The older generations have their valves too (a UI that is never idle).
    _, t1, t2 = gc.get_threshold()
    for _ in range(VALVE[1] * t1):
        gc.collect(0)
    assert keeper.due(100.0, busy=True) == ("valve", 1)
    for _ in range(VALVE[2] * t2):
        gc.collect(1)
    assert keeper.due(100.0, busy=True) == ("valve", 2)
    assert keeper.collections == {("valve", 0): 1}


def test_heap_keeper_reclaims_frozen_garbage_when_idle(keeper: HeapKeeper) -> None:
    garbage = _Cyclic()
    ref = weakref.ref(garbage)
    keeper.keep_long_lived()
    del garbage
    gc.collect()
    assert ref() is not None  # frozen: no ordinary collection frees it
    for _ in range(HeapKeeper.FULL_COLLECT_EVERY - 1):
        keeper.full_listing_shown()
    assert not keeper.reclaim_due
    keeper.full_listing_shown()  # the tenth: asked for, not run in the listing's handler
    assert keeper.reclaim_due and keeper.full_collections == 0 and ref() is not None
    keeper.input_seen(100.0)
    assert keeper.tick(100.0 + IDLE_AFTER * 2) != ("idle", 2)  # not quiet long enough
    assert ref() is not None
    assert keeper.tick(100.0 + FULL_IDLE) == ("idle", 2)  # unfreeze, collect, freeze
    assert keeper.full_collections == 1 and not keeper.reclaim_due and ref() is None
    # Never idle: the next tenth listing reclaims at once.
    garbage = _Cyclic()
    ref = weakref.ref(garbage)
    keeper.keep_long_lived()
    del garbage
    for _ in range(2 * HeapKeeper.FULL_COLLECT_EVERY):
        keeper.full_listing_shown()
    assert keeper.full_collections == 2 and ref() is None


def test_unmanaged_keeper_collects_the_tenth_listing_at_once() -> None:
    """With automatic collection off before the app started, the keeper never collects
    on its own; the tenth listing's reclaim runs in place, as it always did."""
    gc.disable()
    try:
        keeper = HeapKeeper()
        keeper.start()
        assert not keeper.managed
        garbage = _Cyclic()
        ref = weakref.ref(garbage)
        keeper.keep_long_lived()
        del garbage
        assert keeper.tick(1e9) is None
        for _ in range(HeapKeeper.FULL_COLLECT_EVERY):
            keeper.full_listing_shown()
        assert keeper.full_collections == 1 and ref() is None
        keeper.stop()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_heap_keeper_leaves_disabled_thresholds_alone() -> None:
    before = gc.get_threshold()
    gc.set_threshold(0, before[1], before[2])
    try:
        keeper = HeapKeeper()
        keeper.start()
        assert gc.get_threshold()[0] == 0 and not keeper.managed and gc.isenabled()
        keeper.stop()
    finally:
        gc.set_threshold(*before)


class _KeeperClock:
    """The clock the heap keeper reads (``heap.time``), moved only by the test: how
    long "keys keep coming" lasts no longer depends on how fast a loaded machine runs
    the Pilot (a real 75 ms pause between two keys became > 300 ms under ``-n auto``
    on a busy CI machine, and the idle rule rightly collected)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now


@async_test
async def test_app_collects_when_idle_never_while_keys_arrive(
        scenario: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    """In the running app: garbage made while keys keep coming stays (no collection at
    all, the heap timer ticking meanwhile), is collected once they stop, and the valve
    collects a pile past it even while keys still come."""
    from memlens.tui import heap as heap_module

    clock = _KeeperClock()
    monkeypatch.setattr(heap_module, "time", clock)
    app = scenario.app()
    runs: list[bool] = []  # per collection: did the keeper run it

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            runs.append(app.heap.collecting)

    async def ticks_pass(n: int) -> None:
        # n real heap-timer ticks (the keeper's clock stands still meanwhile)
        target = app.heap.ticks + n
        for _ in range(400):
            if app.heap.ticks >= target:
                return
            await pilot.pause(TICK / 2)
        raise AssertionError(f"the heap timer did not tick {n} times")

    async def keys_for(count: int, until: Callable[[], bool] = lambda: False) -> None:
        # An unbound key (input, but no work: no debounce, no worker), then a tick or
        # two of the timer at most TICK * 1.5 later on the keeper's clock: keys keep
        # coming, well under IDLE_AFTER apart.
        for _ in range(count):
            await pilot.press("f12")
            assert app.heap.last_input == clock.now  # the app told the keeper
            await ticks_pass(2)
            clock.now += TICK * 1.5
            if until():
                return

    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        gc.callbacks.append(seen)
        try:
            await keys_for(1)
            gc.collect()  # counts from zero: no valve is near while the keys come
            runs.clear()
            ticks = app.heap.ticks
            ref = _cyclic_garbage(IDLE_YOUNG * 2)
            await keys_for(12)
            assert app.heap.ticks >= ticks + 24  # the timer ran while keys came...
            assert ref() is not None and runs == []  # ...and nothing collected
            assert app.heap.due(clock.now, busy=False) is None  # not idle yet
            clock.now += IDLE_AFTER  # keys stop: the next idle tick collects it
            for _ in range(20):
                await ticks_pass(1)
                if ref() is None:
                    break
            assert ref() is None and runs and all(runs)
            assert app.heap.collections[("idle", 0)] >= 1

            # Past the valve, keys coming do not hold the collection back.
            runs.clear()
            await keys_for(1)
            before = app.heap.collections.copy()
            ref = _cyclic_garbage(VALVE[0] * YOUNG_THRESHOLD + IDLE_YOUNG)
            await keys_for(20, until=lambda: ref() is None)
            assert ref() is None and runs and all(runs)
            new = app.heap.collections - before
            assert new[("valve", 0)] >= 1 and not any(r == "idle" for r, _ in new)
        finally:
            gc.callbacks.remove(seen)
    assert gc.isenabled()


def test_ui_modules_do_not_load_the_write_side_before_the_first_frame() -> None:
    """Importing the app (what ``memlens tui`` does before it draws) leaves the
    watcher, ingest, projection and redaction modules for the workers that use them."""
    code = ("import sys, memlens.cli.main\n"
            "from memlens.core.service import MemoryService\n"
            "from memlens.tui.app import MemlensApp\n"
            "print('\\n'.join(m for m in sys.modules if m.startswith('memlens.')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert "memlens.core.service" in out
    for mod in ("watch", "watch.watcher", "watch.reconcile", "core.ingest.pipeline",
                "core.projection", "core.redact", "core.store.records",
                "core.search.preview"):
        assert f"memlens.{mod}" not in out, mod


def test_ui_process_gets_one_blas_thread_unless_the_user_set_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from memlens.cli import tui as cli_tui
    from memlens.cli.common import CliError
    from memlens.cli.main import parse_args

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    cli_tui.limit_blas_threads()
    assert os.environ["OPENBLAS_NUM_THREADS"] == cli_tui.BLAS_THREADS
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    cli_tui.limit_blas_threads()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"
    # `memlens tui` sets it first thing, before anything can import numpy: even a run
    # that fails on its config has it set.
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    bad = tmp_path / "bad.toml"
    bad.write_text("[chunker\n", encoding="utf-8")
    args = parse_args(["tui", "--config", str(bad)])
    with pytest.raises(CliError):
        cli_tui.cmd_tui(args)
    assert os.environ["OPENBLAS_NUM_THREADS"] == cli_tui.BLAS_THREADS


@async_test
async def test_listing_invalidates_the_tree_once_not_per_node(
        scenario: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tree invalidates its caches and asks for a layout at every node added; the
    listing adds ~300 repositories and a 250-row page at 10,000 documents, so it adds
    them in a batch with one invalidation (and the same rows as before)."""
    from textual.widgets import Tree

    calls: list[int] = []
    original = Tree._invalidate

    def counted(self: Tree[Any]) -> None:
        calls.append(1)
        original(self)

    monkeypatch.setattr(Tree, "_invalidate", counted)
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = app.doc_tree
        docs = [tree.summary(i) for i in tree._docs]
        nodes = len(tree._doc_nodes) + len(tree._repo_nodes)
        assert nodes > 10
        calls.clear()
        tree.load([d for d in docs if d is not None], {})
        # clear() (once), the repositories (once), the first repository's page (once),
        # its expansion and the cursor move: a handful, not one per node.
        assert len(calls) <= 6 < nodes
        assert len(tree._repo_nodes) == len({d.repository for d in docs if d})
        assert tree.cursor_node is not None and tree.cursor_node.data is not None


@async_test
async def test_a_debounced_callback_due_while_the_app_leaves_is_dropped(
        scenario: Scenario) -> None:
    """A filter typed just before quitting: its debounce fired while the widgets were
    being removed and raised NoMatches for '#filter' at exit (seen under load)."""
    from memlens.tui.app import FILTER_DEBOUNCE

    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        called: list[int] = []
        app.filter_debounce.start(lambda: called.append(1))
        screen = app.screen
        screen._closing = True  # what a test's end (or the app leaving) marks first
        try:
            await pilot.pause(FILTER_DEBOUNCE * 3)
            assert called == [] and not app.filter_debounce.pending
        finally:
            screen._closing = False
        app.filter_debounce.start(lambda: called.append(2))  # not leaving: it runs
        await pilot.pause(FILTER_DEBOUNCE * 3)
        assert called == [2]
