"""Snapshot tests of every view over the bundled corpus (SVGs in ``snapshots/``).

Deterministic on purpose: a fixed terminal size (140x45), the fixed clock from
``conftest`` (every time shown comes from it or from stored values), the cursor
does not blink in headless runs, animations are off, search timings are hidden,
workers are awaited and notifications cleared before the screenshot. The status
bar shows only the database *file name*.

Regenerate with ``uv run pytest tests/test_tui_snapshots.py --snapshot-update``
and look at every changed SVG before committing it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, Select

from memlens.tui.app import MemlensApp
from memlens.tui.screens.rechunk import RechunkDialog
from tests.conftest import Clock
from tests.test_tui import (
    KESTREL,
    LANTERN,
    ORCHARD,
    SIZE,
    TIDEWATER,
    Scenario,
    build_scenario,
    settle,
    type_text,
)

Snap = Callable[..., bool]

@pytest.fixture
def scenario(tmp_path: Path, clock: Clock, make_service: Callable[..., Any]) -> Scenario:
    """Every state: failed, stale, pending, tombstoned, long index, update, rechunk."""
    return build_scenario(tmp_path, clock, make_service)


def quiet_app(sc: Scenario) -> MemlensApp:
    """An app set up for deterministic screenshots."""
    app = sc.app()
    app.animation_level = "none"
    app.show_timings = False
    return app


def steps(*actions: Callable[[Pilot[Any]], Awaitable[None]]
          ) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """Run actions in order, settling after each, then clear toasts."""

    async def run(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        for action in actions:
            await action(pilot)
            await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run


def open_doc(sc: Scenario, repository: str, path: str, *, tab: str = "chunks"
             ) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """Select a document and show a detail tab."""

    async def run(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, MemlensApp)
        assert app.doc_tree.reveal(sc.doc_id(repository, path))
        await settle(pilot)
        await app.run_action(f"show_tab('{tab}')")

    return run


def keys(*names: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """Press keys."""

    async def run(pilot: Pilot[Any]) -> None:
        await pilot.press(*names)

    return run


def rechunk_windows(*, all_documents: bool = False) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """Open the rechunk dialog and set windows of 100 tokens with 20 overlap."""

    async def dialog(pilot: Pilot[Any]) -> None:
        await pilot.press("c")
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, RechunkDialog)
        screen.query_one("#strategy", Select).value = "windows"
        screen.query_one("#max-tokens", Input).value = "100"
        screen.query_one("#overlap", Input).value = "20"
        if all_documents:
            screen.set_all_documents()
    return dialog


async def expand_all(pilot: Pilot[Any]) -> None:
    """Open every repository of the tree."""
    app = pilot.app
    assert isinstance(app, MemlensApp)
    for node in app.doc_tree.root.children:
        node.expand()


def test_browser_index_warnings(scenario: Scenario, snap_compare: Snap) -> None:
    """Browser: kestrel's MEMORY.md is over 200 lines and 25 KB and links a missing file.

    The row and its repository carry ⚠; the detail lists each warning with its line.
    """
    assert snap_compare(quiet_app(scenario), terminal_size=SIZE,
                        run_before=steps(open_doc(scenario, KESTREL, "MEMORY.md")))


def test_chunks_with_overlap(scenario: Scenario, snap_compare: Snap) -> None:
    """Chunks: performance.md rechunked into 120-token windows with 30 overlap.

    Alternating bands, gutter with ordinal and tokens, ↑ovl overlap lines in their own
    style, heading path and size bar per chunk; chunk #2 selected (▌) with its spans,
    hash and node id below.
    """
    assert snap_compare(quiet_app(scenario), terminal_size=SIZE,
                        run_before=steps(open_doc(scenario, LANTERN, "performance.md"),
                                         keys("n", "n")))


def test_timeline_diff(scenario: Scenario, snap_compare: Snap) -> None:
    """Timeline: build.md's update revision, its summary and coloured unified diff."""
    assert snap_compare(quiet_app(scenario), terminal_size=SIZE,
                        run_before=steps(open_doc(scenario, LANTERN, "build.md", tab="timeline")))


def test_timeline_rechunk(scenario: Scenario, snap_compare: Snap) -> None:
    """Timeline: performance.md's rechunk revision (same text, new chunker config)."""
    assert snap_compare(quiet_app(scenario), terminal_size=SIZE,
                        run_before=steps(open_doc(scenario, LANTERN, "performance.md",
                                                  tab="timeline")))


def test_projection_stale(scenario: Scenario, snap_compare: Snap) -> None:
    """Projection: auth.md is stale — the update failed, the older projection is served."""
    assert snap_compare(quiet_app(scenario), terminal_size=SIZE,
                        run_before=steps(open_doc(scenario, TIDEWATER, "auth.md",
                                                  tab="projection")))


def test_projection_failed(scenario: Scenario, snap_compare: Snap) -> None:
    """Projection: flaky-notes.md failed (nothing searchable), error, attempts, next retry.

    The orchard-etl rows also show a pending document (…) that was never projected.
    """
    assert snap_compare(quiet_app(scenario), terminal_size=SIZE,
                        run_before=steps(open_doc(scenario, ORCHARD, "flaky-notes.md",
                                                  tab="projection")))


def test_tombstoned_shown(scenario: Scenario, snap_compare: Snap) -> None:
    """Deleted documents shown with `t`: scratch.md is † (struck through), not searchable."""
    assert snap_compare(quiet_app(scenario), terminal_size=SIZE,
                        run_before=steps(keys("t"), open_doc(scenario, LANTERN, "scratch.md",
                                                             tab="timeline")))


def test_fuzzy_filter(scenario: Scenario, snap_compare: Snap) -> None:
    """Filter: typing "perf" lists matching documents flat under their repositories."""

    async def typed(pilot: Pilot[Any]) -> None:
        await pilot.press("slash")
        await type_text(pilot, "perf")

    assert snap_compare(quiet_app(scenario), terminal_size=SIZE, run_before=steps(typed))


def test_live_search(scenario: Scenario, snap_compare: Snap) -> None:
    """Search: hybrid results for "cache key" with highlighted snippets and signal ranks."""

    async def search(pilot: Pilot[Any]) -> None:
        await pilot.press("s")
        await type_text(pilot, "cache key")

    assert snap_compare(quiet_app(scenario), terminal_size=SIZE, run_before=steps(search))


def test_search_no_match(scenario: Scenario, snap_compare: Snap) -> None:
    """Search for a word found nowhere: "no matches", a divider, dimmed closest hits."""

    async def search(pilot: Pilot[Any]) -> None:
        await pilot.press("s")
        await type_text(pilot, "zebraquokka4711")

    assert snap_compare(quiet_app(scenario), terminal_size=SIZE, run_before=steps(search))


def test_search_hit_opened(scenario: Scenario, snap_compare: Snap) -> None:
    """Search → Enter: the hit's document opens with the hit chunk selected and marked ◆."""

    async def search(pilot: Pilot[Any]) -> None:
        await pilot.press("s")
        await type_text(pilot, "invalidate after commit")

    assert snap_compare(quiet_app(scenario), terminal_size=SIZE,
                        run_before=steps(search, keys("enter")))


def test_rechunk_preview(scenario: Scenario, snap_compare: Snap) -> None:
    """Rechunk dialog: architecture.md, windows of 100 tokens with 20 overlap, previewed
    beside the current adaptive chunks (count, min/median/max tokens) and the effect on
    two recent searches; nothing written."""
    scenario.service.remember_search("cache key format", "hybrid", "tui")
    scenario.service.remember_search("startup sequence", "hybrid", "tui")

    assert snap_compare(quiet_app(scenario), terminal_size=SIZE,
                        run_before=steps(open_doc(scenario, TIDEWATER, "architecture.md"),
                                         rechunk_windows()))


def test_light_theme(scenario: Scenario, snap_compare: Snap) -> None:
    """The light theme (`d`): statuses keep their glyphs and readable colours."""

    assert snap_compare(quiet_app(scenario), terminal_size=SIZE,
                        run_before=steps(keys("d"), expand_all,
                                         open_doc(scenario, ORCHARD, "flaky-notes.md")))


def test_revision_list_focus(scenario: Scenario, snap_compare: Snap) -> None:
    """Timeline with the older (create) revision selected: no earlier content to compare."""

    async def older(pilot: Pilot[Any]) -> None:
        pilot.app.query_one("#revisions", OptionList).focus()
        await pilot.press("down")

    assert snap_compare(quiet_app(scenario), terminal_size=SIZE,
                        run_before=steps(open_doc(scenario, LANTERN, "build.md", tab="timeline"),
                                         older))
