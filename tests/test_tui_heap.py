"""What keeps the event loop short at 10,000 documents, tested on the bundled corpus.

* the listing goes on screen before the index files are checked (their ⚠ marks
  follow in a second message), so the first listing does not wait for ~300
  ``MEMORY.md`` reads;
* the big long-lived structures (listing, fuzzy-filter candidates) are frozen out of
  the collector's sight, and the youngest generation's threshold is raised while the
  app runs (put back when it stops);
* the search screen stamps when its debounce fired and when the results were handled
  (``benchmarks/tui.py`` splits keystroke -> screen with them).

No timing is asserted: these check the behaviour the figures rest on.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message

from memlens.tui.app import MemlensApp
from memlens.tui.heap import YOUNG_THRESHOLD, HeapKeeper
from memlens.tui.messages import DocumentsLoaded, IndexWarningsLoaded
from memlens.tui.screens.search import DEBOUNCE_SECONDS, SearchScreen

from .conftest import Clock
from .test_tui import KESTREL, SIZE, Scenario, async_test, build_scenario, settle, type_text


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
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
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


class _Cyclic:
    """An object in a reference cycle with itself: only the collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_heap_keeper_collects_everything_every_tenth_listing() -> None:
    before = gc.get_threshold()
    keeper = HeapKeeper()
    keeper.start()
    keeper.start()  # twice: the thresholds of the first start are what stop restores
    try:
        garbage = _Cyclic()
        ref = weakref.ref(garbage)
        keeper.keep_long_lived()
        del garbage
        gc.collect()
        assert ref() is not None  # frozen: no ordinary collection frees it
        for _ in range(HeapKeeper.FULL_COLLECT_EVERY - 1):
            keeper.full_listing_shown()
        assert keeper.full_collections == 0 and ref() is not None
        keeper.full_listing_shown()  # the tenth: unfreeze, collect, freeze
        assert keeper.full_collections == 1
        assert ref() is None
    finally:
        keeper.stop()
    assert gc.get_threshold() == before


def test_heap_keeper_leaves_disabled_thresholds_alone() -> None:
    before = gc.get_threshold()
    gc.set_threshold(0, before[1], before[2])
    try:
        keeper = HeapKeeper()
        keeper.start()
        assert gc.get_threshold()[0] == 0
        keeper.stop()
    finally:
        gc.set_threshold(*before)


@async_test
async def test_search_stamps_fired_and_handled(tmp_path: Path, clock: Clock,
                                               make_service: Callable[..., Any]) -> None:
    sc = build_scenario(tmp_path, clock, make_service, states=False)
    app = sc.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen) and screen.stamps == {}
        assert screen.debouncer.delay == DEBOUNCE_SECONDS
        await type_text(pilot, "heap")
        await settle(pilot)
        assert screen.last is not None and screen.last.query == "heap"
        stamps = screen.stamps
        assert set(stamps) == {"fired", "handled"} and stamps["handled"] >= stamps["fired"]
        assert app.timings["search"][-1] == stamps["handled"] - stamps["fired"]


def test_ui_modules_do_not_load_the_write_side_before_the_first_frame() -> None:
    """Importing the app (what ``memlens tui`` does before it draws) leaves the
    watcher, ingest, projection and redaction modules for the workers that use them."""
    code = ("import sys, memlens.tui.cli\n"
            "from memlens.core.service import MemoryService\n"
            "from memlens.tui.app import MemlensApp\n"
            "print('\\n'.join(m for m in sys.modules if m.startswith('memlens.core.')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert "memlens.core.service" in out
    for mod in ("watch", "watch_reconcile", "ingest", "projection", "redact", "store",
                "preview"):
        assert f"memlens.core.{mod}" not in out, mod


def test_ui_process_gets_one_blas_thread_unless_the_user_set_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from memlens.tui import cli_tui
    from memlens.tui.cli import CliError, build_parser

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
    args = build_parser().parse_args(["tui", "--config", str(bad)])
    with pytest.raises(CliError):
        cli_tui.cmd_tui(args)
    assert os.environ["OPENBLAS_NUM_THREADS"] == cli_tui.BLAS_THREADS
