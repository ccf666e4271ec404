"""The TUI shows both stages of the projection (issue 37): the Projection tab says how many
of a document's vectors are written, and the status bar how many documents still wait for
theirs; a startup run computes them in its worker (the rows and the bar follow)."""

from __future__ import annotations

from typing import Any

from memlens.core.ingest.sources import roots_for_path
from memlens.tui.app import MemlensApp
from tests.test_tui import SIZE, async_test, select_doc, settle, static_text


def _status_bar(app: MemlensApp) -> str:
    return str(app.status_bar.render())


@async_test
async def test_projection_tab_and_status_bar_show_the_vector_stage(
        make_service: Any, tree: Any, clock: Any) -> None:
    tree.write("a.md", "# Alpha\n\nThe walrus keeps its tusks polished.\n")
    tree.write("b.md", "# Beta\n\nDeploys go through the staging gate.\n")
    svc = make_service()
    svc.ingest(roots_for_path(tree.projects), project=False)
    svc.project(vectors=False)  # searchable by words; no vector yet
    a = svc.locate(None, "a.md")
    assert a is not None
    app = MemlensApp(svc, clock=clock, watch=False, ingest=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "vectors 2 waiting" in _status_bar(app)
        await select_doc(pilot, a.id)
        await pilot.press("3")
        await settle(pilot)
        text = static_text(app, "#projection-text")
        assert "0 of 1 written" in text and "found by its words meanwhile" in text
        assert "ready" in text  # stage 1 is done
    # the startup job of a second app computes them in its worker
    app2 = MemlensApp(svc, clock=clock, watch=False, ingest=True, roots=roots_for_path(
        tree.projects))
    async with app2.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for _ in range(100):
            if svc.vectors_waiting() == 0 and "vectors" not in _status_bar(app2):
                break
            await pilot.pause(0.05)
        assert svc.vectors_waiting() == 0
        assert "waiting" not in _status_bar(app2)
        await select_doc(pilot, a.id)
        await pilot.press("3")
        await settle(pilot)
        assert "1 of 1 written" in static_text(app2, "#projection-text")
