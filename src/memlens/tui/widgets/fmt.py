"""Small formatting helpers shared by the widgets (pure functions, no Textual state).

Statuses always carry a glyph *and* a word or colour, so the UI reads without
colour too. Timestamps are shown in UTC from stored values (never "now"), which
keeps screenshots deterministic.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from textual.content import Content
from textual.style import Style

if TYPE_CHECKING:
    from memlens.core.types import StoredChunkerConfig

STATUS_GLYPHS: dict[str, str] = {
    "ready": "✓",
    "pending": "…",
    "processing": "⟳",
    "failed": "✗",
    "stale": "≈",
    "tombstoned": "†",
}
"""Glyph per projection status (tombstoned = deleted document)."""

STATUS_STYLES: dict[str, str] = {
    "ready": "$text-success",
    "pending": "$text-warning",
    "processing": "$text-accent",
    "failed": "$text-error",
    "stale": "$text-warning italic",
    "tombstoned": "$text-muted strike",
}
"""Content style per status (theme variables, so light and dark both work)."""

WARNING_GLYPH = "⚠"


def glyph(status: str) -> str:
    """The glyph of a status (``?`` for an unknown one)."""
    return STATUS_GLYPHS.get(status, "?")


def human_size(n: int | None) -> str:
    """Bytes as a short human string: ``812 B``, ``2.1 KB``, ``3.4 MB``."""
    if n is None:
        return "-"
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def timestamp(t: float | None) -> str:
    """A stored epoch time as ``YYYY-MM-DD HH:MM:SS`` (UTC); ``-`` when missing."""
    if not t:
        return "-"
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S")


def relative(t: float | None, now: float) -> str:
    """``in 4s`` / ``3m ago`` relative to ``now`` (the injected clock)."""
    if not t:
        return "-"
    d = t - now
    word = "in {}" if d >= 0 else "{} ago"
    d = abs(d)
    if d < 60:
        s = f"{d:.0f}s"
    elif d < 3600:
        s = f"{d / 60:.0f}m"
    elif d < 86400:
        s = f"{d / 3600:.1f}h"
    else:
        s = f"{d / 86400:.1f}d"
    return word.format(s)


def size_bar(tokens: int, max_tokens: int, width: int = 10) -> tuple[str, bool]:
    """A bar of ``width`` cells for ``tokens`` against ``max_tokens``.

    Returns the bar and whether the chunk is over the limit. Filled cells are
    ``█``, the rest ``░`` so the bar reads without colour.
    """
    if max_tokens <= 0:
        return "░" * width, False
    ratio = tokens / max_tokens
    filled = max(0, min(width, round(ratio * width)))
    if tokens > 0 and filled == 0:
        filled = 1
    return "█" * filled + "░" * (width - filled), tokens > max_tokens


def token_stats(tokens: Sequence[int]) -> tuple[int, int, int, int]:
    """(count, min, median, max) of chunk token counts (zeros when empty)."""
    if not tokens:
        return 0, 0, 0, 0
    return len(tokens), min(tokens), int(statistics.median(tokens)), max(tokens)


def chunker_label(cfg: StoredChunkerConfig | None) -> str:
    """``adaptive/400/80`` for a stored chunker config (``-`` for none)."""
    return "-" if cfg is None or cfg.empty else cfg.label


def short_hash(h: str | None, n: int = 12) -> str:
    """The first ``n`` hex digits of a hash."""
    return (h or "-")[:n]


def plural(n: int, word: str) -> str:
    """``1 chunk`` / ``3 chunks``."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def heading_label(path: Sequence[str], room: int, *, start_char: int = 0) -> str:
    """A heading path that fits ``room`` cells, cut from its *start* so the nearest
    heading stays readable: ``… › Caching › Cache key format``.

    A chunk without headings is ``(top of file)`` when it starts the file and
    ``(no heading)`` elsewhere.
    """
    if not path:
        label = "(top of file)" if start_char == 0 else "(no heading)"
        return label if len(label) <= room else label[: max(1, room - 1)] + "…"
    parts = list(path)
    full = " › ".join(parts)
    if len(full) <= room:
        return full
    while len(parts) > 1 and len("… › " + " › ".join(parts)) > room:
        parts.pop(0)
    last = "… › " + " › ".join(parts) if len(parts) < len(path) else " › ".join(parts)
    if len(last) <= room:
        return last
    return "…" + last[len(last) - max(1, room - 1):]


def shorten_middle(text: str, room: int) -> str:
    """``text`` in at most ``room`` cells, cut from the middle: ``~/…/demo/projects``.

    A path loses whole folders after its first part; otherwise (or when even the
    last folder is too long) the end, the most specific part, keeps two thirds.
    """
    if len(text) <= room:
        return text
    if room <= 1:
        return "…"[:room]
    parts = text.split("/")
    if len(parts) > 2:  # a path: drop whole folders from the middle first
        for keep_tail in range(len(parts) - 2, 0, -1):
            short = "/".join([parts[0], "…", *parts[len(parts) - keep_tail:]])
            if len(short) <= room:
                return short
    keep = room - 1
    head = keep // 3
    return text[:head] + "…" + text[len(text) - (keep - head):]


_NO_PADDING_STYLES = ("reverse", "strike", "underline")

Part = str | Content | tuple[str, str | Style]
"""One argument of ``Content.assemble``."""


def tidy_runs(parts: Sequence[Any]) -> list[Part]:
    """``Content.assemble`` parts whose styled runs never *start* with blanks.

    A run that starts with blanks loses them in some SVG renderers (``rsvg``
    draws the text at the run's position without its leading blanks), so a
    screenshot shows ``3069–3314bytes``. The blanks that start a part move to the
    end of the part before it (where a lost blank changes nothing, since every
    run is placed on its own), or form their own (italic, so distinct) run after a
    reversed/struck/underlined one, which must not grow. ``Content`` parts are
    left as they are.
    """
    out: list[Part] = []
    for part in parts:
        if isinstance(part, Content) or not isinstance(part, str | tuple):
            out.append(part)
            continue
        text, style = part if isinstance(part, tuple) else (part, None)
        if text.startswith(" ") and out:
            body = text.lstrip(" ")
            lead = text[: len(text) - len(body)]
            prev = out[-1]
            if isinstance(prev, tuple) and not any(s in str(prev[1])
                                                   for s in _NO_PADDING_STYLES):
                out[-1] = (prev[0] + lead, prev[1])
            elif isinstance(prev, str):
                out[-1] = prev + lead
            else:  # its own run: italic blanks look like any blanks
                out.append((lead, "italic"))
            text = body
            if not text:
                continue
        out.append((text, style) if style is not None else text)
    return out
