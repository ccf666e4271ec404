"""Live search: results update as you type.

Each keystroke restarts a 100 ms debounce timer; when it fires, one *exclusive*
thread worker runs the query (a newer query cancels the older worker). A worker
that was overtaken may still finish, so a result is applied only if its query
and mode still match the input — a slow query never overwrites a newer one.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.css.styles import RulesMap
from textual.screen import Screen
from textual.widgets import Input, OptionList, Select, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from memlens.core.types import MODES, HitSource, SearchHit
from memlens.tui.clipboard import chunk_clip, copy_note
from memlens.tui.event_hooks import EventsApp, failure_detail, failure_sentence
from memlens.tui.messages import HitSourceLoaded, SearchOutcome, SearchResults
from memlens.tui.widgets.debounce import Debouncer
from memlens.tui.widgets.fmt import heading_label
from memlens.tui.widgets.footer import FittingFooter
from memlens.tui.widgets.hit_preview import HitPreview, editor_command, preview_content, short_repositories
from memlens.tui.widgets.search_info import info_line as info_line

if TYPE_CHECKING:
    from memlens.core.service import MemoryService

DEBOUNCE_SECONDS = 0.1
"""Quiet time after a keystroke before the query runs. Keys of a fast burst (under
100 ms apart, ~120 words a minute) share one search; at ordinary typing speed (150-250
ms between keys) a search ran after nearly every key with the former 150 ms as well,
which only added 50 ms to every result. A search costs 5-40 ms of CPU at 100,000
chunks, and an overtaken one is never shown."""
RESULTS = 20
NARROW = 100
"""Below this width the preview sits under the results instead of beside them."""


@dataclass
class SearchState:
    """The words and the mode of the last search: kept by the app between visits to
    the search screen, which updates them (a mode switch, leaving the screen)."""

    query: str = ""
    mode: str = "hybrid"


def next_mode(mode: str) -> str:
    """hybrid → lexical → vector → hybrid."""
    order = ("hybrid", "lexical", "vector")
    return order[(order.index(mode) + 1) % len(order)] if mode in order else "hybrid"


def snippet_content(hit: SearchHit) -> Content:
    """The snippet on one line with the matched spans highlighted."""
    # Same length replacements keep the highlight offsets valid.
    text = hit.snippet.replace("\r", " ").replace("\n", " ").replace("\t", " ")
    spans = sorted(hit.highlights)
    # The searchable text starts with the heading path, which the first line shows already.
    prefix = " > ".join(hit.heading_path)
    if prefix and text.startswith(prefix):
        cut = len(prefix)
        while cut < len(text) and text[cut] == " ":
            cut += 1
        text = text[cut:]
        spans = [(a - cut, b - cut) for a, b in spans if b > cut]
    parts: list[Any] = []
    pos = 0
    for a, b in spans:
        a, b = max(a, pos), min(b, len(text))
        if a >= b:
            continue
        parts.append(text[pos:a])
        parts.append((text[a:b], "bold reverse $text-warning"))
        pos = b
    parts.append(text[pos:])
    return Content.assemble(*parts)


CLOSEST_DIVIDER = "── closest by meaning: no word of the query occurs in these ──"


def hit_content(n: int, hit: SearchHit) -> Content:
    """Two lines: rank, document, chunk and signal ranks; then the snippet.

    A hit that is only closest by meaning (``hit.match == "closest"``) is dimmed."""
    head = heading_label(hit.heading_path, 48, start_char=hit.start_char)
    ranks = []
    for sig in ("lexical", "vector"):
        r = hit.ranks.get(sig)
        ranks.append(f"{sig[:3]} {r if r is not None else '–'}")
    content = Content.assemble(
        (f"{n:>2}. ", "bold"),
        (f"{hit.repository}/", "$text-muted"),
        (hit.path, "bold"),
        (f" #{hit.ordinal} ", "$text-accent"),
        (head, "italic"),
        (f"   score {hit.score:.4f} · {' · '.join(ranks)}"
         + ("" if hit.match == "lexical" else f" · {hit.match}"), "$text-muted"),
        "\n    ",
        snippet_content(hit),
    )
    return content if hit.is_match else content.stylize("dim")


def result_options(hits: list[SearchHit]) -> tuple[list[Option], list[int]]:
    """Options for the result list (a disabled divider before the first hit that is
    only closest by meaning) and, per hit, the index of its option."""
    options: list[Option] = []
    where: list[int] = []
    for i, h in enumerate(hits, 1):
        if not h.is_match and (i == 1 or hits[i - 2].is_match):
            options.append(Option(Content.styled(CLOSEST_DIVIDER, "$text-muted"),
                                  id="closest-divider", disabled=True))
        where.append(len(options))
        options.append(Option(hit_content(i, h), id=str(i)))
    return options, where


def option_fit(ol: OptionList) -> tuple[RulesMap, int] | None:
    """The rules and the width the result list measures an option's height with
    (``OptionList._update_lines``: the width left of the scroll bar's gutter, less the
    options' padding), read on the event loop as a search starts (the gutter is stable);
    None before the list has a width (a screen shown again: issue 42's width-0 error)."""
    padding = ol.get_component_styles("option-list--option").padding
    styles = ol.styles  # the rules Content.get_height reads
    rules = RulesMap(line_pad=styles.line_pad, text_overflow=styles.text_overflow,
                     text_wrap=styles.text_wrap)
    width = ol.scrollable_content_region.width - padding.width
    return (rules, width) if width > 0 else None


def measured_options(hits: list[SearchHit], fit: tuple[RulesMap, int] | None,
                     ) -> tuple[list[Option], list[int]]:
    """:func:`result_options` with each option's height measured at ``fit`` (the search
    worker calls it). A ``Content`` keeps its last height, so the result list, adding the
    options on the event loop at the same width, does not wrap every option again to count
    its lines (8-9 ms of a 12 ms results handler at 20 hits). At another width (the list
    was resized meanwhile) it measures them itself, as before."""
    options, where = result_options(hits)
    if fit is not None:
        rules, width = fit
        for option in options:
            prompt = option.prompt
            if isinstance(prompt, Content):
                prompt.get_height(rules, width)
    return options, where


class SearchScreen(Screen["SearchHit | None"]):
    """Search active memory; Enter opens the hit in the chunk view."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back"),
        Binding("ctrl+t", "cycle_mode", "Mode"),
        Binding("ctrl+g", "toggle_projects", "All projects"),
        Binding("down", "cursor(1)", "Next hit", show=False),
        Binding("up", "cursor(-1)", "Previous hit / recall", show=False),
        Binding("enter", "open", "Open hit", priority=False),
        Binding("e", "edit", "Edit"),
        Binding("y", "copy", "Copy"),
        Binding("ctrl+f", "filters", "Filters"),
        Binding("x", "explain", "Explain", show=False),
    ]

    DEFAULT_CSS = """
    SearchScreen {
        & #search-box { height: auto; padding: 0 1; }
        & #search-row { height: 3; }
        & #search-input { width: 1fr; }
        & #search-mode { width: auto; padding: 1 1 0 1; }
        & #search-info { height: 1; width: 1fr; color: $text-muted; padding: 0 1; }
        & #search-body { height: 1fr; }
        & #search-results { height: 1fr; width: 3fr; border: none; scrollbar-gutter: stable; }
        & HitPreview { width: 2fr; height: 1fr; }
        & #search-filters { height: 1; padding: 0 1; }
        & #search-filters Static { width: auto; color: $text-muted; }
        & #search-filters Select { width: 1fr; max-width: 40; margin: 0 1; }
        &.-narrow #search-body { layout: vertical; }
        &.-narrow #search-results { width: 1fr; height: 1fr; }
        &.-narrow HitPreview { width: 1fr; height: 40%; border-left: none;
                               border-top: hkey $foreground 20%; }
    }
    """

    def __init__(self, service: MemoryService, state: SearchState | None = None, *,
                 show_timings: bool = True) -> None:
        super().__init__()
        self.service = service
        self.show_timings = show_timings  # off in snapshots (latency varies run to run)
        self.state = state if state is not None else SearchState()
        self.initial_query = self.state.query
        self.mode = self.state.mode if self.state.mode in MODES else "hybrid"
        self.hits: list[SearchHit] = []
        self._option_of_hit: list[int] = []
        self.all_projects = False
        self._history: list[str] | None = None  # recent searches, read on first recall
        self._recall_at: int | None = None
        self.last: SearchOutcome | None = None
        self.debouncer = Debouncer(self, DEBOUNCE_SECONDS)
        self.repository: str | None = None  # the filters (None: any)
        self.doc_type: str | None = None
        self._sources: dict[tuple[int, int | None, int], HitSource | None] = {}

    def compose(self) -> ComposeResult:
        """Input and mode on top, status line, then the results."""
        with Vertical(id="search-box"):
            with Horizontal(id="search-row"):
                yield Input(value=self.initial_query, placeholder="Search memory…",
                            id="search-input")
                yield Static(self._mode_content(), id="search-mode")
            yield Static("type to search · ctrl+t mode · ctrl+g all projects · ctrl+f filters"
                         " · enter opens · tab, then e edits, y copies",
                         id="search-info")
        with Horizontal(id="search-body"):
            yield OptionList(id="search-results")
            yield HitPreview(id="search-preview")
        with Horizontal(id="search-filters"):
            yield Static("filter")
            yield Select[str]([], prompt="any repository", compact=True, id="filter-repository")
            yield Select[str]([], prompt="any type", compact=True, id="filter-type")
        yield FittingFooter()

    def on_mount(self) -> None:
        """Focus the input and run the initial query, if any."""
        self.query_one("#search-input", Input).focus()
        self.set_class(self.app.size.width < NARROW, "-narrow")
        self.load_history()
        self.load_facets()
        if self.initial_query.strip():
            self._start(self.initial_query)

    def _mode_content(self) -> Content:
        parts: list[Any] = ["mode: "]
        for m in ("hybrid", "lexical", "vector"):
            if m == self.mode:
                parts.append((f"[{m}]", "bold reverse $text-accent"))
            else:
                parts.append((f" {m} ", "$text-muted"))
            parts.append(" ")
        return Content.assemble(*parts)

    @property
    def query_text(self) -> str:
        """What is in the input now."""
        return self.query_one("#search-input", Input).value

    # -- typing -------------------------------------------------------------
    @on(Input.Changed, "#search-input")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        value = event.value
        if self._recall_at is not None and self._history and \
                value != self._history[self._recall_at]:
            self._recall_at = None  # typing leaves the history
        self.debouncer.start(lambda: self._start(value))

    @on(Input.Submitted, "#search-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_open()

    def _info(self, content: str | Content) -> None:
        """Set the status line. Its box is fixed (one line, the row's width), so the
        screen is not laid out again for it (Static.update asks for a layout by default:
        a reflow of the whole screen at every search)."""
        self.query_one("#search-info", Static).update(content, layout=False)

    def _start(self, query: str) -> None:
        if query != self.query_text:
            return  # superseded while the timer ran
        if not query.strip():
            self.hits = []
            self.query_one("#search-results", OptionList).clear_options()
            self._info("type to search")
            return
        self._info(f"searching ({self.mode})…")
        self.run_search(query, self.mode,
                        option_fit(self.query_one("#search-results", OptionList)))

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def run_search(self, query: str, mode: str,
                   fit: tuple[RulesMap, int] | None = None) -> None:
        """Run one query in a thread and post the outcome, with the result list's options
        built and measured at ``fit`` (:func:`option_fit`) off the event loop."""
        service = self.service
        t0 = time.perf_counter()
        scope = (self.repository, self.doc_type)
        try:
            res = service.search(query, mode=mode, k=RESULTS, all_projects=self.all_projects,
                                 repository=scope[0], doc_type=scope[1])
            out = SearchOutcome(query, mode, res, time.perf_counter() - t0, notes=res.notes,
                                scope=scope)
            out.options = measured_options(list(res.hits), fit)
        except Exception as exc:  # shown in the UI, never a crash
            out = SearchOutcome(query, mode, None, time.perf_counter() - t0,
                                error=failure_detail(exc), scope=scope)
        finally:
            service.release_thread_connection()
        if not get_current_worker().is_cancelled:
            self.post_message(SearchResults(out))

    @on(SearchResults)
    def _results(self, message: SearchResults) -> None:
        out = message.outcome
        if out.query != self.query_text or out.mode != self.mode \
                or out.scope != (self.repository, self.doc_type):
            return  # stale: the input (or a filter) moved on
        self.last = out
        ol = self.query_one("#search-results", OptionList)
        if out.error:
            self.hits = []
            ol.clear_options()
            self._info(Content.styled(failure_sentence("search"), "$text-error"))
            if isinstance(self.app, EventsApp):  # the detail: in the events pane only
                self.app.notify(failure_sentence("search"), title="error", severity="error", detail=out.error)
            return
        assert out.result is not None
        self.hits = list(out.result.hits)
        options, self._option_of_hit = out.options or result_options(self.hits)
        ol.clear_options()
        ol.add_options(options)
        if self.hits:
            ol.highlighted = self._option_of_hit[0]
        timing = f" · {out.elapsed * 1000:.0f} ms" if self.show_timings \
            else ""
        self._info(info_line(self.hits, out.mode, timing, out.notes,
                         out.result.preferred_repository))

    # -- actions --------------------------------------------------------------
    def action_cycle_mode(self) -> None:
        """Switch hybrid → lexical → vector and search again."""
        self.set_mode(next_mode(self.mode))

    def set_mode(self, mode: str) -> None:
        """Use ``mode`` and re-run the current query."""
        self.mode = mode
        self.state.mode = mode
        self.query_one("#search-mode", Static).update(self._mode_content())
        self._start(self.query_text)

    def action_toggle_projects(self) -> None:
        """Rank the current project first (default) or treat all projects alike."""
        self.all_projects = not self.all_projects
        self.notify("all projects ranked alike" if self.all_projects
                    else "current project ranked first", timeout=2)
        self._start(self.query_text)

    def _hit_at(self, option_index: int | None) -> int | None:
        if option_index is None or option_index not in self._option_of_hit:
            return None
        return self._option_of_hit.index(option_index)

    def on_click(self, event: Any) -> None:
        """Clicking the mode indicator switches mode."""
        if getattr(event, "widget", None) is self.query_one("#search-mode"):
            self.action_cycle_mode()

    def action_cursor(self, delta: int) -> None:
        """Move the highlight in the results while typing; in an empty box (or while
        stepping through history) ``↑``/``↓`` recall earlier searches."""
        ol = self.query_one("#search-results", OptionList)
        box = self.query_one("#search-input", Input)
        if not box.value.strip() or self._recall_at is not None:
            if self._recall(delta):
                return
        if not self.hits:
            return
        cur = self._hit_at(ol.highlighted)
        nxt = max(0, min(len(self.hits) - 1, (cur if cur is not None else -1) + delta))
        ol.highlighted = self._option_of_hit[nxt]

    def _recall(self, delta: int) -> bool:
        """Put an earlier search in the box (``delta`` -1 = older); False if none."""
        if not self._history:
            return False
        at = -1 if self._recall_at is None else self._recall_at
        at = at + (1 if delta < 0 else -1)
        if at < 0:
            self._recall_at = None
            self.query_one("#search-input", Input).value = ""
            return True
        at = min(at, len(self._history) - 1)
        self._recall_at = at
        box = self.query_one("#search-input", Input)
        box.value = self._history[at]
        box.cursor_position = len(box.value)
        return True

    def _remember(self) -> None:
        """Keep the finished search for later recall (best effort)."""
        query = self.query_text.strip()
        if not query:
            return
        service, mode = self.service, self.mode

        def keep() -> None:  # in a thread: the event loop never runs SQL
            try:
                service.remember_search(query, mode, "tui")
            except Exception as exc:  # a locked or read-only database must not matter
                self.app.log.warning(f"search not kept in history: {exc}")
            finally:
                service.release_thread_connection()

        self.app.run_worker(keep, thread=True, group="search-history", exit_on_error=False)

    @work(thread=True, exclusive=True, group="search-recall", exit_on_error=False)
    def load_history(self) -> None:
        """Read the recent searches once, for ``↑`` recall."""
        service = self.service
        try:
            found = service.recent_searches()
        except Exception:  # no recall is better than a crash
            found = []
        finally:
            service.release_thread_connection()
        self.app.call_from_thread(setattr, self, "_history", found)

    def action_open(self) -> None:
        """Open the highlighted hit."""
        ol = self.query_one("#search-results", OptionList)
        if not self.hits:
            return
        idx = self._hit_at(ol.highlighted)
        self.state.query = self.query_text
        self._remember()
        self.dismiss(self.hits[idx if idx is not None else 0])

    @on(OptionList.OptionSelected, "#search-results")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        idx = self._hit_at(event.option_index)
        if idx is not None:
            self.state.query = self.query_text
            self._remember()
            self.dismiss(self.hits[idx])

    # -- filters, preview, editor, clipboard -------------------------------------
    def on_resize(self, event: events.Resize) -> None:
        """Preview beside the results when there is room, under them otherwise."""
        self.set_class(event.size.width < NARROW, "-narrow")

    @work(thread=True, exclusive=True, group="search-facets", exit_on_error=False)
    def load_facets(self) -> None:
        """Read the repositories and document types for the filters."""
        service = self.service
        try:
            repos, types = service.search_facets()
        finally:
            service.release_thread_connection()
        self.app.call_from_thread(self._set_facets, repos, types)

    def _set_facets(self, repos: list[str], types: list[str]) -> None:
        names = short_repositories(repos)
        self.query_one("#filter-repository", Select).set_options(
            [(names[r], r) for r in repos])
        self.query_one("#filter-type", Select).set_options([(t, t) for t in types])

    @on(Select.Changed)
    def _filter_changed(self, event: Select.Changed) -> None:
        event.stop()
        value = None if event.value is Select.NULL else str(event.value)
        if event.select.id == "filter-repository":
            self.repository = value
        else:
            self.doc_type = value
        self._start(self.query_text)

    def action_filters(self) -> None:
        """Move the focus to the repository filter (Tab goes on to the type filter)."""
        self.query_one("#filter-repository", Select).focus()

    def _highlighted_hit(self) -> SearchHit | None:
        idx = self._hit_at(self.query_one("#search-results", OptionList).highlighted)
        return self.hits[idx] if idx is not None and idx < len(self.hits) else None

    @staticmethod
    def _key(hit: SearchHit) -> tuple[int, int | None, int]:
        return (hit.document_id, hit.chunk_id, hit.ordinal)

    @on(OptionList.OptionHighlighted, "#search-results")
    def _hit_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        self._need_source("preview")

    def _need_source(self, purpose: str) -> None:
        """Use the hit's chunk for ``purpose`` (read it in a thread first if needed)."""
        hit = self._highlighted_hit()
        if hit is None:
            if purpose == "preview":
                self.query_one(HitPreview).show("")
            return
        key = self._key(hit)
        if key in self._sources:
            self._use_source(key, self._sources[key], purpose)
        else:
            self.read_source(hit, purpose)

    @work(thread=True, group="search-source", exit_on_error=False)
    def read_source(self, hit: SearchHit, purpose: str) -> None:
        """Read a hit's whole chunk and its line in the file."""
        service = self.service
        try:
            src = service.hit_source(hit.document_id, hit.chunk_id, hit.ordinal)
        finally:
            service.release_thread_connection()
        self.post_message(HitSourceLoaded(self._key(hit), src, purpose))

    @on(HitSourceLoaded)
    def _source_loaded(self, message: HitSourceLoaded) -> None:
        self._sources[message.key] = message.source
        hit = self._highlighted_hit()
        if message.purpose != "preview" or (hit is not None and self._key(hit) == message.key):
            self._use_source(message.key, message.source, message.purpose)

    def _use_source(self, key: tuple[int, int | None, int], src: HitSource | None,
                    purpose: str) -> None:
        if src is None:
            if purpose == "preview":
                self.query_one(HitPreview).show("this chunk is no longer stored")
            else:
                self.notify("this hit is no longer stored; search again", severity="warning")
            return
        if purpose == "preview":
            spans = self.service.match_spans(src.text, self.query_text)
            self.query_one(HitPreview).show(*preview_content(src, spans))
        elif purpose == "copy":
            self.app.copy_to_clipboard(chunk_clip(src))
            note, seconds = copy_note(f"{src.path} #{src.ordinal}", len(src.text))
            self.notify(note, title="copy", timeout=seconds)
        elif purpose == "edit":
            self._edit(src)

    def action_copy(self) -> None:
        """Copy the highlighted hit's whole chunk (with where it is) to the clipboard."""
        self._need_source("copy")

    def action_edit(self) -> None:
        """Open the highlighted hit's file in ``$VISUAL``/``$EDITOR`` at the chunk's line."""
        self._need_source("edit")

    def _edit(self, src: HitSource) -> None:
        if src.file is None:
            self.notify(f"{src.path} is no longer on disk", severity="warning")
            return
        argv = editor_command(src.file, src.line)
        if argv is None:
            self.notify("set $EDITOR (or $VISUAL) to open files from memlens",
                        severity="warning")
            return
        try:
            if self.app.is_headless:  # tests: nothing to hand the terminal over from
                rc = subprocess.run(argv, check=False).returncode
            else:
                with self.app.suspend():
                    rc = subprocess.run(argv, check=False).returncode
        except (OSError, SuspendNotSupported) as exc:
            what = "this terminal cannot hand over to an editor" \
                if isinstance(exc, SuspendNotSupported) else f"could not start {argv[0]}: {exc}"
            self.notify(what, severity="error")
            return
        if rc:
            self.notify(f"{argv[0]} exited with status {rc}", severity="warning")
        else:
            self.notify(f"opened {src.path} at line {src.line}", timeout=3)

    def action_explain(self) -> None:
        """Why the highlighted hit ranks here, and why not another document (issue 45)."""
        hit = self._highlighted_hit()
        if hit is not None:
            from memlens.tui.screens.explain import ExplainScreen

            self.app.push_screen(ExplainScreen(
                self.service, self.query_text, self.mode, hit, k=RESULTS,
                all_projects=self.all_projects, repository=self.repository,
                doc_type=self.doc_type))

    def action_close(self) -> None:
        """Back to the browser without opening anything."""
        self.state.query = self.query_text
        if self.hits:
            self._remember()
        self.dismiss(None)
