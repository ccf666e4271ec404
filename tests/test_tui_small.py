"""Issue 42, item 8: the small things of the TUI, each with a Pilot test."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.widgets._toast import Toast

from memlens.tui.app import MemlensApp
from tests.test_tui import copy_corpus, settle


def test_toast_at_80_columns_leaves_the_status_bar_readable(
        tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    asyncio.run(_toast_above_bar(tmp_path, clock, make_service))


async def _toast_above_bar(tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    projects = copy_corpus(tmp_path / "projects")
    svc = make_service()
    app = MemlensApp(svc, clock=clock, roots=svc.resolve_roots([projects]), watch=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        app.clear_notifications()  # the start-up's own toasts
        await pilot.press("w")  # "the watcher is off …": a toast, right after the key
        await pilot.pause()
        await pilot.pause()
        toasts = list(app.screen.query(Toast))
        assert toasts, "the key shows a toast"
        bar = app.status_bar.region
        assert "watch off" in app.status_bar.render().plain
        for toast in toasts:
            assert not toast.region.overlaps(bar), (toast.region, bar)
        # the key's answer is not a problem: nothing is counted
        assert app.events_log.problems == 0


def test_shrinking_the_stacked_tree_keeps_rows_of_documents(
        tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    asyncio.run(_tree_floor(tmp_path, clock, make_service))


async def _tree_floor(tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    projects = copy_corpus(tmp_path / "projects")
    svc = make_service()
    app = MemlensApp(svc, clock=clock, roots=svc.resolve_roots([projects]), watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for _ in range(12):
            await pilot.press("less_than_sign")
        await settle(pilot)
        tree = app.doc_tree
        assert tree.content_region.height >= 3, tree.content_region
        assert app.screen.region.contains_region(tree.content_region)  # on screen
