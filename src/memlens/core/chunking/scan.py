"""Markdown scanning for the chunker: front matter, line index and heading finders.

Part of :mod:`memlens.core.chunking.chunker` (see its docstring for the rules). This module
holds what reads the structure of a text without deciding chunk boundaries:

* the shallow YAML front-matter parser (:func:`parse_front_matter`);
* :class:`LineIndex`, line starts counted the way markdown-it counts lines;
* the two heading finders: :func:`headings_markdown_it` (markdown-it-py block
  tokens) and :func:`headings_line_scan` (the approximate fallback for huge or
  pathological texts).
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = [
    "HEADING_TITLE_MAX_CHARS",
    "NEWLINE",
    "NONBLANK",
    "WS",
    "Heading",
    "LineIndex",
    "front_matter_span",
    "headings_line_scan",
    "headings_markdown_it",
    "parse_front_matter",
    "parse_front_matter_lines",
]

# ---------------------------------------------------------------------------
# Front matter
# ---------------------------------------------------------------------------

NEWLINE: Final = re.compile(r"\r\n?|\n")
_LF: Final = re.compile("\n")
_FM_OPEN = re.compile(r"---[ \t]*(?:\r\n?|\n)")
_FM_CLOSE = re.compile(r"(?<=[\r\n])---[ \t]*(?:\r\n?|\n|\Z)")
_FM_KEY = re.compile(r"([^\s:#\-'\"][^:]*?)[ \t]*:(?:[ \t]+(.*)|[ \t]*)$")
_BLOCK_SCALAR = re.compile(r"[|>][-+0-9]*")


def front_matter_span(text: str) -> tuple[int, int, int] | None:
    """Return ``(content_start, content_end, body_start)`` of front matter, if any."""
    start = 1 if text.startswith("\ufeff") else 0
    opener = _FM_OPEN.match(text, start)
    if opener is None:
        return None
    closer = _FM_CLOSE.search(text, opener.end() - 1)
    if closer is None:
        return None
    return opener.end(), closer.start(), closer.end()


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        inner = value[1:-1]
        return re.sub(r'\\(["\\/])', r"\1", inner).replace("\\n", "\n").replace("\\t", "\t")
    if value[:1] not in ("[", "{"):
        comment = re.search(r"[ \t]#", value)
        if comment:
            value = value[: comment.start()].rstrip()
    return value


def _collect_front_matter_fields(lines: list[str]) -> dict[str, tuple[str, list[str]]]:
    """Group front-matter lines by key: ``{key: (first value, continuation lines)}``."""
    fields: dict[str, tuple[str, list[str]]] = {}
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        indented = line[:1] in (" ", "\t")
        if current is not None and (indented or not stripped) and _BLOCK_SCALAR.fullmatch(fields[current][0]):
            fields[current][1].append(stripped)  # block scalar text, '#' included
            continue
        if not stripped or stripped.startswith("#"):
            continue
        if not indented:
            match = _FM_KEY.match(line)
            if match:
                current = match.group(1).strip()
                fields[current] = ((match.group(2) or "").strip(), [])
            elif current is not None and (stripped == "-" or stripped.startswith("- ")):
                fields[current][1].append(stripped)  # block list at column 0
            else:
                current = None  # beyond this shallow parser; skip until the next key
            continue
        if current is not None:
            fields[current][1].append(stripped)
    return fields


def parse_front_matter_lines(lines: list[str]) -> dict[str, str]:
    """Parse the lines between the ``---`` fences into ``{key: value}``."""
    result: dict[str, str] = {}
    for key, (first, more) in _collect_front_matter_fields(lines).items():
        while more and not more[-1]:
            more.pop()
        if _BLOCK_SCALAR.fullmatch(first):
            result[key] = ("\n" if first.startswith("|") else " ").join(more)
        elif not first and more and all(m == "-" or m.startswith("- ") for m in more):
            result[key] = ", ".join(_unquote(m[1:]) for m in more)
        else:
            result[key] = _unquote(" ".join(part for part in (first, *more) if part))
    return result


def parse_front_matter(text: str) -> dict[str, str]:
    """Return the fields of the YAML front matter at the start of ``text``.

    Only simple ``key: value`` lines are understood (see the module docstring);
    PyYAML is not used.

    Args:
        text: A Markdown document.

    Returns:
        The fields, or an empty dict when there is no front matter.
    """
    span = front_matter_span(text)
    if span is None:
        return {}
    return parse_front_matter_lines(NEWLINE.split(text[span[0] : span[1]]))


# ---------------------------------------------------------------------------
# Line index
# ---------------------------------------------------------------------------

NONBLANK: Final = re.compile(r"[^\s\ufeff]")  # a BOM is not content
WS: Final = re.compile(r"\s")


class LineIndex:
    """A text with a lazily built index of its line starts."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self._line_starts: array[int] | None = None

    @property
    def line_starts(self) -> array[int]:
        """Start offset of every line, counting lines exactly as markdown-it does.

        A packed array (8 bytes a line; a list of ints costs about 36), since a
        heading-dense 8 MiB file has close to a million lines."""
        if self._line_starts is None:
            starts = array("q", [0])
            # No transient list of lines (str.split would hold a million strings).
            newline = NEWLINE if "\r" in self.text else _LF
            starts.extend(m.end() for m in newline.finditer(self.text))
            self._line_starts = starts
        return self._line_starts

    def line_pos(self, line: int) -> int:
        starts = self.line_starts
        return starts[line] if line < len(starts) else self.n

    def line_end(self, index: int) -> int:
        starts = self.line_starts
        return starts[index + 1] if index + 1 < len(starts) else self.n

    def has_content(self, start: int, end: int) -> bool:
        return start < end and NONBLANK.search(self.text, start, end) is not None

    def is_blank_line(self, index: int) -> bool:
        return not self.has_content(self.line_starts[index], self.line_end(index))

    def is_indented_code(self, index: int, body_start: int) -> bool:
        line = self.text[max(self.line_starts[index], body_start) : self.line_end(index)]
        lead = line[: len(line) - len(line.lstrip(" \t"))]
        return "\t" in lead or len(lead) >= 4


# ---------------------------------------------------------------------------
# Heading discovery
# ---------------------------------------------------------------------------

@cache
def _markdown_it() -> MarkdownIt:
    """The shared parser, built on first use (importing markdown-it costs ~20 ms)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    md.disable(["inline", "text_join"])  # headings need block structure only
    return md


_CANDIDATE = re.compile(
    r"(?:\A|(?<=[\r\n]))( {0,3})(#{1,6}(?=[ \t\r\n]|\Z)|`{3,}|~{3,}|(?:=+|-+)[ \t]*(?=[\r\n]|\Z))"
)
_CONTAINER_START = re.compile(r" {0,3}(?:[-*+](?:[ \t\r\n]|\Z)|\d{1,9}[.)](?:[ \t\r\n]|\Z)|>)")

_SETEXT_MAX_LINES: Final = 50
"""Line-scan fallback: longest setext heading text (in lines) it recognises."""

HEADING_TITLE_MAX_CHARS: Final = 200
"""Longest heading title kept in a heading path (longer ones end in an ellipsis).

Every chunk of a section carries its heading path, so an unbounded title would be
copied into each window of a long section (quadratic growth)."""


def _clean_title(raw: str) -> str:
    # NUL becomes U+FFFD as in markdown-it, so both heading finders agree.
    title = " ".join(raw.replace("\x00", "\ufffd").split())
    if len(title) > HEADING_TITLE_MAX_CHARS:
        title = title[: HEADING_TITLE_MAX_CHARS - 1].rstrip() + "\u2026"
    return title


def _atx_title(rest: str) -> str:
    """Title of an ATX heading given the text after its ``#`` run (CommonMark rules)."""
    rest = rest.rstrip(" \t\r\n")
    stripped = rest.rstrip("#")
    if len(stripped) < len(rest) and stripped and stripped[-1] in " \t":
        rest = stripped
    return _clean_title(rest)


# A heading: (first line, line after it, level, title); lines index the whole text.
Heading = tuple[int, int, int, str]


def headings_markdown_it(body: str, line_offset: int) -> list[Heading]:
    """Document-level headings of ``body`` from markdown-it-py's block tokens.

    ``line_offset`` is added to the token line maps so lines index the whole text.
    """
    tokens = _markdown_it().parse(body)
    out: list[Heading] = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0 and tok.map is not None:
            title = _clean_title(tokens[i + 1].content) if i + 1 < len(tokens) else ""
            if title:
                out.append((tok.map[0] + line_offset, tok.map[1] + line_offset, int(tok.tag[1:]), title))
    return out


class _LineScan:
    """State of one line-scan pass: open fence and setext floor; yields headings."""

    def __init__(self, lines: LineIndex, body_start: int, first_line: int) -> None:
        self.lines = lines
        self.text = lines.text
        self.body_start = body_start
        self.fence: tuple[str, int] | None = None
        self.floor = first_line  # lines below this are not paragraph text (for setext)

    def run(self) -> Iterator[Heading]:
        body_start = self.body_start
        starts = self.lines.line_starts
        for match in _CANDIDATE.finditer(self.text[body_start:]):
            line = bisect_right(starts, body_start + match.start()) - 1
            heading = self._candidate(line, match.group(2), body_start + match.end(2))
            if heading is not None:
                yield heading

    def _candidate(self, line: int, mark: str, after: int) -> Heading | None:
        """Handle one candidate line: ``mark`` is its fence, ``#`` run or underline."""
        if self.fence is not None:
            self._maybe_close_fence(line, mark, after)
        elif mark[0] in "`~":
            # a backtick fence's info string cannot hold a backtick
            if not (mark[0] == "`" and "`" in self.text[after : self.lines.line_end(line)]):
                self.fence = (mark[0], len(mark))
        elif mark[0] == "#":
            title = _atx_title(self.text[after : self.lines.line_end(line)])
            self.floor = line + 1
            if title:
                return line, line + 1, len(mark), title
        else:
            return self._setext(line, mark)
        return None

    def _maybe_close_fence(self, line: int, mark: str, after: int) -> None:
        assert self.fence is not None
        char, length = self.fence
        run = len(mark) - len(mark.lstrip(char))
        if mark[0] == char and run >= length and not self.text[after : self.lines.line_end(line)].strip():
            self.fence = None
            self.floor = line + 1

    def _setext(self, line: int, mark: str) -> Heading | None:
        """A run of '=' or '-': setext underline if a paragraph sits right above."""
        para = self._paragraph_start(line)
        if para is not None:
            starts = self.lines.line_starts
            title = _clean_title(self.text[max(starts[para], self.body_start) : starts[line]])
            self.floor = line + 1
            if title:
                return para, line + 1, 1 if mark[0] == "=" else 2, title
        elif mark[0] == "-":
            self.floor = line + 1  # thematic break
        return None

    def _paragraph_start(self, line: int) -> int | None:
        """First line of the paragraph right above ``line``, or None when there is none."""
        lines = self.lines
        para = line
        while para - 1 >= self.floor and line - para < _SETEXT_MAX_LINES:
            if lines.is_blank_line(para - 1):
                break
            para -= 1
            if _CONTAINER_START.match(self.text, max(lines.line_starts[para], self.body_start),
                                      lines.line_end(para)):
                return None  # lazy continuation of a list item / quote
        else:
            if line - para >= _SETEXT_MAX_LINES:
                return None
        # Indented lines opening the run are an indented code block, not paragraph.
        while para < line and lines.is_indented_code(para, self.body_start):
            para += 1
        return para if para < line else None


def headings_line_scan(lines: LineIndex, body_start: int, first_line: int) -> Iterator[Heading]:
    """Approximate CommonMark heading detection for huge or pathological texts; a
    generator, so the headings of a huge text are never all held at once."""
    return _LineScan(lines, body_start, first_line).run()
