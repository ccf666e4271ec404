"""The memlens terminal UI.

:class:`MemlensApp` is built around a :class:`~memlens.core.service.MemoryService`
passed in by the caller (CLI, test, benchmark) with a clock and whether to watch
files, so everything it shows can be made deterministic. It composes the screens
(:class:`~memlens.tui.screens.browser.BrowserScreen` by default), keeps the state,
routes messages and holds the actions; workers are in :mod:`memlens.tui.workers`,
what they do in :mod:`memlens.tui.jobs`, the palette in :mod:`memlens.tui.commands`.

Threading rule: every service call runs in a thread worker running a function of
:mod:`memlens.tui.jobs`, which posts a typed message; handlers on the event loop
only update widgets, and each worker closes its thread's connection when it ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Input
from textual.worker import Worker, WorkerState

from memlens.core.service import FilterIndex, MemoryService
from memlens.core.types import IndexWarning, MemoryRoot, SearchHit
from memlens.tui.closing import exit_requested, quiet_when_closing
from memlens.tui.commands import BROWSER_ACTIONS, MemlensCommands
from memlens.tui.demo import banner
from memlens.tui.heap import TICK, HeapKeeper
from memlens.tui.host import MemlensHost
from memlens.tui.messages import (
    DetailLoaded,
    DetailMissing,
    DetailView,
    DocumentRowsChanged,
    DocumentsLoaded,
    IndexWarningsLoaded,
    JobFinished,
    Progress,
    RechunkChoiceLoaded,
    RetryDone,
    StatsLoaded,
    WatchStatus,
)
from memlens.tui.screens.browser import BrowserScreen
from memlens.tui.screens.help import HelpScreen
from memlens.tui.screens.rechunk import RechunkRequest, dialog_for
from memlens.tui.screens.search import SearchScreen, SearchState, next_mode
from memlens.tui.theme import install_themes, toggled
from memlens.tui.widgets.debounce import Debouncer
from memlens.tui.widgets.doc_tree import DocumentTree
from memlens.tui.widgets.status_bar import StatusBar
from memlens.tui.workers import UNREADABLE_TITLE, AppWorkers, worker_failure

if TYPE_CHECKING:  # annotations only (``Watcher`` loads the watcher and the ingest path)
    from memlens.core.types import Stats
    from memlens.watch.watcher import Watcher

__all__ = ["MemlensApp", "MemlensCommands"]

Clock = Callable[[], float]

FILTER_DEBOUNCE = 0.12


class MemlensApp(AppWorkers):
    """Browse Claude Code memory: documents, chunks, timeline, projection, search."""

    CSS_PATH = "app.tcss"
    TITLE = "memlens"
    COMMANDS = App.COMMANDS | {MemlensCommands}

    # The browser binds these too (and its own keys); here they work on every screen.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("w", "toggle_watch", "Watch"),
        Binding("d", "toggle_dark", "Theme"),
        Binding("E", "events", "Events"),
        Binding("question_mark", "help", "Help"),
    ]
    MAIN_SCREEN_ACTIONS = BROWSER_ACTIONS

    def __init__(self, service: MemoryService, *, clock: Clock | None = None, watch: bool = False,
                 roots: Sequence[MemoryRoot] | None = None, scan_paths: Sequence[Path] | None = None,
                 ingest: bool = True, demo: bool = False, demo_note: str = "",
                 demo_folder: Path | None = None) -> None:
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
            demo_folder: Where the demo copy lives (the banner names it: edit files
                there to try the watcher).
        """
        super().__init__()
        install_themes(self)
        self.service = service
        self.clock: Clock = clock or service.clock
        self.watch_enabled = watch
        self.roots = list(roots or [])
        self.scan_paths = list(scan_paths) if scan_paths else None
        self.ingest_on_start = ingest
        self.demo = demo
        self.demo_note = demo_note
        self.demo_folder = demo_folder
        self.show_tombstoned = False
        self.search_state = SearchState()  # the last search's words and mode
        self.hit_query = ""  # words of the search whose hit is open (highlighted)
        # Latency figures vary run to run; deterministic screenshots turn them off.
        self.show_timings = True
        self.current_doc_id: int | None = None
        self.detail: DetailView | None = None
        self.stats: Stats | None = None
        self._filter_index: FilterIndex | None = None
        self._filter_gen = 0  # bumped whenever documents change (the index is stale)
        self._warnings_cache: dict[int, list[IndexWarning]] = {}
        self.filter_debounce = Debouncer(self, FILTER_DEBOUNCE)
        self._pending_hit: SearchHit | None = None
        self._reload_notify = False  # Ctrl+R: confirm when the list is back
        self._open_best: str | None = None  # Enter in the filter: open its best match when listed
        self._shown_filter: tuple[str, int | None] | None = None  # (filter, its best match)
        self._requested_doc: int | None = None
        self._watcher: Watcher | None = None
        self._watch_stop = threading.Event()
        self._reload_debounce = Debouncer(self, 0.3)
        self._stats_debounce = Debouncer(self, 0.25)
        self.heap = HeapKeeper()
        self._browser = BrowserScreen()
        if demo:
            self.sub_title = self.demo_banner(80)

    def demo_banner(self, width: int) -> str:
        """The header's demo line for a terminal ``width`` wide (:func:`demo.banner`)."""
        return banner(self.title, self.demo_folder, self.demo_note, width)

    def on_resize(self, event: events.Resize) -> None:
        """Fit the demo banner to the new width."""
        if self.demo:
            self.sub_title = self.demo_banner(event.size.width)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Textual's palette entries without its "Quit": memlens lists its own (which
        stops the watcher first), and one "Quit" is enough."""
        for command in super().get_system_commands(screen):
            if command.title != "Quit":
                yield command

    # -- screens ---------------------------------------------------------------
    def get_default_screen(self) -> Screen[Any]:
        """The browser is the bottom screen."""
        return self._browser

    @property
    def browser(self) -> BrowserScreen:
        """The browser screen (the bottom of the stack)."""
        return self._browser

    @property
    def doc_tree(self) -> DocumentTree:
        """The document tree."""
        return self._browser.doc_tree

    @property
    def status_bar(self) -> StatusBar:
        """The status bar."""
        return self._browser.status_bar

    @property
    def filter_text(self) -> str:
        """The fuzzy filter typed in the sidebar."""
        return self._browser.filter_input.value

    def browser_mounted(self) -> None:
        """Show what is already stored, then ingest (if asked) and start watching.

        Called by the browser once its widgets exist (after the app's own mount).
        """
        self.heap.start()
        self.set_interval(TICK, self._collect_if_idle, name="heap")
        self.status_bar.demo = self.demo
        self.status_bar.watch_state = "starting" if self.watch_enabled else "off"
        self.doc_tree.focus()
        self.load_documents()
        self.load_stats()
        if self.roots and self.ingest_on_start:
            self.run_startup()
        elif self.watch_enabled:
            self.start_watcher()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Browser actions only run (from the palette or a test) on the browser."""
        if action in self.MAIN_SCREEN_ACTIONS and self.screen_stack \
                and self.screen is not self.screen_stack[0]:
            return False
        return True

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Headless runs (tests, snapshots) get a steady cursor: no blink timer."""
        if self.is_headless and isinstance(event.widget, Input):
            event.widget.cursor_blink = False

    # -- plumbing -------------------------------------------------------------
    def is_idle(self) -> bool:
        """No debounce waiting and no worker running (the watcher does not count).

        Tests, snapshots and the benchmark wait for this before looking.
        """
        debouncers = [self.filter_debounce, self._reload_debounce, self._stats_debounce,
                      getattr(self.screen, "debouncer", None)]
        if any(d is not None and d.pending for d in debouncers):
            return False
        return not any(w.group != "watcher" and w.state in (WorkerState.PENDING,
                                                             WorkerState.RUNNING)
                       for w in self.workers)

    async def on_event(self, event: events.Event) -> None:
        """Every key and mouse event tells the collector the user is active."""
        if isinstance(event, events.InputEvent) and not event.is_forwarded:
            self.heap.input_seen()
        await super().on_event(event)

    def _collect_if_idle(self) -> None:
        """The heap timer: collect garbage when the UI is idle (see heap.py)."""
        if not self._exit_requested():
            self.heap.tick(busy=not self.is_idle())

    def _exit_requested(self) -> bool:
        return exit_requested(self)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Worker errors become notifications, never a crash."""
        if event.state == WorkerState.ERROR:
            sentence, detail = worker_failure(event.worker.name, event.worker.error)
            self.notify(sentence, title="error", severity="error", timeout=8, detail=detail)
            if event.worker.group in ("startup", "rechunk", "retry"):
                self.status_bar.job = ""

    async def action_quit(self) -> None:
        """Stop the watcher, then leave."""
        self._stop_watcher()
        self.exit()

    def on_unmount(self) -> None:
        """Make sure the watcher thread ends with the app; the collector's thresholds
        go back to what they were."""
        self._stop_watcher()
        self.heap.stop()

    @on(WatchStatus)
    @quiet_when_closing
    def _watch_status(self, message: WatchStatus) -> None:
        bar = self.status_bar
        bar.watch_state = message.state
        if message.last is not None:
            bar.watch_last = message.last[:48]
        if message.queue is not None:
            bar.watch_queue = message.queue
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

    # -- message handlers ----------------------------------------------------
    @on(DocumentsLoaded)
    @quiet_when_closing
    def _documents_loaded(self, message: DocumentsLoaded) -> None:
        if message.filter_text != self.filter_text or \
                message.show_tombstoned != self.show_tombstoned:
            return  # the user typed on or toggled meanwhile
        keep = self._pending_hit.document_id if self._pending_hit else self.current_doc_id
        typed = self._shown_filter is None or self._shown_filter[0] != message.filter_text
        if typed and message.filter_text.strip() and self._pending_hit is None:
            keep = None  # the filter changed: its best match gets the cursor
        self._browser.show_documents(message, keep)
        if self._reload_notify:
            self._reload_notify = False
            self.notify(f"reloaded from the database: {len(message.docs):,} documents",
                        title="reload", timeout=3)
        best = message.docs[0].id if message.docs else None
        self._shown_filter = (message.filter_text, best)
        if self._open_best is not None and self._open_best == message.filter_text:
            self._open_best = None
            self._open_filter_match(best, message.filter_text)
        if not message.docs:
            self._show_empty("no documents" + (" match the filter" if message.filter_text else
                                               " yet"))
        if not message.filter_text.strip():
            self._warnings_cache = dict(message.warnings)
            self.heap.full_listing_shown()
            self.prefetch_filter_index()

    @on(IndexWarningsLoaded)
    @quiet_when_closing
    def _index_warnings_loaded(self, message: IndexWarningsLoaded) -> None:
        if message.show_tombstoned != self.show_tombstoned:
            return  # a listing with(out) deleted documents is on its way
        self._warnings_cache = dict(message.warnings)
        self.doc_tree.replace_warnings(message.warnings)

    @on(DocumentTree.DocumentHighlighted)
    @quiet_when_closing
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
        if doc_id < 0:  # a file that could not be read and was never stored
            self.detail = None
            return self._browser.show_unreadable(self.doc_tree.summary(doc_id))
        self.load_detail(doc_id, select_ordinal=select_ordinal, hit=hit)

    @on(DetailLoaded)
    @quiet_when_closing
    def _detail_loaded(self, message: DetailLoaded) -> None:
        d = message.detail
        if d.doc_id != self.current_doc_id:
            return
        if d.hit_ordinal is not None:
            self._pending_hit = None
        self.detail = d
        if d.summary is not None and not self.doc_tree.is_processing(d.doc_id):
            self.doc_tree.update_documents([d.summary])
        self.doc_tree.set_warnings(d.doc_id, d.warnings)
        self._browser.render_detail(d)

    @on(DetailMissing)
    @quiet_when_closing
    def _detail_missing(self, message: DetailMissing) -> None:
        if message.doc_id == self.current_doc_id:
            self._show_empty("this document no longer exists")

    @on(StatsLoaded)
    @quiet_when_closing
    def _stats_loaded(self, message: StatsLoaded) -> None:
        self.stats = message.stats
        self.status_bar.stats = message.stats

    @on(Progress)
    @quiet_when_closing
    def _progress(self, message: Progress) -> None:
        if message.total:
            self.status_bar.job = f"{message.phase} {message.done:,}/{message.total:,}"
        else:
            self.status_bar.job = f"{message.phase} {message.done:,} files"

    @on(JobFinished)
    @quiet_when_closing
    def _job_finished(self, message: JobFinished) -> None:
        if message.job == "ingest-errors":
            self.notify(message.summary, title=UNREADABLE_TITLE, severity="warning",
                        timeout=10, record=False)  # each file is a problem of its own
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
    @quiet_when_closing
    def _rows_changed(self, message: DocumentRowsChanged) -> None:
        self.doc_tree.update_documents(message.docs, processing=message.processing)
        ids = {d.id for d in message.docs}
        if self.current_doc_id in ids:
            if message.processing:
                self._browser.render_projection(self.detail)
                self._browser.render_title(self.detail)
            else:
                self._reload_detail()
        if not message.processing:
            self._stats_debounce.start(self.load_stats)  # a projection run sends many

    @on(RetryDone)
    @quiet_when_closing
    def _retry_done(self, message: RetryDone) -> None:
        if message.result == "ready":
            self.notify("projection is ready", title="retry")
        elif message.result == "unchanged":
            self.notify("nothing to retry: the projection is up to date", title="retry")
        else:  # a sentence; the error's text goes to the events pane only (issue 42)
            self.notify(worker_failure("run_retry", None)[0], title=f"retry: {message.result}",
                        severity="error", detail=message.error or message.result)
        self.load_stats()

    def _reload_detail(self) -> None:
        if self.current_doc_id is None:
            return
        sel = self._browser.chunk_view.selected_chunk
        self._request_detail(self.current_doc_id, select_ordinal=sel.ordinal if sel else None)

    def _show_empty(self, note: str) -> None:
        self.detail = None
        self.current_doc_id = None
        self._requested_doc = None
        self._browser.show_empty(note)

    # -- actions (bound on the browser, listed in the palette) ------------------------
    def action_focus_filter(self) -> None:
        """Focus the fuzzy filter."""
        self._browser.filter_input.focus()

    def action_open_best_match(self) -> None:
        """Open the filter's best match (Enter in the filter box), once it is listed."""
        text = self.filter_text
        if not text.strip():
            self.doc_tree.focus()
            return
        loading = any(w.group == "documents" and w.state in (WorkerState.PENDING,
                                                               WorkerState.RUNNING)
                      for w in self.workers)
        shown = self._shown_filter
        if shown is not None and shown[0] == text and not loading \
                and not self.filter_debounce.pending:
            self._open_filter_match(shown[1], text)
            return
        self._open_best = text  # the listing on its way opens it (see _documents_loaded)
        self.filter_debounce.cancel()
        self.load_documents(text, keep=self.current_doc_id)

    def _open_filter_match(self, doc_id: int | None, text: str) -> None:
        if doc_id is None:
            self.notify(f"no document matches {text.strip()!r}", severity="warning", timeout=3)
            return
        self.open_document(doc_id)

    def action_focus_pane(self, step: int = 1) -> None:
        """Tab / Shift+Tab: the next or previous pane (tree, detail, filter)."""
        self._browser.focus_pane(step)

    def action_escape(self) -> None:
        """Leave the filter (first press) or clear it (second press)."""
        self._browser.escape()

    def action_search(self) -> None:
        """Open live search."""
        self.push_screen(SearchScreen(self.service, self.search_state,
                                      show_timings=self.show_timings), self._open_hit)

    def action_set_search_mode(self, mode: str) -> None:
        """Use this search mode (the search screen re-runs its query)."""
        self.search_state.mode = mode
        if isinstance(self.screen, SearchScreen):
            self.screen.set_mode(mode)
        else:
            self.notify(f"search mode: {mode}", timeout=2)

    def action_cycle_search_mode(self) -> None:
        """hybrid → lexical → vector."""
        self.action_set_search_mode(next_mode(self.search_state.mode))

    def _open_hit(self, hit: SearchHit | None) -> None:
        if isinstance(self.screen, SearchScreen):  # pragma: no cover - defensive
            return
        if hit is None:
            return
        self.hit_query = self.search_state.query  # the searched words get highlighted
        self.open_document(hit.document_id, hit=hit)

    def open_document(self, doc_id: int, *, hit: SearchHit | None = None) -> None:
        """Select a document in the tree (clearing the filter if needed) and show its chunks."""
        self._pending_hit = hit
        self._browser.show_tab("chunks")
        self._browser.chunk_view.focus()
        if self.doc_tree.reveal(doc_id):
            return  # the highlight message loads the detail (with the hit)
        self._browser.clear_filter_quietly()
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
        self._browser.show_tab(name)

    def action_next_chunk(self) -> None:
        """Select the next chunk."""
        self._browser.step_chunk(forward=True)

    def action_previous_chunk(self) -> None:
        """Select the previous chunk."""
        self._browser.step_chunk(forward=False)

    def action_retry_projection(self) -> None:
        """Retry the selected document's projection now."""
        d = self.detail
        if d is None:
            self.notify("select a document first", severity="warning")
            return
        if d.document.tombstoned:
            self.notify("deleted documents are not projected", severity="warning")
            return
        self.run_retry(d.doc_id)

    def action_rechunk(self, all_documents: bool = False) -> None:
        """Open the rechunk dialog for the selected document (once a worker has read
        its chunker settings: see :meth:`_rechunk_choice_loaded`)."""
        d = self.detail
        if d is None:
            self.notify("select a document first", severity="warning")
            return
        if d.document.tombstoned:
            self.notify("deleted documents cannot be rechunked", severity="warning")
            return
        live = self.stats.documents if self.stats is not None else 0
        self.load_rechunk_choice(d.doc_id, f"{d.document.repository}/{d.document.path}", live,
                                 all_documents)

    @on(RechunkChoiceLoaded)
    @quiet_when_closing
    def _rechunk_choice_loaded(self, message: RechunkChoiceLoaded) -> None:
        if self.screen is not self._browser or self.current_doc_id != message.doc_id:
            return  # the user moved on meanwhile
        dialog = dialog_for(self.service, message)
        self.push_screen(dialog, self._rechunk_chosen)
        if message.all_documents:
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

    def action_toggle_dark(self) -> None:
        """Switch between the dark and the light theme."""
        self.theme = toggled(self.current_theme.dark)

    def action_toggle_tree(self) -> None:
        """Hide or show the document tree (the detail pane takes the width)."""
        self._browser.toggle_tree()
    def action_resize_tree(self, step: int = 1) -> None:
        """Widen (``step`` > 0) or narrow the document tree."""
        self._browser.resize_tree(step)

    def action_reload(self) -> None:
        """Re-read everything (a toast confirms once the list is back)."""
        self._reload_notify = True
        self._invalidate_filter_index()
        self.load_documents(self.filter_text, keep=self.current_doc_id)
        self.load_stats()
        self._reload_detail()

    def action_help(self) -> None:
        """Keys and legend."""
        self.push_screen(HelpScreen(str(self.service.db_path), self.demo_note))


def _as_host(app: MemlensApp) -> MemlensHost:  # mypy: the app is what its screens read
    return app
