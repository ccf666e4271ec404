"""The layout adapts: resizable/collapsible tree, one column under 100 columns,
dialogs usable at 80x24, words never split when wrapping."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, OptionList, Static, Switch, Tab

from memlens.tui.app import MemlensApp
from memlens.tui.screens.browser import (
    STACKED_TREE_FLOOR,
    BrowserScreen,
    default_tree_width,
    fit_path,
)
from memlens.tui.screens.rechunk import RechunkDialog, chunks_content
from memlens.tui.widgets.chunk_view import _wrap
from tests.conftest import Clock
from tests.test_tui import LANTERN, TIDEWATER, Scenario, async_test, build_scenario, select_doc, settle


@pytest.fixture
def scenario(tmp_path: Path, clock: Clock, make_service: Callable[..., Any]) -> Scenario:
    """The corpus with every state."""
    return build_scenario(tmp_path, clock, make_service)


def _browser(app: MemlensApp) -> BrowserScreen:
    return app.browser


def _sidebar_width(app: MemlensApp) -> int:
    return app.browser.query_one("#sidebar").outer_size.width


# -- wrapping ----------------------------------------------------------------------

TEXTS = [
    "Use the filter box — it ranks exact names first → then prefixes, then fuzzy.",
    "Rotate signing keys quarterly; the old key stays valid for 24 hours afterwards.",
    "    indented code: let cache_key = format!(\"{}:{}\", repo, path);",
    "a" * 50 + " short words after a very long one",
    "日本語のテキスト and ASCII words mixed together in one line",
]


@pytest.mark.parametrize("width", [8, 13, 20, 31, 47])
def test_wrap_never_splits_a_word_that_fits(width: int) -> None:
    """Chunk text wraps between words: a piece ends inside a word only when that word
    alone is wider than the line; every character is kept, in order."""
    for text in TEXTS:
        pieces = _wrap(text, width)
        assert "".join(text[a:b] for a, b in pieces) == text
        for a, b in pieces[:-1]:
            if text[b - 1] == " " or text[b] == " ":
                continue
            start = text.rfind(" ", 0, b) + 1
            end = text.find(" ", b)
            word = text[start:end if end >= 0 else len(text)]
            assert len(word) > width or not word.isascii(), (text, width, text[a:b])
        assert all(len(text[a:b].rstrip(" ")) <= width for a, b in pieces if text.isascii())


def test_fit_path_shortens_the_repository_first() -> None:
    """The title's ``repository/path`` fits one line: the slug gives way first."""
    repo, path = "-home-dev-projects-tidewater-api", "architecture.md"
    assert fit_path(repo, path, 80) == (repo, path)
    short_repo, same = fit_path(repo, path, 40)
    assert same == path and len(short_repo) + 1 + len(path) <= 40 and "…" in short_repo
    assert short_repo.endswith("api")


def test_preview_lines_fit_their_column() -> None:
    """Rechunk preview rows are cut to the column: no row wider than asked for."""
    from memlens.core.types import Chunk

    chunks = [Chunk(ordinal=i, text="x", start_char=i * 100, end_char=i * 100 + 99,
                    start_byte=i * 100, end_byte=i * 100 + 99, tokens=90 + i,
                    heading_path=["Architecture", "Request lifecycle", "Middleware order"],
                    reason="window 2/7 of \"Middleware order\"", overlap_chars=0, hash="h")
              for i in range(3)]
    for width in (28, 33, 45, 60):
        lines = chunks_content(chunks, 100, width=width).plain.splitlines()
        assert lines and all(len(line) <= width for line in lines), (width, lines)


# -- the tree pane ---------------------------------------------------------------


@async_test
async def test_tree_resizes_with_keys_and_keeps_its_width(scenario: Scenario) -> None:
    """`<`/`>` change the tree by 4 columns within limits; the width survives other
    screens and a terminal resize."""
    app = scenario.app()
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert not _browser(app).has_class("-narrow")
        assert _sidebar_width(app) == default_tree_width(120) == 54
        await pilot.press("less_than_sign", "less_than_sign")
        await pilot.pause()
        assert _sidebar_width(app) == 46
        detail = app.browser.query_one("#detail")
        assert detail.region.x >= 46 and detail.region.right == 120
        await pilot.press("greater_than_sign")
        await pilot.pause()
        assert _sidebar_width(app) == 50
        for _ in range(20):
            await pilot.press("less_than_sign")
        await pilot.pause()
        assert _sidebar_width(app) == 16  # the narrowest tree
        for _ in range(40):
            await pilot.press("greater_than_sign")
        await pilot.pause()
        assert app.size.width - _sidebar_width(app) >= 36  # the detail keeps its room
        wide = _sidebar_width(app)
        await pilot.press("question_mark")
        await settle(pilot)
        await pilot.press("escape")
        await pilot.resize_terminal(140, 40)
        await settle(pilot)
        await pilot.resize_terminal(120, 36)
        await settle(pilot)
        assert _sidebar_width(app) == wide


@async_test
async def test_divider_drag_sets_the_width(scenario: Scenario) -> None:
    """Dragging the divider with the mouse moves it to the pointer."""
    app = scenario.app()
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        divider = app.browser.query_one("#divider")
        assert divider.region.x == 54
        await pilot.mouse_down("#divider")
        await pilot.hover("#main", offset=(70, 5))
        await pilot.mouse_up("#main", offset=(70, 5))
        await pilot.pause()
        assert _sidebar_width(app) == 70
        assert app.browser.query_one("#divider").region.x == 70
        await pilot.hover("#main", offset=(30, 5))  # released: moving does nothing
        await pilot.pause()
        assert _sidebar_width(app) == 70


@async_test
async def test_z_hides_the_tree_and_focusing_it_shows_it(scenario: Scenario) -> None:
    """`z` hides the tree (the detail takes the width, focus moves there); `/` (or Tab
    to the tree) brings it back; `z` again shows it."""
    app = scenario.app()
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert app.doc_tree.has_focus
        await pilot.press("z")
        await settle(pilot)
        sidebar = app.browser.query_one("#sidebar")
        assert not sidebar.display or sidebar.region.width == 0
        assert app.browser.query_one("#detail").region.width == 120
        assert app.browser.chunk_view.has_focus
        await pilot.press("slash")
        await settle(pilot)
        assert app.browser.query_one("#sidebar").region.width > 0
        assert app.browser.query_one("#filter", Input).has_focus
        await pilot.press("escape")  # back to the tree
        await pilot.press("z", "z")
        await settle(pilot)
        assert app.browser.query_one("#sidebar").region.width == 54


# -- one column under 100 columns --------------------------------------------------


@async_test
async def test_80x24_stacks_the_panes_and_shows_every_tab(scenario: Scenario) -> None:
    """At 80x24 the tree sits above the detail, which has the whole width: every tab
    label, Projection included, is on screen; `<`/`>` change the tree's height."""
    app = scenario.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await select_doc(pilot, scenario.doc_id(LANTERN, "build.md"))
        browser = app.browser
        assert browser.has_class("-narrow")
        sidebar, detail = browser.query_one("#sidebar"), browser.query_one("#detail")
        assert sidebar.region.bottom <= detail.region.y
        assert detail.region.width == 80
        labels = {str(t.label): t.region for t in browser.query(Tab)}
        assert set(labels) == {"Chunks [1]", "Timeline [2]", "Projection [3]"}
        for name, region in labels.items():
            assert region.width > 0 and region.right <= 80 and region.bottom <= 24, name
        rows = sidebar.outer_size.height
        await pilot.press("greater_than_sign")
        await pilot.pause()
        assert sidebar.outer_size.height == rows + 2
        await pilot.press("less_than_sign", "less_than_sign")
        await pilot.pause()
        # two rows less than at first, but never below the floor (issue 42 item 8)
        assert sidebar.outer_size.height == max(rows - 2, STACKED_TREE_FLOOR)
        await pilot.resize_terminal(120, 36)
        await settle(pilot)
        assert not browser.has_class("-narrow")
        assert browser.query_one("#sidebar").region.right <= detail.region.x


@async_test
async def test_timeline_rows_take_two_lines_when_narrow(scenario: Scenario) -> None:
    """A revision row is one line on a wide pane; on a narrow one the chunker and
    embedder move to a second line instead of folding wherever the width ends."""
    app = scenario.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await select_doc(pilot, scenario.doc_id(LANTERN, "build.md"))
        await app.run_action("show_tab('timeline')")
        await settle(pilot)
        ol = app.browser.query_one("#revisions", OptionList)
        first = str(ol.get_option_at_index(0).prompt)
        assert first.count("\n") == 1 and first.split("\n")[1].lstrip("↳ ").startswith(
            "adaptive/400/80")
        await pilot.press("z")
        await settle(pilot)
        first = str(ol.get_option_at_index(0).prompt)
        assert "\n" not in first and "adaptive/400/80" in first


@async_test
async def test_rechunk_dialog_is_usable_at_80x24(scenario: Scenario) -> None:
    """Every control of the rechunk dialog, the "all documents" switch included, is
    inside an 80x24 terminal and works with the mouse; the preview has rows."""
    app = scenario.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await select_doc(pilot, scenario.doc_id(TIDEWATER, "architecture.md"))
        await pilot.press("c")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, RechunkDialog) and dialog.has_class("-compact")
        for sel in ("#strategy", "#max-tokens", "#overlap", "#all-docs", "#cancel", "#reset",
                    "#apply", "#current-body", "#proposed-body", "#error"):
            widget = dialog.query_one(sel)
            if sel.endswith("-body"):  # the scrolling box around the preview lines
                assert widget.parent is not None
                widget = widget.parent
            region = widget.region
            assert region.width > 0 and region.height > 0, sel
            assert region.right <= 80 and region.bottom <= 24, (sel, region)
        switch = dialog.query_one("#all-docs", Switch)
        await pilot.click("#all-docs")
        await settle(pilot)
        assert switch.value
        assert "all 36 live documents" in str(dialog.query_one("#error", Static).render())
        body = dialog.query_one("#current-body", Static)
        assert body.parent is not None and body.parent.region.height >= 5
        width = body.content_region.width
        lines = str(body.render()).splitlines()
        assert len(lines) >= 10 and all(len(line) <= width for line in lines)
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, RechunkDialog)


@async_test
async def test_stacked_filter_shows_what_is_typed_while_focused(scenario: Scenario) -> None:
    """At 80x24 the filter is one row; focusing it must not bring back the tall border
    of the wide layout, which left no row for the text (only the border was drawn)."""
    app = scenario.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        flt = app.query_one("#filter", Input)
        await pilot.press("slash")
        await pilot.press(*"auth")
        await settle(pilot)
        assert flt.has_focus and flt.value == "auth"
        assert flt.region.height == 1
        assert flt.styles.border_top[0] in ("", "none")
        assert "auth" in flt.render_line(0).text
