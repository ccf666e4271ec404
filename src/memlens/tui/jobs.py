"""What the app's thread workers do, as plain functions.

Each function runs in a worker thread, reads or writes through the
:class:`~memlens.core.service.MemoryService` it is given, and reports only by
posting messages from :mod:`memlens.tui.messages` (``post``). ``cancelled``
tells whether the worker was cancelled meanwhile. Nothing here touches a widget.

The writes are the door's flows (start-up, rechunk, retry: :mod:`memlens.core.flows`);
:class:`FlowProgress` turns their progress events into the app's messages.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from textual.message import Message

from memlens.core.service import FilterIndex, MemoryService
from memlens.core.types import (
    DocumentProjected,
    FileRead,
    IngestDone,
    ProgressEvent,
    Rechunked,
    RowsChanged,
    VectorSlice,
)

if TYPE_CHECKING:  # annotations only: resolving ``WatchEvent`` or ``IngestReport`` loads the
    # watcher, ingest, projection and redaction modules (~60 ms before the first frame).
    from memlens.core.types import (
        DocumentSummary,
        IndexWarning,
        IngestReport,
        ProjectionReport,
        SearchHit,
    )
    from memlens.watch.events import WatchEvent

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
from memlens.tui.screens.events import ProblemKey

Post = Callable[[Message], Any]
Cancelled = Callable[[], bool]

ROW_FLUSH_SECONDS = 0.1
"""How often a long flow refreshes the rows it has projected meanwhile."""


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


class FlowProgress:
    """The door's progress events of one flow (start-up, rechunk, retry) as the app's
    messages. Called on the worker thread that runs the flow; it reads the rows it
    posts through the same service, and throttles the row refreshes of a long run
    (:data:`ROW_FLUSH_SECONDS`). Counts what it saw: ``ready`` and ``bad`` documents.

    Args:
        svc: The worker's service.
        job: The job name of the projection's progress (``startup``, ``rechunk``…).
        post: Posts a message to the app.
        on_written: Called once the flow's writes are stored (the ingest or the
            rechunk revisions), before the projection: the filter candidates are stale.
    """

    def __init__(self, svc: MemoryService, job: str, post: Post,
                 on_written: Callable[[], None] | None = None) -> None:
        self.svc, self.job, self.post, self.on_written = svc, job, post, on_written
        self.ready = self.bad = self.read = 0
        self.failed: list[str] = []
        self.unreadable: list[tuple[str, str, str]] = []
        self._pending: list[int] = []
        self._last = time.monotonic()

    def _rows(self, ids: Sequence[int], processing: bool = False) -> None:
        self.post(DocumentRowsChanged(self.svc.document_summaries(ids), processing=processing))

    def _due(self) -> bool:
        if time.monotonic() - self._last < ROW_FLUSH_SECONDS:
            return False
        self._last = time.monotonic()
        return True

    def __call__(self, ev: ProgressEvent) -> None:
        """Post what ``ev`` means for the app."""
        if isinstance(ev, FileRead):
            ch = ev.change
            self.read = ev.done
            if ch.kind == "failed":
                self.failed.append(f"{ch.repository}/{ch.path}: {ch.error}")
                self.unreadable.append((ch.repository, ch.path, ch.error or "could not be read"))
            self.post(Progress("ingest", "reading", ev.done, None, f"{ch.repository}/{ch.path}"))
        elif isinstance(ev, IngestDone):
            self._ingested(ev.report)
        elif isinstance(ev, Rechunked):
            if ev.document_ids:
                self._rows(ev.document_ids)
            self.post(Progress("rechunk", "rechunking", ev.done, ev.total))
            if ev.done >= ev.total and self.on_written is not None:
                self.on_written()
        elif isinstance(ev, RowsChanged):
            self._rows(ev.document_ids, ev.processing)
            if ev.processing:
                self._pending.clear()
        elif isinstance(ev, DocumentProjected):
            o = ev.outcome
            if o.result == "ready":
                self.ready += 1
            elif o.result in ("failed", "stale"):
                self.bad += 1
            self._pending.append(o.document_id)
            self.post(Progress(self.job, "projecting", ev.done, ev.total))
            if self._due():
                self._rows(self._pending)
                self._pending.clear()
        elif isinstance(ev, VectorSlice):
            total = ev.total
            self.post(Progress(self.job, "vectors",
                               min(ev.written + ev.cached, total) if total else 0, total or None))
            if self._due():
                self._rows(ev.document_ids)

    def _ingested(self, report: IngestReport) -> None:
        """The ingest's summary, its unreadable files and its errors (five at most)."""
        # Counted from the changes' kinds (typed attributes, not a dict of counts).
        kinds = [c.kind for c in report.changes]
        failed = self.failed
        self.post(JobFinished(
            "ingest", f"{self.read} files: {kinds.count('create')} new, "
            f"{kinds.count('update')} updated, {kinds.count('delete')} deleted, "
            f"{len(failed)} failed", ok=not failed))
        if self.unreadable:
            self.post(FilesUnreadable(self.unreadable))
        if failed:
            more = f"\n… {len(failed) - 5} more" if len(failed) > 5 else ""
            self.post(JobFinished("ingest-errors", "\n".join(failed[:5]) + more, ok=False,
                                  reload=False))
        if self.on_written is not None:
            self.on_written()


def startup_summary(flow: FlowProgress) -> JobFinished:
    """The message ending the start-up job."""
    return JobFinished("startup", f"projected {flow.ready} ready, {flow.bad} failed",
                       ok=not flow.bad)


def retry_done(doc_id: int, rep: ProjectionReport) -> RetryDone:
    """The message ending a retry."""
    o = rep.outcomes[0] if rep.outcomes else None
    return RetryDone(doc_id, o.result if o else "unchanged", o.error if o else None)


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


def _problem_keys(ev: WatchEvent) -> tuple[ProblemKey | None, tuple[ProblemKey, ...]]:
    """What a watcher event's problem is about (it lasts until fixed), and the problems
    the event shows are fixed: a file read (or deleted) fine, a projection ready."""
    if not ev.repository or not ev.path:
        return None, ()
    file: ProblemKey = ("file", ev.repository, ev.path)
    projection: ProblemKey = ("projection", ev.repository, ev.path)
    if ev.kind == "change":
        if ev.change_kind == "failed":
            return file, ()
        return None, (file, projection) if ev.change_kind == "delete" else (file,)
    if ev.kind == "projection":
        if ev.result in ("failed", "stale"):
            return projection, ()
        return None, (projection,)
    return None, ()


def watch_status(ev: WatchEvent, state: str, queue: int) -> WatchStatus:
    """A watcher event as the status bar shows it."""
    last = ev.message or ""
    if ev.kind == "change" and ev.path:
        last = f"{ev.change_kind or 'change'} {ev.path}"
    elif ev.kind == "projection" and ev.path:
        last = f"{ev.result or 'projected'} {ev.path}"
    elif ev.kind == "seen" and ev.path:
        last = f"reading {ev.path}"
    file = None
    if ev.kind == "change" and ev.repository and ev.path:
        reason = (ev.error or ev.message) if ev.change_kind == "failed" else None
        file = (ev.repository, ev.path, reason)
    key, fixed = _problem_keys(ev)
    return WatchStatus(
        state, last=f"{time.strftime('%H:%M:%S', time.gmtime(ev.time))} {last}".strip(),
        queue=queue, error=_watch_problem(ev), file=file,
        problem_key=key, fixed=fixed,
        seen=(ev.repository, ev.path) if ev.kind == "seen" and ev.repository and ev.path
        else None, changed=[1] if ev.kind in ("change", "projection", "reconcile") else [])
