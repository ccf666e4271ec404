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
* The floor (``adaptive``): a trimmed section estimated under :func:`tiny_tokens`
  (``min_tokens``, default 50, at most an eighth of ``max_tokens``) is merged with
  the sections after it until the merged chunk reaches the floor, as long as the
  merge fits ``max_tokens`` (reason ``merged: N short sections``); a short run that
  cannot join the next section, or ends the text, joins the previous chunk when that
  fits. So a file of a million one-line sections gives about ``estimate /
  min_tokens`` chunks, not a million.
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
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from memlens.core.chunking.scan import HEADING_TITLE_MAX_CHARS as HEADING_TITLE_MAX_CHARS
from memlens.core.chunking.scan import (
    NEWLINE,
    NONBLANK,
    Heading,
    front_matter_span,
    headings_line_scan,
    parse_front_matter,
    parse_front_matter_lines,
)
from memlens.core.chunking.scan import headings_markdown_it as _headings_markdown_it
from memlens.core.chunking.tokens import UnknownEstimatorError, get_estimator
from memlens.core.chunking.windows import ChunkDoc, Span

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
    "overlap_cap",
    "tiny_tokens",
    "parse_front_matter",
]

CHUNKER_NAME: Final = "memlens-markdown"
"""Name recorded with every revision's chunker config."""

CHUNKER_VERSION: Final = 4
"""Bump whenever the same config can produce different chunks."""

STRATEGIES: Final = ("adaptive", "headings", "windows", "whole")
"""Known chunking strategies."""

PARSE_LIMIT_CHARS: Final = 1_000_000
"""Bodies longer than this use the line-scan heading finder instead of markdown-it."""

_CONFIG_FIELDS: Final = (
    "strategy",
    "max_tokens",
    "overlap_tokens",
    "min_tokens",
    "index_names",
    "estimator",
)

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
        min_tokens: The floor (``adaptive``): adjacent sections under it are merged
            into one chunk while the merge fits ``max_tokens``. Applied as
            :func:`tiny_tokens` (at most an eighth of ``max_tokens``); 0 merges nothing.
        index_names: File basenames treated as index files (``MEMORY.md``).
        estimator: Name of a registered token estimator (see ``memlens.core.chunking.tokens``).
    """

    strategy: str = "adaptive"
    max_tokens: int = 400
    overlap_tokens: int = 80
    min_tokens: int = 50
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
        if not _is_int(self.min_tokens) or self.min_tokens < 0:
            raise ChunkerConfigError(
                "min_tokens", f"must be a non-negative integer, got {self.min_tokens!r}")
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
            "min_tokens": self.min_tokens,
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
        reason: Why the chunk exists: ``whole file``, ``section``, ``merged: N short
            sections``, ``window k/n of "Heading"`` or ``index lines a–b``.
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
    reason: str = ""


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
# The chunker
# ---------------------------------------------------------------------------


def _find_headings(doc: ChunkDoc, body_start: int) -> tuple[Iterable[Heading], str]:
    """Headings of the body and the parser used (``markdown-it`` or ``line-scan``).

    :data:`PARSE_LIMIT_CHARS` and ``_headings_markdown_it`` are looked up in this
    module at call time (tests patch them here).
    """
    body = doc.text[body_start:]
    # The line holding body_start (a BOM-only offset of 1 still means line 0).
    first_line = bisect_right(doc.line_starts, body_start) - 1
    if len(body) <= PARSE_LIMIT_CHARS:
        try:
            return _headings_markdown_it(body, first_line), "markdown-it"
        except RecursionError:
            pass
    return headings_line_scan(doc, body_start, first_line), "line-scan"


def _basename(path: str) -> str:
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _build_chunks(text: str, spans: list[Span], estimator: Callable[[str], int],
                  reasons: list[str]) -> list[Chunk]:
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
                reason=reasons[ordinal] if ordinal < len(reasons) else "",
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
    fm_span = front_matter_span(text)
    front_matter = (
        {} if fm_span is None else parse_front_matter_lines(NEWLINE.split(text[fm_span[0] : fm_span[1]]))
    )
    if NONBLANK.search(text) is None:
        return ChunkResult([], front_matter)
    strategy = config.strategy
    n = len(text)
    if strategy == "whole" or (strategy == "adaptive" and estimator(text) <= config.max_tokens):
        return ChunkResult(_build_chunks(text, [(0, n, ())], estimator, ["whole file"]),
                           front_matter)

    is_index = path is not None and _basename(path) in config.index_names
    doc = ChunkDoc(text, config.max_tokens, config.overlap_tokens, estimator.span_cost, is_index)
    spans: list[Span] = []
    reasons: list[str] = []
    parser = "none"
    if strategy == "windows":
        doc.fit(0, n, (), spans, reasons)
    else:
        if fm_span is not None:
            body_start = fm_span[2]
        else:
            body_start = 1 if text.startswith("\ufeff") else 0
        headings, parser = _find_headings(doc, body_start)
        sections = ((t[0], t[1], p) for s0, e0, p in doc.sections(headings, body_start)
                    if (t := doc.trim(s0, e0)) is not None)
        if strategy == "headings":
            spans = list(sections)
            reasons = ["section"] * len(spans)
        else:
            for (start, end, heading_path), count in doc.merge_tiny(sections,
                                                                   tiny_tokens(config)):
                doc.fit(start, end, heading_path, spans, reasons,
                        "section" if count == 1 else f"merged: {count} short sections")
    return ChunkResult(_build_chunks(text, spans, estimator, reasons), front_matter, parser)


def overlap_cap(config: ChunkerConfig) -> int:
    """The most a window repeats of the previous one: the overlap is at least
    ``overlap_tokens`` (when the previous window holds that much) and is moved back to
    a line, sentence or word start within this cap (1.5 x overlap + 4, at most halfway
    from the overlap to ``max_tokens``, never below ``overlap_tokens``)."""
    o = config.overlap_tokens
    return max(o, min(o * 3 // 2 + 4, (config.max_tokens + o) // 2))


def tiny_tokens(config: ChunkerConfig) -> int:
    """The floor applied (``adaptive``): sections under this many estimated tokens are
    merged with their neighbours. It is ``min_tokens`` (default 50), but at most an
    eighth of ``max_tokens`` (and that at least 8), so small budgets keep focused chunks:
    50 at the default 400, 15 at 120, 8 at 64 and below; 0 when ``min_tokens`` is 0."""
    return min(config.min_tokens, max(8, config.max_tokens // 8))
