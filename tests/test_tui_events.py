"""The events pane: log model, warning capture, the screen, and its wiring into the app
(``E``, every warning/error notice, watcher events, the status bar's problem field).

"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.widgets import OptionList

from memlens.tui.app import MemlensApp
from memlens.tui.screens.events import EventLog, EventsScreen, capture_warnings, format_entry

BAD = "notes/bad.md: file is not valid UTF-8 (bad byte at offset 30); save it as UTF-8"


def test_log_is_newest_first_bounded_and_counts_problems() -> None:
    t = iter(range(100, 200))
    log = EventLog(limit=3, clock=lambda: float(next(t)))
    log.add("watch", "changed notes/a.md")
    log.add("ingest", BAD, level="error", path="notes/bad.md")
    log.add("watch", "created notes/b.md")
    log.add("projection", "embedder unreachable: connection refused", level="warning")
    rows = log.entries()
    assert [r.kind for r in rows] == ["projection", "watch", "ingest"]
    assert len(log) == 3
    assert log.problems == 2
    latest = log.latest_problem()
    assert latest is not None and "connection refused" in latest.text
    assert "bad byte at offset 30" in format_entry(rows[2]).plain


def test_capture_warnings_routes_into_log_not_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    log = EventLog()
    before = warnings.showwarning
    with capture_warnings(log), warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("slow disk", RuntimeWarning, stacklevel=1)
    assert warnings.showwarning is before
    assert [e.text for e in log.entries()] == ["RuntimeWarning: slow disk"]
    assert log.problems == 1
    assert "slow disk" not in capsys.readouterr().err


class _Host(App[None]):
    def __init__(self, log: EventLog) -> None:
        super().__init__()
        self.events_log = log

    def on_mount(self) -> None:
        self.push_screen(EventsScreen(self.events_log))


def test_events_screen_lists_entries_and_closes() -> None:
    asyncio.run(_events_screen())


async def _events_screen() -> None:
    log = EventLog()
    log.add("watch", "changed notes/a.md")
    log.add("ingest", BAD, level="error")
    app = _Host(log)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, EventsScreen)
        box = screen.query_one(OptionList)
        lines = [str(box.get_option_at_index(i).prompt) for i in range(box.option_count)]
        assert "bad byte at offset 30" in lines[0]
        assert "changed notes/a.md" in lines[1]
        log.add("projection", "embedder unreachable: connection refused", level="warning")
        screen.refresh_events()
        await pilot.pause()
        assert box.option_count == 3
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, EventsScreen)


def _bar_text(app: MemlensApp) -> str:
    return app.status_bar.render().plain


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
def test_bad_file_reaches_events_pane_and_status_bar(
        tmp_path: Path, clock: Any, make_service: Callable[..., Any],
        size: tuple[int, int]) -> None:
    asyncio.run(_bad_file(tmp_path, clock, make_service, size))


async def _bad_file(tmp_path: Path, clock: Any, make_service: Callable[..., Any],
                    size: tuple[int, int]) -> None:
    from tests.test_tui import copy_corpus, settle
    projects = copy_corpus(tmp_path / "projects")
    bad = next(projects.rglob("memory")) / "bad_bytes.md"
    bad.write_bytes(b"# Notes\n\nthe nightly run \xff\xfe broke\n")
    svc = make_service()
    app = MemlensApp(svc, clock=clock, roots=svc.resolve_roots([projects]), watch=False)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        problems = [e for e in app.events_log.entries() if e.is_problem]
        assert any("bad_bytes.md" in e.text and "not valid UTF-8" in e.text for e in problems)
        bar = _bar_text(app)
        assert "✗ 1 (E)" in bar  # the count stays even where the reason does not fit
        assert "watch off" in bar  # the watcher state is never the field that is cut
        await pilot.press("E")
        await pilot.pause()
        assert isinstance(app.screen, EventsScreen)
        box = app.screen.query_one(OptionList)
        lines = [str(box.get_option_at_index(i).prompt) for i in range(box.option_count)]
        assert any("bad_bytes.md" in ln and "not valid UTF-8" in ln for ln in lines)
        await pilot.press("E")
        await pilot.pause()
        assert not isinstance(app.screen, EventsScreen)


def test_status_bar_drops_low_priority_fields_first(
        tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    asyncio.run(_narrow_bar(tmp_path, clock, make_service))


async def _narrow_bar(tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    from tests.test_tui import copy_corpus, settle
    projects = copy_corpus(tmp_path / "projects")
    svc = make_service()
    app = MemlensApp(svc, clock=clock, roots=svc.resolve_roots([projects]), watch=False)
    async with app.run_test(size=(200, 30)) as pilot:
        await settle(pilot)
        wide = _bar_text(app)
        assert "embedder" in wide and "chunks" in wide and "watch off" in wide
        await pilot.resize_terminal(60, 24)
        await settle(pilot)
        narrow = _bar_text(app)
        assert "watch off" in narrow and "queue" in narrow
        assert "embedder" not in narrow  # dropped, not cut in the middle
        assert len(narrow) <= 58


def test_watched_bad_file_is_a_problem_with_its_reason(
        tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    asyncio.run(_watched_bad_file(tmp_path, clock, make_service))


async def _watched_bad_file(tmp_path: Path, clock: Any,
                            make_service: Callable[..., Any]) -> None:
    from tests.test_tui import copy_corpus, settle
    projects = copy_corpus(tmp_path / "projects")
    svc = make_service()
    roots = svc.resolve_roots([projects])
    app = MemlensApp(svc, clock=clock, roots=roots, scan_paths=[projects], watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for _ in range(100):
            if app.status_bar.watch_state == "watching":
                break
            await pilot.pause(0.05)
        assert app.events_log.problems == 0
        bad = next(projects.rglob("memory")) / "bad_bytes.md"
        bad.write_bytes(b"# Notes\n\nthe nightly run \xff\xfe broke\n")
        for _ in range(200):
            await pilot.pause(0.05)
            if app.events_log.problems:
                break
        latest = app.events_log.latest_problem()
        assert latest is not None
        assert "bad_bytes.md" in latest.text and "not valid UTF-8" in latest.text
        assert "✗ 1 (E)" in _bar_text(app) and "watch watching" in _bar_text(app)
        # one line for the bad file (the problem, with its reason), no time inside the text
        assert [e for e in app.events_log.entries() if "bad_bytes.md" in e.text] == [latest]
        assert all(not e.text[:2].isdigit() for e in app.events_log.entries())


def test_unreachable_embedder_shows_on_documents_and_status_bar(
        tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    asyncio.run(_unreachable(tmp_path, clock, make_service))


async def _unreachable(tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    from memlens.core.embedders.registry import make_embedder
    from tests.test_embedding_http import closed_port
    from tests.test_tui import copy_corpus, settle
    projects = copy_corpus(tmp_path / "projects")
    emb = make_embedder("openai", {"base_url": f"http://127.0.0.1:{closed_port()}/v1",
                                   "model": "m", "max_retries": 0, "timeout": 2})
    svc = make_service(embedder=emb)
    app = MemlensApp(svc, clock=clock, roots=svc.resolve_roots([projects]), watch=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        bar = _bar_text(app)
        assert "opening database" not in bar  # statistics load without the endpoint
        assert "unreachable" in bar or "queue …0 ✗" in bar
        assert app.detail is not None
        proj = app.detail.document.projection
        assert proj.status == "failed" and "connection refused" in (proj.error or "")
        assert proj.attempts == 1
