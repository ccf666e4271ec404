"""Moving the focus redraws what it changes, not the whole screen.

Textual's ``Tree`` answers every style update (the focus moving in or out is one) by
throwing its row list away, which the next idle rebuilds by walking every expanded node
and rendering every label to measure it, and by asking for a layout; ``Screen.focused``
repainted the whole screen. At 10k documents the ``/`` key (tree -> filter box) stalled
the event loop 68-72 ms (docs/benchmarks.md, "The focus change")."""

from __future__ import annotations

from typing import Any

from rich.style import Style
from textual._compositor import Compositor
from textual.geometry import Region

from memlens.tui.app import MemlensApp
from memlens.tui.widgets.doc_tree import DocumentTree

from .conftest import MemoryTree
from .test_tui import SIZE, async_test, settle
from .test_tui_tree_messages import _app


def _first_row_style(dt: DocumentTree) -> Style:
    """The style of the first cell of the tree's first row as drawn now."""
    strip = dt.render_lines(Region(0, 0, dt.size.width, 1))[0]
    style = next(iter(strip)).style
    assert style is not None
    return style


def _memory(tree: MemoryTree) -> None:
    for i in range(4):
        slug = f"-home-dev-proj{i}"
        tree.write("MEMORY.md", f"# Project {i}\n\n- [deploy](deploy.md)\n", slug=slug)
        tree.write("deploy.md", f"# Deploy {i}\n\nShip project {i}.\n", slug=slug)


@async_test
async def test_focus_change_keeps_the_rows_and_repaints_only_what_changed(
        tree: MemoryTree, clock: Any, make_service: Any) -> None:
    _memory(tree)
    app: MemlensApp = _app(tree, make_service, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        dt = app.doc_tree
        dt.focus()
        await settle(pilot)
        rows = dt._tree_lines
        assert len(rows) >= 4  # the four repositories (the first one open)
        focused = _first_row_style(dt)

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
        Compositor.render_full_update = counting_full  # type: ignore[method-assign]
        try:
            await pilot.press("slash")  # tree -> filter box
            await settle(pilot)
            assert app.focused is not None and app.focused.id == "filter"
            blurred = _first_row_style(dt)
            await pilot.press("escape")  # back to the tree
            await settle(pilot)
            assert app.focused is dt
        finally:
            Compositor.render_full_update = render_full  # type: ignore[method-assign]
        # The rows were drawn again in the other look (Tree:focus tints the background) ...
        assert blurred.bgcolor != focused.bgcolor
        assert _first_row_style(dt) == focused
        # ... from the same row list, and the screen was composited in part, not whole.
        assert builds == [] and dt._tree_lines is rows
        assert full == []


@async_test
async def test_theme_change_redraws_the_rows(
        tree: MemoryTree, clock: Any, make_service: Any) -> None:
    """A style change that is not a pseudo-class (Tree's line cache is keyed on those)
    still draws every row again: a switch between two dark themes."""
    _memory(tree)
    app: MemlensApp = _app(tree, make_service, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        dt = app.doc_tree
        dt.focus()
        await settle(pilot)
        assert app.current_theme.dark
        before = _first_row_style(dt)
        rows = dt._tree_lines
        app.theme = "nord"
        await settle(pilot)
        assert app.current_theme.dark
        after = _first_row_style(dt)
        assert after.bgcolor != before.bgcolor
        assert dt._tree_lines is rows
