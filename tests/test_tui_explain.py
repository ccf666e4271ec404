"""The explain panel (issue 45): ``x`` on a highlighted search result explains its rank,
and "why not" explains any document picked from the ``/`` finder or typed. A pilot test
at 80x24 and snapshots at 80x24 and 120x36 (SVGs in ``snapshots/test_tui_explain/``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, Static

from memlens.tui.screens.explain import ExplainScreen
from memlens.tui.screens.search import RESULTS, SearchScreen
from tests.conftest import Clock
from tests.test_tui import LANTERN, Scenario, build_scenario, settle
from tests.test_tui_snapshots import Snap, keys, quiet_app, steps, type_text

SIZES = [(80, 24), (120, 36)]
IDS = ["80x24", "120x36"]
QUERY = "cache key"


@pytest.fixture
def scenario(tmp_path: Path, clock: Clock, make_service: Callable[..., Any]) -> Scenario:
    return build_scenario(tmp_path, clock, make_service)


def _text(screen: ExplainScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def _explain_second_hit(pilot: Pilot[Any]) -> None:
    await pilot.press("s")
    await type_text(pilot, QUERY)
    await settle(pilot)
    await pilot.press("tab", "down")  # to the results, the second hit
    await settle(pilot)
    await pilot.press("x")


async def _why_not_build(pilot: Pilot[Any]) -> None:
    await type_text(pilot, "build")
    await settle(pilot)
    await pilot.press("enter")


def test_x_explains_the_highlighted_hit_and_why_not_a_picked_document(
        scenario: Scenario) -> None:
    async def body() -> None:
        app = scenario.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await _explain_second_hit(pilot)
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, ExplainScreen)
            hit = screen.hit
            # the panel says what the door's explanation of the same search says
            e = scenario.service.explain(QUERY, k=RESULTS, why_not=(
                f"{hit.repository}/{hit.path}#{hit.ordinal}"))
            assert e.why_not is not None
            st = e.why_not.standing
            assert st.position == 2 and st.score == pytest.approx(hit.score)
            top = _text(screen, "#explain-hit")
            assert "Why #2 ranks here" in top
            assert f"Score {st.score:.4f} = words {st.lexical.part:.4f} + meaning" in top
            assert st.lexical.words.split(" (")[0] in top and "To rank first:" in top
            assert "How the weights were chosen" in _text(screen, "#explain-weights")
            # why not: the finder's matches as you type, Enter explains the best one
            await type_text(pilot, "build")
            await settle(pilot)
            suggestions = screen.query_one("#explain-suggestions", OptionList)
            assert suggestions.option_count >= 1 and screen.picks[0] == f"{LANTERN}/build.md"
            await pilot.press("enter")
            await settle(pilot)
            why = _text(screen, "#explain-why-not")
            assert f"Why not {LANTERN}/build.md" in why and "To rank first:" in why
            assert not suggestions.has_class("-shown")
            # a typed chunk that does not exist: one line, no crash
            box = screen.query_one("#explain-input", Input)
            box.value = ""
            await type_text(pilot, f"{LANTERN}/build.md#99")
            await settle(pilot)
            await pilot.press("enter")
            await settle(pilot)
            assert "has no chunk #99" in _text(screen, "#explain-why-not")
            await pilot.press("escape")
            await settle(pilot)
            assert isinstance(app.screen, SearchScreen)

    import asyncio
    asyncio.run(body())


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_explain_panel(scenario: Scenario, snap_compare: Snap, size: tuple[int, int]) -> None:
    """The panel over the search: the second hit of "cache key" explained."""
    assert snap_compare(quiet_app(scenario), terminal_size=size,
                        run_before=steps(_explain_second_hit))


def test_explain_why_not_80x24(scenario: Scenario, snap_compare: Snap) -> None:
    """Why not lanternfish/build.md, picked from the finder by typing "build"."""
    assert snap_compare(quiet_app(scenario), terminal_size=(80, 24),
                        run_before=steps(_explain_second_hit, _why_not_build, keys()))
