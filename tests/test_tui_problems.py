"""Issue 42, item 3: problems are state, the events pane is history.

The status bar's ``✗ N (E)`` counts the files and projections failing now: a failure seen
again by each periodic reconcile is logged once, and it stops counting once fixed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlens.tui.app import MemlensApp
from memlens.tui.screens.events import EventLog

BAD = b"# Notes\n\nthe nightly run \xff\xfe broke\n"


def test_keyed_problem_is_logged_once_and_cleared() -> None:
    log = EventLog()
    key = ("file", "repo", "notes/bad.md")
    assert log.add("watcher", "repo/notes/bad.md: not UTF-8", level="warning", key=key)
    for _ in range(3):  # seen again by each reconcile
        assert log.add("watcher", "repo/notes/bad.md: not UTF-8", level="warning",
                       key=key) is None
    assert log.problems == 1 and len(log) == 1
    log.add("worker", "Could not load statistics.", level="error")  # no key: until seen
    assert log.problems == 2
    latest = log.latest_problem()
    assert latest is not None and latest.kind == "worker"
    log.acknowledge()
    assert log.problems == 1
    latest = log.latest_problem()
    assert latest is not None and "not UTF-8" in latest.text
    assert log.clear(key) is not None
    assert log.problems == 0 and log.latest_problem() is None
    assert len(log) == 2  # the history stays


def _bar(app: MemlensApp) -> str:
    return app.status_bar.render().plain


def test_unreadable_file_counts_once_across_reconciles_and_clears_when_fixed(
        tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    asyncio.run(_across_reconciles(tmp_path, clock, make_service))


async def _wait(pilot: Any, what: str, ok: Callable[[], bool], timeout: float = 60.0) -> None:
    """Poll ``ok`` between frames; the bound only keeps a broken run from hanging."""
    for _ in range(int(timeout / 0.05)):
        if ok():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def _across_reconciles(tmp_path: Path, clock: Any,
                             make_service: Callable[..., Any]) -> None:
    from tests.test_tui import copy_corpus, settle
    projects = copy_corpus(tmp_path / "projects")
    svc = make_service(**{"watch.reconcile_seconds": 1})
    roots = svc.resolve_roots([projects])
    app = MemlensApp(svc, clock=clock, roots=roots, scan_paths=[projects], watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await _wait(pilot, "the watcher", lambda: app.status_bar.watch_state == "watching")
        assert app.events_log.problems == 0
        bad = next(projects.rglob("memory")) / "bad_bytes.md"
        bad.write_bytes(BAD)
        await _wait(pilot, "the bad file's problem", lambda: app.events_log.problems > 0)
        assert app.events_log.problems == 1 and "✗ 1 (E)" in _bar(app)

        def reconciles() -> int:
            return sum(1 for e in app.events_log.entries()
                       if e.text.startswith("reconcile (periodic)"))

        seen = reconciles()
        # Each periodic reconcile reads the bad file again and reports it again.
        await _wait(pilot, "three periodic reconciles", lambda: reconciles() >= seen + 3)
        assert app.events_log.problems == 1 and "✗ 1 (E)" in _bar(app)
        lines = [e for e in app.events_log.entries()
                 if e.is_problem and "bad_bytes.md" in e.text]
        assert len(lines) == 1 and "not valid UTF-8" in lines[0].text

        bad.write_text("# Notes\n\nthe nightly run is fixed\n", encoding="utf-8")
        await _wait(pilot, "the fix", lambda: app.events_log.problems == 0)
        await settle(pilot)
        assert "(E)" not in _bar(app) and app.status_bar.problem == ""
        assert any(e.text.startswith("fixed: ") and "bad_bytes.md" in e.text
                   for e in app.events_log.entries())
