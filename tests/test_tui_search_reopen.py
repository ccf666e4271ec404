"""Issue 42, item 1: re-opening search with a query already in the box searched with
the result list's options measured at width 0 ("range() arg 3 must not be zero" in a
toast); and a failure shows the user a sentence, the detail only in the events pane."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memlens.tui.screens.events import EventLog, format_entry
from memlens.tui.screens.search import SearchScreen
from memlens.tui.workers import worker_failure
from tests.conftest import Clock
from tests.test_tui import Scenario, build_scenario, settle
from tests.test_tui_snapshots import type_text


@pytest.fixture
def scenario(tmp_path: Path, clock: Clock, make_service: Callable[..., Any]) -> Scenario:
    return build_scenario(tmp_path, clock, make_service, states=False)


def _toasts(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications]


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_search_reopened_with_a_query_in_the_box_searches_again(
        scenario: Scenario, size: tuple[int, int]) -> None:
    asyncio.run(_reopen(scenario, size))


async def _reopen(scenario: Scenario, size: tuple[int, int]) -> None:
    app = scenario.app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for _ in range(3):  # every time, not only the first
            await pilot.press("s")
            if not app.screen.query_one("#search-input").value:  # type: ignore[attr-defined]
                await type_text(pilot, "cache")
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, SearchScreen)
            assert screen.last is not None and screen.last.error is None, screen.last.error
            assert screen.hits
            await pilot.press("escape")
            await settle(pilot)
        assert not [t for t in _toasts(app) if "could not" in t]
        assert app.events_log.problems == 0


def test_a_failed_search_toasts_a_sentence_and_logs_the_detail(scenario: Scenario) -> None:
    asyncio.run(_failed(scenario))


async def _failed(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise ValueError("range() arg 3 must not be zero")

        screen.service.search = broken  # type: ignore[method-assign]
        await type_text(pilot, "cache")
        await settle(pilot)
        toasts = _toasts(app)
        assert any(t.startswith("Could not search") for t in toasts), toasts
        assert not [t for t in toasts if "range()" in t], toasts
        entry = app.events_log.entries()[0]
        assert "range()" not in entry.text and entry.text.startswith("Could not search")
        assert entry.detail == "ValueError: range() arg 3 must not be zero"
        assert "ValueError: range() arg 3 must not be zero" in format_entry(entry).plain


def test_a_worker_failure_is_a_sentence_and_a_detail() -> None:
    sentence, detail = worker_failure("load_stats", OSError("disk I/O error"))
    assert sentence == "Could not load statistics. The details are in the events pane (E)."
    assert detail == "OSError: disk I/O error"
    log = EventLog()
    log.add("error", sentence, level="error", detail=detail)
    assert log.entries()[0].detail == detail
