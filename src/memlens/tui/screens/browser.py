"""The browser: the document tree on the left, the selected document's panes on the right.

:class:`BrowserScreen` is the app's default screen. It owns the browser's key
bindings (they are simply absent while search, a dialog or help is on top) and
renders what the app's workers read: the title, the index warnings, the chunk,
timeline and projection panes. State (the selection, the detail read last) stays
on :class:`~memlens.tui.app.MemlensApp`, which routes the workers' messages here.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.reactive import Reactive
from textual.screen import Screen
from textual.theme import Theme
from textual.widget import Widget
from textual.widgets import Header, Input, Static, TabbedContent, TabPane

from memlens.core.types import DocumentSummary
from memlens.tui.closing import exit_requested
from memlens.tui.host import MemlensHost
from memlens.tui.messages import DetailView, DocumentsLoaded
from memlens.tui.theme import memlens_theme
from memlens.tui.widgets.chunk_view import ChunkView
from memlens.tui.widgets.doc_tree import DocumentTree
from memlens.tui.widgets.file_map import FileMap
from memlens.tui.widgets.fmt import (
    STATUS_STYLES,
    WARNING_GLYPH,
    glyph,
    heading_label,
    human_size,
    plural,
    short_hash,
    shorten_middle,
    tidy_runs,
    timestamp,
)
from memlens.tui.widgets.footer import FittingFooter
from memlens.tui.widgets.pane_divider import PaneDivider
from memlens.tui.widgets.projection_panel import ProjectionPanel
from memlens.tui.widgets.status_bar import StatusBar
from memlens.tui.widgets.timeline import TimelineView

NARROW_BELOW = 100
"""Terminals narrower than this get the one-column layout: the tree above the detail."""

TREE_MIN, DETAIL_MIN = 16, 36
"""Narrowest tree and detail pane (cells) the resize keys and the divider allow."""

TREE_STEP, TREE_ROW_STEP = 4, 2
"""What one ``<``/``>`` press changes: columns side by side, rows stacked."""


def default_tree_width(screen_width: int) -> int:
    """The tree's width before the user resizes it: 45% of the screen, 30 to 54 cells."""
    return max(30, min(54, screen_width * 45 // 100))


def default_tree_rows(main_height: int) -> int:
    """The stacked tree's height before the user resizes it: a third, at least 6 rows."""
    return max(6, main_height // 3)


def clamp_tree_width(width: int, screen_width: int) -> int:
    """A tree width that leaves the detail pane at least ``DETAIL_MIN`` cells."""
    return max(TREE_MIN, min(width, screen_width - DETAIL_MIN - 1))


STACKED_TREE_FLOOR = 6
"""The stacked tree pane's fewest rows: the filter line, the tree's border (2) and three
rows of documents (``<`` once shrank it to the border alone)."""


def clamp_tree_rows(rows: int, main_height: int) -> int:
    """A stacked tree height that leaves the detail pane at least 8 rows, and the tree
    at least :data:`STACKED_TREE_FLOOR`."""
    return max(STACKED_TREE_FLOOR, min(rows, main_height - 9))


class BrowserScreen(Screen[None]):
    """Browse Claude Code memory: documents, chunks, timeline, projection."""

    # Screen's ``focused`` repaints the whole screen when the focus moves: every widget was
    # drawn and composited again on each ``/`` (~15 ms of a 50-60 ms stall at 10k
    # documents). The widgets whose look depends on the focus are restyled and redrawn
    # by Textual anyway; the watcher (the key bar) still runs.
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)

    # Every action runs on the app (the palette and the tests call them there); the
    # global ones (quit, watch, theme, help) are bound on the app too, for other screens.
    BINDINGS: ClassVar[list[BindingType]] = [
        # Most important first: a narrow footer drops keys from the end (all are in help).
        Binding("s", "app.search", "Search"),
        Binding("slash", "app.focus_filter", "Filter"),
        Binding("question_mark", "app.help", "Help"),
        Binding("c", "app.rechunk", "Rechunk"),
        Binding("n,right_square_bracket", "app.next_chunk", "Next chunk"),
        Binding("p,left_square_bracket", "app.previous_chunk", "Prev chunk"),
        Binding("E", "app.events", "Events"),
        Binding("q", "app.quit", "Quit"),
        Binding("r", "app.retry_projection", "Retry"),
        Binding("t", "app.toggle_tombstoned", "Deleted"),
        Binding("1", "app.show_tab('chunks')", "Chunks", show=False),
        Binding("2", "app.show_tab('timeline')", "Timeline", show=False),
        Binding("3", "app.show_tab('projection')", "Projection", show=False),
        Binding("w", "app.toggle_watch", "Watch"),
        Binding("d", "app.toggle_dark", "Theme"),
        Binding("ctrl+r", "app.reload", "Reload", show=False),
        Binding("escape", "app.escape", "Back", show=False),
        Binding("tab", "app.focus_pane(1)", "Next pane", show=False),
        Binding("shift+tab", "app.focus_pane(-1)", "Previous pane", show=False),
        Binding("less_than_sign", "app.resize_tree(-1)", "Narrower tree", show=False),
        Binding("greater_than_sign", "app.resize_tree(1)", "Wider tree", show=False),
        Binding("z", "app.toggle_tree", "Tree", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        # The tree pane's size once the user changed it (None: the default for the
        # terminal); kept on the screen, which lives as long as the app.
        self.tree_width: int | None = None
        self.tree_rows: int | None = None
        self.tree_collapsed = False

    @property
    def memlens(self) -> MemlensHost:
        """The app, typed (through :class:`~memlens.tui.host.MemlensHost`: the app imports
        this screen, so the screen cannot import the app)."""
        app = self.app
        assert isinstance(app, MemlensHost)
        return app

    # -- layout -------------------------------------------------------------
    def compose(self) -> ComposeResult:
        """Tree on the left; title, warnings and tabs on the right; status and keys below."""
        yield Header(icon="◆")
        with Horizontal(id="main"):
            with Vertical(id="sidebar"):
                yield Input(placeholder="Filter documents  (/)", id="filter")
                yield Static("", id="filter-info")
                yield DocumentTree(id="tree")
            yield PaneDivider(id="divider")
            with Vertical(id="detail"):
                yield Static("", id="doc-title")
                yield Static("", id="doc-warnings")
                with TabbedContent(id="tabs", initial="tab-chunks"):
                    with TabPane("Chunks [1]", id="tab-chunks"):
                        yield FileMap(id="file-map")
                        yield ChunkView(id="chunks")
                        yield Static("", id="chunk-info")
                    with TabPane("Timeline [2]", id="tab-timeline"):
                        yield TimelineView(id="timeline")
                    with TabPane("Projection [3]", id="tab-projection"):
                        yield ProjectionPanel(id="projection")
        yield StatusBar(id="status")
        yield FittingFooter()

    def on_mount(self) -> None:
        """The widgets exist: the app starts loading."""
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)
        self._apply_layout()
        self.memlens.browser_mounted()

    def _theme_changed(self, theme: Theme) -> None:
        """Textual's own dark/light (the palette's picker) become memlens' readable ones."""
        wanted = memlens_theme(theme.name)
        if wanted != theme.name:
            self.app.theme = wanted
            return
        # Lines drawn from theme variables are resolved when drawn: draw them again.
        self.status_bar.refresh()
        if self.memlens.detail is not None:
            self.render_title(self.memlens.detail)
            self.render_warnings(self.memlens.detail)

    # -- pane sizes -------------------------------------------------------------
    @property
    def narrow(self) -> bool:
        """The one-column layout (tree above detail) is on."""
        return self.size.width < NARROW_BELOW

    def on_resize(self, event: events.Resize) -> None:
        """Switch between side by side and stacked; re-fit the title."""
        self._apply_layout()
        if self.memlens.detail is not None:
            self.call_after_refresh(self.render_title, self.memlens.detail)

    def _apply_layout(self) -> None:
        """Size the tree pane for the terminal, the user's choice and the collapse."""
        narrow = self.narrow
        self.set_class(narrow, "-narrow")
        self.set_class(self.tree_collapsed, "-tree-collapsed")
        sidebar = self.query_one("#sidebar")
        main = self.query_one("#main")
        self.filter_input.compact = narrow
        main.styles.layout = "vertical" if narrow else "horizontal"
        if narrow:
            height = self._main_height()
            rows = self.tree_rows if self.tree_rows is not None else default_tree_rows(height)
            sidebar.styles.width = "100%"
            sidebar.styles.height = clamp_tree_rows(rows, height)
        else:
            width = self.size.width
            cols = self.tree_width if self.tree_width is not None else default_tree_width(width)
            sidebar.styles.width = clamp_tree_width(cols, width)
            sidebar.styles.height = "100%"

    def _main_height(self) -> int:
        # Header, status bar and footer take a row each (the status bar may take more).
        return max(10, self.size.height - 3)

    def resize_tree(self, step: int) -> None:
        """Make the tree pane wider/taller (``step`` 1) or narrower/shorter (-1)."""
        if self.tree_collapsed:
            self.toggle_tree()
            return
        sidebar = self.query_one("#sidebar")
        if self.narrow:
            rows = clamp_tree_rows(sidebar.outer_size.height + step * TREE_ROW_STEP,
                                   self._main_height())
            self.tree_rows = rows
        else:
            self.tree_width = clamp_tree_width(sidebar.outer_size.width + step * TREE_STEP,
                                               self.size.width)
        self._apply_layout()

    def toggle_tree(self) -> None:
        """Hide the tree (the detail takes the whole width) or show it again."""
        self.tree_collapsed = not self.tree_collapsed
        if self.tree_collapsed:
            # Focus leaves the tree before it hides (else Textual moves it to the
            # filter, which would show the tree again).
            focused = self.focused
            if focused is None or self.query_one("#sidebar") in focused.ancestors_with_self:
                self.focus_detail()
        self._apply_layout()
        self.notify("tree hidden: z shows it" if self.tree_collapsed else "tree shown",
                    timeout=2)

    @on(PaneDivider.Dragged)
    def _divider_dragged(self, message: PaneDivider.Dragged) -> None:
        main = self.query_one("#main")
        self.tree_width = clamp_tree_width(message.x - main.region.x, self.size.width)
        self._apply_layout()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Focusing the hidden tree or filter (Tab, ``/``) shows the tree again."""
        if self.tree_collapsed and \
                self.query_one("#sidebar") in event.widget.ancestors_with_self:
            self.toggle_tree()

    @property
    def doc_tree(self) -> DocumentTree:
        """The document tree."""
        return self.query_one("#tree", DocumentTree)

    @property
    def status_bar(self) -> StatusBar:
        """The status bar."""
        return self.query_one("#status", StatusBar)

    @property
    def filter_input(self) -> Input:
        """The fuzzy filter in the sidebar."""
        return self.query_one("#filter", Input)

    @property
    def chunk_view(self) -> ChunkView:
        """The chunk pane."""
        return self.query_one("#chunks", ChunkView)

    # -- navigation -----------------------------------------------------------
    def show_tab(self, name: str) -> None:
        """Switch the detail tab (the focus follows when it was in the old one)."""
        tabs = self.query_one("#tabs", TabbedContent)
        focused = self.focused
        inside = focused is not None and (focused is tabs or tabs in focused.ancestors)
        if inside:
            # Out of the old pane first: hiding a focused list moves the focus to its
            # neighbour in the same pane (the timeline's scroll area), whose focus
            # message then switched TabbedContent back to the old tab.
            self.set_focus(None)
        tabs.active = f"tab-{name}"
        if inside:
            self.call_after_refresh(self.focus_detail)

    def focus_detail(self, tries: int = 4) -> None:
        """Focus the pane of the shown tab. A pane a tab switch has just shown may not
        take the focus yet (Textual skips a widget it does not display yet): while the
        focus is not in the pane, try again after the next refresh, a few times."""
        pane = self.panes()[1]
        if isinstance(pane, ProjectionPanel):
            pane.focus_retry()
        else:
            pane.focus()
        if tries > 1:
            self.call_after_refresh(self._focus_detail_again, tries - 1)

    def _focus_detail_again(self, tries: int) -> None:
        if exit_requested(self.app):
            return
        pane, focused = self.panes()[1], self.focused
        tabs = self.query_one("#tabs", TabbedContent)
        # Nowhere, or still in the tabs but not in the shown pane; a focus the user has
        # moved out of the tabs meanwhile (the tree, the filter) stays where it is.
        if focused is None or (tabs in focused.ancestors
                               and not (focused is pane or pane in focused.ancestors)):
            self.focus_detail(tries)

    def panes(self) -> list[Widget]:
        """What Tab cycles through: the tree, the shown tab's pane, the filter."""
        active = self.query_one("#tabs", TabbedContent).active
        detail = {"tab-timeline": "#revisions", "tab-projection": "#projection"}.get(
            active, "#chunks")
        return [self.doc_tree, self.query_one(detail), self.filter_input]

    def focus_pane(self, step: int) -> None:
        """Focus the next (``step`` 1) or previous (-1) pane; its border lights up."""
        panes = self.panes()
        focused = self.focused
        index = next((i for i, p in enumerate(panes)
                      if focused is not None and (focused is p or p in focused.ancestors)), None)
        if index is None:
            target = panes[0] if step > 0 else panes[-1]
        else:
            target = panes[(index + step) % len(panes)]
        if target is panes[1]:
            self.focus_detail()
        else:
            target.focus()

    def step_chunk(self, forward: bool) -> None:
        """Select the next (or previous) chunk, on the chunks tab."""
        self.show_tab("chunks")
        if forward:
            self.chunk_view.select_next()
        else:
            self.chunk_view.select_previous()

    def escape(self) -> None:
        """Leave the filter (first press) or clear it (second press)."""
        flt = self.filter_input
        if flt.has_focus:
            self.doc_tree.focus()
        elif flt.value:
            flt.value = ""

    def clear_filter_quietly(self) -> None:
        """Empty the filter without starting a filter run."""
        flt = self.filter_input
        if flt.value:
            with flt.prevent(Input.Changed):
                flt.value = ""

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        app = self.memlens
        text = event.value

        def fire() -> None:
            if text == app.filter_text:
                app.load_documents(text, keep=app.current_doc_id)

        app.filter_debounce.start(fire)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self.memlens.action_open_best_match()

    # -- the document list -------------------------------------------------------
    def show_documents(self, message: DocumentsLoaded, keep: int | None) -> None:
        """Put a document list in the tree and count it under the filter."""
        self.doc_tree.load(message.docs, message.warnings, filter_text=message.filter_text,
                           keep=keep)
        info = self.query_one("#filter-info", Static)
        n = len(message.docs)
        repos = len({d.repository for d in message.docs})
        tomb = " incl. deleted" if message.show_tombstoned else ""
        where = f"{repos} repositor{'y' if repos == 1 else 'ies'}{tomb}"
        if message.filter_text.strip():
            info.update(f"{n} match{'es' if n != 1 else ''} in {where}")
        else:
            info.update(f"{n:,} documents in {where}")

    # -- the detail -----------------------------------------------------------------
    def display_status(self, d: DetailView | None) -> str:
        """The status shown for a document: the tree's (it knows "processing") first."""
        if d is None:
            return "-"
        s = self.doc_tree.summary(d.doc_id) or d.summary
        if s is None:
            return "tombstoned" if d.document.tombstoned else d.document.projection.status
        return self.doc_tree.status_of(s)

    def render_title(self, d: DetailView | None) -> None:
        """Path, status, counts and front matter of the shown document."""
        title = self.query_one("#doc-title", Static)
        if d is None:
            title.update("")
            return
        doc = d.document
        status = self.display_status(d)
        repo, path = fit_path(doc.repository, doc.path,
                              title.content_region.width or self.size.width)
        parts: list[Any] = [
            (f"{repo}/", "$text-muted"), (path, "bold"), "\n",
            (f"{glyph(status)} {status}", STATUS_STYLES.get(status, "")),
            f" · {plural(len(d.chunks), 'chunk')} · {human_size(doc.size)}",
        ]
        if doc.doc_type:
            parts.append(f" · type {doc.doc_type}")
        if doc.name:
            parts.append((f" · {doc.name[:40]}", "$text-muted"))
        if d.warnings:
            parts.append((f"  {WARNING_GLYPH} {len(d.warnings)} warning"
                          f"{'s' if len(d.warnings) != 1 else ''}", "$text-warning bold"))
        unreadable = self.doc_tree.unreadable_reason(d.summary) if d.summary else None
        if unreadable and not doc.tombstoned:
            parts.append((f"\n{glyph('failed')} the file on disk could not be read: {unreadable}"
                          " · showing the last good revision", "$text-error"))
        if doc.tombstoned:
            parts.append((f"\ndeleted {timestamp(doc.tombstoned_at)} UTC: not searchable; "
                          "history is in the timeline", "$text-muted"))
        elif doc.description:
            parts.append(("\n" + doc.description[:200], "$text-muted italic"))
        title.update(Content.assemble(*tidy_runs(parts)))

    def render_warnings(self, d: DetailView | None) -> None:
        """The index warnings box (hidden when there are none)."""
        box = self.query_one("#doc-warnings", Static)
        if d is None or not d.warnings:
            box.remove_class("-shown")
            box.update("")
            return
        parts: list[Any] = []
        for i, w in enumerate(d.warnings):
            where = f"line {w.line}: " if w.line else ""
            parts += ["\n" if i else "", (f"{WARNING_GLYPH} {w.kind.replace('_', ' ')}",
                                          "bold $text-warning"), f"  {where}{w.message}"]
        box.update(Content.assemble(*tidy_runs(parts)))
        box.add_class("-shown")

    def render_projection(self, d: DetailView | None) -> None:
        """The projection pane."""
        panel = self.query_one("#projection", ProjectionPanel)
        if d is None:
            panel.show(None, [], self.memlens.clock(), "-")
            return
        s = self.doc_tree.summary(d.doc_id) or d.summary
        why = self.doc_tree.unreadable_reason(s) if s is not None else None
        status = self.display_status(d)
        if why is not None and status == "failed":  # the tree's mark for the file, not
            status = d.document.projection.status  # the projection's own state
        panel.show(d.document, d.history, d.now, status, unreadable=why)

    def render_detail(self, d: DetailView) -> None:
        """Every pane for one document."""
        self.render_title(d)
        self.render_warnings(d)
        select = _chunk_index(d, d.select_ordinal)
        hit = _chunk_index(d, d.hit_ordinal)
        note = "deleted: no chunks (history is in the timeline)" if d.document.tombstoned \
            else "empty document: stored, nothing searchable"
        query = getattr(self.memlens, "hit_query", "") if hit is not None else ""
        terms = {i: spans for i, c in enumerate(d.chunks)
                 if (spans := self.memlens.service.match_spans(c.text, query))} if query else {}
        markers = limit_markers(d)
        self.chunk_view.set_chunks(d.chunks, d.max_tokens, select=select, hit=hit,
                                   empty_note=note, markers=markers, terms=terms)
        self.query_one("#file-map", FileMap).show(
            d.chunks, len(d.document.content),
            selected=self.chunk_view.selected, limits=[off for off, _ in markers])
        self.query_one("#timeline", TimelineView).set_history(
            d.history, d.document.current_revision_id, d.document.active_revision_id)
        self.render_projection(d)

    def show_unreadable(self, s: DocumentSummary | None) -> None:
        """A file with no stored document: one that could not be read (its path and the
        reason), or one the watcher saw and is reading (``processing``)."""
        reading = s is not None and s.status == "processing"
        self.show_empty("the watcher saw this file and is reading it; it is shown once "
                        "stored" if reading else "nothing of this file is stored; fix it "
                        "and save it (the watcher reads it again), or run `memlens ingest`")
        self.query_one("#projection", ProjectionPanel).show_not_stored(
            s.error if s else None, reading=reading)
        if s is None:
            return
        title = self.query_one("#doc-title", Static)
        repo, path = fit_path(s.repository, s.path, title.content_region.width or self.size.width)
        title.update(Content.assemble(
            (f"{repo}/", "$text-muted"), (path, "bold"), "\n",
            (f"{glyph('processing')} being read (not stored yet)", "$text-muted") if reading
            else (f"{glyph('failed')} not ingested: {s.error}", "$text-error")))

    def show_empty(self, note: str) -> None:
        """No document shown: the note instead of a title, empty panes."""
        self.query_one("#doc-title", Static).update(Content.styled(note, "$text-muted"))
        self.render_warnings(None)
        self.chunk_view.clear_chunks(note)
        self.query_one("#file-map", FileMap).show([], 0)
        self.query_one("#chunk-info", Static).update("")
        self.query_one("#timeline", TimelineView).set_history([], None, None)
        self.render_projection(None)

    @on(FileMap.ChunkClicked)
    def _map_clicked(self, message: FileMap.ChunkClicked) -> None:
        self.chunk_view.select(message.index)
        self.chunk_view.focus()

    @on(ChunkView.ChunkSelected)
    def _chunk_selected(self, message: ChunkView.ChunkSelected) -> None:
        self.query_one("#file-map", FileMap).select(message.index)
        info = self.query_one("#chunk-info", Static)
        d = self.memlens.detail
        if d is None or message.index < 0 or message.index >= len(d.chunks):
            info.update("")
            return
        c = d.chunks[message.index]
        node = d.nodes.get(c.ordinal)
        node_txt = f"node {node}" if node is not None else "node – (not projected)"
        head = heading_label(c.heading_path, max(20, info.size.width - 48),
                             start_char=c.start_char)
        info.update(Content.assemble(*tidy_runs([
            (f"#{c.ordinal}", "bold"), f"/{len(d.chunks)}  ",
            (f"{c.tokens}/{d.max_tokens} tok", "$text-error" if c.tokens > d.max_tokens else ""),
            f" · overlap {c.overlap_chars} chars · ", (head, "italic"),
            (f" · {c.reason}" if c.reason else "", "$text-muted"), "\n",
            ("chars ", "$text-muted"), f"{c.start_char}–{c.end_char}",
            ("  bytes ", "$text-muted"), f"{c.start_byte}–{c.end_byte}",
            ("  hash ", "$text-muted"), short_hash(c.hash, 16),
            "  ", (node_txt, "$text-muted" if node is None else "")])))


def fit_path(repository: str, path: str, room: int) -> tuple[str, str]:
    """Repository and path shortened from the middle (the repository first) so that
    ``repository/path`` fits ``room`` cells on one line instead of folding mid-name."""
    if len(repository) + 1 + len(path) <= room:
        return repository, path
    repository = shorten_middle(repository, max(8, room - 1 - len(path)))
    return repository, shorten_middle(path, max(8, room - 1 - len(repository)))


def _chunk_index(d: DetailView, ordinal: int | None) -> int | None:
    if ordinal is None:
        return None
    return next((i for i, c in enumerate(d.chunks) if c.ordinal == ordinal), None)


def limit_markers(d: DetailView) -> list[tuple[int, str]]:
    """Where Claude stops reading an over-long index: (offset of that line, label)."""
    wanted = {w.line: w for w in d.warnings if w.kind in ("too_long", "too_large") and w.line}
    if not wanted:
        return []
    out: list[tuple[int, str]] = []
    offset = 0
    for n, line in enumerate(d.document.content.splitlines(keepends=True), 1):
        w = wanted.get(n)
        if w is not None:
            limit = "200-line" if w.kind == "too_long" else "25 KB"
            out.append((offset, f"Claude stops loading here: line {n} ({limit} limit)"))
        offset += len(line)
    return out
