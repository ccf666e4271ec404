"""A filter result over many repositories expands them all without a message each: every
``Tree.NodeExpanded`` was dispatched by the tree and bubbled through every container to the
app (at 540 repositories ~2,700 dispatches, ~30 ms on the event loop per filter result)."""

from __future__ import annotations

from typing import Any

from textual.widgets import Tree

from memlens.tui.app import MemlensApp
from tests.conftest import MemoryTree
from tests.test_tui import SIZE, async_test, settle

REPOS = 30


def _app(tree: MemoryTree, make_service: Any, clock: Any) -> MemlensApp:
    """The TUI over the memory written to ``tree``, ingested (no watcher)."""
    svc = make_service()
    roots = svc.resolve_roots([tree.projects])
    svc.ingest(roots)
    return MemlensApp(svc, roots=roots, watch=False, ingest=False, clock=clock)


@async_test
async def test_filter_expands_every_repository_without_a_message_each(
        tree: MemoryTree, clock: Any, make_service: Any) -> None:
    for i in range(REPOS):
        slug = f"-home-dev-proj{i:02d}"
        tree.write("MEMORY.md", f"# Project {i}\n\n- [deploy](deploy.md)\n", slug=slug)
        tree.write("deploy.md", f"# Deploy {i}\n\nShip project {i}.\n", slug=slug)
    app = _app(tree, make_service, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        dt = app.doc_tree
        assert len(dt.root.children) == REPOS
        posted: list[str] = []
        original = dt.post_message

        def counting(message: Any) -> bool:
            accepted = original(message)  # False: prevented, never dispatched
            if accepted:
                posted.append(type(message).__name__)
            return accepted

        dt.post_message = counting  # type: ignore[method-assign]
        await pilot.press("slash")
        for ch in "deploy":
            await pilot.press(ch)
        await settle(pilot)
        # Every repository is expanded and lists its match, flat ...
        repos = dt.root.children
        assert len(repos) == REPOS and all(node.is_expanded for node in repos)
        assert all(any(str(c.label) == "deploy.md" for c in node.children) for node in repos)
        assert dt.filter_text == "deploy"
        # ... with no NodeExpanded message per repository (at most the cursor's own).
        assert posted.count(Tree.NodeExpanded.__name__) <= 1, posted
        # A repository expanded by hand still lists its children (the handler populates).
        await pilot.press("escape", "escape")
        await settle(pilot)
        node = dt.root.children[-1]
        node.collapse()
        node.remove_children()
        node.expand()
        await settle(pilot)
        assert node.children


@async_test
async def test_frame_memo_of_size_and_styles_never_outlives_a_frame(
        tree: MemoryTree, clock: Any, make_service: Any) -> None:
    """The tree's size and component styles are resolved once per frame while it draws;
    outside a frame they are Textual's own, so a resize or a theme change is seen."""
    tree.write("MEMORY.md", "# Solo\n\n- [notes](notes.md)\n")
    tree.write("notes.md", "# Notes\n\nSome notes.\n")
    app = _app(tree, make_service, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        dt = app.doc_tree
        assert dt._frame_size is None and dt._frame_components is None
        before = dt.size
        assert before == dt.content_region.size
        row = next(n for n in dt._doc_nodes.values() if str(n.label) == "notes.md")
        label_before = dt.render_label(row, dt.rich_style, dt.rich_style).plain
        await pilot.resize_terminal(SIZE[0] - 40, SIZE[1] - 5)
        await settle(pilot)
        assert dt._frame_size is None
        assert dt.size == dt.content_region.size != before
        # The rows are drawn at the new width (the meta column moved left).
        label = dt.render_label(row, dt.rich_style, dt.rich_style).plain
        assert len(label) - len(label_before) == dt.size.width - before.width < 0
        styles = dt.get_component_styles("tree--guides")
        assert styles is not dt.get_component_styles("tree--guides")  # not memoised
