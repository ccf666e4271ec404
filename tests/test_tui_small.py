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


def _projection(app: MemlensApp) -> tuple[str, bool]:
    """The Projection tab's text, and whether its retry button is offered."""
    from textual.widgets import Button, Static
    panel = app.browser.query_one("#projection")
    text = str(panel.query_one("#projection-text", Static).render())
    return text, panel.query_one("#retry", Button).display


def test_projection_tab_of_a_file_that_failed_to_ingest_offers_no_retry(
        tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    asyncio.run(_no_retry(tmp_path, clock, make_service))


async def _no_retry(tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    from tests.test_tui_unreadable import BAD_BYTES, _rows, _wait, _watching
    async with _watching(tmp_path, clock, make_service, (80, 24)) as (app, pilot, roots):
        assert app.detail is not None
        doc = app.detail.document
        shown = app.current_doc_id
        assert shown is not None
        memory = next(r.path for r in roots if r.repository == doc.repository)
        (memory / doc.path).write_bytes(BAD_BYTES)  # stored before: its projection is ready
        (memory / "aaa_bad.md").write_bytes(BAD_BYTES)  # never stored
        tree = app.doc_tree
        summary = tree.summary(shown)
        assert summary is not None
        assert await _wait(pilot, lambda: tree.status_of(summary) == "failed")
        await pilot.press("3")
        await settle(pilot)
        text, offered = _projection(app)
        assert "ready" in text and "projection failed" not in text
        assert "could not be read" in text and "not valid UTF-8" in text
        assert not offered  # the projection is ready: nothing to retry
        assert await _wait(pilot, lambda: "aaa_bad.md" in _rows(tree))
        tree.move_to(_rows(tree)["aaa_bad.md"])
        await settle(pilot)
        text, offered = _projection(app)
        assert "not ingested" in text and "nothing of this file is stored" in text.lower()
        assert not offered


def test_n_after_opening_a_hit_goes_to_the_hit_chunk_first(
        tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    asyncio.run(_n_from_hit(tmp_path, clock, make_service))


async def _n_from_hit(tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    from memlens.tui.widgets.chunk_view import ChunkView
    projects = copy_corpus(tmp_path / "projects")
    memory = sorted(projects.rglob("memory"))[0]
    filler = " ".join(f"word{i}" for i in range(400))
    sections = ["# Aardvark notes\n\nOne mention of the quetzal up here.\n\n" + filler]
    sections += [f"## Part {i}\n\n{filler}\n" for i in range(1, 4)]
    sections.append("## Quetzal\n\nquetzal quetzal quetzal: the quetzal section.\n")
    (memory / "aardvark.md").write_text("\n\n".join(sections), encoding="utf-8")
    svc = make_service()
    app = MemlensApp(svc, clock=clock, roots=svc.resolve_roots([projects]), watch=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        hits = svc.search("quetzal", mode="lexical").hits
        hit = next(h for h in hits if h.path == "aardvark.md" and h.ordinal > 0)
        app.search_state.query = "quetzal"
        app._open_hit(hit)
        await settle(pilot)
        view = app.query_one("#chunks", ChunkView)
        assert view.selected_chunk is not None and view.selected_chunk.ordinal == hit.ordinal
        above = [ln for ln in view.match_lines if view._lines[ln].chunk < view.hit]
        assert above, "the word also occurs above the hit chunk"
        await pilot.press("n")
        line = view.match_lines[view._match_at]
        assert view._lines[line].chunk >= view.hit  # not the word above the hit
        assert view.selected_chunk.ordinal == hit.ordinal


def _long_note(memory: Path) -> None:
    filler = " ".join(f"word{i}" for i in range(400))
    sections = ["# Aardvark notes\n\nOne mention of the quetzal up here.\n\n" + filler]
    sections += [f"## Part {i}\n\n{filler}\n" for i in range(1, 4)]
    sections.append("## Quetzal\n\nquetzal quetzal quetzal: the quetzal section.\n")
    (memory / "aardvark.md").write_text("\n\n".join(sections), encoding="utf-8")


def test_chunk_at_cell_picks_the_chunk_drawn_there() -> None:
    from memlens.core.chunking.chunker import chunk_markdown
    from memlens.tui.widgets.file_map import chunk_at_cell, map_cells
    text = "\n\n".join(f"## Part {i}\n\n" + "word " * 300 for i in range(6))
    chunks = chunk_markdown(text).chunks
    assert len(chunks) >= 4
    width = 60
    assert chunk_at_cell(chunks, len(text), width, 0) == 0
    assert chunk_at_cell(chunks, len(text), width, width - 1) == len(chunks) - 1
    for x in range(width):  # the chunk a click picks is the one drawn selected there
        i = chunk_at_cell(chunks, len(text), width, x)
        assert i is not None
        assert map_cells(chunks, len(text), width, selected=i)[x] == "selected"
    assert chunk_at_cell([], 0, width, 3) is None
    assert chunk_at_cell(chunks, len(text), width, width) is None


def test_clicking_the_chunk_map_jumps_to_that_chunk(
        tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    asyncio.run(_map_click(tmp_path, clock, make_service))


async def _map_click(tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    from memlens.tui.widgets.chunk_view import ChunkView
    from memlens.tui.widgets.file_map import FileMap
    projects = copy_corpus(tmp_path / "projects")
    _long_note(sorted(projects.rglob("memory"))[0])
    svc = make_service()
    app = MemlensApp(svc, clock=clock, roots=svc.resolve_roots([projects]), watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        doc = next(d for d in svc.list_documents() if d.path == "aardvark.md")
        app.open_document(doc.id)
        await settle(pilot)
        view = app.query_one("#chunks", ChunkView)
        fmap = app.query_one("#file-map", FileMap)
        assert len(view.chunks) >= 4 and view.selected == 0
        width = fmap.size.width
        await pilot.click("#file-map", offset=(width - 1, 0))
        await settle(pilot)
        last = view.chunks[view.selected]  # a chunk drawn in the last cell
        assert last.end_char > (width - 1) * fmap.total // width
        assert view.selected > len(view.chunks) // 2 and fmap.selected == view.selected
        await pilot.click("#file-map", offset=(width // 2, 0))
        await settle(pilot)
        assert 0 < view.selected < len(view.chunks) - 1
