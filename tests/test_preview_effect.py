"""A rechunk preview shows its effect on search before anything is written."""

from __future__ import annotations

from typing import Any

from memlens.core.chunking.chunker import ChunkerConfig
from memlens.core.ingest.sources import roots_for_path

LONG = ("# Runbook\n\n" + "\n\n".join(
    f"Step {i}: check the disk and the logs of service number {i}." for i in range(40))
    + "\n\n## Backfill\n\nThe backfill of the warehouse uses partitions and replays events.\n")


def test_effect_of_a_proposed_rechunk(make_service: Any, tree: Any) -> None:
    tree.write("runbook.md", LONG)
    tree.write("other.md", "# Other\n\nThe warehouse backfill is described elsewhere, "
               "warehouse warehouse.\n")
    svc = make_service()
    svc.ingest(roots_for_path(tree.projects))
    doc = svc.locate("-home-dev-proj", "runbook.md")
    assert doc is not None
    before_db = svc.statistics()
    whole = ChunkerConfig.from_dict({"strategy": "whole"})
    effects = svc.preview_search_effect(doc.id, whole, ["warehouse backfill", "disk logs",
                                                        "zebraquokka", "the of"])
    by_q = {e.query: e for e in effects}
    assert set(by_q) == {"warehouse backfill", "disk logs", "zebraquokka", "the of"}
    assert by_q["zebraquokka"].before is None and by_q["zebraquokka"].after is None
    assert by_q["zebraquokka"].change == "same"
    assert by_q["disk logs"].before == 1 and by_q["disk logs"].after == 1
    wb = by_q["warehouse backfill"]
    # Split, the backfill section is a short chunk of its own and competes well; whole,
    # the same words are diluted in a long chunk and the other document wins.
    assert wb.before is not None and wb.after is not None and wb.after >= wb.before
    assert wb.chunk_after == 0
    # Nothing was written, and the temp table is gone.
    assert svc.statistics() == before_db
    assert svc.chunks(doc.id)[0].reason != "whole file"


def test_default_queries_are_the_recent_searches(make_service: Any, tree: Any) -> None:
    tree.write("runbook.md", LONG)
    svc = make_service()
    svc.ingest(roots_for_path(tree.projects))
    doc = svc.locate("-home-dev-proj", "runbook.md")
    assert doc is not None
    assert svc.preview_search_effect(doc.id, ChunkerConfig()) == []
    svc.remember_search("backfill partitions", "hybrid", "tui")
    effects = svc.preview_search_effect(doc.id, ChunkerConfig.from_dict({"strategy": "whole"}))
    assert [e.query for e in effects] == ["backfill partitions"]
    assert effects[0].before == effects[0].after == 1
