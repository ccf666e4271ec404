"""A filter result over many repositories expands them all without a message each: every
``Tree.NodeExpanded`` was dispatched by the tree and bubbled through every container to the
app (at 540 repositories ~2,700 dispatches, ~30 ms on the event loop per filter result)."""

from __future__ import annotations

from typing import Any

from textual.widgets import Tree

from memlens.tui.app import MemlensApp

from .test_tui import SIZE, async_test, settle

REPOS = 30


@async_test
async def test_filter_expands_every_repository_without_a_message_each(
        tmp_path: Any, clock: Any, make_service: Any) -> None:
    for i in range(REPOS):
        mem = tmp_path / "projects" / f"-home-dev-proj{i:02d}" / "memory"
        mem.mkdir(parents=True)
        (mem / "MEMORY.md").write_text(f"# Project {i}\n\n- [deploy](deploy.md)\n",
                                       encoding="utf-8")
        (mem / "deploy.md").write_text(f"# Deploy {i}\n\nShip project {i}.\n",
                                       encoding="utf-8")
    svc = make_service()
    roots = svc.resolve_roots([tmp_path / "projects"])
    svc.ingest(roots)
    app = MemlensApp(svc, roots=roots, watch=False, ingest=False, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = app.doc_tree
        assert len(tree.root.children) == REPOS
        posted: list[str] = []
        original = tree.post_message

        def counting(message: Any) -> bool:
            accepted = original(message)  # False: prevented, never dispatched
            if accepted:
                posted.append(type(message).__name__)
            return accepted

        tree.post_message = counting  # type: ignore[method-assign]
        await pilot.press("slash")
        for ch in "deploy":
            await pilot.press(ch)
        await settle(pilot)
        # Every repository is expanded and lists its match, flat ...
        repos = tree.root.children
        assert len(repos) == REPOS and all(node.is_expanded for node in repos)
        assert all(any(str(c.label) == "deploy.md" for c in node.children) for node in repos)
        assert tree.filter_text == "deploy"
        # ... with no NodeExpanded message per repository (at most the cursor's own).
        assert posted.count(Tree.NodeExpanded.__name__) <= 1, posted
        # A repository expanded by hand still lists its children (the handler populates).
        await pilot.press("escape", "escape")
        await settle(pilot)
        node = tree.root.children[-1]
        node.collapse()
        node.remove_children()
        node.expand()
        await settle(pilot)
        assert node.children


@async_test
async def test_frame_memo_of_size_and_styles_never_outlives_a_frame(
        tmp_path: Any, clock: Any, make_service: Any) -> None:
    """The tree's size and component styles are resolved once per frame while it draws;
    outside a frame they are Textual's own, so a resize or a theme change is seen."""
    mem = tmp_path / "projects" / "-home-dev-solo" / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text("# Solo\n\n- [notes](notes.md)\n", encoding="utf-8")
    (mem / "notes.md").write_text("# Notes\n\nSome notes.\n", encoding="utf-8")
    svc = make_service()
    roots = svc.resolve_roots([tmp_path / "projects"])
    svc.ingest(roots)
    app = MemlensApp(svc, roots=roots, watch=False, ingest=False, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = app.doc_tree
        assert tree._frame_size is None and tree._frame_components is None
        before = tree.size
        assert before == tree.content_region.size
        row = next(n for n in tree._doc_nodes.values() if str(n.label) == "notes.md")
        label_before = tree.render_label(row, tree.rich_style, tree.rich_style).plain
        await pilot.resize_terminal(SIZE[0] - 40, SIZE[1] - 5)
        await settle(pilot)
        assert tree._frame_size is None
        assert tree.size == tree.content_region.size != before
        # The rows are drawn at the new width (the meta column moved left).
        label = tree.render_label(row, tree.rich_style, tree.rich_style).plain
        assert len(label) - len(label_before) == tree.size.width - before.width < 0
        styles = tree.get_component_styles("tree--guides")
        assert styles is not tree.get_component_styles("tree--guides")  # not memoised
