"""Snapshots of the adaptive layout at 80x24 and 120x36 (SVGs in ``snapshots/``).

80x24 is under the one-column threshold (100 columns): the tree is stacked above
the detail pane, every tab label shows, and the rechunk dialog is compact with its
"all documents" switch on screen. 120x36 keeps the panes side by side. The light
theme is memlens-light (text at 4.5:1 or more, see ``test_contrast.py``).

Same determinism as ``test_tui_snapshots.py`` (fixed clock, no timings, settled
workers, toasts cleared). Regenerate with
``uv run pytest tests/test_tui_snapshots_layout.py --snapshot-update`` and look at
every changed SVG.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Clock
from tests.test_tui import LANTERN, ORCHARD, TIDEWATER, Scenario, build_scenario
from tests.test_tui_snapshots import Snap, expand_all, keys, open_doc, quiet_app, rechunk_windows, steps

SIZES = [(80, 24), (120, 36)]
IDS = ["80x24", "120x36"]


@pytest.fixture
def scenario(tmp_path: Path, clock: Clock, make_service: Callable[..., Any]) -> Scenario:
    """Every state: failed, stale, pending, tombstoned, long index, update, rechunk."""
    return build_scenario(tmp_path, clock, make_service)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_browser(scenario: Scenario, snap_compare: Snap, size: tuple[int, int]) -> None:
    """The browser on performance.md (overlapping windows), chunk #1 selected: at 80x24
    the tree sits above the detail and all three tab labels show; chunk text wraps
    between words."""
    assert snap_compare(quiet_app(scenario), terminal_size=size,
                        run_before=steps(open_doc(scenario, LANTERN, "performance.md"),
                                         keys("n")))


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_rechunk_dialog(scenario: Scenario, snap_compare: Snap,
                        size: tuple[int, int]) -> None:
    """The rechunk dialog on architecture.md with windows/100/20 and "all documents" on:
    the form, the switch, both preview columns and the buttons are on screen."""

    assert snap_compare(quiet_app(scenario), terminal_size=size,
                        run_before=steps(open_doc(scenario, TIDEWATER, "architecture.md"),
                                         rechunk_windows(all_documents=True)))


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_light_theme(scenario: Scenario, snap_compare: Snap, size: tuple[int, int]) -> None:
    """memlens-light (`d`) with deleted documents shown: sizes, counts, the gutter and
    the struck-through tombstoned name are dark on light grey."""

    assert snap_compare(quiet_app(scenario), terminal_size=size,
                        run_before=steps(keys("d", "t"), expand_all,
                                         open_doc(scenario, ORCHARD, "flaky-notes.md")))


def test_tree_hidden_80x24(scenario: Scenario, snap_compare: Snap) -> None:
    """`z` hides the tree: the timeline takes the whole 80 columns, rows unbroken."""
    assert snap_compare(quiet_app(scenario), terminal_size=(80, 24),
                        run_before=steps(open_doc(scenario, LANTERN, "build.md",
                                                  tab="timeline"), keys("z")))


async def _search_cache_key(pilot: Any) -> None:
    from tests.test_tui_snapshots import type_text
    await pilot.press("s")
    await type_text(pilot, "cache key")


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_search_with_preview(scenario: Scenario, snap_compare: Snap,
                             size: tuple[int, int]) -> None:
    """Search "cache key": the hits, the whole chunk of the highlighted one in the preview
    (beside the results at 120 columns, under them at 80) with the terms highlighted,
    and the repository/type filters on the bottom row."""
    assert snap_compare(quiet_app(scenario), terminal_size=size,
                        run_before=steps(_search_cache_key, keys("down")))


def _events_app(scenario: Scenario) -> Any:
    """An app whose start-up ingest meets a file that is not UTF-8 (fixed clock)."""
    from memlens.tui.screens.events import EventLog
    memory = scenario.projects / ORCHARD / "memory"
    (memory / "bad_bytes.md").write_bytes(b"# Notes\n\nthe nightly run \xff\xfe broke\n")
    app = quiet_app(scenario)
    app.roots = list(scenario.roots)
    app.ingest_on_start = True
    app.events_log = EventLog(clock=scenario.clock)
    return app


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_events_pane(scenario: Scenario, snap_compare: Snap, size: tuple[int, int]) -> None:
    """`E` after a start-up that met a bad file: the file with the reason, newest first,
    and the status bar's problem count."""
    assert snap_compare(_events_app(scenario), terminal_size=size,
                        run_before=steps(keys("E")))
