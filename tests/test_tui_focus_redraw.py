"""Moving the focus redraws what it changes, not the whole screen.

Textual's ``Tree`` answers every style update (the focus moving in or out is one) by
throwing its row list away, which the next idle rebuilds by walking every expanded node
and rendering every label to measure it, and by asking for a layout; ``Screen.focused``
repainted the whole screen. At 10k documents the ``/`` key (tree -> filter box) stalled
the event loop 68-72 ms (docs/benchmarks.md, "The focus change")."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rich.style import Style
from textual._compositor import Compositor

from memlens.tui.app import MemlensApp
from memlens.tui.widgets.doc_tree import DocumentTree
from tests.conftest import MemoryTree
from tests.test_tui import SIZE, async_test, settle
from tests.test_tui_tree_messages import _app


def _row_style(dt: DocumentTree, y: int) -> tuple[Style | None, ...]:
    """The styles of the tree's row ``y`` as drawn now (its content, not the border)."""
    return tuple(segment.style for segment in dt.render_line(y - dt.scroll_offset.y))


async def _focused_tree(pilot: Any) -> DocumentTree:
    """The app's document tree, listed and focused."""
    await settle(pilot)
    dt: DocumentTree = pilot.app.doc_tree
    dt.focus()
    await settle(pilot)
    return dt


def _count_labels(dt: DocumentTree) -> list[str]:
    """From now on, the label of every row ``dt`` draws (a line-cache miss)."""
    labels: list[str] = []
    label = dt.render_label

    def counting_label(node: Any, *a: Any, **k: Any) -> Any:
        labels.append(str(node.label))
        return label(node, *a, **k)

    dt.render_label = counting_label  # type: ignore[method-assign]
    return labels


def _memory(tree: MemoryTree, repos: int = 10) -> None:
    for i in range(repos):
        slug = f"-home-dev-proj{i}"
        tree.write("MEMORY.md", f"# Project {i}\n\n- [deploy](deploy.md)\n", slug=slug)
        tree.write("deploy.md", f"# Deploy {i}\n\nShip project {i}.\n", slug=slug)


@async_test
async def test_focus_change_draws_only_the_rows_it_changes(
        tree: MemoryTree, clock: Any, make_service: Any) -> None:
    _memory(tree)
    app: MemlensApp = _app(tree, make_service, clock)
    async with app.run_test(size=SIZE) as pilot:
        dt = await _focused_tree(pilot)
        await pilot.press("down")  # onto a document: a row with nothing below it
        await settle(pilot)
        rows = dt._tree_lines
        assert len(rows) >= 10  # the repositories (the first one open)
        cursor = dt.cursor_line
        assert dt.cursor_node is not None and not dt.cursor_node.children
        other = len(rows) - 1  # another repository
        assert other != cursor
        focused = _row_style(dt, cursor), _row_style(dt, other)

        builds: list[int] = []
        full: list[int] = []
        build, render_full = dt._build, Compositor.render_full_update

        def counting_build() -> None:
            builds.append(1)
            build()

        def counting_full(self: Compositor, *a: Any, **k: Any) -> Any:
            full.append(1)
            return render_full(self, *a, **k)

        dt._build = counting_build  # type: ignore[method-assign]
        labels = _count_labels(dt)
        Compositor.render_full_update = counting_full  # type: ignore[method-assign]
        try:
            await pilot.press("slash")  # tree -> filter box
            await settle(pilot)
            assert app.focused is not None and app.focused.id == "filter"
            drawn_on_blur = len(labels)
            blurred = _row_style(dt, cursor), _row_style(dt, other)
            await pilot.press("escape")  # back to the tree
            await settle(pilot)
            assert app.focused is dt
        finally:
            Compositor.render_full_update = render_full  # type: ignore[method-assign]
        # The cursor row is drawn in the other look; the other rows look the same ...
        assert blurred[0] != focused[0]
        assert blurred[1] == focused[1]
        assert (_row_style(dt, cursor), _row_style(dt, other)) == focused
        # ... and only the cursor row was drawn again (once per frame at most), from the
        # same row list, with the screen composited in part, not whole.
        assert 1 <= drawn_on_blur <= 2, drawn_on_blur
        assert builds == [] and dt._tree_lines is rows
        assert full == []


@async_test
async def test_theme_change_redraws_the_rows(
        tree: MemoryTree, clock: Any, make_service: Any) -> None:
    """A style change that is not the focus draws every row again: a switch between two
    dark themes."""
    _memory(tree, repos=4)
    app: MemlensApp = _app(tree, make_service, clock)
    async with app.run_test(size=SIZE) as pilot:
        dt = await _focused_tree(pilot)
        assert app.current_theme.dark
        other = next(y for y in range(len(dt._tree_lines)) if y != dt.cursor_line)
        before = _row_style(dt, other)
        rows = dt._tree_lines
        app.theme = "nord"
        await settle(pilot)
        assert app.current_theme.dark
        after = _row_style(dt, other)
        assert after != before
        assert dt._tree_lines is rows


@async_test
async def test_cursor_moves_leave_the_other_rows_cached(
        tree: MemoryTree, clock: Any, make_service: Any) -> None:
    """The detail of the document under the cursor comes back at each move with its
    summary; an unchanged summary refreshed the repository's node, which changed the
    line-cache key of every row below it: the next redraw of the tree (the focus moving
    away) drew them all again. A changed summary still redraws its row."""
    for i in range(12):
        tree.write(f"topic{i:02d}.md", f"# Topic {i}\n\nNotes on topic {i}.\n")
    tree.write("MEMORY.md", "# Index\n\n" + "".join(
        f"- [t{i}](topic{i:02d}.md)\n" for i in range(12)))
    app: MemlensApp = _app(tree, make_service, clock)
    async with app.run_test(size=SIZE) as pilot:
        dt = await _focused_tree(pilot)
        assert len(dt._tree_lines) >= 13
        for _ in range(3):
            await pilot.press("down")
            await settle(pilot)
            assert app.current_doc_id == dt.cursor_doc_id is not None
        labels = _count_labels(dt)
        await pilot.press("slash")  # the whole tree is drawn again (its border)
        await settle(pilot)
        assert set(labels) == {str(dt.cursor_node.label)}, labels  # type: ignore[union-attr]
        # A summary that did change redraws its row.
        doc_id = dt.cursor_doc_id
        summary = dt.summary(doc_id) if doc_id is not None else None
        assert summary is not None
        labels.clear()
        count = summary.chunk_count
        dt.update_documents([replace(summary, chunk_count=count + 5)])
        await settle(pilot)
        assert dt.summary(summary.id).chunk_count == count + 5  # type: ignore[union-attr]
        assert str(dt.cursor_node.label) in labels  # type: ignore[union-attr]
