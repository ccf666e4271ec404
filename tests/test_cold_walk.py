"""A cold walk stores files in batches and makes each batch searchable while the rest is
read (issue 43): one write transaction per batch, a savepoint per file, stage 1 after
each batch. Real service, real SQLite file; the batch size is made small so a few files
are several batches (no wall-clock assert: the events say what happened in which order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import apsw
import pytest

from memlens.core import faults
from memlens.core.ingest import pipeline
from memlens.core.service import MemoryService
from memlens.core.types import (
    BatchProjected,
    DocumentProjected,
    FileRead,
    IngestDone,
    ProgressEvent,
)
from tests.conftest import MemoryTree

FILES = 7


def _tree(tree: MemoryTree) -> None:
    for i in range(FILES):
        tree.write(f"n{i}.md", f"# Note {i}\n\nThe walk keeps token zqwalk{i} here.\n")


def _hits(svc: MemoryService, token: str) -> list[str]:
    return [h.path for h in svc.search(token, mode="lexical").hits]


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "BATCH_FILES", 2)


@pytest.fixture
def fault() -> Iterator[Callable[[Callable[[str], None]], None]]:
    def install(hook: Callable[[str], None]) -> None:
        faults.set_hook(hook)

    yield install
    faults.set_hook(None)


def test_first_batch_is_searchable_before_the_walk_ends(
        make_service: Callable[..., Any], tree: MemoryTree, small_batches: None) -> None:
    _tree(tree)
    svc = make_service()
    seen: list[dict[str, Any]] = []
    events: list[ProgressEvent] = []

    def progress(ev: ProgressEvent) -> None:
        events.append(ev)
        if isinstance(ev, BatchProjected) and not seen:
            # on the flow's thread, between two batches of the walk
            seen.append({"read": sum(isinstance(e, FileRead) for e in events),
                         "first": _hits(svc, "zqwalk0"),
                         "last": _hits(svc, f"zqwalk{FILES - 1}")})

    out = svc.start_up(svc.resolve_roots([tree.projects]), progress=progress)
    kinds = [type(e).__name__ for e in events]
    assert seen, kinds
    first = seen[0]
    # the first batch was searchable by its words ...
    assert first["first"] == ["n0.md"]
    # ... while the walk had not stored the last file yet
    assert first["last"] == []
    assert first["read"] < FILES
    assert kinds.index("BatchProjected") < kinds.index("IngestDone")
    # and the walk went on to the end: every file stored and searchable
    assert [c.kind for c in out.report.changes].count("create") == FILES
    assert all(_hits(svc, f"zqwalk{i}") == [f"n{i}.md"] for i in range(FILES))
    assert out.projection is not None
    assert sorted(o.document_id for o in out.projection.outcomes if o.result == "ready") \
        == sorted(d.id for d in svc.list_documents())
    done = next(e for e in events if isinstance(e, IngestDone))
    assert len(done.report.changes) == FILES
    # the flow counts its projected documents on across the walk's batches (the TUI
    # shows "projecting n of total" from these)
    projected = [e for e in events if isinstance(e, DocumentProjected)]
    assert [e.done for e in projected] == list(range(1, FILES + 1))
    assert projected[-1].total == FILES


def test_a_batch_is_one_write_transaction(
        make_service: Callable[..., Any], tree: MemoryTree) -> None:
    """All the files of a small walk are stored with one commit (and retention adds none)."""
    _tree(tree)
    svc = make_service()
    conn = svc.conn()
    roots = svc.resolve_roots([tree.projects])
    # the first ingest of a database records its redaction fingerprint (its own writes,
    # issue 44): done here, before counting, by a run that stores no folder
    svc.ingest(roots, project=False, only_paths={})
    commits = [0]

    def count() -> bool:
        commits[0] += 1
        return False  # let it commit

    conn.set_commit_hook(count)
    out = svc.ingest(roots, project=False)
    conn.set_commit_hook(None)
    assert [c.kind for c in out.report.changes].count("create") == FILES
    assert commits[0] == 1


def _fail_second_file(conn: apsw.Connection, *, whole: bool) -> Callable[[str], None]:
    """A hook that fails the second file's chunk write; with ``whole``, the way SQLite
    fails after an I/O error: the whole transaction rolled back, then the error."""
    n = [0]

    def hook(step: str) -> None:
        if step != "store.chunks":
            return
        n[0] += 1
        if n[0] == 2:
            if whole:
                conn.execute("ROLLBACK")
            raise apsw.IOError("injected: disk I/O error")

    return hook


@pytest.mark.parametrize("whole", [False, True], ids=["savepoint", "whole-batch-rolled-back"])
def test_a_failing_file_loses_nothing_else_of_its_batch(
        make_service: Callable[..., Any], tree: MemoryTree,
        fault: Callable[[Callable[[str], None]], None], whole: bool) -> None:
    _tree(tree)
    svc = make_service()
    fault(_fail_second_file(svc.conn(), whole=whole))
    out = svc.ingest(svc.resolve_roots([tree.projects]), project=False)
    faults.set_hook(None)
    kinds = sorted(c.kind for c in out.report.changes)
    assert kinds == ["create"] * (FILES - 1) + ["failed"]
    failed = next(c for c in out.report.changes if c.kind == "failed")
    assert failed.error is not None and "database error" in failed.error
    stored = {d.path for d in svc.list_documents()}
    assert stored == {f"n{i}.md" for i in range(FILES)} - {failed.path}
    assert svc.doctor()[1] == []  # no problem found
    # the next run stores the file that failed, and only that one
    again = svc.ingest(svc.resolve_roots([tree.projects]))
    assert sorted(c.kind for c in again.report.changes) == ["create"] + ["unchanged"] * (FILES - 1)
    assert all(_hits(svc, f"zqwalk{i}") == [f"n{i}.md"] for i in range(FILES))
