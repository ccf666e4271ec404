"""The rechunk dialog: pick a chunker config and preview it before anything is written.

The preview (``MemoryService.preview_rechunk``) runs in a thread worker on every
change and shows the proposed boundaries beside the current ones, with chunk
count and min/median/max tokens. Apply returns a :class:`RechunkRequest`;
Cancel (or Escape) returns ``None`` and writes nothing. The choice is remembered
(for this document, or for all documents) so later edits and re-ingests keep it;
"Reset" forgets it and goes back to what applies above it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static, Switch
from textual.worker import get_current_worker

from memlens.core.types import STRATEGIES, Chunk, ChunkerConfig, ChunkerConfigError

if TYPE_CHECKING:  # resolving it loads the projection and the redaction rules (start-up)
    from memlens.core.service import MemoryService
    from memlens.core.types import QueryEffect

from memlens.tui.messages import PreviewReady, RechunkChoiceLoaded
from memlens.tui.widgets.debounce import Debouncer
from memlens.tui.widgets.fmt import heading_label, size_bar, tidy_runs, token_stats

PREVIEW_DEBOUNCE = 0.1
ORIGINS = {"document": "this document's rechunk", "repository": "this repository's rechunk",
           "all": "a rechunk of all documents", "settings": "settings (config file or default)"}


@dataclass(frozen=True)
class RechunkRequest:
    """What the user asked for: a config, for one document or for all."""

    config: ChunkerConfig
    all_documents: bool
    doc_id: int | None
    reset: bool = False  # forget the remembered choice instead of applying ``config``


def short_reason(reason: str) -> str:
    """``window 3/7`` for ``window 3/7 of "Backfill"`` (the heading is on the row)."""
    return reason.split(" of ", 1)[0] if reason.startswith("window ") else reason


_ARROWS = {"better": ("▲", "$text-success"), "worse": ("▼", "$text-error"),
           "found": ("▲", "$text-success"), "lost": ("▼", "$text-error"),
           "same": ("=", "$text-muted")}


def effect_content(effects: list[QueryEffect], limit: int = 6) -> Content:
    """Your recent searches replayed: this document's rank now → with the proposal."""
    if not effects:
        return Content.styled("effect on search: no recent searches to replay yet "
                              "(searches you finish are kept; [search] history)", "$text-muted")
    parts: list[Any] = [("effect on your recent searches (lexical rank of this document, "
                         "now → proposed): ", "$text-muted")]
    for i, e in enumerate(effects[:limit]):
        arrow, style = _ARROWS[e.change]
        now = "–" if e.before is None else f"#{e.before}"
        then = "–" if e.after is None else f"#{e.after}"
        parts += [(" · " if i else "", "$text-muted"), f"“{e.query[:28]}” ",
                  (f"{now}→{then} {arrow}", style)]
    if len(effects) > limit:
        parts.append((f" · +{len(effects) - limit} more", "$text-muted"))
    return Content.assemble(*parts)


def chunks_content(chunks: list[Chunk], max_tokens: int, limit: int = 400,
                   head_room: int = 22, width: int | None = None) -> Content:
    """One line per chunk: ordinal, tokens, size bar, character span, heading path (cut
    from its start to ``head_room`` cells) and why the chunk exists.

    With ``width`` (the column's cells) the heading gets the room that is left, and
    the character span is dropped when it would leave the heading under 12 cells, so
    a line never runs past the column.
    """
    parts: list[Any] = []
    bar_cells = 8 if width is None or width >= 40 else 6
    fixed = 4 + 7 + bar_cells  # "#12 ", "  150t ", the bar
    spans = width is None or width - fixed - 14 >= 12
    if width is not None:
        head_room = max(8, width - fixed - (14 if spans else 1))
    for c in chunks[:limit]:
        bar, over = size_bar(c.tokens, max_tokens, bar_cells)
        why = f"  {short_reason(c.reason)}" if c.reason and c.reason != "section" else ""
        if width is not None and head_room - len(why) < 8:
            why = ""  # the heading matters more than the reason
        head = heading_label(c.heading_path, head_room - (len(why) if width else 0),
                             start_char=c.start_char)
        span = f" {c.start_char:>6}–{c.end_char:<6}" if spans else " "
        parts += [(f"#{c.ordinal:<3}", "bold"), f"{c.tokens:>5}t ",
                  (bar, "$text-error" if over else "$text-success"),
                  (span, "$text-muted"), head, (f"{why}\n", "$text-muted")]
    if len(chunks) > limit:
        parts.append((f"… {len(chunks) - limit:,} more\n", "$text-muted"))
    if not chunks:
        parts.append(("(no chunks: blank text)", "$text-muted"))
    return Content.assemble(*parts)


def boundary_ruler(chunks: list[Chunk], length: int, width: int = 48) -> str:
    """The whole text as ``width`` cells with ``┃`` where a chunk starts and ``▒`` on overlaps."""
    if not chunks or length <= 0:
        return "─" * width
    cells = ["─"] * width

    def col(pos: int) -> int:
        return min(width - 1, pos * width // length)

    for c in chunks:
        if c.overlap_chars:
            for i in range(col(c.start_char), col(c.start_char + c.overlap_chars) + 1):
                cells[i] = "▒"
    for c in chunks:
        cells[col(c.start_char)] = "┃"
    return "".join(cells)


def stats_line(label: str, chunks: list[Chunk], length: int, width: int = 48) -> Content:
    """Label, ``N chunks · tokens min/median/max a/b/c`` and the boundary ruler, for a
    column ``width`` cells wide (shorter words, never wrapped, when it is narrow)."""
    n, lo, med, hi = token_stats([c.tokens for c in chunks])
    word = "chunk" if n == 1 else "chunks"
    counts = f"{n} {word} · tokens min/median/max {lo}/{med}/{hi}"
    if len(counts) > width:
        counts = f"{n} {word} · min/med/max {lo}/{med}/{hi}"
    return Content.assemble((label, "bold"), f"\n{counts}\n",
                            (boundary_ruler(chunks, length, max(8, min(48, width))),
                             "$text-accent"))


class RechunkDialog(ModalScreen["RechunkRequest | None"]):
    """Choose strategy, max tokens and overlap; preview; apply or cancel."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "apply", "Apply"),
    ]

    DEFAULT_CSS = """
    RechunkDialog {
        align: center middle;
        & #dialog {
            width: 120; max-width: 95%; height: 38; max-height: 95%;
            border: thick $primary; background: $surface; padding: 0 1;
        }
        & #dialog-title { text-style: bold; height: 1; margin-bottom: 1; }
        & #form, & #scope { height: 3; }
        & #form Label, & #scope Label { padding: 1 1 0 0; width: auto; }
        & #scope Label { padding: 1 2 0 1; }
        & #strategy { width: 20; }
        & #max-tokens, & #overlap { width: 12; }
        & #all-docs { width: auto; }
        & #preview { height: 1fr; margin-top: 1; }
        & .column { width: 1fr; height: 1fr; }
        & .column-head { height: 3; background: $panel; padding: 0 1; }
        & .column-body { height: 1fr; border: round $panel-lighten-2; padding: 0 1; }
        & .column-body > Static { text-wrap: nowrap; text-overflow: ellipsis; }
        & #effect { height: auto; max-height: 4; }
        & #error { width: 1fr; height: auto; max-height: 3; padding: 1 0 0 0;
                   color: $text-error; }
        & #buttons { height: 3; align-horizontal: right; }
        & #buttons Button { margin-left: 2; }
    }
    /* Small terminals (e.g. 80x24): borderless fields, one row each. */
    RechunkDialog.-compact {
        & #dialog-title { margin-bottom: 0; }
        & #form, & #scope, & #buttons { height: auto; }
        & #form Label, & #scope Label { padding: 0 1 0 0; }
        & #scope Label { padding: 0 2 0 1; }
        & #all-docs { border: none; height: 1; padding: 0 1; }
        & #all-docs:focus { background: $primary-muted; }
        & #error { max-height: 2; padding: 0; }
        & #effect { max-height: 2; }
        & #preview { margin-top: 0; }
        & #buttons { margin-top: 0; }
    }
    """

    COMPACT_BELOW = (100, 32)
    """Terminals narrower or shorter than this (columns, rows) get the compact form."""

    def __init__(self, service: MemoryService, doc_id: int, label: str, base: ChunkerConfig,
                 live_count: int, origin: str = "settings") -> None:
        super().__init__()
        self.service = service
        self.doc_id = doc_id
        self.label = label
        self.base = base
        self.origin = origin
        self.live_count = live_count
        self.config: ChunkerConfig | None = base
        self.debouncer = Debouncer(self, PREVIEW_DEBOUNCE)
        self._key: tuple[Any, ...] | None = None
        self._shown: PreviewReady | None = None  # drawn again when the width changes

    def compose(self) -> ComposeResult:
        """Form, side-by-side preview, buttons."""
        with Vertical(id="dialog"):
            yield Static(Content.assemble(("Rechunk ", "bold"), self.label), id="dialog-title")
            yield Static(Content.assemble(*tidy_runs([
                ("now: ", "$text-muted"),
                f"{self.base.strategy}/{self.base.max_tokens}/{self.base.overlap_tokens}",
                (f"  — from {ORIGINS.get(self.origin, self.origin)}", "$text-muted")])),
                id="effective")
            with Horizontal(id="form"):
                yield Label("strategy")
                yield Select([(s, s) for s in STRATEGIES], value=self.base.strategy,
                             allow_blank=False, id="strategy")
                yield Label("max tokens")
                yield Input(str(self.base.max_tokens), type="integer", id="max-tokens")
                yield Label("overlap")
                yield Input(str(self.base.overlap_tokens), type="integer", id="overlap")
            with Horizontal(id="scope"):
                yield Switch(False, id="all-docs")
                yield Label("all documents")
                yield Static("", id="error")
            with Horizontal(id="preview"):
                with Vertical(classes="column"):
                    yield Static("current", id="current-head", classes="column-head")
                    with VerticalScroll(classes="column-body"):
                        yield Static("…", id="current-body")
                with Vertical(classes="column"):
                    yield Static("proposed", id="proposed-head", classes="column-head")
                    with VerticalScroll(classes="column-body"):
                        yield Static("…", id="proposed-body")
            yield Static("", id="effect")
            with Horizontal(id="buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Reset to default", id="reset",
                             disabled=self.origin in ("settings",))
                yield Button("Apply (ctrl+s)", id="apply", variant="primary")

    def on_mount(self) -> None:
        """First preview with the current settings."""
        self._fit(self.app.size.width, self.app.size.height)
        self.query_one("#max-tokens", Input).focus()
        self._changed()

    def on_resize(self, event: Any) -> None:
        """Compact form on small terminals; preview lines re-cut to the columns."""
        self._fit(self.app.size.width, self.app.size.height)
        if self._shown is not None:
            self.call_after_refresh(self._draw_preview, self._shown)

    def _fit(self, width: int, height: int) -> None:
        min_w, min_h = self.COMPACT_BELOW
        compact = width < min_w or height < min_h
        self.set_class(compact, "-compact")
        for widget in self.query("#strategy, #max-tokens, #overlap, Button"):
            if isinstance(widget, Select | Input | Button):
                widget.compact = compact

    def set_all_documents(self) -> None:
        """Turn the "all documents" switch on (the palette's "Rechunk all")."""
        self.query_one("#all-docs", Switch).value = True

    # -- form ---------------------------------------------------------------
    def _read(self) -> ChunkerConfig:
        strategy = self.query_one("#strategy", Select).value
        try:
            max_tokens = int(self.query_one("#max-tokens", Input).value)
        except ValueError:
            raise ChunkerConfigError("max_tokens", "must be a whole number") from None
        try:
            overlap = int(self.query_one("#overlap", Input).value or "0")
        except ValueError:
            raise ChunkerConfigError("overlap_tokens", "must be a whole number") from None
        d = self.base.to_dict()
        d.update(strategy=str(strategy), max_tokens=max_tokens, overlap_tokens=overlap)
        return ChunkerConfig.from_dict(d)

    @on(Select.Changed)
    @on(Input.Changed)
    @on(Switch.Changed)
    def _changed(self, event: Any = None) -> None:
        if event is not None:
            event.stop()
        error = self.query_one("#error", Static)
        apply = self.query_one("#apply", Button)
        try:
            cfg = self._read()
        except (ChunkerConfigError, ValueError, TypeError) as exc:
            self.config = None
            error.update(str(exc))
            apply.disabled = True
            return
        self.config = cfg
        apply.disabled = False
        scope = (f"applies to all {self.live_count:,} live documents and is remembered for "
                 "them; preview shows this one"
                 if self.query_one("#all-docs", Switch).value else
                 "applies to this document and is remembered: later edits and re-ingests keep it")
        error.update(Content.styled(scope, "$text-muted"))
        self.debouncer.start(lambda: self._preview(cfg))

    def _preview(self, cfg: ChunkerConfig) -> None:
        if cfg != self.config:
            return
        self._key = (cfg.canonical_json(),)
        self.run_preview(self._key, cfg)

    @work(thread=True, exclusive=True, group="rechunk-preview", exit_on_error=False)
    def run_preview(self, key: tuple[Any, ...], cfg: ChunkerConfig) -> None:
        """Chunk the stored text with ``cfg`` (nothing is written)."""
        service = self.service
        try:
            current, proposed = service.preview_rechunk(self.doc_id, cfg)
            effects = service.preview_search_effect(self.doc_id, cfg)
            msg = PreviewReady(key, current, proposed, effects=effects)
        except Exception as exc:  # shown in the dialog
            msg = PreviewReady(key, [], [], error=f"could not preview: {exc}")
        finally:
            service.release_thread_connection()
        if not get_current_worker().is_cancelled:
            self.post_message(msg)

    @on(PreviewReady)
    def _preview_ready(self, message: PreviewReady) -> None:
        if message.key != self._key or self.config is None:
            return
        if message.error:
            self.query_one("#error", Static).update(message.error)
            return
        self._shown = message
        self._draw_preview(message)

    def _draw_preview(self, message: PreviewReady) -> None:
        cfg = self.config
        if cfg is None or message.key != self._key:
            return
        cur_max = self.base.max_tokens
        length = max([c.end_char for c in message.current + message.proposed] or [0])
        # Both columns are equally wide; before the first layout, assume the widest.
        width = self.query_one("#current-head", Static).content_region.width or 56
        self.query_one("#current-head", Static).update(
            stats_line(f"current ({self.base.strategy}/{cur_max}/{self.base.overlap_tokens})",
                       message.current, length, width))
        self.query_one("#current-body", Static).update(chunks_content(
            message.current, cur_max, width=self._body_width("#current-body",
                                                              len(message.current))))
        self.query_one("#proposed-head", Static).update(
            stats_line(f"proposed ({cfg.strategy}/{cfg.max_tokens}/{cfg.overlap_tokens})",
                       message.proposed, length, width))
        self.query_one("#proposed-body", Static).update(chunks_content(
            message.proposed, cfg.max_tokens, width=self._body_width("#proposed-body",
                                                                     len(message.proposed))))
        self.query_one("#effect", Static).update(effect_content(message.effects))

    def _body_width(self, selector: str, rows: int) -> int:
        """Cells a preview line may take in its box: inside the border and padding,
        less the scrollbar when the lines will overflow the box."""
        box = self.query_one(selector).parent
        if not isinstance(box, VerticalScroll) or not box.size.width:
            return 52
        inner = box.region.shrink(box.styles.gutter).size  # the scrollbar's room included
        width = inner.width
        if rows > inner.height:
            width -= box.styles.scrollbar_size_vertical
        return max(12, width)

    # -- buttons ------------------------------------------------------------------
    @on(Button.Pressed, "#apply")
    def _apply_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_apply()

    @on(Button.Pressed, "#reset")
    def _reset_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(RechunkRequest(self.base, self.query_one("#all-docs", Switch).value,
                                    self.doc_id, reset=True))

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_cancel()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_apply()

    def action_apply(self) -> None:
        """Close with the chosen config (nothing happens if it is invalid)."""
        if self.config is None:
            self.app.bell()
            return
        self.dismiss(RechunkRequest(self.config, self.query_one("#all-docs", Switch).value,
                                    self.doc_id))

    def action_cancel(self) -> None:
        """Close without writing anything."""
        self.dismiss(None)


def dialog_for(service: MemoryService, choice: RechunkChoiceLoaded) -> RechunkDialog:
    """The dialog for a document, prefilled with its effective chunker settings and
    their origin (read by a worker: :func:`memlens.tui.jobs.rechunk_choice`)."""
    return RechunkDialog(service, choice.doc_id, choice.label, choice.base, choice.live_count,
                         origin=choice.origin)
