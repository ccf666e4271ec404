"""A one-line map of the whole file above the chunk view.

Each cell stands for an equal stretch of the document's characters. Cells are drawn
in alternating bands per chunk, overlaps (characters two neighbouring chunks share)
in the overlap colour, characters no chunk covers (blank stretches) as gaps, the
selected chunk highlighted, and — for an over-long ``MEMORY.md`` — a marker where
Claude stops loading (line 200 or 25 KB). The layout is a pure function,
:func:`map_cells`, so it is tested without a terminal. A click on a cell selects the
chunk drawn there (:func:`chunk_at_cell`, :class:`FileMap.ChunkClicked`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from memlens.core.types import Chunk

# Roles of a cell, in drawing priority (later wins): gap < band < overlap < selected < limit.
GAP, BAND_A, BAND_B, OVERLAP, SELECTED, LIMIT = "gap", "band-a", "band-b", "overlap", \
    "selected", "limit"


def map_cells(chunks: Sequence[Chunk], total: int, width: int, *, selected: int = -1,
              limits: Sequence[int] = ()) -> list[str]:
    """The role of each of ``width`` cells for a text of ``total`` characters.

    A cell covers ``[i * total / width, (i + 1) * total / width)``; its role is the
    strongest one of any character in it: a limit offset, the selected chunk, an
    overlap, a chunk band (alternating by chunk index), else a gap.
    """
    width = max(1, width)
    if total <= 0 or not chunks:
        return [GAP] * width
    cells = [GAP] * width

    def span(a: int, b: int) -> range:
        lo = min(width - 1, a * width // total)
        hi = max(lo + 1, min(width, -(-b * width // total)))
        return range(lo, hi)

    rank = {GAP: 0, BAND_A: 1, BAND_B: 1, OVERLAP: 2, SELECTED: 3, LIMIT: 4}

    def paint(a: int, b: int, role: str) -> None:
        for i in span(a, b):
            if rank[role] >= rank[cells[i]]:
                cells[i] = role

    prev_end = -1
    for i, c in enumerate(chunks):
        paint(c.start_char, c.end_char, BAND_A if i % 2 == 0 else BAND_B)
        if prev_end > c.start_char:
            paint(c.start_char, prev_end, OVERLAP)
        prev_end = max(prev_end, c.end_char)
    if 0 <= selected < len(chunks):
        paint(chunks[selected].start_char, chunks[selected].end_char, SELECTED)
    for off in limits:
        if 0 <= off < total:
            cells[min(width - 1, off * width // total)] = LIMIT
    return cells


def chunk_at_cell(chunks: Sequence[Chunk], total: int, width: int, x: int) -> int | None:
    """The index of the chunk drawn in cell ``x`` (the one covering most of the cell's
    characters; in a gap, the nearest chunk), or None for an empty map."""
    if total <= 0 or not chunks or width <= 0 or not 0 <= x < width:
        return None
    a = x * total // width
    b = max(a + 1, (x + 1) * total // width)
    cover = [(min(b, c.end_char) - max(a, c.start_char), -i) for i, c in enumerate(chunks)]
    best, neg = max(cover)
    if best > 0:
        return -neg
    mid = (a + b) // 2
    return min(range(len(chunks)), key=lambda i: min(abs(chunks[i].start_char - mid),
                                                     abs(chunks[i].end_char - mid)))


_GLYPH = {GAP: " ", BAND_A: "▆", BAND_B: "▆", OVERLAP: "▆", SELECTED: "█", LIMIT: "┃"}


class FileMap(Widget):
    """The whole-file strip (height 1) drawn from :func:`map_cells`."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "file-map--gap", "file-map--band-a", "file-map--band-b", "file-map--overlap",
        "file-map--selected", "file-map--limit",
    }

    DEFAULT_CSS = """
    FileMap {
        height: 1;
        & > .file-map--gap { color: $surface; }
        & > .file-map--band-a { color: $primary-muted; }
        & > .file-map--band-b { color: $secondary-muted; }
        & > .file-map--overlap { color: $warning; }
        & > .file-map--selected { color: $accent; }
        & > .file-map--limit { color: $error; text-style: bold; }
    }
    """

    class ChunkClicked(Message):
        """A click on the map: select chunk ``index``."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.chunks: list[Chunk] = []
        self.total = 0
        self.selected = -1
        self.limits: list[int] = []

    def show(self, chunks: Sequence[Chunk], total: int, *, selected: int = -1,
             limits: Sequence[int] = ()) -> None:
        """Map these chunks of a text of ``total`` characters."""
        self.chunks, self.total = list(chunks), total
        self.selected, self.limits = selected, list(limits)
        self.refresh()

    def select(self, index: int) -> None:
        """Move the highlight to chunk ``index``."""
        if index != self.selected:
            self.selected = index
            self.refresh()

    def on_click(self, event: events.Click) -> None:
        """Jump to the chunk under the pointer."""
        index = chunk_at_cell(self.chunks, self.total, self.size.width, event.x)
        if index is not None:
            self.select(index)
            self.post_message(self.ChunkClicked(index))

    def _style(self, role: str) -> Style:
        return self.get_component_rich_style(f"file-map--{role}", partial=True)

    def render_line(self, y: int) -> Strip:
        """The single line of the map."""
        width = self.size.width
        if y > 0 or width <= 0:
            return Strip.blank(width, self.rich_style)
        cells = map_cells(self.chunks, self.total, width, selected=self.selected,
                          limits=self.limits)
        base = self.rich_style
        styles = {r: base + self._style(r) for r in set(cells)}  # a few roles, many cells
        return Strip([Segment(_GLYPH[r], styles[r]) for r in cells])
