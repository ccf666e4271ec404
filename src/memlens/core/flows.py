"""The write side of :class:`memlens.core.service.MemoryService`: its steps (ingest,
project, rechunk) and the flows built from them, one home each.

The flows — what the TUI, the CLI, the watcher and the benchmark call:

* :meth:`ServiceFlows.start_up` — ingest durably, then project the queue;
* :meth:`ServiceFlows.rechunk_and_project` (and :meth:`ServiceFlows.reset_chunker`) —
  write rechunk revisions, then project the queue;
* :meth:`ServiceFlows.after_change` — what follows a batch a caller ingested (the
  watcher): project the queue;
* :meth:`ServiceFlows.retry` — one document, now, ignoring its back-off.

"Project the queue" is always the same two stages: the embedder change is queued once
(:meth:`~ServiceFlows.mark_embedder_changes`), then every queued document gets its stage
1 (nodes and FTS rows: searchable by words) in batches of :data:`PROJECT_BATCH`, then
stage 2 computes the vectors of every document that waits for them, in short slices.

Each flow takes ``progress`` (called with the typed events of :mod:`memlens.core.types`
— :class:`~memlens.core.types.FileRead`, :class:`~memlens.core.types.RowsChanged`, … —
on the flow's thread, in order) and, where it can stop early, ``cancelled`` (asked
before each batch and after each vector slice; a cancelled flow leaves the rest queued,
to be finished by the next one). Core-internal: the UI imports only
``memlens.core.service``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memlens.core.reads import ServiceReads
from memlens.core.types import (
    BatchProjected,
    Cancelled,
    DocumentProjected,
    FileRead,
    IngestDone,
    IngestOutcome,
    Progress,
    ProgressEvent,
    Rechunked,
    RechunkOutcome,
    RowsChanged,
    VectorSlice,
)

if TYPE_CHECKING:
    from memlens.core.chunking.choice import ChunkerChoice
    from memlens.core.chunking.chunker import ChunkerConfig
    from memlens.core.ingest.pipeline import FileChange
    from memlens.core.ingest.sources import MemoryRoot
    from memlens.core.projection.reports import ProjectionOutcome, ProjectionReport, VectorReport
# The chunker, projection and ingest code are imported in the methods that use them, so
# a one-shot read never loads them (tests/test_imports.py).

PROJECT_BATCH = 50
"""Documents per stage-1 batch of a flow: each batch is searchable before the next."""

RECHUNK_BATCH = 100
"""Documents per rechunk write batch (progress and cancellation between batches)."""


def _emit(progress: Progress | None, event: ProgressEvent) -> None:
    if progress is not None:
        progress(event)


def _never() -> bool:
    return False


class ServiceFlows(ServiceReads):
    """Writes and flows over one database (see :class:`memlens.core.service.MemoryService`)."""

    # -- steps --------------------------------------------------------------------
    def ingest(self, roots: Sequence[MemoryRoot], *, project: bool = True,
               on_change: Callable[[FileChange], None] | None = None,
               only_paths: dict[Path, set[str]] | None = None,
               verify_content: bool = False) -> IngestOutcome:
        """Ingest memory roots durably, then (unless deferred) project pending work
        (:meth:`project`). ``verify_content`` reads files whose size and mtime match
        too and compares their hash (the watcher's periodic reconcile).

        A full disk stops the run (``report.stopped``): what was stored is kept and
        nothing more is attempted, projection included."""
        from memlens.core.ingest.pipeline import IngestReport, ingest_root
        from memlens.core.projection import queue as proj

        conn = self._writable()
        cfg = self.chunker_config()
        key = self.install_key()
        report = IngestReport()
        redone, wiped = self._follow_rule_change()
        if redone:
            report.warnings.append(
                f"the redaction rules changed: {redone} stored document(s) redacted again"
                + (" and their old text wiped from the database" if wiped else
                   "; another process still reads the database, so its old text may stay in"
                   " free pages or the WAL: run `memlens purge` when it is closed")
                + "; every file is read again")
        limits = self.settings.limits  # [limits], where MEMLENS_MAX_* overrides
        for root in roots:
            sel = only_paths.get(root.path) if only_paths is not None else None
            if only_paths is not None and sel is None:
                continue
            part = ingest_root(conn, root, cfg, key, self.clock, only_paths=sel,
                               max_bytes=limits.max_file_bytes,
                               max_chunks=limits.max_chunks_per_file, on_change=on_change,
                               verify_content=verify_content)
            report.changes.extend(part.changes)
            report.warnings.extend(part.warnings)
            if part.stopped:
                report.stopped = part.stopped
                return IngestOutcome(report, None, proj.pending_count(conn))
        self._retention([c.document_id for c in report.changes
                         if c.document_id is not None and c.kind not in ("unchanged", "failed")])
        pr = self.project() if project else None
        return IngestOutcome(report, pr, proj.pending_count(conn))

    def _reredact_stored(self) -> tuple[int, list[int], int, int]:
        """Redact everything stored again with the current rules (``secure_delete`` on):
        every document's content, revisions and chunks, and the stored form of secret file
        names (:mod:`memlens.core.store.purge`); changed documents lose their projection
        and are queued. Returns (documents looked at, changed ids, revisions, chunks)."""
        from memlens.core.projection.swap import drop_projection
        from memlens.core.redact.engine import redact
        from memlens.core.store.purge import rename_secret_names, reredact_document
        from memlens.core.store.records import document_ids

        conn = self._writable()
        conn.execute("PRAGMA secure_delete=ON")  # updates below zero what they free

        def red(text: str) -> str:
            return redact(text).text

        ids = document_ids(conn)
        changed: list[int] = []
        revisions = chunks = 0
        key = self.install_key()
        for d in ids:
            renamed = rename_secret_names(conn, d, key, self.clock())
            r = reredact_document(conn, d, red, self.clock(), unproject=drop_projection)
            revisions += r.revisions
            chunks += r.chunks
            if renamed or r.document or r.revisions or r.chunks or r.reprojected:
                changed.append(d)
        return len(ids), changed, revisions, chunks

    def _follow_rule_change(self) -> tuple[int, bool]:
        """When the redaction rules differ from those the database was last redacted with
        (:mod:`memlens.core.redact.fingerprint`, kept in ``meta``): redact everything
        stored again, wipe the old text (FTS merge, checkpoint, VACUUM with
        ``secure_delete``), mark every live file to be read again by this and later scans
        (their unchanged mtime and size are not trusted), then record the new fingerprint.
        An interrupted pass runs again next time (the fingerprint is recorded last).
        Returns how many documents changed (0 when the rules did not change) and whether
        the old text was wiped (False while another process keeps the WAL or a lock)."""
        import apsw

        from memlens.core.projection.changes import redaction_mark, set_redaction_mark
        from memlens.core.redact.fingerprint import current

        conn = self._writable()
        fp = current()
        if redaction_mark(conn) == fp:
            return 0, True
        from memlens.core.projection.swap import optimize_fts
        from memlens.core.store import db as dbm
        from memlens.core.store.purge import mark_for_reread

        _, changed, _, _ = self._reredact_stored()
        mark_for_reread(conn)
        wiped = True
        if changed:
            optimize_fts(conn)
            try:
                wiped = dbm.secure_vacuum(conn)
            except (apsw.BusyError, apsw.LockedError):
                wiped = False  # a reader or writer elsewhere: purge later compacts
        set_redaction_mark(conn, fp)
        return len(changed), wiped

    def _retention(self, doc_ids: Sequence[int]) -> None:
        from memlens.core.store.records import apply_retention

        ret = self.settings.retention
        for d in set(doc_ids):
            apply_retention(self.conn(), d, ret.max_revisions, ret.max_age_days, self.clock())

    def mark_embedder_changes(self) -> int:
        """Queue live documents projected with another embedder; returns how many.

        Every flow calls it once, before it reads the queue. Their old projection stays
        searchable (lexically, and by vector only in its own space) until the new one
        swaps in. An embedder that cannot tell its fingerprint now (an HTTP endpoint asked
        for its dimension refuses the connection) queues nothing: 0; the projection that
        follows records the reason on each document.
        """
        from memlens.core.embedders.registry import EmbedderUnavailable, EmbeddingError
        from memlens.core.projection import queue as proj

        try:
            fingerprint = self.embedder.fingerprint()
        except EmbedderUnavailable:
            raise
        except EmbeddingError:
            return 0
        return proj.queue_other_embedder(self._writable(), fingerprint)

    def project(self, document_ids: Sequence[int] | None = None, *, force: bool = False,
                on_progress: Callable[[ProjectionOutcome], None] | None = None,
                vectors: bool = True,
                on_slice: Callable[[VectorReport], None] | None = None,
                stop: Callable[[], bool] | None = None) -> ProjectionReport:
        """Queue the embedder change (:meth:`mark_embedder_changes`), then project pending
        documents (or the given ones; ``force`` ignores back-off): stage 1 (nodes and FTS
        rows: searchable by words at once), then, with ``vectors``, stage 2 (the vectors
        of every waiting document, or of the given ones, in short slices, smallest first;
        ``on_slice`` after each, ``stop`` ends it after the current slice; documents
        queued meanwhile get their stage 1 between slices). ``memlens project``.

        An embedder that cannot answer (connection refused) does not raise here: each
        claimed document records the reason (failed, or stale while an older projection
        is served) with its back-off.
        """
        self.mark_embedder_changes()
        return self._project(document_ids, force=force, on_progress=on_progress,
                             vectors=vectors, on_slice=on_slice, stop=stop)

    def _project(self, document_ids: Sequence[int] | None = None, *, force: bool = False,
                 on_progress: Callable[[ProjectionOutcome], None] | None = None,
                 vectors: bool = True,
                 on_slice: Callable[[VectorReport], None] | None = None,
                 stop: Callable[[], bool] | None = None) -> ProjectionReport:
        """:meth:`project` without queueing the embedder change (the flow did it)."""
        from memlens.core.projection import run as proj

        ps = self.settings.projection
        return proj.project_pending(
            self.conn(), self.embedder, self.clock, document_ids=document_ids, force=force,
            retry_base=ps.retry_base_seconds, retry_cap=ps.retry_max_seconds,
            on_progress=on_progress, vectors=vectors, cap=ps.max_vectors_per_document,
            on_slice=on_slice, stop=stop)

    def vectors_waiting(self) -> int:
        """Live documents whose vectors are still being computed (searchable lexically)."""
        from memlens.core.projection.changes import vectors_waiting

        return vectors_waiting(self.conn())

    def rechunk(self, doc_ids: Sequence[int] | None, config: ChunkerConfig) -> list[int]:
        """Write rechunk revisions (all live documents when ``doc_ids`` is None) — the
        write step of :meth:`rechunk_and_project`, which also projects.

        Returns ids of documents that got a new revision.
        """
        from memlens.core.chunking.chunker import chunk_markdown
        from memlens.core.store.records import write_rechunk

        config.validate()
        conn = self._writable()
        if doc_ids is None:
            doc_ids = [int(r[0]) for r in conn.execute(
                "SELECT id FROM memory_documents WHERE tombstoned_at IS NULL ORDER BY id")]
        changed = []
        for d in doc_ids:
            doc = self.detail(d)
            if doc is None or doc.tombstoned:
                continue
            chunks = chunk_markdown(doc.content, config, path=doc.path).chunks
            if write_rechunk(conn, d, config, chunks, self.clock()) is not None:
                changed.append(d)
        return changed

    def remember_chunker(self, config: ChunkerConfig, doc_ids: Sequence[int] | None, *,
                         repository: str | None = None) -> str:
        """Record a rechunk's configuration so later writes keep it; returns the scope
        (``repository`` when given, ``all`` when ``doc_ids`` is None, else ``document``
        for each id). A broader choice clears the narrower ones it covers."""
        from memlens.core.chunking import choice

        config.validate()
        conn, now = self._writable(), self.clock()
        if repository is not None:
            ids = [d.id for d in self.list_documents(repository=repository)]
            choice.remember(conn, "repository", config, now, repository=repository,
                            document_ids=ids)
            return "repository"
        if doc_ids is None:
            choice.remember(conn, "all", config, now)
            return "all"
        for d in doc_ids:
            choice.remember(conn, "document", config, now, document_id=d)
        return "document"

    def effective_chunker(self, doc_id: int) -> ChunkerChoice:
        """The chunker settings a document uses now and where they come from
        (document > repository > all documents > settings)."""
        from memlens.core.chunking import choice

        doc = self.detail(doc_id)
        if doc is None:
            raise LookupError(f"no document with id {doc_id}")
        return choice.effective(self.conn(), doc_id, doc.repository, self.chunker_config())

    # -- projecting the queue (every flow ends with it) ----------------------------------
    def _project_queue(self, progress: Progress | None, cancelled: Cancelled | None, *,
                       batch: int = PROJECT_BATCH) -> ProjectionReport:
        """Queue the embedder change once, then stage 1 of every queued document in
        batches (each searchable before the next), then stage 2; the merged report."""
        from memlens.core.projection import reports as proj

        stop = cancelled or _never
        self.mark_embedder_changes()
        ids = self.queued_document_ids()
        size = max(1, batch)
        reports: list[ProjectionReport] = []
        done = 0

        def outcome(o: ProjectionOutcome) -> None:
            nonlocal done
            done += 1
            _emit(progress, DocumentProjected(o, done, len(ids)))

        for start in range(0, len(ids), size):
            if stop():
                return proj.ProjectionReport.merged(reports)
            part = tuple(ids[start:start + size])
            _emit(progress, RowsChanged(part, processing=True))
            rep = self._project(part, on_progress=outcome, vectors=False)
            reports.append(rep)
            # Every row of the batch leaves "processing", projected or not (back-off).
            _emit(progress, RowsChanged(part))
            _emit(progress, BatchProjected(part, rep))
            if rep.stopped:  # a full disk: the rest would fail the same way
                return proj.ProjectionReport.merged(reports)
        if not stop():
            reports.append(self._project_vectors(progress, cancelled))
        return proj.ProjectionReport.merged(reports)

    def _project_vectors(self, progress: Progress | None,
                         cancelled: Cancelled | None) -> ProjectionReport:
        """Stage 2 (and stage 1 of whatever was queued meanwhile): the vectors of every
        waiting document in short slices, a :class:`VectorSlice` after each."""
        from memlens.core.projection.changes import vectors_left

        waiting = vectors_left(self.conn()) if progress is not None else []
        left = tuple(i for i, _ in waiting)
        total = sum(n for _, n in waiting)

        def on_slice(v: VectorReport) -> None:
            _emit(progress, VectorSlice(left, v.written, v.cached, total))

        rep = self._project(on_slice=on_slice if progress is not None else None, stop=cancelled)
        if waiting:
            _emit(progress, RowsChanged(left))
        return rep

    # -- flows ----------------------------------------------------------------------
    def start_up(self, roots: Sequence[MemoryRoot], *, batch: int = PROJECT_BATCH,
                 progress: Progress | None = None,
                 cancelled: Cancelled | None = None) -> IngestOutcome:
        """Start-up (``memlens ingest``, the TUI's first job, the benchmark): ingest the
        roots durably (a :class:`FileRead` per file, then :class:`IngestDone`), then
        project the queue (module docstring). A full disk during the ingest ends it there.
        ``cancelled`` is asked between projection batches and vector slices."""
        done = 0

        def on_change(ch: FileChange) -> None:
            nonlocal done
            done += 1
            _emit(progress, FileRead(ch, done))

        out = self.ingest(roots, project=False, on_change=on_change)
        _emit(progress, IngestDone(out.report))
        if out.report.stopped:
            return out
        rep = self._project_queue(progress, cancelled, batch=batch)
        return IngestOutcome(out.report, rep, self.pending_count())

    def rechunk_and_project(self, doc_ids: Sequence[int] | None, config: ChunkerConfig, *,
                            project: bool = True, repository: str | None = None,
                            remember: bool = True, progress: Progress | None = None,
                            cancelled: Cancelled | None = None) -> RechunkOutcome:
        """Rechunk one, some, a repository's or all (``None``) live documents in batches
        (a :class:`Rechunked` after each), then project the queue.

        What it projects is decided here for every caller: the whole queue, not only the
        documents this run changed. The changed ones are queued, so they are in it; and a
        rechunk or ingest that was interrupted earlier (Ctrl-C, a cancelled TUI job, a
        crash) left its revisions queued: this run finishes them too instead of leaving
        them unsearchable until the next start-up.

        With ``remember`` (the default) the choice sticks: it is recorded per document,
        for ``repository``, or for all documents, and later edits and re-ingests chunk
        with it (see :mod:`memlens.core.chunking.choice`). Cancelled while writing (or
        with ``project`` False), the outcome's ``projection`` is None.
        """
        config.validate()
        if remember:
            self.remember_chunker(config, doc_ids, repository=repository)
        if repository is not None:
            ids = [d.id for d in self.list_documents(repository=repository)]
        elif doc_ids is None:
            ids = [d.id for d in self.list_documents()]
        else:
            ids = list(doc_ids)
        stop = cancelled or _never
        changed: list[int] = []
        for start in range(0, len(ids), RECHUNK_BATCH):
            if stop():
                return RechunkOutcome(config, len(ids), tuple(changed), None)
            part = self.rechunk(ids[start:start + RECHUNK_BATCH], config)
            changed += part
            _emit(progress, Rechunked(tuple(part), min(start + RECHUNK_BATCH, len(ids)),
                                      len(ids)))
        rep = self._project_queue(progress, cancelled) if project else None
        return RechunkOutcome(config, len(ids), tuple(changed), rep)

    def reset_chunker(self, doc_id: int | None = None, *, repository: str | None = None,
                      project: bool = True, progress: Progress | None = None,
                      cancelled: Cancelled | None = None) -> RechunkOutcome:
        """Forget a remembered choice (of one document, of ``repository``, or — both
        None — the all-documents one) and the narrower ones it covers (a repository's
        documents; with neither, every choice), then rechunk the affected documents with
        what applies then (one :class:`Rechunked`) and project the queue, as
        :meth:`rechunk_and_project` does."""
        from memlens.core.chunking import choice

        conn = self.conn()
        if doc_id is not None:
            choice.forget(conn, "document", document_id=doc_id)
            ids = [doc_id]
        elif repository is not None:
            ids = [d.id for d in self.list_documents(repository=repository)]
            choice.forget(conn, "repository", repository=repository, document_ids=ids)
        else:
            choice.forget(conn, "all")
            ids = [d.id for d in self.list_documents()]
        changed: list[int] = []
        for d in ids:
            eff = self.effective_chunker(d)
            changed.extend(self.rechunk([d], eff.config))
        _emit(progress, Rechunked(tuple(changed), len(ids), len(ids)))
        rep = self._project_queue(progress, cancelled) if project else None
        return RechunkOutcome(self.chunker_config(), len(ids), tuple(changed), rep)

    def after_change(self, changes: Sequence[FileChange], *, reconcile: bool = False,
                     progress: Progress | None = None,
                     cancelled: Cancelled | None = None) -> ProjectionReport | None:
        """What follows a batch of changes the caller ingested (the watcher, with
        :meth:`ingest`): project the queue — the changed documents are in it — stage 1
        then the vectors, on the caller's thread. Nothing (None) when no file changed,
        unless ``reconcile`` (a full pass also picks up what earlier runs left queued)."""
        if not reconcile and all(c.kind == "unchanged" for c in changes):
            return None
        return self._project_queue(progress, cancelled)

    def retry(self, doc_id: int, *, progress: Progress | None = None) -> ProjectionReport:
        """Retry one document's projection now, ignoring back-off (stage 1 and its
        vectors); :class:`RowsChanged` before (processing) and after."""
        _emit(progress, RowsChanged((doc_id,), processing=True))
        self.mark_embedder_changes()
        rep = self._project([doc_id], force=True)
        _emit(progress, RowsChanged((doc_id,)))
        return rep
