"""The search worker builds the result list's options and measures their heights, so the
results handler on the event loop does not wrap every option to count its lines (8-9 ms of
a 12 ms handler at 20 hits; docs/benchmarks.md, "The focus change and the results
handler")."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.content import Content
from textual.css.styles import RulesMap
from textual.widget import Widget
from textual.widgets import OptionList, Static

from memlens.tui.screens import search as search_screen
from memlens.tui.screens.search import SearchScreen, hit_content, measured_options, option_fit
from tests.test_tui import SIZE, Scenario, async_test, build_scenario, settle, type_text
from tests.test_tui_search_tools import _open_search


@pytest.fixture
def scenario(tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> Scenario:
    """The corpus, projected (no failed or pending states: only search is looked at)."""
    return build_scenario(tmp_path, clock, make_service, states=False)


@async_test
async def test_results_handler_wraps_no_option_to_measure_it(
        scenario: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    app = scenario.app()
    wraps: list[tuple[bool, bool]] = []  # (on the event loop, inside add_options)
    adding = [False]
    fits: list[tuple[RulesMap, int]] = []
    wrap, add = Content._wrap_and_format, OptionList.add_options

    def counting_wrap(self: Content, *a: Any, **k: Any) -> Any:
        wraps.append((threading.current_thread() is threading.main_thread(), adding[0]))
        return wrap(self, *a, **k)

    def marking_add(self: OptionList, *a: Any, **k: Any) -> Any:
        adding[0] = True
        try:
            return add(self, *a, **k)
        finally:
            adding[0] = False

    def recorded_fit(ol: OptionList) -> tuple[RulesMap, int]:
        fits.append(option_fit(ol))
        return fits[-1]

    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)  # the browser's own lists filled
        monkeypatch.setattr(search_screen, "option_fit", recorded_fit)
        monkeypatch.setattr(Content, "_wrap_and_format", counting_wrap)
        monkeypatch.setattr(OptionList, "add_options", marking_add)
        # Into an empty list, then over results that show a scroll bar (as one types on).
        screen = await _open_search(pilot, "cache key")
        results = screen.query_one("#search-results", OptionList)
        assert results.show_vertical_scrollbar
        await type_text(pilot, "s")
        await settle(pilot)
        monkeypatch.undo()
        assert len(screen.hits) >= 5 and len(fits) >= 2
        assert results.option_count == len(screen.hits)
        # Measured in the worker thread, none on the loop while the options were added ...
        assert any(not on_loop for on_loop, _ in wraps)
        assert not any(on_loop and in_add for on_loop, in_add in wraps)
        # ... at the width the list laid them out at (the snippets wrap: 2+ lines each).
        heights = [hit_content(i, h).get_height(*fits[-1]) for i, h in enumerate(screen.hits, 1)]
        assert list(results._line_cache.heights.values()) == heights
        assert min(heights) >= 2


@async_test
async def test_options_measured_at_another_width_are_measured_again(
        scenario: Scenario) -> None:
    """The list was resized between the search's start and its results: the worker's
    heights are for the old width, and the list measures at its own."""
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_search(pilot, "cache key")
        hits = list(screen.hits)
        results = screen.query_one("#search-results", OptionList)
        rules, width = option_fit(results)  # the width of the list once emptied
        options, where = measured_options(hits, (rules, 12))  # far narrower: many lines
        assert where == list(range(len(hits)))
        narrow = [o.prompt.get_height(rules, 12) for o in options]  # type: ignore[union-attr]
        results.clear_options()
        results.add_options(options)
        heights = list(results._line_cache.heights.values())
        assert heights == [hit_content(i, h).get_height(rules, width)
                           for i, h in enumerate(hits, 1)]
        assert sum(narrow) > sum(heights)


@async_test
async def test_every_line_of_every_result_is_on_the_list(scenario: Scenario) -> None:
    """OptionList measures the options' heights when they are added (the emptied list has
    no scroll bar) and draws them at the width left once the bar shows: a snippet one line
    longer at that width lost its last line. The list's gutter is stable, so both widths
    are the same."""
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_search(pilot, "cache key")
        results = screen.query_one("#search-results", OptionList)
        assert results.show_vertical_scrollbar
        style = results.get_visual_style("option-list--option")
        drawn = [len(results._get_option_render(o, style)) for o in results.options]
        assert list(results._line_cache.heights.values()) == drawn


@async_test
async def test_status_line_is_set_without_a_layout(
        scenario: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    """The status line's box is one fixed line: setting it asks for no layout of the
    screen (Static.update does by default)."""
    app = scenario.app()
    layouts: list[str | None] = []
    refresh = Static.refresh

    def recording(self: Static, *a: Any, layout: bool = False, **k: Any) -> Any:
        if layout:
            layouts.append(self.id)
        return refresh(self, *a, layout=layout, **k)

    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)  # the screen's first layout asks for its own
        monkeypatch.setattr(Static, "refresh", recording)
        await type_text(pilot, "cache key")
        await settle(pilot)
        monkeypatch.undo()
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        info = screen.query_one("#search-info", Static)
        assert "hits" in str(info.render())
        assert "search-info" not in layouts
        box = info.parent
        assert isinstance(box, Widget)
        assert info.region.height == 1 and info.region.width == box.content_region.width
