"""The door's flows (issue 41): start-up, rechunk, after-change and retry exist once
(:mod:`memlens.core.flows`), report typed progress events in order, and stop when
``cancelled()`` says so, leaving the rest queued for the next flow. Real service,
real SQLite file."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memlens.core.ingest.sources import roots_for_path
from memlens.core.service import MemoryService
from memlens.core.types import (
    BatchProjected,
    DocumentProjected,
    FileChange,
    FileRead,
    IngestDone,
    ProgressEvent,
    Rechunked,
    RowsChanged,
    VectorSlice,
)
from tests.conftest import MemoryTree

NOTES = {"a.md": "# Alpha\n\nThe walrus keeps its tusks polished.\n",
         "b.md": "# Beta\n\nDeploys go through the staging gate.\n",
         "c.md": "# Gamma\n\nThe lemur sleeps at noon.\n"}


def _service(make_service: Callable[..., Any], tree: MemoryTree) -> MemoryService:
    for name, text in NOTES.items():
        tree.write(name, text)
    svc = make_service()
    assert isinstance(svc, MemoryService)
    return svc


def _kinds(events: list[ProgressEvent]) -> list[str]:
    return [type(e).__name__ for e in events]


def test_start_up_reports_files_batches_and_vector_slices(
        make_service: Callable[..., Any], tree: MemoryTree) -> None:
    svc = _service(make_service, tree)
    tree.write("bad.md", b"\xff\xfe not text \x00")
    events: list[ProgressEvent] = []
    out = svc.start_up(svc.resolve_roots([tree.projects]), batch=2, progress=events.append)
    kinds = _kinds(events)
    # every file read first, then the ingest's end, then the projection
    assert kinds[:5] == ["FileRead"] * 4 + ["IngestDone"]
    reads = [e for e in events if isinstance(e, FileRead)]
    assert [e.done for e in reads] == [1, 2, 3, 4]
    assert [e.change.path for e in reads if e.change.kind == "failed"] == ["bad.md"]
    done = events[4]
    assert isinstance(done, IngestDone)
    assert [c.kind for c in done.report.changes].count("create") == 3
    # two stage-1 batches (2 + 1 documents), each announced as processing, then done
    assert kinds[5:] == (["RowsChanged", "DocumentProjected", "DocumentProjected", "RowsChanged",
                          "BatchProjected", "RowsChanged", "DocumentProjected", "RowsChanged",
                          "BatchProjected"]
                         + ["VectorSlice"] * kinds.count("VectorSlice") + ["RowsChanged"])
    ids = sorted(d.id for d in svc.list_documents())
    rows = [e for e in events if isinstance(e, RowsChanged)]
    assert [(r.document_ids, r.processing) for r in rows[:4]] == [
        (tuple(ids[:2]), True), (tuple(ids[:2]), False), (tuple(ids[2:]), True),
        (tuple(ids[2:]), False)]
    projected = [e for e in events if isinstance(e, DocumentProjected)]
    assert [(e.done, e.total, e.outcome.result) for e in projected] == [
        (1, 3, "ready"), (2, 3, "ready"), (3, 3, "ready")]
    assert [e.document_ids for e in events if isinstance(e, BatchProjected)] == [
        tuple(ids[:2]), tuple(ids[2:])]
    slices = [e for e in events if isinstance(e, VectorSlice)]
    assert slices and all(s.document_ids == tuple(ids) for s in slices)
    assert slices[-1].written + slices[-1].cached == slices[-1].total == 3
    assert rows[-1] == RowsChanged(tuple(ids))  # the rows after their vectors
    assert out.projection is not None and out.projection.count("ready") == 3
    assert out.queue.get("ready") == 3 and svc.vectors_waiting() == 0


def test_start_up_stops_when_cancelled_and_the_next_finishes(
        make_service: Callable[..., Any], tree: MemoryTree) -> None:
    svc = _service(make_service, tree)
    events: list[ProgressEvent] = []
    out = svc.start_up(svc.resolve_roots([tree.projects]), batch=2, progress=events.append,
                       cancelled=lambda: any(isinstance(e, BatchProjected) for e in events))
    assert _kinds(events).count("BatchProjected") == 1
    assert not any(isinstance(e, VectorSlice) for e in events)
    assert out.projection is not None and out.projection.count("ready") == 2
    assert len(svc.queued_document_ids()) == 1  # the rest waits, nothing half done
    assert svc.vectors_waiting() == 2
    again = svc.start_up(svc.resolve_roots([tree.projects]))
    assert again.projection is not None and again.projection.count("ready") == 1
    assert svc.queued_document_ids() == [] and svc.vectors_waiting() == 0


def test_rechunk_projects_the_whole_queue(make_service: Callable[..., Any],
                                          tree: MemoryTree) -> None:
    """Rechunk projects the queue, not only what it changed: a document an earlier run
    left queued is finished too (the choice made once for the CLI and the TUI)."""
    svc = _service(make_service, tree)
    svc.start_up(svc.resolve_roots([tree.projects]))
    tree.write("late.md", "# Late\n\nA note ingested without projection.\n")
    svc.ingest(roots_for_path(tree.projects), project=False)
    late = svc.locate(None, "late.md")
    assert late is not None and svc.queued_document_ids() == [late.id]
    a = svc.locate(None, "a.md")
    assert a is not None
    events: list[ProgressEvent] = []
    cfg = svc.chunker_config_with({"strategy": "whole"})
    out = svc.rechunk_and_project([a.id], cfg, progress=events.append)
    assert out.changed == (a.id,)
    assert events[0] == Rechunked((a.id,), 1, 1)
    projected = {e.outcome.document_id for e in events if isinstance(e, DocumentProjected)}
    assert projected == {a.id, late.id}
    assert out.projection is not None and out.projection.count("ready") == 2
    assert svc.queued_document_ids() == [] and svc.vectors_waiting() == 0


def test_rechunk_cancelled_between_batches(make_service: Callable[..., Any],
                                           tree: MemoryTree) -> None:
    for i in range(101):  # one more than a rechunk batch
        tree.write(f"n{i:03}.md", f"# Note {i}\n\nbody {i}\n")
    svc = make_service()
    svc.ingest(roots_for_path(tree.projects), project=False)
    events: list[ProgressEvent] = []
    cfg = svc.chunker_config_with({"strategy": "whole"})
    out = svc.rechunk_and_project(None, cfg, progress=events.append,
                                  cancelled=lambda: bool(events))
    assert [(len(e.document_ids), e.done, e.total) for e in events
            if isinstance(e, Rechunked)] == [(100, 100, 101)]
    assert len(out.changed) == 100 and out.considered == 101
    assert out.projection is None  # stopped while writing: nothing projected
    assert not any(isinstance(e, DocumentProjected) for e in events)
    assert len(svc.queued_document_ids()) == 101  # the next flow finishes them
    rest = svc.rechunk_and_project(None, cfg)
    assert len(rest.changed) == 1 and rest.projection is not None
    assert rest.projection.count("ready") == 101


def test_reset_chunker_goes_through_the_same_projection(
        make_service: Callable[..., Any], tree: MemoryTree) -> None:
    svc = _service(make_service, tree)
    svc.start_up(svc.resolve_roots([tree.projects]))
    a = svc.locate(None, "a.md")
    assert a is not None
    svc.rechunk_and_project([a.id], svc.chunker_config_with({"strategy": "whole"}))
    events: list[ProgressEvent] = []
    out = svc.reset_chunker(a.id, progress=events.append, cancelled=lambda: False)
    assert out.changed == (a.id,)
    assert events[0] == Rechunked((a.id,), 1, 1)
    assert [e.outcome.document_id for e in events if isinstance(e, DocumentProjected)] == [a.id]
    stopped: list[ProgressEvent] = []
    svc.rechunk_and_project([a.id], svc.chunker_config_with({"strategy": "whole"}))
    out = svc.reset_chunker(a.id, progress=stopped.append, cancelled=lambda: True)
    assert out.projection is not None and out.projection.outcomes == []
    assert _kinds(stopped) == ["Rechunked"] and svc.queued_document_ids() == [a.id]


def test_after_change_projects_what_a_caller_ingested(
        make_service: Callable[..., Any], tree: MemoryTree) -> None:
    svc = _service(make_service, tree)
    roots = svc.resolve_roots([tree.projects])
    svc.start_up(roots)
    unchanged: list[FileChange] = []
    svc.ingest(roots, project=False, on_change=unchanged.append)
    quiet: list[ProgressEvent] = []
    assert svc.after_change(unchanged, progress=quiet.append) is None and quiet == []
    tree.write("b.md", "# Beta\n\nDeploys now go through two gates.\n")
    changes: list[FileChange] = []
    svc.ingest(roots, project=False, on_change=changes.append)
    b = svc.locate(None, "b.md")
    assert b is not None and [c.kind for c in changes if c.kind != "unchanged"] == ["update"]
    events: list[ProgressEvent] = []
    rep = svc.after_change(changes, progress=events.append)
    assert rep is not None and [(o.document_id, o.result) for o in rep.outcomes] == [
        (b.id, "ready")]
    assert _kinds(events)[:4] == ["RowsChanged", "DocumentProjected", "RowsChanged",
                                  "BatchProjected"]
    assert any(isinstance(e, VectorSlice) for e in events)
    assert [h.path for h in svc.search("two gates", mode="lexical").hits] == ["b.md"]


def test_after_change_cancelled_leaves_the_queue(make_service: Callable[..., Any],
                                                 tree: MemoryTree) -> None:
    svc = _service(make_service, tree)
    roots = svc.resolve_roots([tree.projects])
    changes: list[FileChange] = []
    svc.ingest(roots, project=False, on_change=changes.append)
    events: list[ProgressEvent] = []
    rep = svc.after_change(changes, progress=events.append, cancelled=lambda: True)
    assert rep is not None and rep.outcomes == [] and events == []
    assert len(svc.queued_document_ids()) == 3
    # a reconcile projects the queue even when its own pass changed nothing
    rep = svc.after_change([], reconcile=True)
    assert rep is not None and rep.count("ready") == 3


def test_retry_reports_the_row_before_and_after(make_service: Callable[..., Any],
                                                tree: MemoryTree) -> None:
    svc = _service(make_service, tree)
    svc.start_up(svc.resolve_roots([tree.projects]))
    a = svc.locate(None, "a.md")
    assert a is not None
    svc.rechunk([a.id], svc.chunker_config_with({"strategy": "whole"}))  # queued again
    events: list[ProgressEvent] = []
    rep = svc.retry(a.id, progress=events.append)
    assert events == [RowsChanged((a.id,), processing=True), RowsChanged((a.id,))]
    assert [o.document_id for o in rep.outcomes] == [a.id]
