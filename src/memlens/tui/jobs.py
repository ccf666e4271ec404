"""What the app's thread workers do, as plain functions.

Each function runs in a worker thread, reads or writes through the
:class:`~memlens.core.service.MemoryService` it is given, and reports only by
posting messages from :mod:`memlens.tui.messages` (``post``). ``cancelled``
tells whether the worker was cancelled meanwhile. Nothing here touches a widget.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from textual.message import Message

from memlens.core.service import FilterIndex, MemoryService

if TYPE_CHECKING:  # annotations only: resolving ``WatchEvent`` or ``FileChange`` loads the
    # watcher, ingest, projection and redaction modules (~60 ms before the first frame).
    from memlens.core.types import (
        ChunkerConfig,
        DocumentSummary,
        FileChange,
        IndexWarning,
        MemoryRoot,
        ProjectionOutcome,
        SearchHit,
        VectorReport,
        WatchEvent,
    )

from memlens.tui.messages import (
    DetailLoaded,
    DetailMissing,
    DetailView,
    DocumentRowsChanged,
    FilesUnreadable,
    JobFinished,
    Progress,
    RechunkChoiceLoaded,
    RetryDone,
    WatchStatus,
)

Post = Callable[[Message], Any]
Cancelled = Callable[[], bool]

PROJECT_BATCH = 50
ROW_FLUSH_SECONDS = 0.1
RECHUNK_BATCH = 100


def filtered_documents(svc: MemoryService, idx: FilterIndex, text: str,
                       ) -> tuple[list[DocumentSummary], dict[int, float]]:
    """The filter's matches with fresh rows, grouped by repository (best first)."""
    found = idx.filter(text)
    scores = {d.id: s for d, s in found}
    # Fresh rows: the cached index may hold old statuses.
    fresh = {d.id: d for d in svc.document_summaries(list(scores))}
    docs = [fresh[d.id] for d, _ in found if d.id in fresh]
    # Group by repository, best repository first, best document first within.
    order: dict[str, int] = {}
    for i, d in enumerate(docs):
        order.setdefault(d.repository, i)
    docs.sort(key=lambda d: (order[d.repository], -scores.get(d.id, 0)))
    return docs, scores


def index_warnings(svc: MemoryService, docs: Sequence[DocumentSummary],
                   ) -> dict[int, list[IndexWarning]]:
    """Warnings of every live index file (``MEMORY.md`` and the like) in ``docs``."""
    names = set(svc.chunker_config().index_names)
    warnings: dict[int, list[IndexWarning]] = {}
    for d in docs:
        if not d.tombstoned and posixpath.basename(d.path) in names:
            w = svc.index_warnings(d.id)
            if w:
                warnings[d.id] = w
    return warnings


def read_detail(svc: MemoryService, doc_id: int, now: float, select_ordinal: int | None,
                hit: SearchHit | None, post: Post, cancelled: Cancelled) -> None:
    """Everything the detail panes show for one document."""
    doc = svc.detail(doc_id)
    if doc is None:
        post(DetailMissing(doc_id))
        return
    chunks = svc.chunks(doc_id)
    nodes = svc.chunk_nodes(doc_id) if doc.projected_current else {}
    history = svc.revisions(doc_id)
    warnings = svc.index_warnings(doc_id) if not doc.tombstoned else []
    summary = next(iter(svc.document_summaries([doc_id])), None)
    cur = next((r for r in history if r.id == doc.current_revision_id), None)
    cfg = cur.chunker.config if cur is not None else None
    max_tokens = cfg.max_tokens if cfg is not None and cfg.max_tokens is not None \
        else svc.chunker_config().max_tokens
    if cancelled():
        return
    hit_ordinal = hit.ordinal if hit is not None else None
    post(DetailLoaded(DetailView(
        doc_id=doc_id, document=doc, chunks=chunks, nodes=nodes, history=history,
        warnings=warnings, max_tokens=max_tokens, now=now,
        summary=summary, select_ordinal=hit_ordinal if hit is not None else select_ordinal,
        hit_ordinal=hit_ordinal)))


def rechunk_choice(svc: MemoryService, doc_id: int, label: str, live_count: int,
                   all_documents: bool, post: Post) -> None:
    """A document's effective chunker settings and their origin, for the rechunk dialog."""
    try:
        eff = svc.effective_chunker(doc_id)
        base, origin = eff.config, eff.origin
    except LookupError:
        base, origin = svc.chunker_config(), "settings"
    post(RechunkChoiceLoaded(doc_id, label, base, origin, live_count, all_documents))


def project_ids(svc: MemoryService, ids: Sequence[int], job: str, post: Post,
                cancelled: Cancelled, *, force: bool = False,
                all_vectors: bool = False) -> tuple[int, int]:
    """Project documents in batches, posting row updates; returns (ready, not ready).

    Two stages (issue 37): every batch is made searchable by its words first (stage 1),
    then the vectors follow in short slices (stage 2: of these documents, or with
    ``all_vectors`` of every document that waits for them), with progress."""
    total = len(ids)
    done = ready = bad = 0
    pending: list[int] = []
    last = time.monotonic()

    def progress(o: ProjectionOutcome) -> None:
        nonlocal done, ready, bad, last
        done += 1
        if o.result == "ready":
            ready += 1
        elif o.result in ("failed", "stale"):
            bad += 1
        pending.append(o.document_id)
        post(Progress(job, "projecting", done, total))
        if time.monotonic() - last >= ROW_FLUSH_SECONDS:
            last = time.monotonic()
            post(DocumentRowsChanged(svc.document_summaries(pending)))
            pending.clear()

    for start in range(0, total, PROJECT_BATCH):
        if cancelled():
            break
        batch = list(ids[start:start + PROJECT_BATCH])
        post(DocumentRowsChanged(svc.document_summaries(batch), processing=True))
        pending.clear()
        svc.project(batch, force=force, on_progress=progress, vectors=False)
        # Every row of the batch leaves "processing", projected or not (back-off).
        post(DocumentRowsChanged(svc.document_summaries(batch)))
    if not cancelled():
        project_vectors(svc, None if all_vectors else ids, job, post, cancelled, force=force)
    return ready, bad


def project_vectors(svc: MemoryService, ids: Sequence[int] | None, job: str, post: Post,
                    cancelled: Cancelled, *, force: bool = False) -> None:
    """Stage 2 of the projection in the worker: vectors in short slices (the embedder
    releases the GIL while it runs), progress after each slice, the rows refreshed as
    their documents complete; ``cancelled`` ends it after the current slice."""
    if not svc.vectors_waiting():
        return
    docs = svc.list_documents() if ids is None else svc.document_summaries(ids)
    left = {d.id for d in docs if d.vectors_done < d.vectors_total}
    total = sum(d.vectors_total - d.vectors_done for d in docs if d.id in left)
    last = time.monotonic()

    def on_slice(rep: VectorReport) -> None:
        nonlocal last
        post(Progress(job, "vectors", min(rep.written + rep.cached, total) if total else 0,
                      total or None))
        if time.monotonic() - last >= ROW_FLUSH_SECONDS:
            last = time.monotonic()
            post(DocumentRowsChanged(svc.document_summaries(sorted(left))))

    svc.project(ids, force=force, on_slice=on_slice, stop=cancelled)
    post(DocumentRowsChanged(svc.document_summaries(sorted(left))))


def ingest_durably(svc: MemoryService, roots: Sequence[MemoryRoot], post: Post) -> None:
    """Ingest durably (no projection), reporting each file read and the failures."""
    read = 0
    failed: list[str] = []
    unreadable: list[tuple[str, str, str]] = []

    def on_change(ch: FileChange) -> None:
        nonlocal read
        read += 1
        if ch.kind == "failed":
            failed.append(f"{ch.repository}/{ch.path}: {ch.error}")
            unreadable.append((ch.repository, ch.path, ch.error or "could not be read"))
        post(Progress("ingest", "reading", read, None, f"{ch.repository}/{ch.path}"))

    out = svc.ingest(roots, project=False, on_change=on_change)
    counts = out.report.counts()
    post(JobFinished(
        "ingest", f"{read} files: {counts['created']} new, {counts['updated']} updated, "
        f"{counts['deleted']} deleted, {len(failed)} failed", ok=not failed))
    if unreadable:
        post(FilesUnreadable(unreadable))
    if failed:
        more = f"\n… {len(failed) - 5} more" if len(failed) > 5 else ""
        post(JobFinished("ingest-errors", "\n".join(failed[:5]) + more, ok=False, reload=False))


def project_queue(svc: MemoryService, post: Post, cancelled: Cancelled) -> None:
    """Project what the queue holds now, then report."""
    ready, bad = project_ids(svc, svc.queued_document_ids(), "startup", post, cancelled,
                             all_vectors=True)
    post(JobFinished("startup", f"projected {ready} ready, {bad} failed", ok=not bad))


def retry(svc: MemoryService, doc_id: int, post: Post) -> None:
    """Retry one document's projection now (ignoring back-off)."""
    post(DocumentRowsChanged(svc.document_summaries([doc_id]), processing=True))
    rep = svc.retry(doc_id)
    post(DocumentRowsChanged(svc.document_summaries([doc_id])))
    o = rep.outcomes[0] if rep.outcomes else None
    post(RetryDone(doc_id, o.result if o else "unchanged", o.error if o else None))


def rechunk(svc: MemoryService, ids: Sequence[int], config: ChunkerConfig, post: Post,
            cancelled: Cancelled) -> list[int] | None:
    """Write rechunk revisions in batches; the ids that changed (None if cancelled)."""
    changed: list[int] = []
    for start in range(0, len(ids), RECHUNK_BATCH):
        if cancelled():
            return None
        part = svc.rechunk(ids[start:start + RECHUNK_BATCH], config)
        changed += part
        if part:
            post(DocumentRowsChanged(svc.document_summaries(part)))
        post(Progress("rechunk", "rechunking", start + len(ids[start:start + RECHUNK_BATCH]),
                      len(ids)))
    return changed


def rechunk_summary(total: int, changed: int, ready: int, bad: int) -> JobFinished:
    """The message ending a rechunk run."""
    msg = f"rechunked {changed}: {ready} ready, {bad} failed"
    if total - changed:
        msg += f"; {total - changed} already used this config"
    return JobFinished("rechunk", msg, ok=not bad, reload=False)


def _watch_problem(ev: WatchEvent) -> str | None:
    """The line a watcher event adds to the events pane as a problem, if it is one."""
    if ev.kind == "error":
        return ev.message
    if ev.kind == "change" and ev.change_kind == "failed":
        return ev.message  # "repository/path: <the reason>"
    if ev.kind == "projection" and ev.result in ("failed", "stale"):
        return f"{ev.repository}/{ev.path}: projection {ev.message}"
    return None


def watch_status(ev: WatchEvent, state: str, queue: int) -> WatchStatus:
    """A watcher event as the status bar shows it."""
    last = ev.message or ""
    if ev.kind == "change" and ev.path:
        last = f"{ev.change_kind or 'change'} {ev.path}"
    elif ev.kind == "projection" and ev.path:
        last = f"{ev.result or 'projected'} {ev.path}"
    file = None
    if ev.kind == "change" and ev.repository and ev.path:
        reason = (ev.error or ev.message) if ev.change_kind == "failed" else None
        file = (ev.repository, ev.path, reason)
    return WatchStatus(
        state, last=f"{time.strftime('%H:%M:%S', time.gmtime(ev.time))} {last}".strip(),
        queue=queue, error=_watch_problem(ev), file=file,
        changed=[1] if ev.kind in ("change", "projection", "reconcile") else [])
