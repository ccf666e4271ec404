"""Section assembly and window cutting for the chunker.

Part of :mod:`memlens.core.chunking.chunker` (see its docstring for the rules).
:class:`ChunkDoc` is one text being chunked: it turns the headings found by
:mod:`memlens.core.chunking.scan` into trimmed heading sections, and cuts spans
over ``max_tokens`` into overlapping windows (line-only cuts for index files).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator

from memlens.core.chunking.scan import NONBLANK, WS, Heading, LineIndex
from memlens.core.chunking.tokens import SpanCost

__all__ = ["ChunkDoc", "Span"]

_ITEM_BOUNDARY = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t\r\n]|\Z)|[ \t]{0,3}#|[ \t]*(?:\r\n?|\n)?\Z")
_LINK = re.compile(
    r"!?\[[^\]\r\n]*\]\([^)\r\n]*\)|!?\[[^\]\r\n]*\]\[[^\]\r\n]*\]|<[A-Za-z][A-Za-z0-9+.-]*:[^\s<>]*>"
)

_SENTENCE_END = re.compile(r"[.!?][\"')\]]*[ \t]+(?=\S)")

# A chunk span: (start char, end char, heading path).
Span = tuple[int, int, tuple[str, ...]]


def _common(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


class ChunkDoc(LineIndex):
    """One text being chunked, with lazily built line index and span costs."""

    def __init__(
        self,
        text: str,
        max_tokens: int,
        overlap_tokens: int,
        span_cost_factory: Callable[[str], SpanCost],
        is_index: bool,
    ) -> None:
        super().__init__(text)
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens
        self.is_index = is_index
        self._span_cost_factory = span_cost_factory
        self._sc: SpanCost | None = None

    # -- lazily built helpers -------------------------------------------------

    @property
    def sc(self) -> SpanCost:
        if self._sc is None:
            self._sc = self._span_cost_factory(self.text)
        return self._sc

    def trim(self, start: int, end: int) -> tuple[int, int] | None:
        """Shrink ``[start, end)`` to whole lines from the first non-blank line to
        just after the last non-whitespace character; ``None`` when blank."""
        first = NONBLANK.search(self.text, start, end)
        if first is None:
            return None
        starts = self.line_starts
        line_start = starts[bisect_right(starts, first.start()) - 1]
        new_start = max(start, line_start)
        new_end = start + len(self.text[start:end].rstrip())
        return new_start, new_end

    # -- sections --------------------------------------------------------------

    def _raw_sections(self, headings: Iterable[Heading], body_start: int = 0,
                      ) -> Iterator[tuple[int, int, tuple[str, ...], bool]]:
        """``(start, end, heading path, has own content)`` per section, preamble first
        (generators all the way: a heading-dense text never holds them all at once).

        A preamble holding nothing but front matter (before ``body_start``) has no
        content of its own, so it is merged into the first section."""
        n = self.n
        found = iter(headings)
        cur = next(found, None)
        first = self.line_pos(cur[0]) if cur is not None else n
        if self.has_content(0, first):
            yield 0, first, (), self.has_content(max(0, body_start), first)
        stack: list[int] = []  # levels of the open headings
        path: tuple[str, ...] = ()
        while cur is not None:
            nxt = next(found, None)
            line, after, level, title = cur
            while stack and stack[-1] >= level:
                stack.pop()
            stack.append(level)
            # The ancestors are a prefix of the previous path: reuse it.
            path = (*path[:len(stack) - 1], title)
            start = self.line_pos(line)
            end = self.line_pos(nxt[0]) if nxt is not None else n
            yield start, end, path, self.has_content(self.line_pos(after), end)
            cur = nxt

    def sections(self, headings: Iterable[Heading], body_start: int = 0) -> Iterator[Span]:
        """Heading sections (untrimmed), heading-only sections (and a preamble of
        front matter alone) merged away; a generator."""
        n = self.n
        prev: Span | None = None
        pending: int | None = None
        pending_path: tuple[str, ...] = ()
        for start, end, path, content in self._raw_sections(headings, body_start):
            if not content:
                if pending is None:
                    pending = start
                pending_path = path
                continue
            if pending is not None:
                start, pending = pending, None
            if prev is not None:
                yield prev
            prev = (start, end, path)
        if pending is not None:
            prev = (pending, n, pending_path) if prev is None else (prev[0], n, prev[2])
        if prev is not None:
            yield prev

    def merge_tiny(self, spans: Iterable[Span], tiny: int) -> list[tuple[Span, int]]:
        """Merge each trimmed section costing under ``tiny`` tokens (the floor) into the
        next one while the two fit ``max_tokens``, so a run of short sections becomes
        one chunk of at least ``tiny``; returns (span, sections merged into it).

        The merged span takes the next section's heading path when the tiny one is
        its ancestor (a short intro under a parent heading), else the common prefix.
        A short run that cannot join the next section (too big together) or ends the
        text joins the previous chunk instead when that fits, else stays alone.
        """
        out: list[tuple[Span, int]] = []
        carry: tuple[Span, int] | None = None
        cost = self.sc.cost
        for span in spans:
            count = 1
            if carry is not None:
                (cs, _, cpath), ccount = carry
                if cost(cs, span[1]) <= self.max_tokens:
                    path = span[2] if span[2][:len(cpath)] == cpath else _common(cpath, span[2])
                    span, count = (cs, span[1], path), ccount + 1
                else:
                    self._append_short(out, carry)
                carry = None
            if cost(span[0], span[1]) < tiny:
                carry = (span, count)
            else:
                out.append((span, count))
        if carry is not None:
            self._append_short(out, carry)
        return out

    def _append_short(self, out: list[tuple[Span, int]], short: tuple[Span, int]) -> None:
        """Append a span under the floor to ``out``, into the previous chunk if it fits."""
        (cs, ce, cpath), count = short
        if out and self.sc.cost(out[-1][0][0], ce) <= self.max_tokens:
            (ps, _, ppath), pcount = out[-1]
            out[-1] = ((ps, ce, _common(ppath, cpath)), pcount + count)
        else:
            out.append(short)

    # -- windows ---------------------------------------------------------------

    def _is_item_boundary(self, index: int) -> bool:
        start = self.line_starts[index]
        if _ITEM_BOUNDARY.match(self.text, start, self.line_end(index)):
            return True
        return index > 0 and self.is_blank_line(index - 1)

    def _last_line_start(self, lo: int, hi: int, preferred: bool) -> int | None:
        """Largest line start in ``[lo, hi]`` (an item boundary if ``preferred``)."""
        starts = self.line_starts
        k = bisect_right(starts, hi) - 1
        while k >= 0 and starts[k] >= lo:
            if not preferred or self._is_item_boundary(k):
                return starts[k]
            k -= 1
        return None

    def _first_line_start(self, lo: int, hi: int, preferred: bool) -> int | None:
        """Smallest line start in ``[lo, hi)`` (an item boundary if ``preferred``)."""
        starts = self.line_starts
        k = bisect_left(starts, lo)
        while k < len(starts) and starts[k] < hi:
            if not preferred or self._is_item_boundary(k):
                return starts[k]
            k += 1
        return None

    def _link_spans(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """Markdown link spans on the lines touching ``[lo, hi]``."""
        starts = self.line_starts
        first = starts[bisect_right(starts, lo) - 1]
        last = self.line_end(bisect_right(starts, hi) - 1)
        return [m.span() for m in _LINK.finditer(self.text, first, last)]

    @staticmethod
    def _inside(pos: int, spans: list[tuple[int, int]]) -> tuple[int, int] | None:
        for s, e in spans:
            if s < pos < e:
                return s, e
        return None

    def _last_ws_cut(self, lo: int, hi: int) -> int | None:
        """Largest ``p`` in ``[lo, hi]`` right after a whitespace char (outside links
        for index files)."""
        if hi < lo or lo < 1:
            return None
        text = self.text
        if not self.is_index:
            found = WS.search(text[lo - 1 : hi][::-1])
            return None if found is None else hi - found.start()
        spans = self._link_spans(lo, hi)
        for m in reversed(list(WS.finditer(text, lo - 1, hi))):
            if self._inside(m.end(), spans) is None:
                return m.end()
        return None

    def _crlf_forward(self, pos: int) -> int:
        """Move a start position that falls between ``\\r`` and ``\\n`` past the pair."""
        text = self.text
        if 0 < pos < self.n and text[pos - 1] == "\r" and text[pos] == "\n":
            return pos + 1
        return pos

    def _fix_crlf(self, pos: int, lo: int) -> int:
        """Never cut between ``\\r`` and ``\\n``: step back if possible, else forward."""
        text = self.text
        if 0 < pos < self.n and text[pos - 1] == "\r" and text[pos] == "\n":
            return pos - 1 if pos - 1 > lo else pos + 1
        return pos

    def _cut_index(self, lo: int, hi: int, mid: int) -> int:
        """Choose a window end in ``(lo, hi]`` for an index file (between lines if possible)."""
        for a, b, preferred in ((mid, hi, True), (mid, hi, False), (lo + 1, mid, True)):
            pos = self._last_line_start(a, b, preferred)
            if pos is not None:
                return pos
        pos = self._last_line_start(lo + 1, mid, False)
        if pos is not None:
            return pos
        pos = self._last_ws_cut(lo + 1, hi)
        if pos is not None:
            return pos
        link = self._inside(hi, self._link_spans(hi, hi))
        if link is not None and link[0] > lo:
            return self._fix_crlf(link[0], lo)
        return self._fix_crlf(hi, lo)

    def _cut(self, lo: int, hi: int) -> int:
        """Choose a window end in ``(lo, hi]``."""
        mid = lo + (hi - lo + 1) // 2
        if self.is_index:
            return self._cut_index(lo, hi, mid)
        # Only accept a boundary that keeps at least half of the new text the budget
        # allows; otherwise a full-size character cut beats a near-empty window
        # (such as a lone heading line in front of a giant unbroken line).
        pos = self._last_line_start(mid, hi, False)
        if pos is None:
            pos = self._last_ws_cut(mid, hi)
        return self._fix_crlf(hi if pos is None else pos, lo)

    def _overlap_start_index(self, lo: int, wend: int) -> int:
        """Overlap start in ``[lo, wend]`` for an index file: a line start or a word
        outside a link, else ``wend`` (no overlap)."""
        for preferred in (True, False):
            pos = self._first_line_start(lo, wend, preferred)
            if pos is not None:
                return pos
        spans = self._link_spans(lo, wend)
        for m in WS.finditer(self.text, lo - 1, wend - 1):
            if self._inside(m.end(), spans) is None:
                return min(wend, self._crlf_forward(m.end()))
        return wend

    def _overlap_start(self, wstart: int, wend: int) -> int:
        """Start of the window after one ending at ``wend``, in ``(wstart, wend]``."""
        if self.overlap_tokens == 0:
            return wend
        lo = self.sc.min_start(wend, self.overlap_tokens, wstart + 1)
        if lo >= wend:
            return wend
        if self.is_index:
            return self._overlap_start_index(lo, wend)
        return self._overlap_start_text(wstart, lo, wend)

    def _overlap_start_text(self, wstart: int, lo: int, wend: int) -> int:
        """Overlap start for ordinary text: at most ``lo`` (so at least ``overlap_tokens``
        are repeated, or the whole previous window when it is shorter), moved back to a
        line start, else a sentence start, else a word start, as long as the repeat
        stays within :func:`memlens.core.chunking.chunker.overlap_cap`."""
        text = self.text
        if NONBLANK.search(text, lo, wend) is None:
            return wend  # only blank text would be repeated
        o = self.overlap_tokens  # same rule as chunking.overlap_cap
        cap = max(o, min(o * 3 // 2 + 4, (self.max_tokens + o) // 2))
        far = self.sc.min_start(wend, cap, wstart + 1)
        starts = self.line_starts
        k = bisect_right(starts, lo) - 1
        while k >= 0 and starts[k] >= far:
            if starts[k] > wstart and not self.is_blank_line(k):
                return starts[k]
            k -= 1
        sentence = None
        for m in _SENTENCE_END.finditer(text, far, lo):
            sentence = m.end()
        if sentence is not None and wstart < sentence <= lo:
            return sentence
        cut = self._last_ws_cut(max(far, wstart + 1), lo)
        if cut is not None and cut > wstart:
            return self._crlf_forward(cut)
        # No boundary at or before lo: a line start a little later still keeps at
        # least half of the overlap; else cut inside the word.
        k = bisect_right(starts, lo)
        while k < len(starts) and starts[k] < wend and self.sc.cost(starts[k], wend) * 2 >= o:
            if not self.is_blank_line(k):
                return starts[k]
            k += 1
        return self._crlf_forward(lo)

    def windows(self, start: int, end: int) -> list[tuple[int, int]]:
        """Cut ``[start, end)`` into windows of at most ``max_tokens`` each."""
        sc = self.sc
        budget = self.max_tokens
        out: list[tuple[int, int]] = []
        wstart = prev_end = start
        while True:
            limit = sc.max_end(wstart, budget, end)
            if limit <= prev_end:
                # The overlap left no room for new text (an overlap close to the budget:
                # 30 of 31 tokens): repeat less, starting as late as needed for one more
                # character (two for CRLF) to fit the budget.
                step = min(end, self._fix_crlf(prev_end + 1, prev_end))
                later = sc.min_start(step, budget, wstart)
                if later < step and sc.cost(later, step) <= budget:
                    wstart = later
                    limit = sc.max_end(wstart, budget, end)
                else:
                    # Only a degenerate estimator (one char over the budget) gets here:
                    # take that character so the loop always advances.
                    limit = step
            wend = end if limit >= end else self._cut(prev_end, limit)
            out.append((wstart, wend))
            if wend >= end:
                return out
            # The next window must start after this one's first visible character,
            # so that trimmed windows still start strictly in order.
            first = NONBLANK.search(self.text, wstart, wend)
            floor = wstart if first is None else first.start()
            wstart, prev_end = self._overlap_start(floor, wend), wend

    # -- assembling ------------------------------------------------------------

    def fit(self, start: int, end: int, path: tuple[str, ...], out: list[Span],
            reasons: list[str] | None = None, reason: str = "section") -> None:
        """Append ``[start, end)`` trimmed, windowed if over budget, to ``out``, and
        why each span exists to ``reasons`` (``reason`` for a span that fits; windows
        get ``window k/n of "Heading"`` or ``index lines a–b``)."""
        trimmed = self.trim(start, end)
        if trimmed is None:
            return
        start, end = trimmed
        if self.sc.cost(start, end) <= self.max_tokens:
            out.append((start, end, path))
            if reasons is not None:
                reasons.append(reason)
            return
        spans: list[tuple[int, int]] = []
        for wstart, wend in self.windows(start, end):
            window = self.trim(wstart, wend)
            if window is None or (spans and window[1] <= spans[-1][1]):
                continue  # nothing new beyond the previous window
            spans.append(window)
        title = path[-1] if path else ""
        for k, (a, b) in enumerate(spans, 1):
            out.append((a, b, path))
            if reasons is None:
                continue
            if self.is_index:
                first = bisect_right(self.line_starts, a)
                last = bisect_right(self.line_starts, max(a, b - 1))
                reasons.append(f"index lines {first}–{last}")
            else:
                where = f' of "{title}"' if title else ""
                reasons.append(f"window {k}/{len(spans)}{where}")
