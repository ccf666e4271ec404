"""The search screen's tools: the preview of the highlighted hit, the repository and
type filters, ``e`` (the file in ``$EDITOR`` at the chunk's line) and ``y`` (the chunk
to the clipboard). Issue 15."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Select

from memlens.tui.app import MemlensApp
from memlens.tui.screens.search import SearchScreen
from memlens.tui.widgets.hit_preview import HitPreview, editor_command, short_repositories
from tests.conftest import Clock
from tests.test_tui import Scenario, build_scenario, settle
from tests.test_tui_snapshots import type_text


def test_editor_command_puts_the_line_where_each_editor_wants_it() -> None:
    f = Path("/m/notes.md")
    assert editor_command(f, 12, {"EDITOR": "vim"}) == ["vim", "+12", "/m/notes.md"]
    assert editor_command(f, 12, {"EDITOR": "nvim -p", "VISUAL": ""}) == \
        ["nvim", "-p", "+12", "/m/notes.md"]
    assert editor_command(f, 3, {"VISUAL": "code --wait", "EDITOR": "vi"}) == \
        ["code", "--wait", "--goto", "/m/notes.md:3"]
    assert editor_command(f, 3, {"EDITOR": "/usr/bin/hx"}) == ["/usr/bin/hx", "/m/notes.md:3"]
    assert editor_command(f, 3, {}) is None
    assert editor_command(f, 3, {"EDITOR": "'unbalanced"}) is None


def test_short_repository_names_drop_the_shared_lead() -> None:
    names = short_repositories(["-home-dev-projects-tidewater-api",
                                "-home-dev-projects-lanternfish"])
    assert names == {"-home-dev-projects-tidewater-api": "tidewater-api",
                     "-home-dev-projects-lanternfish": "lanternfish"}
    assert short_repositories(["-home-a"]) == {"-home-a": "-home-a"}


@pytest.fixture
def scenario(tmp_path: Path, clock: Clock, make_service: Callable[..., Any]) -> Scenario:
    return build_scenario(tmp_path, clock, make_service, states=False)


async def _open_search(pilot: Any, query: str) -> SearchScreen:
    await settle(pilot)
    await pilot.press("s")
    await type_text(pilot, query)
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, SearchScreen) and screen.hits
    return screen


def test_preview_shows_the_whole_chunk_of_the_highlighted_hit(scenario: Scenario) -> None:
    asyncio.run(_preview(scenario))


async def _preview(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await _open_search(pilot, "cache key")
        preview = screen.query_one(HitPreview)
        for step in range(2):
            hit = screen.hits[step]
            chunk = next(c for c in scenario.service.chunks(hit.document_id)
                         if c.ordinal == hit.ordinal)
            text = preview.text
            assert f"{hit.path} #{hit.ordinal}" in text
            # the whole chunk, not the snippet: its last words are there too
            assert chunk.text.split()[-1] in text and chunk.text.split()[0] in text
            await pilot.press("down")
            await settle(pilot)


def test_filters_limit_hits_to_a_repository_and_a_type(scenario: Scenario) -> None:
    asyncio.run(_filters(scenario))


async def _filters(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await _open_search(pilot, "tests")
        repos = {h.repository for h in screen.hits}
        assert len(repos) > 1
        target = sorted(repos)[-1]
        repo_select = screen.query_one("#filter-repository", Select)
        repo_select.value = target
        await settle(pilot)
        assert screen.hits and {h.repository for h in screen.hits} == {target}
        types = {h.doc_type for h in screen.hits if h.doc_type}
        assert types
        kind = sorted(types)[0]
        screen.query_one("#filter-type", Select).value = kind
        await settle(pilot)
        assert screen.hits and all(h.doc_type == kind and h.repository == target
                                   for h in screen.hits)
        repo_select.clear()
        screen.query_one("#filter-type", Select).clear()
        await settle(pilot)
        assert len({h.repository for h in screen.hits}) > 1


def test_y_copies_the_chunk_and_e_opens_the_file_at_its_line(
        scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "editor.log"
    editor = tmp_path / "fake-editor"
    editor.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {log}\n")
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    asyncio.run(_copy_and_edit(scenario, log))


async def _copy_and_edit(scenario: Scenario, log: Path) -> None:
    app = scenario.app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_search(pilot, "cache key")
        await pilot.press("tab")  # to the results: letters are keys there, not text
        await pilot.press("down")
        await settle(pilot)
        hit = screen.hits[1]
        chunk = next(c for c in scenario.service.chunks(hit.document_id)
                     if c.ordinal == hit.ordinal)
        await pilot.press("y")
        await settle(pilot)
        assert app.clipboard.startswith(f"{hit.repository}/{hit.path} #{hit.ordinal}")
        assert app.clipboard.endswith(chunk.text)
        await pilot.press("e")
        await settle(pilot)
        args = log.read_text().split("\n")
        assert args[0].startswith("+") and args[1].endswith(hit.path)
        line = int(args[0][1:])
        on_disk = Path(args[1]).read_text(encoding="utf-8").split("\n")
        first = chunk.text.split("\n", 1)[0]
        assert on_disk[line - 1] == first  # the editor lands on the chunk's first line
        assert isinstance(app.screen, SearchScreen)  # back in the search afterwards


def test_e_without_an_editor_says_what_to_set(scenario: Scenario,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    asyncio.run(_no_editor(scenario))


async def _no_editor(scenario: Scenario) -> None:
    app: MemlensApp = scenario.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_search(pilot, "cache key")
        await pilot.press("tab", "e")
        await settle(pilot)
        problems = [e.text for e in app.events_log.entries() if e.is_problem]
        assert any("set $EDITOR" in t for t in problems), problems
        assert os.environ.get("EDITOR") is None


@pytest.mark.parametrize("tmux", [False, True], ids=["terminal", "tmux"])
def test_y_says_how_it_copied_and_in_tmux_what_to_set(
        scenario: Scenario, monkeypatch: pytest.MonkeyPatch, tmux: bool) -> None:
    """Issue 42: "copied" alone, while inside tmux nothing arrived (OSC 52 needs
    ``set-clipboard on``): say how it copied and, in tmux, what to do."""
    if tmux:
        monkeypatch.setenv("TMUX", "/tmp/tmux-0/default,1234,0")
    else:
        monkeypatch.delenv("TMUX", raising=False)
    asyncio.run(_copy_note(scenario, tmux))


async def _copy_note(scenario: Scenario, tmux: bool) -> None:
    from tests.test_tui import record_notifications
    app = scenario.app()
    async with app.run_test(size=(80, 24)) as pilot:
        notes = record_notifications(app)
        await _open_search(pilot, "cache key")
        await pilot.press("tab")
        await pilot.press("y")
        await settle(pilot)
        copied = [n for n in notes if "copied" in n]
        assert len(copied) == 1 and "OSC 52" in copied[0]
        assert ("set -g set-clipboard on" in copied[0]) is tmux
