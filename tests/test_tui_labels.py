"""Tree labels are plain text, never Rich markup (a file or folder name is the user's,
not ours to interpret)."""

from __future__ import annotations

from typing import Any

from memlens.tui.app import MemlensApp
from tests.test_tui import SIZE, async_test, settle


@async_test
async def test_file_and_folder_names_that_look_like_markup_list_as_they_are(
        tmp_path: Any, clock: Any, make_service: Any) -> None:
    """Tree labels are plain text: a name with ``[/]`` crashed the listing (Rich read it
    as a closing markup tag) and ``[WIP]`` vanished from the node's label."""
    mem = tmp_path / "projects" / "-home-dev-odd" / "memory"
    (mem / "notes[").mkdir(parents=True)
    (mem / "MEMORY.md").write_text("# Odd\n\n- [plan](plan.md)\n", encoding="utf-8")
    names = ["notes[/old].md", "[WIP] plan.md", "[bold]loud.md"]  # "notes[" is a folder
    for name in names:
        (mem / name).write_text(f"# {name}\n\nText of {name}.\n", encoding="utf-8")
    svc = make_service()
    roots = svc.resolve_roots([tmp_path / "projects"])
    svc.ingest(roots)
    app = MemlensApp(svc, roots=roots, watch=False, ingest=False, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = app.doc_tree
        repo = tree.root.children[0]
        folder = next(n for n in repo.children if str(n.label) == "notes[/")
        folder.expand()
        await settle(pilot)
        labels = {str(n.label) for n in tree._doc_nodes.values()}
        assert set(names) <= labels
        lines = "\n".join(tree.render_label(n, tree.rich_style, tree.rich_style).plain
                          for n in tree._doc_nodes.values())
        assert "old].md" in lines and "[WIP] plan.md" in lines and "[bold]loud.md" in lines
        # The filter lists full paths, flat.
        await pilot.press("slash")
        for ch in "old":
            await pilot.press(ch)
        await settle(pilot)
        assert "notes[/old].md" in {str(n.label) for n in tree._doc_nodes.values()}
