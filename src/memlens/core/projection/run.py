"""A projection run: stage 1 of every queued document in batches, then stage 2 in
slices, with newly queued documents' stage 1 before each slice; a full disk stops it
and puts what is left back in the queue."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import apsw

from memlens.core.projection.queue import (
    claim,
    claim_would_find,
    describe_error,
    process_owner,
    release_claims,
)
from memlens.core.projection.reports import DISK_FULL, ProjectionOutcome, ProjectionReport, VectorReport
from memlens.core.projection.swap import PROJECT_TXN_DOCS, batches, project_batch
from memlens.core.projection.vectors import MAX_VECTORS_PER_DOCUMENT, VECTOR_SLICE_TEXTS, embed_vectors
from memlens.core.store.db import scalar

if TYPE_CHECKING:
    from memlens.core.embedders.registry import Embedder

Clock = Callable[[], float]


def project_pending(conn: apsw.Connection, embedder: Embedder, now: Clock, *,
                    owner: str | None = None, document_ids: Sequence[int] | None = None,
                    force: bool = False, retry_base: float = 5.0, retry_cap: float = 3600.0,
                    on_progress: Callable[[ProjectionOutcome], None] | None = None,
                    batch: int = PROJECT_TXN_DOCS, vectors: bool = True,
                    cap: int = MAX_VECTORS_PER_DOCUMENT,
                    on_slice: Callable[[VectorReport], None] | None = None,
                    slice_texts: int = VECTOR_SLICE_TEXTS,
                    stop: Callable[[], bool] | None = None,
                    stage_one: bool = True) -> ProjectionReport:
    """Project every document that needs it (see :func:`claim`): stage 1 (nodes, FTS
    rows, cached vectors) in batches until none is left, then, with ``vectors``, stage 2
    (:func:`embed_vectors`, of every waiting document, or only of ``document_ids``).
    Before each stage-2 slice, documents queued meanwhile get their stage 1 first.
    Without ``stage_one`` only stage 2 runs, with no stage 1 before or between its slices:
    the caller runs stage 1 on another thread (the watcher's loop; two threads of one
    process share a claim owner, so only one of them may claim).

    A (document, revision) pair is attempted at most once per call, so a document that
    keeps failing cannot loop; it waits for its back-off instead.

    A full disk stops the run (``report.stopped``): the documents not yet projected go
    back to the queue, and what was searchable stays searchable (each swap is atomic).
    """
    owner = owner or process_owner()
    report = ProjectionReport()
    attempted: set[tuple[int, int]] = set()
    if stage_one and scalar(conn, "SELECT 1 FROM memory_documents WHERE projection_status IN"
              " ('failed','stale') AND projection_error LIKE ? LIMIT 1", (DISK_FULL + "%",)):
        release_claims(conn, None)  # an earlier run hit a full disk: no back-off for that
    if stage_one:
        _stage_one(conn, embedder, now, owner, report, attempted, document_ids, force,
                   retry_base, retry_cap, on_progress, batch, cap)
    if not vectors or report.stopped is not None:
        return report

    def between() -> None:  # newly queued documents become searchable before more vectors
        if report.stopped is None and claim_would_find(conn, now(), document_ids):
            _stage_one(conn, embedder, now, owner, report, attempted, document_ids, False,
                       retry_base, retry_cap, on_progress, batch, cap)

    report.vectors = embed_vectors(conn, embedder, now, document_ids=document_ids,
                                   force=force, retry_base=retry_base, retry_cap=retry_cap,
                                   slice_texts=slice_texts,
                                   between=between if stage_one else None,
                                   on_slice=on_slice,
                                   stop=lambda: report.stopped is not None or bool(stop and stop()))
    if report.vectors.error and report.vectors.error.startswith(DISK_FULL):
        _reclaim_wal(conn)
        report.stopped = _stopped(report.vectors.error)
    return report


def _stage_one(conn: apsw.Connection, embedder: Embedder, now: Clock, owner: str,
               report: ProjectionReport, attempted: set[tuple[int, int]],
               document_ids: Sequence[int] | None, force: bool, retry_base: float,
               retry_cap: float, on_progress: Callable[[ProjectionOutcome], None] | None,
               batch: int, cap: int) -> None:
    while report.stopped is None:
        try:
            claimed = claim(conn, now(), owner, document_ids=document_ids, force=force,
                            limit=batch, exclude=attempted)
        except apsw.FullError as exc:
            report.stopped = _stopped(describe_error(exc))
            break
        if not claimed:
            break
        attempted.update(claimed)
        for part in batches(conn, claimed):
            outcomes = project_batch(conn, part, embedder, now, owner, retry_base, retry_cap,
                                     cap)
            for o in outcomes:
                report.outcomes.append(o)
                if on_progress:
                    on_progress(o)
            full = next((o.error for o in outcomes if o.disk_full and o.error), None)
            if full is not None:
                _reclaim_wal(conn)
                release_claims(conn, owner)
                report.stopped = _stopped(full)
                break


def _reclaim_wal(conn: apsw.Connection) -> None:
    """Give back the disk space a rolled-back batch left in the WAL (its frames are
    garbage), so the run that follows freed space can write; best effort."""
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except apsw.Error:
        pass


def _stopped(error: str) -> str:
    return (f"disk full ({error.split(';')[0].split(' (recording')[0]}): projection stopped; "
            "free space and run `memlens project` again (what was searchable stays searchable)")
