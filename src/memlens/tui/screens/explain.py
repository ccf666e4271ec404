"""The explain panel (issue 45): why a search hit ranks where it does, and why not another
document.

Opened with ``x`` on a highlighted search result. It shows, in words, what the door's
:meth:`~memlens.core.service.MemoryService.explain` read from the ranking itself: the
weights the fusion chose for this query and why, the hit's score in parts (its words:
bm25 rank, score and the query words it holds; its meaning: cosine rank and score), any
index credit, and what it would need to rank first. Below, "why not": type a document as
in the ``/`` finder (the same fuzzy finder, :class:`~memlens.core.types.FilterIndex`),
pick it (or type a path, ``path#chunk`` for one chunk) and Enter: where it stands on each
side, why it is not shown and what it would need. The searches run in thread workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from memlens.core.types import ExplainError, Explanation, FilterIndex, SearchHit, Standing, WhyNot
from memlens.tui.widgets.debounce import Debouncer
from memlens.tui.widgets.footer import FittingFooter

if TYPE_CHECKING:
    from memlens.core.service import MemoryService

SUGGESTIONS = 6


def standing_content(st: Standing, title: str) -> list[Content]:
    """A chunk's standing: a bold title line, then its lines in words."""
    out = [Content.styled(title, "bold $text-accent")]
    head, *rest = st.lines
    out.append(Content.styled(head, "bold"))
    out += [Content(f"  {line}") for line in rest]
    return out


def explanation_content(e: Explanation, hit: Standing | None, why: WhyNot | None) -> Content:
    """The top of the panel: the hit explained, what it would need, then how the fusion
    chose its weights for this query."""
    parts: list[Content] = [Content.assemble(
        ("query ", "$text-muted"), (repr(e.query), "bold"),
        (f" · {e.mode}" + (f" · fusion {e.method}" if e.method else ""), "$text-muted"))]
    if hit is not None and hit.position is not None:
        parts += standing_content(hit, f"Why #{hit.position} ranks here")
    if why is not None:
        parts.append(Content.styled("  To rank first:", "bold"))
        parts += [Content(f"    {n}") for n in why.needs]
    return Content("\n").join(parts)


def weights_content(e: Explanation) -> Content:
    """How the fusion chose its weights for this query."""
    parts = [Content.styled("How the weights were chosen for this query", "bold $text-accent")]
    parts += [Content(f"  {w}") for w in e.weights]
    return Content("\n").join(parts)


def why_not_content(why: WhyNot) -> Content:
    """The "why not" section for a picked document."""
    parts = standing_content(why.standing, f"Why not {why.target}")
    parts.insert(2, Content.styled(f"  {why.reason}", "$text-warning"))
    parts.append(Content.styled("  To rank first:", "bold"))
    parts += [Content(f"    {n}") for n in why.needs]
    return Content("\n").join(parts)


class ExplainScreen(ModalScreen[None]):
    """Why this hit ranks here; why not another document. Esc closes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("down", "suggest(1)", "Next match", show=False),
        Binding("up", "suggest(-1)", "Previous match", show=False),
        Binding("pagedown", "scroll(1)", "Scroll"),
        Binding("pageup", "scroll(-1)", "Scroll", show=False),
    ]

    DEFAULT_CSS = """
    ExplainScreen {
        align: center middle;
        & #explain-panel { width: 96%; height: 96%; border: round $accent; padding: 0 1;
                           background: $surface; }
        & #explain-scroll { height: 1fr; }
        & #explain-why-not { margin-top: 1; height: auto; display: none; }
        & #explain-why-not.-shown { display: block; }
        & #explain-weights { margin-top: 1; }
        & #explain-input { margin-top: 1; }
        & #explain-suggestions { height: auto; max-height: 6; border: none; display: none; }
        & #explain-suggestions.-shown { display: block; }
    }
    """

    def __init__(self, service: MemoryService, query: str, mode: str, hit: SearchHit, *,
                 k: int, all_projects: bool = False, repository: str | None = None,
                 doc_type: str | None = None) -> None:
        super().__init__()
        self.service = service
        self.search_query = query
        self.mode = mode
        self.hit = hit
        self.k = k
        self.all_projects = all_projects
        self.repository = repository
        self.doc_type = doc_type
        self.finder: FilterIndex | None = None
        self.picks: list[str] = []
        self.debouncer = Debouncer(self, 0.1)

    def compose(self) -> ComposeResult:
        with Vertical(id="explain-panel") as panel:
            panel.border_title = "Explain"
            panel.border_subtitle = "pgup/pgdn scroll · ↑↓ enter: why not · esc close"
            with VerticalScroll(id="explain-scroll"):
                yield Static("explaining…", id="explain-hit")
                yield Static("", id="explain-why-not")
                yield Static("", id="explain-weights")
            yield Input(placeholder="why not…: a document as in / (path, name, heading) — enter",
                        id="explain-input")
            yield OptionList(id="explain-suggestions")
        yield FittingFooter()

    def on_mount(self) -> None:
        self.query_one("#explain-input", Input).focus()
        h = self.hit
        self.explain_target(f"{h.repository}/{h.path}#{h.ordinal}", own=True)
        self.load_finder()

    @work(thread=True, group="explain", exit_on_error=False)
    def explain_target(self, target: str, own: bool = False) -> None:
        """Explain the search with ``target`` as its why-not (``own``: the hit itself)."""
        service = self.service
        try:
            e = service.explain(self.search_query, mode=self.mode, k=self.k,
                                all_projects=self.all_projects, repository=self.repository,
                                doc_type=self.doc_type, why_not=target)
            self.app.call_from_thread(self._show, e, own)
        except ExplainError as exc:
            self.app.call_from_thread(self._failed, str(exc))
        except Exception as exc:  # shown in the panel, never a crash
            self.app.call_from_thread(self._failed, f"could not explain: {exc}")
        finally:
            service.release_thread_connection()

    def _show(self, e: Explanation, own: bool) -> None:
        why = e.why_not
        if own:
            st = why.standing if why is not None else None
            self.query_one("#explain-hit", Static).update(explanation_content(e, st, why))
            self.query_one("#explain-weights", Static).update(weights_content(e))
        elif why is not None:
            self._why_not(why_not_content(why))

    def _why_not(self, content: Content) -> None:
        """Show the why-not section, scrolled into view, the finder's list closed."""
        section = self.query_one("#explain-why-not", Static)
        section.update(content)
        section.set_class(True, "-shown")
        self.picks = []
        self.query_one("#explain-suggestions", OptionList).set_class(False, "-shown")
        self.call_after_refresh(self.query_one("#explain-scroll", VerticalScroll).scroll_to_widget,
                                section, animate=False, top=True)

    def _failed(self, message: str) -> None:
        self._why_not(Content.styled(message.removeprefix("--why-not: "), "$text-error"))

    @work(thread=True, exclusive=True, group="explain-finder", exit_on_error=False)
    def load_finder(self) -> None:
        """The ``/`` finder's document index, built once for the suggestions."""
        service = self.service
        try:
            index = service.build_filter_index()
        finally:
            service.release_thread_connection()
        self.app.call_from_thread(setattr, self, "finder", index)

    @on(Input.Changed, "#explain-input")
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        value = event.value
        self.debouncer.start(lambda: self.suggest(value))

    @work(thread=True, exclusive=True, group="explain-suggest", exit_on_error=False)
    def suggest(self, text: str) -> None:
        """The finder's best matches for ``text`` (ranked in a thread, as the ``/`` box)."""
        finder = self.finder
        found = finder.filter(text, limit=SUGGESTIONS) if finder and text.strip() else []
        picks = [f"{d.repository}/{d.path}" for d, _ in found]
        self.app.call_from_thread(self._suggestions, text, picks)

    def _suggestions(self, text: str, picks: list[str]) -> None:
        if text != self.query_one("#explain-input", Input).value:
            return  # the box moved on
        self.picks = picks
        ol = self.query_one("#explain-suggestions", OptionList)
        ol.clear_options()
        ol.add_options([Option(p) for p in picks])
        ol.set_class(bool(picks), "-shown")
        if picks:
            ol.highlighted = 0

    def action_suggest(self, delta: int) -> None:
        """Move the highlight among the finder's matches."""
        ol = self.query_one("#explain-suggestions", OptionList)
        if self.picks:
            at = ol.highlighted if ol.highlighted is not None else -delta
            ol.highlighted = max(0, min(len(self.picks) - 1, at + delta))

    @on(Input.Submitted, "#explain-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        ol = self.query_one("#explain-suggestions", OptionList)
        typed = event.value.strip()
        pick = self.picks[ol.highlighted] if self.picks and ol.highlighted is not None else None
        # a typed path (or path#chunk) that is not the finder's text goes as it is
        target = typed if "#" in typed or pick is None else pick
        if target:
            self._ask(target)

    @on(OptionList.OptionSelected, "#explain-suggestions")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._ask(self.picks[event.option_index])

    def _ask(self, target: str) -> None:
        self.query_one("#explain-why-not", Static).update(
            Content.styled(f"why not {target}…", "$text-muted"))
        self.explain_target(target)

    def action_scroll(self, direction: int) -> None:
        """Page the explanation (the input keeps the focus)."""
        box = self.query_one("#explain-scroll", VerticalScroll)
        if direction > 0:
            box.scroll_page_down(animate=False)
        else:
            box.scroll_page_up(animate=False)

    def action_close(self) -> None:
        self.dismiss(None)
