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
