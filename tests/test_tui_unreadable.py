"""Files that could not be read are marked ``✗`` in the tree, with the reason in the
detail: a file that was never stored gets a row of its own, a stored document keeps its
last good revision and shows why the file on disk was not read (issue 15)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from textual.widgets import Static

from memlens.tui.app import MemlensApp
from memlens.tui.widgets.doc_tree import DocumentTree
from memlens.tui.widgets.tree_rows import DocData

BAD_BYTES = b"# Notes\n\nthe nightly run \xff\xfe broke\n"


def _rows(tree: DocumentTree) -> dict[str, Any]:
    """Document rows on screen (expanded) by path."""
    out: dict[str, Any] = {}
    stack = list(tree.root.children)
    while stack:
        node = stack.pop()
        if isinstance(node.data, DocData):
            out[node.data.summary.path] = node
        stack.extend(node.children)
    return out


def _title(app: MemlensApp) -> str:
    return str(app.browser.query_one("#doc-title", Static).render())


async def _wait(pilot: Any, cond: Callable[[], bool], steps: int = 200) -> bool:
    for _ in range(steps):
        if cond():
            return True
        await pilot.pause(0.05)
    return cond()


def test_never_stored_file_gets_a_failed_row_with_its_reason(
        tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    asyncio.run(_never_stored(tmp_path, clock, make_service))


async def _never_stored(tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    from tests.test_tui import copy_corpus, settle
    projects = copy_corpus(tmp_path / "projects")
    memory = sorted(projects.rglob("memory"))[0]
    (memory / "bad_bytes.md").write_bytes(BAD_BYTES)
    svc = make_service()
    app = MemlensApp(svc, clock=clock, roots=svc.resolve_roots([projects]), watch=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        tree = app.doc_tree
        repo_node = next(n for n in tree.root.children if memory.parent.name in str(n.label)
                         or n.data.repository.endswith(memory.parent.name))
        repo_node.expand()
        await settle(pilot)
        rows = _rows(tree)
        assert "bad_bytes.md" in rows, sorted(rows)
        node = rows["bad_bytes.md"]
        summary = node.data.summary
        assert summary.id < 0 and tree.status_of(summary) == "failed"
        label = tree.render_label(node, tree.rich_style, tree.rich_style).plain
        assert label.startswith("✗ ") and "bad_bytes.md" in label
        tree.move_to(node)
        await settle(pilot)
        title = _title(app)
        assert "bad_bytes.md" in title and "not ingested" in title
        assert "not valid UTF-8" in title
        assert app.detail is None  # nothing stored to show, and no old document left on screen
        # The stored documents are untouched; the database holds no row for the bad file.
        assert all(d.path != "bad_bytes.md" for d in svc.list_documents())


def test_watched_file_made_unreadable_keeps_last_revision_and_shows_why(
        tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    asyncio.run(_made_unreadable(tmp_path, clock, make_service))


@asynccontextmanager
async def _watching(tmp_path: Path, clock: Any, make_service: Callable[..., Any],
                    size: tuple[int, int]) -> AsyncIterator[tuple[MemlensApp, Any, list[Any]]]:
    """An app over a corpus copy with the watcher running: (app, pilot, roots)."""
    from tests.test_tui import copy_corpus, settle
    projects = copy_corpus(tmp_path / "projects")
    svc = make_service()
    roots = svc.resolve_roots([projects])
    app = MemlensApp(svc, clock=clock, roots=roots, scan_paths=[projects], watch=True)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert await _wait(pilot, lambda: app.status_bar.watch_state == "watching")
        yield app, pilot, roots


async def _made_unreadable(tmp_path: Path, clock: Any,
                           make_service: Callable[..., Any]) -> None:
    from tests.test_tui import settle
    async with _watching(tmp_path, clock, make_service, (120, 36)) as (app, pilot, roots):
        assert app.detail is not None
        doc = app.detail.document
        shown_id = app.current_doc_id
        assert shown_id is not None and shown_id > 0
        memory = next(r.path for r in roots if r.repository == doc.repository)
        target = memory / doc.path
        good = target.read_bytes()
        target.write_bytes(BAD_BYTES)
        tree = app.doc_tree
        summary = tree.summary(shown_id)
        assert summary is not None
        assert await _wait(pilot, lambda: tree.status_of(summary) == "failed")
        await settle(pilot)
        title = _title(app)
        assert "could not be read" in title and "not valid UTF-8" in title
        assert "last good revision" in title
        assert app.detail is not None and app.detail.chunks  # the last good chunks stay
        # Saved as UTF-8 again: the mark goes.
        target.write_bytes(good + b"\nfixed\n")
        assert await _wait(pilot, lambda: tree.status_of(summary) != "failed")
        await settle(pilot)
        assert "could not be read" not in _title(app)


def test_new_unreadable_file_while_watching_appears_and_goes_when_deleted(
        tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    asyncio.run(_new_then_deleted(tmp_path, clock, make_service))


async def _new_then_deleted(tmp_path: Path, clock: Any,
                            make_service: Callable[..., Any]) -> None:
    async with _watching(tmp_path, clock, make_service, (80, 24)) as (app, pilot, roots):
        tree = app.doc_tree
        bad = roots[0].path / "bad_new.md"
        bad.write_bytes(BAD_BYTES)

        def listed() -> bool:
            return any(d.path == "bad_new.md" and d.id < 0 for d in tree._docs.values())

        assert await _wait(pilot, listed)
        bad.unlink()
        assert await _wait(pilot, lambda: not listed())
