"""The app's thread workers: every read and write of the core runs here.

:class:`AppWorkers` is the half of :class:`~memlens.tui.app.MemlensApp` that
talks to the service. Each ``@work(thread=True)`` method runs a function of
:mod:`memlens.tui.jobs` in a fresh thread and closes that thread's connection
when it ends; results come back as messages (:mod:`memlens.tui.messages`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on, work
from textual.timer import Timer
from textual.worker import get_current_worker

from memlens.core.service import FilterIndex, MemoryService
from memlens.core.types import IndexWarning, MemoryRoot, SearchHit

if TYPE_CHECKING:  # resolving them loads the watcher and the ingest path (start-up)
    from memlens.watch.events import WatchEvent
    from memlens.watch.watcher import Watcher

from memlens.tui import jobs
from memlens.tui.event_hooks import EventsApp, failure_detail, failure_sentence
from memlens.tui.heap import HeapKeeper
from memlens.tui.messages import (
    DocumentsLoaded,
    FilesUnreadable,
    IndexWarningsLoaded,
    RetryDone,
    StatsLoaded,
    WatchStatus,
)
from memlens.tui.screens.rechunk import RechunkRequest
from memlens.tui.widgets.doc_tree import DocumentTree

WORKER_TASKS: dict[str, str] = {
    "load_documents": "list documents",
    "prefetch_filter_index": "prepare the document filter",
    "load_stats": "load statistics",
    "load_detail": "show the document",
    "load_rechunk_choice": "open the rechunk dialog",
    "run_startup": "read the memory folders",
    "run_retry": "retry the projection",
    "run_rechunk": "rechunk",
    "run_watcher": "watch the memory folders",
}
"""What the user was doing when a worker (named by its method) failed."""

UNREADABLE_TITLE = "some files could not be read"
"""The title of the ingest's notice of unreadable files (and their events' kind)."""

GONE_CHECK_SECONDS = 2.0
"""How often the app looks whether unreadable, never-stored files were deleted."""


def worker_failure(name: str, error: BaseException | None) -> tuple[str, str]:
    """The sentence and the detail of a failed worker (issue 42: no exception text in
    a toast): ``("Could not load statistics. …", "OSError: disk I/O error")``."""
    return failure_sentence(WORKER_TASKS.get(name, "finish the last action")), \
        failure_detail(error)


class AppWorkers(EventsApp):
    """Background reads and writes of the app (its state is set by ``MemlensApp``)."""

    service: MemoryService
    clock: Callable[[], float]
    show_tombstoned: bool
    watch_enabled: bool
    roots: list[MemoryRoot]
    scan_paths: list[Path] | None
    _filter_index: FilterIndex | None
    _filter_gen: int
    _warnings_cache: dict[int, list[IndexWarning]]
    _watcher: Watcher | None
    _watch_stop: threading.Event
    heap: HeapKeeper

    current_doc_id: int | None
    _gone_timer: Timer | None = None

    if TYPE_CHECKING:  # provided by MemlensApp (from its browser screen)
        @property
        def doc_tree(self) -> DocumentTree:
            """The document tree."""

        @property
        def filter_text(self) -> str:
            """The sidebar's fuzzy filter."""

    # -- files that could not be read: the tree's ✗ marks ------------------------
    @on(FilesUnreadable)
    def _files_unreadable(self, message: FilesUnreadable) -> None:
        for repo, path, why in message.files:  # counted while they fail; the ingest's
            # notice (``ingest-errors``) is the toast
            self.report_problem(("file", repo, path), f"{repo}/{path}: {why}",
                                title=UNREADABLE_TITLE, toast=False)
        self._mark_files(message.files)

    @on(WatchStatus)
    def _watched_file(self, message: WatchStatus) -> None:
        if message.file is not None:
            self._mark_files([message.file])
        if message.seen is not None:  # a ⟳ row at once for a new file (until it is stored)
            if self.doc_tree.mark_incoming(*message.seen):
                self.load_documents(self.filter_text, keep=self.current_doc_id)
            self._watch_for_gone_files()

    @on(RetryDone)
    def _retry_fixed(self, message: RetryDone) -> None:
        doc = self.doc_tree.summary(message.doc_id)
        if message.result == "ready" and doc is not None:
            self.clear_problem(("projection", doc.repository, doc.path))

    def _mark_files(self, files: Sequence[tuple[str, str, str | None]]) -> None:
        """Mark files unreadable (or readable again) in the tree; reload the listing
        when a row of a file that was never stored appears or goes."""
        tree = self.doc_tree
        reload = False
        for repo, path, why in files:
            reload = tree.mark_incoming(repo, path, False) or reload  # read (or not)
            reload = tree.mark_unreadable(repo, path, why) or reload
            if why is None:  # read fine, or gone: no longer a problem
                self.clear_problem(("file", repo, path))
        if reload:
            self.load_documents(self.filter_text, keep=self.current_doc_id)
        if any(why for _, _, why in files):
            self._watch_for_gone_files()

    def _watch_for_gone_files(self) -> None:
        # Deleting a file that was never stored changes nothing in the database, so
        # the watcher reports nothing: look for the listed files every few seconds.
        if self._gone_timer is None:
            self._gone_timer = self.set_interval(GONE_CHECK_SECONDS, self._forget_gone_files)

    def _forget_gone_files(self) -> None:
        """Drop the ``✗`` rows of unreadable files that are no longer on disk."""
        where = {r.repository: r.path for r in self.roots}
        gone = [(repo, path, None) for repo, path in self.doc_tree.never_stored()
                if repo in where and not (where[repo] / path).exists()]
        if gone:
            self._mark_files(gone)

    @contextmanager
    def _db(self) -> Iterator[MemoryService]:
        """The service for one worker; closes the worker thread's connection afterwards."""
        try:
            yield self.service
        finally:
            self.service.release_thread_connection()

    @staticmethod
    def _cancelled() -> bool:
        try:
            return get_current_worker().is_cancelled
        except RuntimeError:  # not in a worker (direct call in a test)
            return False

    # -- workers: reads -----------------------------------------------------
    @work(thread=True, exclusive=True, group="documents", exit_on_error=False)
    def load_documents(self, filter_text: str = "", keep: int | None = None) -> None:
        """Read the document list (or the fuzzy filter's matches) and index warnings."""
        show_tomb = self.show_tombstoned
        warnings: dict[int, list[IndexWarning]]
        scores: dict[int, float] = {}
        with self._db() as svc:
            if filter_text.strip():
                idx = self._filter_index
                if idx is None or idx.include_tombstoned != show_tomb:
                    idx = self._build_filter_index(svc, show_tomb)
                docs, scores = jobs.filtered_documents(svc, idx, filter_text)
                # Index warnings were read with the full list; reuse them.
                known = self._warnings_cache
                warnings = {d.id: known[d.id] for d in docs if d.id in known}
            else:
                docs = svc.list_documents(include_tombstoned=show_tomb)
                if self._cancelled():
                    return
                # The listing goes on screen now, with the ⚠ marks known from the last
                # read; checking every index file again follows in its own message.
                known = self._warnings_cache
                self.post_message(DocumentsLoaded(
                    docs, {d.id: known[d.id] for d in docs if d.id in known},
                    filter_text=filter_text, show_tombstoned=show_tomb))
                fresh = jobs.index_warnings(svc, docs)
                if not self._cancelled():
                    self.post_message(IndexWarningsLoaded(fresh, show_tombstoned=show_tomb))
                return
        if not self._cancelled():
            self.post_message(DocumentsLoaded(docs, warnings, filter_text=filter_text,
                                              show_tombstoned=show_tomb, scores=scores))

    def _build_filter_index(self, svc: MemoryService, show_tomb: bool) -> FilterIndex:
        """Build the fuzzy-filter candidates (in a worker) and keep them if still current."""
        gen = self._filter_gen
        idx = svc.build_filter_index(include_tombstoned=show_tomb).prepare()
        if gen == self._filter_gen:
            self._filter_index = idx
            # ~40,000 objects at 10,000 documents that live until the next data
            # change: out of the collector's sight, like the listing (see heap.py).
            self.heap.keep_long_lived()
        return idx

    def _invalidate_filter_index(self) -> None:
        self._filter_gen += 1
        self._filter_index = None

    @work(thread=True, exclusive=True, group="filter-index", exit_on_error=False)
    def prefetch_filter_index(self) -> None:
        """Build the filter candidates ahead of the first keystroke."""
        show_tomb = self.show_tombstoned
        idx = self._filter_index
        if idx is not None and idx.include_tombstoned == show_tomb:
            return
        with self._db() as svc:
            self._build_filter_index(svc, show_tomb)

    @work(thread=True, exclusive=True, group="stats", exit_on_error=False)
    def load_stats(self) -> None:
        """Counts for the status bar."""
        with self._db() as svc:
            stats = svc.statistics()
        self.post_message(StatsLoaded(stats))

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def load_detail(self, doc_id: int, select_ordinal: int | None = None,
                    hit: SearchHit | None = None) -> None:
        """Everything the detail panes show for one document."""
        with self._db() as svc:
            jobs.read_detail(svc, doc_id, self.clock(), select_ordinal, hit,
                             self.post_message, self._cancelled)

    @work(thread=True, exclusive=True, group="rechunk-choice", exit_on_error=False)
    def load_rechunk_choice(self, doc_id: int, label: str, live_count: int,
                            all_documents: bool = False) -> None:
        """A document's effective chunker settings, for the rechunk dialog."""
        with self._db() as svc:
            jobs.rechunk_choice(svc, doc_id, label, live_count, all_documents,
                                self.post_message)

    # -- workers: writes ----------------------------------------------------
    @work(thread=True, exclusive=True, group="startup", exit_on_error=False)
    def run_startup(self) -> None:
        """The door's start-up flow: ingest the roots durably, show the list, then
        project the queue."""
        with self._db() as svc:
            flow = jobs.FlowProgress(svc, "startup", self.post_message,
                                     on_written=self._invalidate_filter_index)
            svc.start_up(self.roots, progress=flow, cancelled=self._cancelled)
            self.post_message(jobs.startup_summary(flow))
        if self.watch_enabled and not self._cancelled():
            self.call_from_thread(self.start_watcher)

    @work(thread=True, exclusive=True, group="retry", exit_on_error=False)
    def run_retry(self, doc_id: int) -> None:
        """Retry one document's projection now (ignoring back-off)."""
        with self._db() as svc:
            rep = svc.retry(doc_id, progress=jobs.FlowProgress(svc, "retry", self.post_message))
            self.post_message(jobs.retry_done(doc_id, rep))

    @work(thread=True, exclusive=True, group="rechunk", exit_on_error=False)
    def run_rechunk(self, request: RechunkRequest) -> None:
        """The door's rechunk flow (or the reset of a remembered choice): write the
        revisions, then project, with visible row states."""
        with self._db() as svc:
            flow = jobs.FlowProgress(svc, "rechunk", self.post_message,
                                     on_written=self._invalidate_filter_index)
            if request.reset:
                out = svc.reset_chunker(None if request.all_documents else request.doc_id,
                                        progress=flow, cancelled=self._cancelled)
            else:
                ids = [request.doc_id] if request.doc_id is not None else []
                out = svc.rechunk_and_project(None if request.all_documents else ids,
                                              request.config, progress=flow,
                                              cancelled=self._cancelled)
            if out.projection is None:  # cancelled while writing
                return
        self.post_message(jobs.rechunk_summary(out.considered, len(out.changed), flow.ready,
                                               flow.bad))

    # -- watcher ------------------------------------------------------------
    def action_toggle_watch(self) -> None:
        """Pause or resume the file watcher."""
        w = self._watcher
        if not self.watch_enabled:
            # answers to the key, not problems: not counted by the status bar's ✗ N
            self.notify("the watcher is off (--no-watch or watch.enabled = false)",
                        title="watch")
            return
        if w is None:
            self.notify("the watcher starts after the first ingest", title="watch")
            return
        if w.state == "paused":
            w.resume()
            self.post_message(WatchStatus("watching"))
        else:
            w.pause()
            self.post_message(WatchStatus("paused"))

    def start_watcher(self) -> None:
        """Start the file watcher worker (only when watching is enabled)."""
        if not self.watch_enabled or self._watcher is not None:
            return
        self._watch_stop.clear()
        self.run_watcher()

    @work(thread=True, exclusive=True, group="watcher", exit_on_error=False)
    def run_watcher(self) -> None:
        """Run the service's file watcher until the app exits."""

        def on_event(ev: WatchEvent) -> None:
            w = self._watcher
            self.post_message(jobs.watch_status(ev, w.state if w is not None else "starting",
                                                w.queue_size if w is not None else 0))

        with self._db() as svc:
            from memlens.watch.watcher import Watcher  # loads the ingest path: not at start-up

            watcher = Watcher(svc, self.roots or None, scan_paths=self.scan_paths,
                              on_event=on_event, announce=True)
            self._watcher = watcher
            try:
                watcher.run(self._watch_stop)
            finally:
                self._watcher = None
        self.post_message(WatchStatus("stopped"))

    def _stop_watcher(self) -> None:
        self._watch_stop.set()

