"""Markdown chunking for Claude auto-memory files.

The chunker turns one Markdown text into ordered :class:`Chunk` objects, each an
exact slice of the input with its character span, UTF-8 byte span, heading path,
hash and estimated token count. Its behaviour is fully described by a
:class:`ChunkerConfig` plus :data:`CHUNKER_NAME` / :data:`CHUNKER_VERSION`;
:meth:`ChunkerConfig.canonical_json` is stored with every revision so a rechunk is
explicit and repeatable.

Strategies
----------
``adaptive`` (default)
    Blank text gives no chunk. Text whose estimate fits ``max_tokens`` gives one
    chunk: the original Markdown, span ``0..len(text)``. Otherwise the text is cut
    into heading sections (see below) and a section that is still over
    ``max_tokens`` is cut into overlapping windows.
``headings``
    Heading sections without any size bound.
``windows``
    Overlapping windows over the whole text, ignoring structure; heading path ``()``
    (no parse is done at all).
``whole``
    One chunk holding the entire text (none for blank text).

Heading sections
----------------
* Only *real* headings split: ATX and setext headings as markdown-it-py's
  CommonMark block parser sees them (``heading_open`` tokens and their line
  maps), so ``#`` lines inside fenced or indented code, HTML blocks or paragraph
  continuations are not headings. Only document-level headings split (a heading
  inside a list item or block quote stays inside its block).
* A heading whose title is empty (a bare ``#`` line) is treated as ordinary
  content: it neither splits nor enters a heading path. CommonMark already keeps
  the line after it from becoming a heading.
* A section runs from its heading line to the next heading. Its heading path is
  the titles of its ancestors and itself; skipped levels are simply absent
  (``# A`` then ``### C`` gives ``("A", "C")``). Titles are the heading's inline
  source with whitespace runs collapsed (closing ``#`` s removed as CommonMark does).
* A section with no content of its own (only its heading) never becomes a chunk:
  it is merged into the following section, whose heading path the merged chunk
  takes (``# A\\n## B\\ntext`` is one chunk starting at ``# A`` with path
  ``("A", "B")``). Heading-only sections at the very end are appended to the
  previous chunk instead.
* Text before the first heading, including YAML front matter, is its own section
  with heading path ``()`` (the *preamble*), so it is never dropped. It is not
  merged into the first heading section: a front-matter block (name, description)
  is a useful chunk on its own, and keeping it separate keeps the rule simple.
* Section and window spans are trimmed: they start at the first line holding a
  non-whitespace character and end right after the last non-whitespace character.
  Whitespace-only stretches are therefore covered by no chunk; every other
  character is.

Windows
-------
An oversized span is cut into windows whose estimate, *including* the overlap, is
at most ``max_tokens`` (the overlap is part of the budget, not added on top). A
window ends at the last line boundary that keeps at least half of the new text
the budget allows, else after the last whitespace in that stretch, else exactly
at the budget on a character boundary (never between ``\\r`` and ``\\n``), so a
giant line without spaces is still cut. The next window starts at the earliest
line start that repeats at most ``overlap_tokens`` of the previous window, else
at the earliest word start in that stretch, else at the exact character where
the overlap budget runs out. Every window starts after the previous window's
first visible character and ends strictly after the previous window's end, so
the loop always makes progress and the work stays linear in the text length.

Index files (basename in ``index_names``, e.g. ``MEMORY.md``) are chunked the same
way, except that windows are cut only between lines, preferring list-item starts,
headings and blank lines, so ``[title](file.md)`` links and their list items stay
whole. Only a single line longer than the whole budget is cut inside, and then
after whitespace outside any link (a link longer than the budget is the one thing
that can still be cut). Overlap in index files starts at a line start or at a
word outside a link, else there is none. The chunker never reads linked files.

Parsing and pathological input
------------------------------
markdown-it-py runs once per text, block rules only (the inline pass is switched
off: the chunker needs headings, not emphasis). Texts that fit ``max_tokens`` in
``adaptive`` mode, and the ``windows``/``whole`` strategies, are never parsed.
For bodies longer than :data:`PARSE_LIMIT_CHARS`, or if the parser raises
``RecursionError``, headings come from a line scan instead: ATX and setext
headings, ignoring fenced code (backtick and tilde fences) and indented lines; it
is an approximation of CommonMark (it does not model HTML blocks, list or quote
containers). :attr:`ChunkResult.parser` says which path was taken.

Line numbers are mapped back to the original text with line starts computed the
way markdown-it counts lines (``\\r\\n``, lone ``\\r`` and ``\\n`` each end a line), so
CRLF, CR, a leading BOM, tabs, NUL, CJK and emoji keep exact spans.

Front matter
------------
A YAML block at the very start (after an optional BOM) opened and closed by
``---`` lines is hidden from the Markdown parser, stays in the text (so it belongs
to the first chunk) and is parsed shallowly into :attr:`ChunkResult.front_matter`:
``key: value`` lines at column 0, quotes removed, ``# comments`` dropped, indented
continuation lines joined with a space (``|`` blocks with newlines), and block
lists (``- a``) joined with ``", "``. Flow values like ``[a, b]`` stay verbatim.
"""

from __future__ import annotations

import hashlib
import json
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from operator import add
from typing import Any, Final

from markdown_it import MarkdownIt

from .tokens import SpanCost, UnknownEstimatorError, get_estimator

__all__ = [
    "CHUNKER_NAME",
    "CHUNKER_VERSION",
    "DEFAULT_CONFIG",
    "PARSE_LIMIT_CHARS",
    "STRATEGIES",
    "Chunk",
    "ChunkResult",
    "ChunkerConfig",
    "ChunkerConfigError",
    "chunk_markdown",
    "parse_front_matter",
]

CHUNKER_NAME: Final = "memlens-markdown"
"""Name recorded with every revision's chunker config."""

CHUNKER_VERSION: Final = 1
"""Bump whenever the same config can produce different chunks."""

STRATEGIES: Final = ("adaptive", "headings", "windows", "whole")
"""Known chunking strategies."""

PARSE_LIMIT_CHARS: Final = 1_000_000
"""Bodies longer than this use the line-scan heading finder instead of markdown-it."""

_CONFIG_FIELDS: Final = (
    "strategy",
    "max_tokens",
    "overlap_tokens",
    "index_names",
    "estimator",
)

_SETEXT_MAX_LINES: Final = 50
"""Line-scan fallback: longest setext heading text (in lines) it recognises."""

# ---------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------


class ChunkerConfigError(ValueError):
    """An invalid chunker configuration; :attr:`field` names the offending field."""

    def __init__(self, field_name: str, message: str) -> None:
        """Create the error.

        Args:
            field_name: The configuration field at fault.
            message: What is wrong with it.
        """
        super().__init__(f"invalid chunker config: {field_name}: {message}")
        self.field = field_name


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class ChunkerConfig:
    """Chunker settings; validated on construction.

    Attributes:
        strategy: One of :data:`STRATEGIES`.
        max_tokens: Upper bound on a chunk's estimate (``adaptive``, ``windows``).
        overlap_tokens: Estimated tokens a window repeats from the previous one;
            part of ``max_tokens``, not added on top. Must be below ``max_tokens``.
        index_names: File basenames treated as index files (``MEMORY.md``).
        estimator: Name of a registered token estimator (see ``memlens.core.tokens``).
    """

    strategy: str = "adaptive"
    max_tokens: int = 400
    overlap_tokens: int = 80
    index_names: tuple[str, ...] = ("MEMORY.md",)
    estimator: str = "chars4"

    def __post_init__(self) -> None:
        """Normalise ``index_names`` to a tuple, then validate."""
        if isinstance(self.index_names, list):
            object.__setattr__(self, "index_names", tuple(self.index_names))
        self.validate()

    def validate(self) -> None:
        """Check every field.

        Raises:
            ChunkerConfigError: On the first invalid field, naming it.
        """
        if not isinstance(self.strategy, str) or self.strategy not in STRATEGIES:
            raise ChunkerConfigError("strategy", f"{self.strategy!r} is not one of {', '.join(STRATEGIES)}")
        if not _is_int(self.max_tokens) or self.max_tokens <= 0:
            raise ChunkerConfigError("max_tokens", f"must be a positive integer, got {self.max_tokens!r}")
        if not _is_int(self.overlap_tokens) or self.overlap_tokens < 0:
            raise ChunkerConfigError(
                "overlap_tokens", f"must be a non-negative integer, got {self.overlap_tokens!r}"
            )
        if self.overlap_tokens >= self.max_tokens:
            raise ChunkerConfigError(
                "overlap_tokens",
                f"must be smaller than max_tokens ({self.overlap_tokens} >= {self.max_tokens})",
            )
        names: object = self.index_names
        if not isinstance(names, tuple) or not all(
            isinstance(n, str) and n and "/" not in n and "\\" not in n for n in names
        ):
            raise ChunkerConfigError(
                "index_names", f"must be a tuple of non-empty file basenames, got {names!r}"
            )
        if not isinstance(self.estimator, str):
            raise ChunkerConfigError("estimator", f"must be a string, got {self.estimator!r}")
        try:
            get_estimator(self.estimator)
        except UnknownEstimatorError as exc:
            raise ChunkerConfigError("estimator", str(exc)) from None

    def to_dict(self) -> dict[str, Any]:
        """Return the config as a JSON-ready dict including ``name`` and ``version``."""
        return {
            "name": CHUNKER_NAME,
            "version": CHUNKER_VERSION,
            "strategy": self.strategy,
            "max_tokens": self.max_tokens,
            "overlap_tokens": self.overlap_tokens,
            "index_names": list(self.index_names),
            "estimator": self.estimator,
        }

    def canonical_json(self) -> str:
        """Return the canonical JSON form: sorted keys, compact separators, ASCII.

        Equal configs always give byte-identical JSON, so it can be stored and
        compared to decide whether a revision needs rechunking.
        """
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChunkerConfig:
        """Build a config from a mapping such as :meth:`to_dict` returns.

        Missing fields take their defaults. ``name``, if present, must be
        :data:`CHUNKER_NAME`; ``version``, if present, must be an integer (a config
        stored by an older chunker version is accepted; the current code is used).

        Args:
            data: The mapping.

        Returns:
            The validated config.

        Raises:
            ChunkerConfigError: On unknown keys or invalid values.
        """
        if not isinstance(data, Mapping):
            raise ChunkerConfigError("config", f"must be a JSON object, got {type(data).__name__}")
        unknown = sorted(str(k) for k in data if k not in (*_CONFIG_FIELDS, "name", "version"))
        if unknown:
            raise ChunkerConfigError(unknown[0], "unknown field")
        if "name" in data and data["name"] != CHUNKER_NAME:
            raise ChunkerConfigError("name", f"{data['name']!r} is not this chunker ({CHUNKER_NAME!r})")
        if "version" in data and not _is_int(data["version"]):
            raise ChunkerConfigError("version", f"must be an integer, got {data['version']!r}")
        kwargs: dict[str, Any] = {k: data[k] for k in _CONFIG_FIELDS if k in data}
        if "index_names" in kwargs:
            names = kwargs["index_names"]
            if not isinstance(names, list | tuple):
                raise ChunkerConfigError("index_names", f"must be a list of file basenames, got {names!r}")
            kwargs["index_names"] = tuple(names)
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str) -> ChunkerConfig:
        """Parse :meth:`canonical_json` output (or any equivalent JSON object).

        Args:
            text: JSON text.

        Returns:
            The validated config.

        Raises:
            ChunkerConfigError: If the JSON is malformed or the config invalid.
        """
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise ChunkerConfigError("config", f"not valid JSON: {exc}") from None
        return cls.from_dict(data)


DEFAULT_CONFIG: Final = ChunkerConfig()
"""The default configuration (adaptive, 400 tokens, 80 overlap, chars4)."""

# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk: an exact slice of the chunked text.

    Attributes:
        ordinal: Position of the chunk, ``0..n-1``.
        heading_path: Titles of the enclosing headings, outermost first.
        start_char: Start index into the text (``text[start_char:end_char] == text``).
        end_char: End index (exclusive).
        start_byte: Start offset into ``text.encode("utf-8")``.
        end_byte: End offset (exclusive).
        text: The chunk text.
        hash: SHA-256 hex digest of ``text`` encoded as UTF-8.
        tokens: Estimated tokens of ``text`` (configured estimator).
        overlap_chars: Leading characters shared with the previous chunk (0 if none).
    """

    ordinal: int
    heading_path: tuple[str, ...]
    start_char: int
    end_char: int
    start_byte: int
    end_byte: int
    text: str
    hash: str
    tokens: int
    overlap_chars: int


@dataclass(frozen=True)
class ChunkResult:
    """The outcome of :func:`chunk_markdown`.

    Attributes:
        chunks: The chunks in order (empty for blank text).
        front_matter: Parsed front-matter fields (empty when there is none).
        parser: How headings were found: ``"markdown-it"``, ``"line-scan"`` (huge
            or pathological text) or ``"none"`` (no structural split was needed).
    """

    chunks: list[Chunk]
    front_matter: dict[str, str] = field(default_factory=dict)
    parser: str = "none"


# ---------------------------------------------------------------------------
# Front matter
# ---------------------------------------------------------------------------

_NEWLINE = re.compile(r"\r\n?|\n")
_FM_OPEN = re.compile(r"---[ \t]*(?:\r\n?|\n)")
_FM_CLOSE = re.compile(r"(?<=[\r\n])---[ \t]*(?:\r\n?|\n|\Z)")
_FM_KEY = re.compile(r"([^\s:#\-'\"][^:]*?)[ \t]*:(?:[ \t]+(.*)|[ \t]*)$")
_BLOCK_SCALAR = re.compile(r"[|>][-+0-9]*")


def _front_matter_span(text: str) -> tuple[int, int, int] | None:
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


def _parse_front_matter_lines(lines: list[str]) -> dict[str, str]:
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
    result: dict[str, str] = {}
    for key, (first, more) in fields.items():
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
    span = _front_matter_span(text)
    if span is None:
        return {}
    return _parse_front_matter_lines(_NEWLINE.split(text[span[0] : span[1]]))


# ---------------------------------------------------------------------------
# Heading discovery
# ---------------------------------------------------------------------------

_MD: Final = MarkdownIt("commonmark")
_MD.disable(["inline", "text_join"])  # headings need block structure only

_NONBLANK = re.compile(r"[^\s\ufeff]")  # a BOM is not content
_WS = re.compile(r"\s")
_CANDIDATE = re.compile(
    r"(?:\A|(?<=[\r\n]))( {0,3})(#{1,6}(?=[ \t\r\n]|\Z)|`{3,}|~{3,}|(?:=+|-+)[ \t]*(?=[\r\n]|\Z))"
)
_CONTAINER_START = re.compile(r" {0,3}(?:[-*+](?:[ \t\r\n]|\Z)|\d{1,9}[.)](?:[ \t\r\n]|\Z)|>)")
_ITEM_BOUNDARY = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t\r\n]|\Z)|[ \t]{0,3}#|[ \t]*(?:\r\n?|\n)?\Z")
_LINK = re.compile(
    r"!?\[[^\]\r\n]*\]\([^)\r\n]*\)|!?\[[^\]\r\n]*\]\[[^\]\r\n]*\]|<[A-Za-z][A-Za-z0-9+.-]*:[^\s<>]*>"
)


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
_Heading = tuple[int, int, int, str]


def _headings_markdown_it(body: str, line_offset: int) -> list[_Heading]:
    tokens = _MD.parse(body)
    out: list[_Heading] = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0 and tok.map is not None:
            title = _clean_title(tokens[i + 1].content) if i + 1 < len(tokens) else ""
            if title:
                out.append((tok.map[0] + line_offset, tok.map[1] + line_offset, int(tok.tag[1:]), title))
    return out


# ---------------------------------------------------------------------------
# The chunker
# ---------------------------------------------------------------------------

_Span = tuple[int, int, tuple[str, ...]]


class _Doc:
    """One text being chunked, with lazily built line index and span costs."""

    def __init__(
        self,
        text: str,
        config: ChunkerConfig,
        estimator: Callable[[str], int],
        span_cost_factory: Callable[[str], SpanCost],
        is_index: bool,
    ) -> None:
        self.text = text
        self.n = len(text)
        self.max_tokens = config.max_tokens
        self.overlap_tokens = config.overlap_tokens
        self.estimator = estimator
        self.is_index = is_index
        self._span_cost_factory = span_cost_factory
        self._line_starts: list[int] | None = None
        self._sc: SpanCost | None = None

    # -- lazily built helpers -------------------------------------------------

    @property
    def line_starts(self) -> list[int]:
        """Start offset of every line, counting lines exactly as markdown-it does."""
        if self._line_starts is None:
            starts = [0]
            if "\r" in self.text:
                starts.extend(m.end() for m in _NEWLINE.finditer(self.text))
            else:  # same result, about twice as fast on huge texts
                lengths = map(len, self.text.split("\n"))
                starts.extend(accumulate(map(add, lengths, repeat(1))))
                starts.pop()
            self._line_starts = starts
        return self._line_starts

    @property
    def sc(self) -> SpanCost:
        if self._sc is None:
            self._sc = self._span_cost_factory(self.text)
        return self._sc

    def line_pos(self, line: int) -> int:
        starts = self.line_starts
        return starts[line] if line < len(starts) else self.n

    def line_end(self, index: int) -> int:
        starts = self.line_starts
        return starts[index + 1] if index + 1 < len(starts) else self.n

    def has_content(self, start: int, end: int) -> bool:
        return start < end and _NONBLANK.search(self.text, start, end) is not None

    def trim(self, start: int, end: int) -> tuple[int, int] | None:
        """Shrink ``[start, end)`` to whole lines from the first non-blank line to
        just after the last non-whitespace character; ``None`` when blank."""
        first = _NONBLANK.search(self.text, start, end)
        if first is None:
            return None
        starts = self.line_starts
        line_start = starts[bisect_right(starts, first.start()) - 1]
        new_start = max(start, line_start)
        new_end = start + len(self.text[start:end].rstrip())
        return new_start, new_end

    # -- headings ------------------------------------------------------------

    def headings(self, body_start: int) -> tuple[list[_Heading], str]:
        body = self.text[body_start:]
        # The line holding body_start (a BOM-only offset of 1 still means line 0).
        first_line = bisect_right(self.line_starts, body_start) - 1
        if len(body) <= PARSE_LIMIT_CHARS:
            try:
                return _headings_markdown_it(body, first_line), "markdown-it"
            except RecursionError:
                pass
        return self._headings_line_scan(body_start, first_line), "line-scan"

    def _is_blank_line(self, index: int) -> bool:
        return not self.has_content(self.line_starts[index], self.line_end(index))

    def _is_indented_code(self, index: int, body_start: int) -> bool:
        line = self.text[max(self.line_starts[index], body_start) : self.line_end(index)]
        lead = line[: len(line) - len(line.lstrip(" \t"))]
        return "\t" in lead or len(lead) >= 4

    def _headings_line_scan(self, body_start: int, first_line: int) -> list[_Heading]:
        """Approximate CommonMark heading detection for huge or pathological texts."""
        text = self.text
        starts = self.line_starts
        out: list[_Heading] = []
        fence: tuple[str, int] | None = None
        floor = first_line  # lines below this are not paragraph text (for setext)
        body = text[body_start:]
        for match in _CANDIDATE.finditer(body):
            pos = body_start + match.start()
            line = bisect_right(starts, pos) - 1
            line_end = self.line_end(line)
            mark = match.group(2)
            after = body_start + match.end(2)
            if fence is not None:
                run = len(mark) - len(mark.lstrip(fence[0]))
                if mark[0] == fence[0] and run >= fence[1] and not text[after:line_end].strip():
                    fence = None
                    floor = line + 1
                continue
            if mark[0] in "`~":
                if mark[0] == "`" and "`" in text[after:line_end]:
                    continue  # a backtick fence's info string cannot hold a backtick
                fence = (mark[0], len(mark))
                continue
            if mark[0] == "#":
                title = _atx_title(text[after:line_end])
                if title:
                    out.append((line, line + 1, len(mark), title))
                floor = line + 1
                continue
            # A run of '=' or '-': setext underline if a paragraph sits right above.
            para = line
            blocked = False
            while para - 1 >= floor and line - para < _SETEXT_MAX_LINES:
                if self._is_blank_line(para - 1):
                    break
                para -= 1
                if _CONTAINER_START.match(text, max(starts[para], body_start), self.line_end(para)):
                    blocked = True  # lazy continuation of a list item / quote
                    break
            else:
                if line - para >= _SETEXT_MAX_LINES:
                    blocked = True
            # Indented lines opening the run are an indented code block, not paragraph.
            while para < line and not blocked and self._is_indented_code(para, body_start):
                para += 1
            if para < line and not blocked:
                raw = text[max(starts[para], body_start) : starts[line]]
                title = _clean_title(raw)
                if title:
                    out.append((para, line + 1, 1 if mark[0] == "=" else 2, title))
                floor = line + 1
            elif mark[0] == "-":
                floor = line + 1  # thematic break
        return out

    # -- sections --------------------------------------------------------------

    def sections(self, body_start: int) -> tuple[list[_Span], str]:
        """Heading sections (untrimmed), heading-only sections merged away."""
        headings, parser = self.headings(body_start)
        n = self.n
        raw: list[tuple[int, int, tuple[str, ...], bool]] = []
        first = self.line_pos(headings[0][0]) if headings else n
        if self.has_content(0, first):
            raw.append((0, first, (), True))
        stack: list[tuple[int, str]] = []
        for i, (line, after, level, title) in enumerate(headings):
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            start = self.line_pos(line)
            end = self.line_pos(headings[i + 1][0]) if i + 1 < len(headings) else n
            content = self.has_content(self.line_pos(after), end)
            raw.append((start, end, tuple(t for _, t in stack), content))
        out: list[_Span] = []
        pending: int | None = None
        pending_path: tuple[str, ...] = ()
        for start, end, path, content in raw:
            if not content:
                if pending is None:
                    pending = start
                pending_path = path
                continue
            if pending is not None:
                start, pending = pending, None
            out.append((start, end, path))
        if pending is not None:
            if out:
                last_start, _, last_path = out[-1]
                out[-1] = (last_start, n, last_path)
            else:
                out.append((pending, n, pending_path))
        return out, parser

    # -- windows ---------------------------------------------------------------

    def _is_item_boundary(self, index: int) -> bool:
        start = self.line_starts[index]
        if _ITEM_BOUNDARY.match(self.text, start, self.line_end(index)):
            return True
        return index > 0 and self._is_blank_line(index - 1)

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
            found = _WS.search(text[lo - 1 : hi][::-1])
            return None if found is None else hi - found.start()
        spans = self._link_spans(lo, hi)
        for m in reversed(list(_WS.finditer(text, lo - 1, hi))):
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

    def _cut(self, lo: int, hi: int) -> int:
        """Choose a window end in ``(lo, hi]``."""
        mid = lo + (hi - lo + 1) // 2
        if self.is_index:
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
        # Only accept a boundary that keeps at least half of the new text the budget
        # allows; otherwise a full-size character cut beats a near-empty window
        # (such as a lone heading line in front of a giant unbroken line).
        pos = self._last_line_start(mid, hi, False)
        if pos is None:
            pos = self._last_ws_cut(mid, hi)
        return self._fix_crlf(hi if pos is None else pos, lo)

    def _overlap_start(self, wstart: int, wend: int) -> int:
        """Start of the window after one ending at ``wend``, in ``(wstart, wend]``."""
        if self.overlap_tokens == 0:
            return wend
        lo = self.sc.min_start(wend, self.overlap_tokens, wstart + 1)
        if lo >= wend:
            return wend
        if self.is_index:
            for preferred in (True, False):
                pos = self._first_line_start(lo, wend, preferred)
                if pos is not None:
                    return pos
            spans = self._link_spans(lo, wend)
            for m in _WS.finditer(self.text, lo - 1, wend - 1):
                if self._inside(m.end(), spans) is None:
                    return min(wend, self._crlf_forward(m.end()))
            return wend
        pos = self._first_line_start(lo, wend, False)
        if pos is not None:
            return pos
        found = _WS.search(self.text, lo - 1, wend - 1)
        pos = lo if found is None else found.end()
        return min(self._crlf_forward(pos), wend)

    def windows(self, start: int, end: int) -> list[tuple[int, int]]:
        """Cut ``[start, end)`` into windows of at most ``max_tokens`` each."""
        sc = self.sc
        budget = self.max_tokens
        out: list[tuple[int, int]] = []
        wstart = prev_end = start
        while True:
            limit = sc.max_end(wstart, budget, end)
            if limit <= prev_end:
                # Only a degenerate estimator (one char over the budget) gets here:
                # take one more character (two for CRLF) so the loop always advances.
                limit = min(end, self._fix_crlf(prev_end + 1, prev_end))
            wend = end if limit >= end else self._cut(prev_end, limit)
            out.append((wstart, wend))
            if wend >= end:
                return out
            # The next window must start after this one's first visible character,
            # so that trimmed windows still start strictly in order.
            first = _NONBLANK.search(self.text, wstart, wend)
            floor = wstart if first is None else first.start()
            wstart, prev_end = self._overlap_start(floor, wend), wend

    # -- assembling ------------------------------------------------------------

    def fit(self, start: int, end: int, path: tuple[str, ...], out: list[_Span]) -> None:
        """Append ``[start, end)`` trimmed, windowed if over budget, to ``out``."""
        trimmed = self.trim(start, end)
        if trimmed is None:
            return
        start, end = trimmed
        if self.sc.cost(start, end) <= self.max_tokens:
            out.append((start, end, path))
            return
        last_end = -1
        for wstart, wend in self.windows(start, end):
            window = self.trim(wstart, wend)
            if window is None or window[1] <= last_end:
                continue  # nothing new beyond the previous window
            out.append((window[0], window[1], path))
            last_end = window[1]


def _basename(path: str) -> str:
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _build_chunks(text: str, spans: list[_Span], estimator: Callable[[str], int]) -> list[Chunk]:
    chunks: list[Chunk] = []
    ascii_only = text.isascii()
    byte_pos = char_pos = 0
    prev_end = -1
    for ordinal, (start, end, path) in enumerate(spans):
        piece = text[start:end]
        data = piece.encode("utf-8", "surrogatepass")
        if ascii_only:
            start_byte = start
        else:
            # Spans start in increasing order, so this walk is linear overall.
            byte_pos += len(text[char_pos:start].encode("utf-8", "surrogatepass"))
            char_pos = start
            start_byte = byte_pos
        chunks.append(
            Chunk(
                ordinal=ordinal,
                heading_path=path,
                start_char=start,
                end_char=end,
                start_byte=start_byte,
                end_byte=start_byte + len(data),
                text=piece,
                hash=hashlib.sha256(data).hexdigest(),
                tokens=estimator(piece),
                overlap_chars=max(0, prev_end - start),
            )
        )
        prev_end = end
    return chunks


def chunk_markdown(
    text: str, config: ChunkerConfig = DEFAULT_CONFIG, *, path: str | None = None
) -> ChunkResult:
    """Chunk one Markdown text.

    Args:
        text: The (already redacted) document text.
        config: Chunker settings.
        path: The document's (logical) path; only its basename is used, to decide
            whether the file is an index file (``config.index_names``).

    Returns:
        The chunks (exact slices of ``text``) and the parsed front matter.

    Raises:
        TypeError: If ``text`` is not a ``str``.
        ChunkerConfigError: If the config names an estimator that is no longer registered.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    try:
        estimator = get_estimator(config.estimator)
    except UnknownEstimatorError as exc:
        raise ChunkerConfigError("estimator", str(exc)) from None
    fm_span = _front_matter_span(text)
    front_matter = (
        {} if fm_span is None else _parse_front_matter_lines(_NEWLINE.split(text[fm_span[0] : fm_span[1]]))
    )
    if _NONBLANK.search(text) is None:
        return ChunkResult([], front_matter)
    strategy = config.strategy
    n = len(text)
    if strategy == "whole" or (strategy == "adaptive" and estimator(text) <= config.max_tokens):
        return ChunkResult(_build_chunks(text, [(0, n, ())], estimator), front_matter)

    is_index = path is not None and _basename(path) in config.index_names
    doc = _Doc(text, config, estimator, estimator.span_cost, is_index)
    spans: list[_Span] = []
    parser = "none"
    if strategy == "windows":
        doc.fit(0, n, (), spans)
    else:
        if fm_span is not None:
            body_start = fm_span[2]
        else:
            body_start = 1 if text.startswith("\ufeff") else 0
        sections, parser = doc.sections(body_start)
        for start, end, heading_path in sections:
            if strategy == "headings":
                trimmed = doc.trim(start, end)
                if trimmed is not None:
                    spans.append((trimmed[0], trimmed[1], heading_path))
            else:
                doc.fit(start, end, heading_path, spans)
    return ChunkResult(_build_chunks(text, spans, estimator), front_matter, parser)
