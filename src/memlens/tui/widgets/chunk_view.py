"""The chunk view: a document's stored Markdown with its chunk boundaries drawn.

Each chunk is a band (alternating backgrounds) introduced by a header line with
its ordinal, heading path and a size bar against ``max_tokens``. A gutter shows
the ordinal and the token count; the leading characters a chunk shares with the
previous one (``Chunk.overlap_chars``) are marked ``↑ovl`` in the gutter and
drawn in a distinct style. The selected chunk has a ``▌`` marker on every line.

It is a Line-API widget: only visible lines are rendered, and the line layout is
rebuilt only when the document or the width changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.cells import get_character_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events, work
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import get_current_worker

from memlens.core.types import Chunk
from memlens.tui.widgets.fmt import heading_label, size_bar
from memlens.tui.widgets.frame_style import FrameMemo

LARGE_CHARS = 200_000
"""Documents with more text than this are laid out in a thread worker."""

GUTTER = 8
"""Gutter cells: selection marker, 6 cells of ordinal/tokens/overlap mark, a space."""


@dataclass(slots=True)
class _Line:
    chunk: int
    gutter: str
    parts: list[tuple[str, str]]  # (text, role)
    header: bool = False


def _wrap(line: str, width: int) -> list[tuple[int, int]]:
    """Cut one source line into (start, end) pieces of at most ``width`` cells.

    Every character is kept (so offsets stay exact). A piece ends after the last
    blank that fits, so words are never split; only a word longer than the whole
    width is cut (there is nowhere else to cut it).
    """
    n = len(line)
    if n == 0:
        return [(0, 0)]
    width = max(4, width)
    ascii_line = line.isascii()  # one cell per character: no cell counting
    if ascii_line and n <= width:
        return [(0, n)]
    out = []
    a = 0
    while a < n:
        b = _fit(line, a, width, ascii_line)
        if b < n and line[b] != " ":
            sp = line.rfind(" ", a, b)
            if sp >= a:
                b = sp + 1
        while b < n and line[b] == " ":
            b += 1  # blanks after the last word stay on its line (past the edge: unseen)
        out.append((a, b))
        a = b
    return out


def _fit(line: str, a: int, width: int, ascii_line: bool) -> int:
    """The end of the longest piece from ``a`` that fits ``width`` cells (at least one
    character)."""
    if ascii_line:
        return min(len(line), a + width)
    w = 0
    for i in range(a, len(line)):
        w += get_character_cell_size(line[i])
        if w > width:
            return max(i, a + 1)
    return len(line)


def _clean(text: str) -> str:
    """Tabs to spaces and other control characters to a visible placeholder (same length)."""
    if text.isprintable():
        return text
    return "".join(" " if c == "\t" else ("·" if not c.isprintable() and c != "\n" else c)
                   for c in text)


def _mark_terms(parts: list[tuple[str, str]], start: int,
                spans: Sequence[tuple[int, int]]) -> list[tuple[str, str]]:
    """Split consecutive ``parts`` (covering chunk text from ``start``) so the
    characters inside ``spans`` get the role ``term``."""
    if not spans:
        return parts
    out: list[tuple[str, str]] = []
    pos = start
    for text, role in parts:
        end = pos + len(text)
        cur = pos
        for a, b in spans:
            if b <= cur or a >= end:
                continue
            a, b = max(a, cur), min(b, end)
            if a > cur:
                out.append((text[cur - pos:a - pos], role))
            out.append((text[a - pos:b - pos], "term"))
            cur = b
        if cur < end:
            out.append((text[cur - pos:], role))
        pos = end
    return out


def build_lines(chunks: list[Chunk], width: int, max_tokens: int, *,
                hit: int | None = None, empty_note: str = "",
                markers: Sequence[tuple[int, str]] = (),
                terms: dict[int, list[tuple[int, int]]] | None = None,
                ) -> tuple[list[_Line], list[int]]:
    """Lay out chunks for ``width`` cells; returns lines and each chunk's header line.

    ``markers`` are (character offset of a line start, label) pairs drawn as a
    rule above that line, e.g. where Claude stops reading a long ``MEMORY.md``.
    ``terms`` maps a chunk index to spans (in its text) of the query's words, drawn
    highlighted.
    """
    terms = terms or {}
    marks = dict(markers)
    body_w = max(8, width - GUTTER)
    lines: list[_Line] = []
    starts: list[int] = []
    if not chunks:
        lines.append(_Line(-1, "", [(empty_note or "(no chunks)", "muted")]))
        return lines, starts
    for ci, c in enumerate(chunks):
        starts.append(len(lines))
        bar, over = size_bar(c.tokens, max_tokens)
        right = f" {c.tokens}/{max_tokens} tok "
        mark = " ◆ search hit" if hit == ci else ""
        why = f" · {c.reason}" if c.reason else ""
        room = body_w - len(right) - len(bar) - len(mark) - 1
        if len(why) > room // 2:
            why = why[: max(0, room // 2 - 1)] + "…" if room // 2 > 4 else ""
        head = heading_label(c.heading_path, room - len(why), start_char=c.start_char)
        pad = " " * max(0, room - len(head) - len(why))
        parts = [(head, "header"), (why, "header-meta"), (pad, "header")]
        if mark:
            parts.append((mark, "hit"))
        parts += [(right, "header-meta"), (bar, "bar-over" if over else "bar"), (" ", "header")]
        lines.append(_Line(ci, f"#{c.ordinal}", parts, header=True))
        text = _clean(c.text)
        ov = max(0, min(c.overlap_chars, len(text)))
        pos = 0
        first = True
        for src in text.split("\n"):
            label = marks.get(c.start_char + pos) if pos >= ov else None
            if label:
                lines.append(_Line(ci, "✂", [(f"── {label} ", "cut")]))
            role = "heading" if src.lstrip().startswith("#") else "text"
            for a, b in _wrap(src, body_w):
                ga, gb = pos + a, pos + b
                parts = []
                if gb <= ov:
                    parts.append((src[a:b], "overlap"))
                elif ga >= ov:
                    parts.append((src[a:b], role))
                else:
                    cut = ov - pos
                    parts.append((src[a:cut], "overlap"))
                    parts.append((src[cut:b], role))
                parts = _mark_terms(parts, ga, terms.get(ci, ()))
                if first:
                    gutter = f"{c.tokens}t"
                elif ga < ov:
                    gutter = "↑ovl"
                else:
                    gutter = ""
                first = False
                lines.append(_Line(ci, gutter, parts))
            pos += len(src) + 1
        # A trailing newline gives an empty last piece: drop it, it is not content.
        if len(lines) > starts[-1] + 2 and text.endswith("\n") and not lines[-1].parts[0][0]:
            lines.pop()
    return lines, starts


class ChunkView(FrameMemo, ScrollView, can_focus=True):
    """Chunks of one document, with boundaries, overlaps and size bars."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "scroll_up", "Scroll up", show=False),
        Binding("down", "scroll_down", "Scroll down", show=False),
        Binding("pageup", "page_up", show=False),
        Binding("pagedown", "page_down", show=False),
        Binding("home", "scroll_home", show=False),
        Binding("end", "scroll_end", show=False),
        Binding("n", "next_match", "Next match", show=False),
        Binding("N", "previous_match", "Previous match", show=False),
        Binding("j", "chunk_step(1)", "Next chunk", show=False),
        Binding("k", "chunk_step(-1)", "Previous chunk", show=False),
        Binding("g", "chunk_edge(False)", "First chunk", show=False),
        Binding("G", "chunk_edge(True)", "Last chunk", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "chunk-view--band-a", "chunk-view--band-b", "chunk-view--selected",
        "chunk-view--overlap", "chunk-view--header", "chunk-view--header-meta",
        "chunk-view--heading", "chunk-view--gutter", "chunk-view--marker",
        "chunk-view--bar", "chunk-view--bar-over", "chunk-view--muted", "chunk-view--hit",
        "chunk-view--cut", "chunk-view--term",
    }

    DEFAULT_CSS = """
    ChunkView {
        background: $surface;
        & > .chunk-view--band-a { background: $surface; }
        & > .chunk-view--band-b { background: $panel; }
        & > .chunk-view--selected { background: $primary-muted; }
        & > .chunk-view--overlap { background: $warning-muted; text-style: italic; }
        & > .chunk-view--header { text-style: bold; color: $text-primary; }
        & > .chunk-view--header-meta { color: $text-muted; }
        & > .chunk-view--heading { text-style: bold; }
        & > .chunk-view--gutter { color: $text-muted; }
        & > .chunk-view--marker { color: $text-accent; text-style: bold; }
        & > .chunk-view--bar { color: $text-success; }
        & > .chunk-view--bar-over { color: $text-error; text-style: bold; }
        & > .chunk-view--muted { color: $text-muted; text-style: italic; }
        & > .chunk-view--hit { color: $text-accent; text-style: bold; }
        & > .chunk-view--cut { color: $text-error; background: $error-muted; text-style: bold; }
        & > .chunk-view--term { color: $text-warning; text-style: bold reverse; }
    }
    """

    class ChunkSelected(Message):
        """The selected chunk changed (``index`` is -1 when there are none)."""

        def __init__(self, view: ChunkView, index: int) -> None:
            super().__init__()
            self.view = view
            self.index = index

        @property
        def control(self) -> ChunkView:
            """The chunk view."""
            return self.view

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.chunks: list[Chunk] = []
        self.max_tokens = 400
        self.selected = -1
        self.hit: int | None = None
        self.empty_note = ""
        self.markers: list[tuple[int, str]] = []
        self.terms: dict[int, list[tuple[int, int]]] = {}
        self.match_lines: list[int] = []
        self._match_at = -1
        self._lines: list[_Line] = []
        self._starts: list[int] = []
        self._layout_width = -1
        self._styles: dict[str, Style] = {}
        self._scroll_target: int | None = None
        self._layout_gen = 0

    # -- data ---------------------------------------------------------------
    def set_chunks(self, chunks: list[Chunk], max_tokens: int, *, select: int | None = None,
                   hit: int | None = None, empty_note: str = "",
                   markers: Sequence[tuple[int, str]] = (),
                   terms: dict[int, list[tuple[int, int]]] | None = None) -> None:
        """Show these chunks; select ``select`` (an index) or the first one; highlight
        ``terms`` (chunk index -> spans of the searched words; ``n``/``N`` step
        through them)."""
        self.markers = list(markers)
        self.terms = dict(terms or {})
        self._match_at = -1
        self.chunks = list(chunks)
        self.max_tokens = max_tokens
        self.hit = hit
        self.empty_note = empty_note
        self._layout()
        self.scroll_to(y=0, animate=False, immediate=True)
        idx = select if select is not None and 0 <= select < len(chunks) else (0 if chunks else -1)
        self.select(idx, scroll=select is not None)

    def clear_chunks(self, note: str = "") -> None:
        """Show nothing but a note."""
        self.set_chunks([], self.max_tokens, empty_note=note)

    def select(self, index: int, *, scroll: bool = True) -> None:
        """Select a chunk by index and (optionally) scroll its header to the top."""
        if not self.chunks:
            index = -1
        else:
            index = max(0, min(index, len(self.chunks) - 1))
        self.selected = index
        self.refresh()
        if scroll and index >= 0:
            # The scroll range is only final after layout (the panes above may change
            # height), so the target is kept and applied again on every resize until
            # the user scrolls by hand.
            self._scroll_target = index
            self.call_after_refresh(self._apply_scroll)
        self.post_message(self.ChunkSelected(self, index))

    def _apply_scroll(self) -> None:
        index = self._scroll_target
        if index is None or index != self.selected or index >= len(self._starts):
            return
        top = self._starts[index]
        if round(self.scroll_y) != min(top, self.max_scroll_y):
            self.scroll_to(y=top, animate=False, immediate=True)

    def _user_scrolled(self) -> None:
        self._scroll_target = None

    def action_scroll_up(self) -> None:
        """Scroll up one line (the user now owns the scroll position)."""
        self._user_scrolled()
        super().action_scroll_up()

    def action_scroll_down(self) -> None:
        """Scroll down one line."""
        self._user_scrolled()
        super().action_scroll_down()

    def action_page_up(self) -> None:
        """Scroll up one page."""
        self._user_scrolled()
        super().action_page_up()

    def action_page_down(self) -> None:
        """Scroll down one page."""
        self._user_scrolled()
        super().action_page_down()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        """Wheel scrolling releases the scroll target."""
        self._user_scrolled()

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        """Wheel scrolling releases the scroll target."""
        self._user_scrolled()

    def action_next_match(self) -> None:
        """Scroll to the next line with a searched word (else: next chunk)."""
        self._step_match(1)

    def action_previous_match(self) -> None:
        """Scroll to the previous line with a searched word (else: previous chunk)."""
        self._step_match(-1)

    def _step_match(self, delta: int) -> None:
        if not self.match_lines:
            (self.select_next if delta > 0 else self.select_previous)()
            return
        if self._match_at < 0:  # the first step: from the opened hit (or the selected
            # chunk), not from the top of the document (issue 42)
            self._match_at = self._first_match(delta)
        else:
            self._match_at = (self._match_at + delta) % len(self.match_lines)
        line = self.match_lines[self._match_at]
        self._scroll_target = None
        chunk = self._lines[line].chunk
        if chunk != self.selected:
            self.select(chunk, scroll=False)
        self.scroll_to(y=max(0, line - 2), animate=False)

    def _first_match(self, delta: int) -> int:
        """Index (in ``match_lines``) of the first match at or after the hit chunk
        (``n``), or of the last one before it (``N``); wrapping around."""
        anchor = self.hit if self.hit is not None else max(0, self.selected)
        chunks = [self._lines[line].chunk for line in self.match_lines]
        if delta > 0:
            return next((i for i, c in enumerate(chunks) if c >= anchor), 0)
        return next((i for i in range(len(chunks) - 1, -1, -1) if chunks[i] < anchor),
                    len(chunks) - 1)

    @property
    def match_count(self) -> int:
        """Highlighted occurrences of the searched words (lines holding one)."""
        return len(self.match_lines)

    def action_chunk_step(self, delta: int) -> None:
        """Select the next (``j``) or previous (``k``) chunk."""
        (self.select_next if delta > 0 else self.select_previous)()

    def action_chunk_edge(self, last: bool) -> None:
        """Select the first (``g``) or last (``G``) chunk."""
        if self.chunks:
            self.select(len(self.chunks) - 1 if last else 0)

    def select_next(self) -> None:
        """Select the next chunk."""
        if self.chunks:
            self.select(min(len(self.chunks) - 1, self.selected + 1))

    def select_previous(self) -> None:
        """Select the previous chunk."""
        if self.chunks:
            self.select(max(0, self.selected - 1))

    @property
    def selected_chunk(self) -> Chunk | None:
        """The selected chunk, if any."""
        if 0 <= self.selected < len(self.chunks):
            return self.chunks[self.selected]
        return None

    # -- layout -------------------------------------------------------------
    def _layout(self) -> None:
        width = max(20, self.scrollable_content_region.width or self.size.width or 80)
        self._layout_width = width
        self._layout_gen += 1
        args = (list(self.chunks), width, self.max_tokens, self.hit, self.empty_note,
                list(self.markers), dict(self.terms))
        if sum(len(c.text) for c in self.chunks) > LARGE_CHARS:
            # A huge document is laid out in a thread so the event loop stays free.
            self._apply_layout(self._layout_gen, width,
                               [_Line(-1, "", [("laying out a large document…", "muted")])], [])
            self._layout_worker(self._layout_gen, *args)
            return
        lines, starts = build_lines(args[0], width, args[2], hit=args[3], empty_note=args[4],
                                    markers=args[5], terms=args[6])
        self._apply_layout(self._layout_gen, width, lines, starts)

    @work(thread=True, exclusive=True, group="chunk-layout", exit_on_error=False)
    def _layout_worker(self, gen: int, chunks: list[Chunk], width: int, max_tokens: int,
                       hit: int | None, note: str, markers: list[tuple[int, str]],
                       terms: dict[int, list[tuple[int, int]]]) -> None:
        lines, starts = build_lines(chunks, width, max_tokens, hit=hit, empty_note=note,
                                    markers=markers, terms=terms)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._apply_layout, gen, width, lines, starts)

    def _apply_layout(self, gen: int, width: int, lines: list[_Line], starts: list[int]) -> None:
        if gen != self._layout_gen:
            return  # a newer document or width won
        self._lines, self._starts = lines, starts
        self.match_lines = [i for i, ln in enumerate(lines)
                            if any(role == "term" for _, role in ln.parts)]
        self.virtual_size = Size(width, len(lines))
        self.refresh()
        if self._scroll_target is not None:
            self.call_after_refresh(self._apply_scroll)

    def on_resize(self, event: events.Resize) -> None:
        """Re-wrap when the width changes."""
        width = max(20, self.scrollable_content_region.width or self.size.width)
        if width != self._layout_width:
            self._layout()
        if self._scroll_target is not None:
            self.call_after_refresh(self._apply_scroll)

    def notify_style_update(self) -> None:
        """Theme or CSS changed: resolve the styles again."""
        super().notify_style_update()
        self._styles.clear()

    def _style(self, role: str) -> Style:
        st = self._styles.get(role)
        if st is None:
            st = self.get_component_rich_style(f"chunk-view--{role}", partial=True)
            self._styles[role] = st
        return st

    def on_click(self, event: events.Click) -> None:
        """Clicking a line selects its chunk."""
        y = event.y + int(self.scroll_y)
        if 0 <= y < len(self._lines) and self._lines[y].chunk >= 0:
            self.select(self._lines[y].chunk, scroll=False)

    # -- rendering ------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        """One screen line of the layout."""
        scroll_x, scroll_y = self.scroll_offset
        index = y + scroll_y
        width = self.scrollable_content_region.width or self.size.width
        base = self.rich_style if self._frame_style is None else self._frame_style
        if index >= len(self._lines):
            return Strip.blank(width, base)
        line = self._lines[index]
        if line.chunk < 0:
            band = base
        elif line.chunk == self.selected:
            band = base + self._style("band-a") + self._style("selected")
        else:
            band = base + self._style("band-a" if line.chunk % 2 == 0 else "band-b")
        segs: list[Segment] = []
        marker = "▌" if line.chunk == self.selected and line.chunk >= 0 else " "
        segs.append(Segment(marker, band + self._style("marker")))
        gut_style = band + (self._style("header") if line.header else self._style("gutter"))
        segs.append(Segment(f"{line.gutter:<6.6} ", gut_style))
        used = GUTTER
        for text, role in line.parts:
            if not text:
                continue
            st = band if role == "text" else band + self._style(role)
            segs.append(Segment(text, st))
            used += sum(get_character_cell_size(c) for c in text) if not text.isascii() \
                else len(text)
        if used < width:
            segs.append(Segment(" " * (width - used), band))
        strip = Strip(segs)
        return strip.crop(scroll_x, scroll_x + width)
