"""The memlens terminal UI.

:class:`MemlensApp` is built around a :class:`~memlens.core.service.MemoryService`
passed in by the caller (the CLI, a test, a benchmark) together with a clock and
whether to watch files, so everything it shows can be made deterministic.

Threading rule: every service call runs in a Textual *thread worker*
(``@work(thread=True, ...)``) that posts a typed message from
:mod:`memlens.tui.messages`; handlers on the event loop only update widgets.
Each worker closes its thread's connection when it ends
(:func:`memlens.core.views.release_thread_connection`), since every worker
runs on a fresh thread.
"""

from __future__ import annotations

import gc
import posixpath
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial, wraps
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.css.query import NoMatches
from textual.widgets import Footer, Header, Input, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerState, get_current_worker

from memlens.core import views
from memlens.core.chunking import ChunkerConfig
from memlens.core.indexfile import IndexWarning
from memlens.core.search import SearchHit
from memlens.core.service import MemoryService
from memlens.core.sources import MemoryRoot

from .messages import (
    DetailLoaded,
    DetailMissing,
    DocumentDetail,
    DocumentRowsChanged,
    DocumentsLoaded,
    JobFinished,
    Progress,
    RetryDone,
    StatsLoaded,
    WatchStatus,
)
from .screens.help import HelpScreen
from .screens.rechunk import RechunkDialog, RechunkRequest
from .screens.search import SearchScreen, next_mode
from .widgets.chunk_view import ChunkView
from .widgets.debounce import Debouncer
from .widgets.doc_tree import DocumentTree
from .widgets.fmt import (
    STATUS_STYLES,
    WARNING_GLYPH,
    glyph,
    human_size,
    plural,
    short_hash,
    timestamp,
)
from .widgets.projection_panel import ProjectionPanel
from .widgets.status_bar import StatusBar
from .widgets.timeline import TimelineView

Clock = Callable[[], float]
_F = TypeVar("_F", bound=Callable[..., Any])


def _quiet_when_closing(handler: _F) -> _F:
    """Drop a worker message that arrives while the app is tearing its widgets down."""

    @wraps(handler)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return handler(self, *args, **kwargs)
        except NoMatches:
            if not self._exit_requested():
                raise
            return None

    return cast(_F, wrapper)


FILTER_DEBOUNCE = 0.12
PROJECT_BATCH = 50
ROW_FLUSH_SECONDS = 0.1


# ---------------------------------------------------------------------------
# command palette


class MemlensCommands(Provider):
    """Every memlens action in the command palette (document actions when one is selected)."""

    def _commands(self) -> list[tuple[str, str, str]]:
        app = self.app
        assert isinstance(app, MemlensApp)
        on_browser = not app.screen_stack or self.screen is app.screen_stack[0]
        out = [
            ("Search memory", "live search (hybrid / lexical / vector)", "search"),
            ("Filter documents", "fuzzy filter over repository, path, headings, name",
             "focus_filter"),
            ("Search mode: hybrid", "rank fusion of lexical and vector", "set_search_mode('hybrid')"),
            ("Search mode: lexical", "FTS5 bm25 only", "set_search_mode('lexical')"),
            ("Search mode: vector", "vector KNN only", "set_search_mode('vector')"),
            ("Hide deleted documents" if app.show_tombstoned else "Show deleted documents",
             "toggle tombstoned documents in the tree", "toggle_tombstoned"),
            ("Rechunk all documents…", "pick a chunker config and apply it to every live "
             "document", "rechunk_all"),
            ("Toggle dark / light theme", "switch between textual-dark and textual-light",
             "toggle_dark"),
            ("Reload", "re-read everything from the database", "reload"),
            ("Show chunks", "chunk boundaries of the selected document", "show_tab('chunks')"),
            ("Show timeline", "revisions and diffs of the selected document",
             "show_tab('timeline')"),
            ("Show projection", "projection status of the selected document",
             "show_tab('projection')"),
            ("Help", "keys and legend", "help"),
            ("Quit", "leave memlens", "quit"),
            ("Pause / resume watcher", "stop or continue re-ingesting changed files"
             + ("" if app.watch_enabled else " (off: --no-watch or watch.enabled)"),
             "toggle_watch"),
        ]
        if not on_browser:  # from search or a dialog: only what works there
            return [c for c in out if c[2].split("(")[0] not in MemlensApp.MAIN_SCREEN_ACTIONS]
        if app.current_doc_id is not None:
            out += [
                ("Rechunk this document…", "preview and apply another chunker config",
                 "rechunk"),
                ("Retry projection now", "project the selected document again, ignoring "
                 "back-off", "retry_projection"),
                ("Next chunk", "select the next chunk", "next_chunk"),
                ("Previous chunk", "select the previous chunk", "previous_chunk"),
            ]
        return out

    async def discover(self) -> Hits:
        """All commands, before anything is typed."""
        for name, help_text, action in self._commands():
            yield DiscoveryHit(name, partial(self.app.run_action, action), help=help_text)

    async def search(self, query: str) -> Hits:
        """Commands matching what was typed."""
        matcher = self.matcher(query)
        for name, help_text, action in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), partial(self.app.run_action, action),
                          help=help_text)


# ---------------------------------------------------------------------------
# the app


class MemlensApp(App[None]):
    """Browse Claude Code memory: documents, chunks, timeline, projection, search."""

    CSS_PATH = "app.tcss"
    TITLE = "memlens"
    COMMANDS = App.COMMANDS | {MemlensCommands}

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("slash", "focus_filter", "Filter"),
        Binding("s", "search", "Search"),
        Binding("t", "toggle_tombstoned", "Deleted"),
        Binding("c", "rechunk", "Rechunk"),
        Binding("r", "retry_projection", "Retry"),
        Binding("n,right_square_bracket", "next_chunk", "Next chunk"),
        Binding("p,left_square_bracket", "previous_chunk", "Prev chunk"),
        Binding("1", "show_tab('chunks')", "Chunks", show=False),
        Binding("2", "show_tab('timeline')", "Timeline", show=False),
        Binding("3", "show_tab('projection')", "Projection", show=False),
        Binding("w", "toggle_watch", "Watch"),
        Binding("d", "toggle_dark", "Theme"),
        Binding("ctrl+r", "reload", "Reload", show=False),
        Binding("question_mark", "help", "Help"),
        Binding("escape", "escape", "Back", show=False),
    ]

    MAIN_SCREEN_ACTIONS = frozenset({
        "focus_filter", "search", "toggle_tombstoned", "rechunk", "rechunk_all",
        "retry_projection", "next_chunk", "previous_chunk", "show_tab", "escape", "reload",
    })
    """Actions that act on the browser; off while search, a dialog or help is on top."""

    def __init__(self, service: MemoryService, *, clock: Clock | None = None, watch: bool = False,
                 roots: Sequence[MemoryRoot] | None = None, scan_paths: Sequence[Path] | None = None,
                 ingest: bool = True, demo: bool = False, demo_note: str = "") -> None:
        """Create the app.

        Args:
            service: The service to read and write through (the app closes it on exit
                only if it was opened by the CLI; tests keep ownership).
            clock: Time source for relative times ("next retry in 4s").
            watch: Run the file watcher (after the startup ingest).
            roots: Memory folders to ingest on start (and to watch).
            scan_paths: Folders the user gave, watched for new memory folders.
            ingest: Ingest ``roots`` on start (durable first, then projection).
            demo: Label the UI as showing the demo corpus.
            demo_note: The line explaining why the demo is shown.
        """
        super().__init__()
        self.service = service
        self.clock: Clock = clock or service.clock
        self.watch_enabled = watch
        self.roots = list(roots or [])
        self.scan_paths = list(scan_paths) if scan_paths else None
        self.ingest_on_start = ingest
        self.demo = demo
        self.demo_note = demo_note
        self.show_tombstoned = False
        self.search_mode = "hybrid"
        self.search_query = ""
        # Latency figures vary run to run; deterministic screenshots turn them off.
        self.show_timings = True
        self.current_doc_id: int | None = None
        self.detail: DocumentDetail | None = None
        self.stats: dict[str, Any] = {}
        self._filter_index: views.FilterIndex | None = None
        self._filter_gen = 0  # bumped whenever documents change (the index is stale)
        self._warnings_cache: dict[int, list[IndexWarning]] = {}
        self._filter_debounce = Debouncer(self, FILTER_DEBOUNCE)
        self._pending_hit: SearchHit | None = None
        self._requested_doc: int | None = None
        self._watcher: Any = None
        self._watch_stop = threading.Event()
        self._reload_debounce = Debouncer(self, 0.3)
        self._stats_debounce = Debouncer(self, 0.25)
        self.first_paint_at: float | None = None
        self.documents_shown_at: float | None = None
        # Latencies (seconds) from "work starts" (debounce fired, cursor moved) to "shown",
        # read by benchmarks/tui.py.
        self.timings: dict[str, list[float]] = {"filter": [], "search": [], "detail": []}
        self._filter_fired: tuple[str, float] | None = None
        self._detail_asked: tuple[int, float] | None = None
        self._full_loads = 0
        if demo:
            self.sub_title = "DEMO · " + (demo_note or "bundled corpus copy")

    # -- layout -------------------------------------------------------------
    def compose(self) -> ComposeResult:
        """Tree on the left; title, warnings and tabs on the right; status and keys below."""
        yield Header(icon="◆")
        with Horizontal(id="main"):
            with Vertical(id="sidebar"):
                yield Input(placeholder="Filter documents  (/)", id="filter")
                yield Static("", id="filter-info")
                yield DocumentTree(id="tree")
            with Vertical(id="detail"):
                yield Static("", id="doc-title")
                yield Static("", id="doc-warnings")
                with TabbedContent(id="tabs", initial="tab-chunks"):
                    with TabPane("Chunks [1]", id="tab-chunks"):
                        yield ChunkView(id="chunks")
                        yield Static("", id="chunk-info")
                    with TabPane("Timeline [2]", id="tab-timeline"):
                        yield TimelineView(id="timeline")
                    with TabPane("Projection [3]", id="tab-projection"):
                        yield ProjectionPanel(id="projection")
        yield StatusBar(id="status")
        yield Footer()

    @property
    def doc_tree(self) -> DocumentTree:
        """The document tree."""
        return self.query_one("#tree", DocumentTree)

    @property
    def status_bar(self) -> StatusBar:
        """The status bar."""
        return self.query_one("#status", StatusBar)

    def on_mount(self) -> None:
        """Show what is already stored, then ingest (if asked) and start watching."""
        self.status_bar.demo = self.demo
        self.status_bar.watch_state = "starting" if self.watch_enabled else "off"
        self.doc_tree.focus()
        self.load_documents()
        self.load_stats()
        if self.roots and self.ingest_on_start:
            self.run_startup()
        elif self.watch_enabled:
            self.start_watcher()
        self.call_after_refresh(self._painted)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Browser actions only run (and only show in the footer) on the browser."""
        if action in self.MAIN_SCREEN_ACTIONS and self.screen_stack \
                and self.screen is not self.screen_stack[0]:
            return False
        return True

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Headless runs (tests, snapshots) get a steady cursor: no blink timer."""
        if self.is_headless and isinstance(event.widget, Input):
            event.widget.cursor_blink = False

    def _painted(self) -> None:
        if self.first_paint_at is None:
            self.first_paint_at = time.perf_counter()

    # -- plumbing -------------------------------------------------------------
    @contextmanager
    def _db(self) -> Iterator[MemoryService]:
        """The service for one worker; closes the worker thread's connection afterwards."""
        try:
            yield self.service
        finally:
            views.release_thread_connection(self.service)

    def is_idle(self) -> bool:
        """No debounce waiting and no worker running (the watcher does not count).

        Tests, snapshots and the benchmark wait for this before looking.
        """
        debouncers = [self._filter_debounce, self._reload_debounce, self._stats_debounce,
                      getattr(self.screen, "debouncer", None)]
        if any(d is not None and d.pending for d in debouncers):
            return False
        return not any(w.group != "watcher" and w.state in (WorkerState.PENDING,
                                                             WorkerState.RUNNING)
                       for w in self.workers)

    def _exit_requested(self) -> bool:
        if self._exit or self._closing or self._closed or not self.screen_stack:
            return True
        # The default screen is being dismantled (e.g. a test context ending).
        return bool(self.screen._closing or self.screen._closed)

    @staticmethod
    def _cancelled() -> bool:
        try:
            return get_current_worker().is_cancelled
        except RuntimeError:  # not in a worker (direct call in a test)
            return False

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Worker errors become notifications, never a crash."""
        if event.state == WorkerState.ERROR:
            err = event.worker.error
            self.notify(f"{type(err).__name__}: {err}", title=f"{event.worker.name} failed",
                        severity="error", timeout=8)
            if event.worker.group in ("startup", "rechunk", "retry"):
                self.status_bar.job = ""

    # -- workers: reads -----------------------------------------------------
    @work(thread=True, exclusive=True, group="documents", exit_on_error=False)
    def load_documents(self, filter_text: str = "", keep: int | None = None) -> None:
        """Read the document list (or the fuzzy filter's matches) and index warnings."""
        show_tomb = self.show_tombstoned
        warnings: dict[int, list[IndexWarning]]
        with self._db() as svc:
            scores: dict[int, float] = {}
            if filter_text.strip():
                idx = self._filter_index
                if idx is None or idx.include_tombstoned != show_tomb:
                    idx = self._build_filter_index(svc, show_tomb)
                found = idx.filter(filter_text)
                scores = {d.id: s for d, s in found}
                # Fresh rows: the cached index may hold old statuses.
                fresh = {d.id: d for d in views.document_summaries(svc, list(scores))}
                docs = [fresh[d.id] for d, _ in found if d.id in fresh]
                # Group by repository, best repository first, best document first within.
                order: dict[str, int] = {}
                for i, d in enumerate(docs):
                    order.setdefault(d.repository, i)
                docs.sort(key=lambda d: (order[d.repository], -scores.get(d.id, 0)))
                # Index warnings were read with the full list; reuse them.
                known = self._warnings_cache
                warnings = {d.id: known[d.id] for d in docs if d.id in known}
            else:
                docs = svc.list_documents(include_tombstoned=show_tomb)
                if self._cancelled():
                    return
                names = set(svc.chunker_config().index_names)
                warnings = {}
                for d in docs:
                    if not d.tombstoned and posixpath.basename(d.path) in names:
                        w = svc.index_warnings(d.id)
                        if w:
                            warnings[d.id] = w
        if not self._cancelled():
            self.post_message(DocumentsLoaded(docs, warnings, filter_text=filter_text,
                                              show_tombstoned=show_tomb, scores=scores))

    def _build_filter_index(self, svc: MemoryService, show_tomb: bool) -> views.FilterIndex:
        """Build the fuzzy-filter candidates (in a worker) and keep them if still current."""
        gen = self._filter_gen
        idx = views.build_filter_index(svc, include_tombstoned=show_tomb)
        if gen == self._filter_gen:
            self._filter_index = idx
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
            stats = svc.stats()
        self.post_message(StatsLoaded(stats))

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def load_detail(self, doc_id: int, select_ordinal: int | None = None,
                    hit: SearchHit | None = None) -> None:
        """Everything the detail panes show for one document."""
        with self._db() as svc:
            doc = svc.document(doc_id)
            if doc is None:
                self.post_message(DetailMissing(doc_id))
                return
            chunks = svc.chunks(doc_id)
            nodes = svc.chunk_nodes(doc_id) \
                if doc["active_revision_id"] == doc["current_revision_id"] else {}
            history = svc.history(doc_id)
            warnings = svc.index_warnings(doc_id) if not doc["tombstoned"] else []
            summary = next(iter(views.document_summaries(svc, [doc_id])), None)
            cur = next((r for r in history if r["id"] == doc["current_revision_id"]), None)
            cfg = cur["chunker"]["config"] if cur and cur["chunker"]["config"] else None
            max_tokens = int(cfg["max_tokens"]) if cfg and "max_tokens" in cfg \
                else svc.chunker_config().max_tokens
        if self._cancelled():
            return
        hit_ordinal = hit.ordinal if hit is not None else None
        self.post_message(DetailLoaded(DocumentDetail(
            doc_id=doc_id, document=doc, chunks=chunks, nodes=nodes, history=history,
            warnings=warnings, max_tokens=max_tokens, chunker=cfg, now=self.clock(),
            summary=summary, select_ordinal=hit_ordinal if hit is not None else select_ordinal,
            hit_ordinal=hit_ordinal)))

    # -- workers: writes ----------------------------------------------------
    def _project_ids(self, svc: MemoryService, ids: Sequence[int], job: str,
                     *, force: bool = False) -> tuple[int, int]:
        """Project documents in batches, posting row updates; returns (ready, not ready)."""
        total = len(ids)
        done = ready = bad = 0
        pending: list[int] = []
        last = time.monotonic()

        def progress(o: Any) -> None:
            nonlocal done, ready, bad, last
            done += 1
            if o.result == "ready":
                ready += 1
            elif o.result in ("failed", "stale"):
                bad += 1
            pending.append(o.document_id)
            self.post_message(Progress(job, "projecting", done, total))
            if time.monotonic() - last >= ROW_FLUSH_SECONDS:
                last = time.monotonic()
                self.post_message(DocumentRowsChanged(views.document_summaries(svc, pending)))
                pending.clear()

        for start in range(0, total, PROJECT_BATCH):
            if self._cancelled():
                break
            batch = list(ids[start:start + PROJECT_BATCH])
            self.post_message(DocumentRowsChanged(views.document_summaries(svc, batch),
                                                  processing=True))
            pending.clear()
            svc.project(batch, force=force, on_progress=progress)
            # Every row of the batch leaves "processing", projected or not (back-off).
            self.post_message(DocumentRowsChanged(views.document_summaries(svc, batch)))
        return ready, bad

    @work(thread=True, exclusive=True, group="startup", exit_on_error=False)
    def run_startup(self) -> None:
        """Ingest the roots durably, show the list, then project the queue."""
        read = 0
        failed: list[str] = []
        with self._db() as svc:
            def on_change(ch: Any) -> None:
                nonlocal read
                read += 1
                if ch.kind == "failed":
                    failed.append(f"{ch.repository}/{ch.path}: {ch.error}")
                self.post_message(Progress("ingest", "reading", read, None,
                                           f"{ch.repository}/{ch.path}"))

            out = svc.ingest(self.roots, project=False, on_change=on_change)
            self._invalidate_filter_index()
            counts = out.report.counts()
            self.post_message(JobFinished(
                "ingest", f"{read} files: {counts['created']} new, {counts['updated']} updated, "
                f"{counts['deleted']} deleted, {len(failed)} failed", ok=not failed))
            if failed:
                self.post_message(JobFinished("ingest-errors", "\n".join(failed[:5])
                                              + (f"\n… {len(failed) - 5} more" if len(failed) > 5
                                                 else ""), ok=False, reload=False))
            queued = views.queued_document_ids(svc)
            ready, bad = self._project_ids(svc, queued, "startup")
        self.post_message(JobFinished("startup", f"projected {ready} ready, {bad} failed",
                                      ok=not bad))
        if self.watch_enabled and not self._cancelled():
            self.call_from_thread(self.start_watcher)

    @work(thread=True, exclusive=True, group="retry", exit_on_error=False)
    def run_retry(self, doc_id: int) -> None:
        """Retry one document's projection now (ignoring back-off)."""
        with self._db() as svc:
            self.post_message(DocumentRowsChanged(views.document_summaries(svc, [doc_id]),
                                                  processing=True))
            rep = svc.retry(doc_id)
            self.post_message(DocumentRowsChanged(views.document_summaries(svc, [doc_id])))
        o = rep.outcomes[0] if rep.outcomes else None
        self.post_message(RetryDone(doc_id, o.result if o else "unchanged",
                                    o.error if o else None))

    @work(thread=True, exclusive=True, group="rechunk", exit_on_error=False)
    def run_rechunk(self, request: RechunkRequest) -> None:
        """Write rechunk revisions, then project them, with visible row states."""
        cfg = request.config
        with self._db() as svc:
            if request.all_documents:
                ids = [d.id for d in svc.list_documents()]
            else:
                ids = [request.doc_id] if request.doc_id is not None else []
            changed: list[int] = []
            for start in range(0, len(ids), 100):
                if self._cancelled():
                    return
                part = svc.rechunk(ids[start:start + 100], cfg)
                changed += part
                if part:
                    self.post_message(DocumentRowsChanged(views.document_summaries(svc, part)))
                self.post_message(Progress("rechunk", "rechunking", start + len(ids[start:start + 100]),
                                           len(ids)))
            self._invalidate_filter_index()
            ready, bad = self._project_ids(svc, changed, "rechunk")
        same = len(ids) - len(changed)
        msg = f"rechunked {len(changed)}: {ready} ready, {bad} failed"
        if same:
            msg += f"; {same} already used this config"
        self.post_message(JobFinished("rechunk", msg, ok=not bad, reload=False))

    # -- watcher ------------------------------------------------------------
    def start_watcher(self) -> None:
        """Start the file watcher worker (only when watching is enabled)."""
        if not self.watch_enabled or self._watcher is not None:
            return
        self._watch_stop.clear()
        self.run_watcher()

    @work(thread=True, exclusive=True, group="watcher", exit_on_error=False)
    def run_watcher(self) -> None:
        """Run :class:`memlens.core.watch.Watcher` until the app exits."""
        try:
            from memlens.core.watch import Watcher
        except ImportError as exc:  # pragma: no cover - watch is part of the core
            self.post_message(WatchStatus("error", error=f"watcher unavailable: {exc}"))
            return

        def on_event(ev: Any) -> None:
            w = self._watcher
            last = ev.message or ""
            if ev.kind == "change" and ev.path:
                last = f"{ev.change_kind or 'change'} {ev.path}"
            elif ev.kind == "projection" and ev.path:
                last = f"{ev.result or 'projected'} {ev.path}"
            self.post_message(WatchStatus(
                w.state if w is not None else "starting",
                last=f"{time.strftime('%H:%M:%S', time.gmtime(ev.time))} {last}".strip(),
                queue=w.queue_size if w is not None else 0,
                error=ev.message if ev.kind == "error" else None,
                changed=[1] if ev.kind in ("change", "projection", "reconcile") else None))

        with self._db() as svc:
            watcher = Watcher(svc, self.roots or None, scan_paths=self.scan_paths,
                              on_event=on_event)
            self._watcher = watcher
            try:
                watcher.run(self._watch_stop)
            finally:
                self._watcher = None
        self.post_message(WatchStatus("stopped"))

    def _stop_watcher(self) -> None:
        self._watch_stop.set()

    async def action_quit(self) -> None:
        """Stop the watcher, then leave."""
        self._stop_watcher()
        self.exit()

    def on_unmount(self) -> None:
        """Make sure the watcher thread ends with the app."""
        self._stop_watcher()

    @on(WatchStatus)
    @_quiet_when_closing
    def _watch_status(self, message: WatchStatus) -> None:
        bar = self.status_bar
        bar.watch_state = message.state
        if message.last is not None:
            bar.watch_last = message.last[:48]
        if message.queue is not None:
            bar.watch_queue = message.queue
        if message.error:
            self.notify(message.error, title="watcher", severity="warning")
        if message.changed:
            self._schedule_reload()

    def _schedule_reload(self) -> None:
        """Coalesce many watcher events into one refresh."""
        self._reload_debounce.start(self._reload_after_change)

    def _reload_after_change(self) -> None:
        self._invalidate_filter_index()
        self.load_documents(self.filter_text, keep=self.current_doc_id)
        self.load_stats()
        if self.current_doc_id is not None:
            self._reload_detail()

    def _freeze_heap(self) -> None:
        """Keep Python's full garbage collections short with large listings.

        With 10,000 documents the heap holds a few hundred thousand long-lived
        objects, and a generation-2 collection walking them all stalls the event
        loop for 100-250 ms at random moments (e.g. while typing a search).
        ``gc.freeze()`` moves what exists now out of the collector's sight; every
        tenth full reload first collects once (unfreeze, collect, freeze) so cyclic
        garbage from older listings is still reclaimed, at a moment when the list is
        being redrawn anyway.
        """
        self._full_loads += 1
        if self._full_loads % 10 == 0:
            gc.unfreeze()
            gc.collect()
        gc.freeze()

    # -- message handlers ----------------------------------------------------
    @property
    def filter_text(self) -> str:
        """The fuzzy filter typed in the sidebar."""
        return self.query_one("#filter", Input).value

    @on(DocumentsLoaded)
    @_quiet_when_closing
    def _documents_loaded(self, message: DocumentsLoaded) -> None:
        if message.filter_text != self.filter_text or \
                message.show_tombstoned != self.show_tombstoned:
            return  # the user typed on or toggled meanwhile
        keep = self._pending_hit.document_id if self._pending_hit else self.current_doc_id
        self.doc_tree.load(message.docs, message.warnings, filter_text=message.filter_text,
                       keep=keep)
        info = self.query_one("#filter-info", Static)
        n = len(message.docs)
        repos = len({d.repository for d in message.docs})
        tomb = " incl. deleted" if message.show_tombstoned else ""
        if message.filter_text.strip():
            info.update(f"{n} match{'es' if n != 1 else ''} in {repos} repositories{tomb}")
        else:
            info.update(f"{n:,} documents in {repos} repositories{tomb}")
        if not message.docs:
            self._show_empty("no documents" + (" match the filter" if message.filter_text else
                                               " yet"))
        if self.documents_shown_at is None and message.docs:
            self.documents_shown_at = time.perf_counter()
        if not message.filter_text.strip():
            self._warnings_cache = dict(message.warnings)
            self._freeze_heap()
            self.prefetch_filter_index()
        if self._filter_fired is not None and self._filter_fired[0] == message.filter_text:
            self.timings["filter"].append(time.perf_counter() - self._filter_fired[1])
            self._filter_fired = None

    @on(DocumentTree.DocumentHighlighted)
    @_quiet_when_closing
    def _document_highlighted(self, message: DocumentTree.DocumentHighlighted) -> None:
        doc_id = message.doc_id
        if doc_id is None:
            return
        hit = self._pending_hit if self._pending_hit and \
            self._pending_hit.document_id == doc_id else None
        if doc_id == self.current_doc_id and hit is None and self._requested_doc == doc_id:
            return  # already shown or on its way
        self.current_doc_id = doc_id
        self._request_detail(doc_id, hit=hit)

    def _request_detail(self, doc_id: int, *, select_ordinal: int | None = None,
                        hit: SearchHit | None = None) -> None:
        self._requested_doc = doc_id
        self._detail_asked = (doc_id, time.perf_counter())
        self.load_detail(doc_id, select_ordinal=select_ordinal, hit=hit)

    @on(DetailLoaded)
    @_quiet_when_closing
    def _detail_loaded(self, message: DetailLoaded) -> None:
        d = message.detail
        if d.doc_id != self.current_doc_id:
            return
        if d.hit_ordinal is not None:
            self._pending_hit = None
        self.detail = d
        if self._detail_asked is not None and self._detail_asked[0] == d.doc_id:
            self.timings["detail"].append(time.perf_counter() - self._detail_asked[1])
            self._detail_asked = None
        if d.summary is not None and not self.doc_tree.is_processing(d.doc_id):
            self.doc_tree.update_documents([d.summary])
        self.doc_tree.set_warnings(d.doc_id, d.warnings)
        self._render_detail()

    @on(DetailMissing)
    @_quiet_when_closing
    def _detail_missing(self, message: DetailMissing) -> None:
        if message.doc_id == self.current_doc_id:
            self._show_empty("this document no longer exists")

    @on(StatsLoaded)
    @_quiet_when_closing
    def _stats_loaded(self, message: StatsLoaded) -> None:
        self.stats = message.stats
        self.status_bar.stats = message.stats

    @on(Progress)
    @_quiet_when_closing
    def _progress(self, message: Progress) -> None:
        if message.total:
            self.status_bar.job = f"{message.phase} {message.done:,}/{message.total:,}"
        else:
            self.status_bar.job = f"{message.phase} {message.done:,} files"

    @on(JobFinished)
    @_quiet_when_closing
    def _job_finished(self, message: JobFinished) -> None:
        if message.job == "ingest-errors":
            self.notify(message.summary, title="some files could not be read",
                        severity="warning", timeout=10)
            return
        if message.job in ("startup", "rechunk"):
            self.status_bar.job = ""
        if message.job == "rechunk":
            self.notify(message.summary, title="rechunk",
                        severity="information" if message.ok else "warning")
        self._invalidate_filter_index()
        if message.reload:
            self.load_documents(self.filter_text, keep=self.current_doc_id)
        self.load_stats()
        if self.current_doc_id is not None and message.job != "ingest":
            self._reload_detail()

    @on(DocumentRowsChanged)
    @_quiet_when_closing
    def _rows_changed(self, message: DocumentRowsChanged) -> None:
        self.doc_tree.update_documents(message.docs, processing=message.processing)
        ids = {d.id for d in message.docs}
        if self.current_doc_id in ids:
            if message.processing:
                self._render_projection()
                self._render_title()
            else:
                self._reload_detail()
        if not message.processing:
            self._stats_debounce.start(self.load_stats)  # a projection run sends many

    @on(RetryDone)
    @_quiet_when_closing
    def _retry_done(self, message: RetryDone) -> None:
        if message.result == "ready":
            self.notify("projection is ready", title="retry")
        elif message.result == "unchanged":
            self.notify("nothing to retry: the projection is up to date", title="retry")
        else:
            self.notify(message.error or message.result, title=f"retry: {message.result}",
                        severity="error")
        self.load_stats()

    # -- rendering the detail ------------------------------------------------------
    def _reload_detail(self) -> None:
        if self.current_doc_id is None:
            return
        view = self.query_one("#chunks", ChunkView)
        sel = view.selected_chunk
        self._request_detail(self.current_doc_id, select_ordinal=sel.ordinal if sel else None)

    def _display_status(self) -> str:
        d = self.detail
        if d is None:
            return "-"
        s = self.doc_tree.summary(d.doc_id) or d.summary
        if s is None:
            return "tombstoned" if d.document["tombstoned"] else d.document["projection"]["status"]
        return self.doc_tree.status_of(s)

    def _render_title(self) -> None:
        d = self.detail
        title = self.query_one("#doc-title", Static)
        if d is None:
            title.update("")
            return
        doc = d.document
        status = self._display_status()
        fm = doc.get("front_matter") or {}
        parts: list[Any] = [
            (f"{doc['repository']}/", "$text-muted"), (doc["path"], "bold"), "\n",
            (f"{glyph(status)} {status}", STATUS_STYLES.get(status, "")),
            f" · {plural(len(d.chunks), 'chunk')} · {human_size(doc['size'])}",
        ]
        if fm.get("type"):
            parts.append(f" · type {fm['type']}")
        if fm.get("name"):
            parts.append((f" · {str(fm['name'])[:40]}", "$text-muted"))
        if d.warnings:
            parts.append((f"  {WARNING_GLYPH} {len(d.warnings)} warning"
                          f"{'s' if len(d.warnings) != 1 else ''}", "$text-warning bold"))
        if doc["tombstoned"]:
            parts.append((f"\ndeleted {timestamp(doc['tombstoned_at'])} UTC: not searchable; "
                          "history is in the timeline", "$text-muted"))
        elif fm.get("description"):
            parts.append(("\n" + str(fm["description"])[:200], "$text-muted italic"))
        title.update(Content.assemble(*parts))

    def _render_warnings(self) -> None:
        box = self.query_one("#doc-warnings", Static)
        d = self.detail
        if d is None or not d.warnings:
            box.remove_class("-shown")
            box.update("")
            return
        parts: list[Any] = []
        for i, w in enumerate(d.warnings):
            where = f"line {w.line}: " if w.line else ""
            parts += ["\n" if i else "", (f"{WARNING_GLYPH} {w.kind.replace('_', ' ')}",
                                          "bold $text-warning"), f"  {where}{w.message}"]
        box.update(Content.assemble(*parts))
        box.add_class("-shown")

    def _render_projection(self) -> None:
        d = self.detail
        panel = self.query_one("#projection", ProjectionPanel)
        if d is None:
            panel.show(None, [], self.clock(), "-")
            return
        panel.show(d.document, d.history, d.now, self._display_status())

    def _render_detail(self) -> None:
        d = self.detail
        assert d is not None
        self._render_title()
        self._render_warnings()
        view = self.query_one("#chunks", ChunkView)
        select = None
        if d.select_ordinal is not None:
            select = next((i for i, c in enumerate(d.chunks) if c.ordinal == d.select_ordinal),
                          None)
        hit = None
        if d.hit_ordinal is not None:
            hit = next((i for i, c in enumerate(d.chunks) if c.ordinal == d.hit_ordinal), None)
        note = "deleted: no chunks (history is in the timeline)" if d.document["tombstoned"] \
            else "empty document: stored, nothing searchable"
        view.set_chunks(d.chunks, d.max_tokens, select=select, hit=hit, empty_note=note,
                        markers=self._limit_markers())
        self.query_one("#timeline", TimelineView).set_history(
            d.history, d.document["current_revision_id"], d.document["active_revision_id"])
        self._render_projection()

    def _limit_markers(self) -> list[tuple[int, str]]:
        """Where Claude stops reading an over-long index: (offset of that line, label)."""
        d = self.detail
        if d is None:
            return []
        wanted = {w.line: w for w in d.warnings if w.kind in ("too_long", "too_large") and w.line}
        if not wanted:
            return []
        out: list[tuple[int, str]] = []
        offset = 0
        for n, line in enumerate(str(d.document.get("content") or "").splitlines(keepends=True),
                                 1):
            w = wanted.get(n)
            if w is not None:
                limit = "200-line" if w.kind == "too_long" else "25 KB"
                out.append((offset, f"Claude stops loading here: line {n} ({limit} limit)"))
            offset += len(line)
        return out

    def _show_empty(self, note: str) -> None:
        self.detail = None
        self.current_doc_id = None
        self._requested_doc = None
        self.query_one("#doc-title", Static).update(Content.styled(note, "$text-muted"))
        self._render_warnings()
        self.query_one("#chunks", ChunkView).clear_chunks(note)
        self.query_one("#chunk-info", Static).update("")
        self.query_one("#timeline", TimelineView).set_history([], None, None)
        self._render_projection()

    @on(ChunkView.ChunkSelected)
    @_quiet_when_closing
    def _chunk_selected(self, message: ChunkView.ChunkSelected) -> None:
        info = self.query_one("#chunk-info", Static)
        d = self.detail
        if d is None or message.index < 0 or message.index >= len(d.chunks):
            info.update("")
            return
        c = d.chunks[message.index]
        node = d.nodes.get(c.ordinal)
        node_txt = f"node {node}" if node is not None else "node – (not projected)"
        head = " › ".join(c.heading_path) or "(top of file)"
        info.update(Content.assemble(
            (f"#{c.ordinal}", "bold"), f"/{len(d.chunks)}  ",
            (f"{c.tokens}/{d.max_tokens} tok", "$text-error" if c.tokens > d.max_tokens else ""),
            f" · overlap {c.overlap_chars} chars · ", (head, "italic"), "\n",
            ("chars ", "$text-muted"), f"{c.start_char}–{c.end_char}",
            ("  bytes ", "$text-muted"), f"{c.start_byte}–{c.end_byte}",
            ("  hash ", "$text-muted"), short_hash(c.hash, 16),
            "  ", (node_txt, "$text-muted" if node is None else "")))

    # -- filter ---------------------------------------------------------------------
    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        text = event.value

        def fire() -> None:
            if text == self.filter_text:
                self._filter_fired = (text, time.perf_counter())
                self.load_documents(text, keep=self.current_doc_id)

        self._filter_debounce.start(fire)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self.doc_tree.focus()

    # -- actions ----------------------------------------------------------------------
    def action_focus_filter(self) -> None:
        """Focus the fuzzy filter."""
        self.query_one("#filter", Input).focus()

    def action_escape(self) -> None:
        """Leave the filter (first press) or clear it (second press)."""
        flt = self.query_one("#filter", Input)
        if flt.has_focus:
            self.doc_tree.focus()
        elif flt.value:
            flt.value = ""

    def action_search(self) -> None:
        """Open live search."""
        self.push_screen(SearchScreen(self.search_query, self.search_mode), self._open_hit)

    def action_set_search_mode(self, mode: str) -> None:
        """Use this search mode (the search screen re-runs its query)."""
        self.search_mode = mode
        if isinstance(self.screen, SearchScreen):
            self.screen.set_mode(mode)
        else:
            self.notify(f"search mode: {mode}", timeout=2)

    def action_cycle_search_mode(self) -> None:
        """hybrid → lexical → vector."""
        self.action_set_search_mode(next_mode(self.search_mode))

    def _open_hit(self, hit: SearchHit | None) -> None:
        if isinstance(self.screen, SearchScreen):  # pragma: no cover - defensive
            return
        if hit is None:
            return
        self.open_document(hit.document_id, hit=hit)

    def open_document(self, doc_id: int, *, hit: SearchHit | None = None) -> None:
        """Select a document in the tree (clearing the filter if needed) and show its chunks."""
        self._pending_hit = hit
        self.query_one("#tabs", TabbedContent).active = "tab-chunks"
        self.query_one("#chunks", ChunkView).focus()
        if self.doc_tree.reveal(doc_id):
            return  # the highlight message loads the detail (with the hit)
        flt = self.query_one("#filter", Input)
        if flt.value:
            with flt.prevent(Input.Changed):
                flt.value = ""
        self.current_doc_id = doc_id
        self.load_documents("", keep=doc_id)
        self._request_detail(doc_id, hit=hit)

    def action_toggle_tombstoned(self) -> None:
        """Show or hide deleted documents."""
        self.show_tombstoned = not self.show_tombstoned
        self._invalidate_filter_index()
        self.load_documents(self.filter_text, keep=self.current_doc_id)
        self.notify("showing deleted documents" if self.show_tombstoned
                    else "hiding deleted documents", timeout=2)

    def action_show_tab(self, name: str) -> None:
        """Switch the detail tab."""
        self.query_one("#tabs", TabbedContent).active = f"tab-{name}"

    def action_next_chunk(self) -> None:
        """Select the next chunk."""
        self.query_one("#tabs", TabbedContent).active = "tab-chunks"
        self.query_one("#chunks", ChunkView).select_next()

    def action_previous_chunk(self) -> None:
        """Select the previous chunk."""
        self.query_one("#tabs", TabbedContent).active = "tab-chunks"
        self.query_one("#chunks", ChunkView).select_previous()

    def action_retry_projection(self) -> None:
        """Retry the selected document's projection now."""
        d = self.detail
        if d is None:
            self.notify("select a document first", severity="warning")
            return
        if d.document["tombstoned"]:
            self.notify("deleted documents are not projected", severity="warning")
            return
        self.run_retry(d.doc_id)

    def _base_config(self) -> ChunkerConfig:
        d = self.detail
        base = self.service.chunker_config()
        if d is not None and d.chunker:
            try:
                return ChunkerConfig.from_dict({**base.to_dict(), **d.chunker})
            except ValueError:
                return base
        return base

    def action_rechunk(self, all_documents: bool = False) -> None:
        """Open the rechunk dialog for the selected document."""
        d = self.detail
        if d is None:
            self.notify("select a document first", severity="warning")
            return
        if d.document["tombstoned"]:
            self.notify("deleted documents cannot be rechunked", severity="warning")
            return
        label = f"{d.document['repository']}/{d.document['path']}"
        dialog = RechunkDialog(d.doc_id, label, self._base_config(),
                               int(self.stats.get("documents", 0)))
        self.push_screen(dialog, self._rechunk_chosen)
        if all_documents:
            dialog.call_after_refresh(dialog.set_all_documents)

    def action_rechunk_all(self) -> None:
        """Open the rechunk dialog with "all documents" on."""
        self.action_rechunk(all_documents=True)

    def _rechunk_chosen(self, request: RechunkRequest | None) -> None:
        if request is None:
            self.notify("rechunk cancelled: nothing written", timeout=2)
            return
        self.status_bar.job = "rechunking…"
        self.run_rechunk(request)

    def action_toggle_watch(self) -> None:
        """Pause or resume the file watcher."""
        w = self._watcher
        if not self.watch_enabled:
            self.notify("the watcher is off (--no-watch or watch.enabled = false)",
                        severity="warning")
            return
        if w is None:
            self.notify("the watcher starts after the first ingest", severity="warning")
            return
        if w.state == "paused":
            w.resume()
            self.status_bar.watch_state = "watching"
        else:
            w.pause()
            self.status_bar.watch_state = "paused"

    def action_toggle_dark(self) -> None:
        """Switch between the dark and the light theme."""
        self.theme = "textual-light" if self.current_theme.dark else "textual-dark"

    def action_reload(self) -> None:
        """Re-read everything."""
        self._invalidate_filter_index()
        self.load_documents(self.filter_text, keep=self.current_doc_id)
        self.load_stats()
        self._reload_detail()

    def action_help(self) -> None:
        """Keys and legend."""
        self.push_screen(HelpScreen(str(self.service.db_path), self.demo_note))
