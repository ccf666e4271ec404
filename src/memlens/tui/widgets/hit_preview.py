"""The search screen's helpers: the preview of the highlighted hit's chunk, the editor
command that opens a hit at its line, and short names for the repository filter."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from memlens.core.types import HitSource

# Editors that take ``--goto FILE:LINE`` or ``FILE:LINE``; every other takes ``+LINE FILE``
# (vi, vim, nvim, nano, emacs, micro, kak, joe, ne, mg ...).
_GOTO_FLAG = {"code", "code-insiders", "codium", "cursor", "windsurf"}
_COLON_LINE = {"subl", "sublime_text", "zed", "hx", "helix"}


def editor_command(path: Path, line: int, env: dict[str, str] | None = None) -> list[str] | None:
    """The argv that opens ``path`` at ``line`` in ``$VISUAL`` / ``$EDITOR``; None if
    neither is set (or it cannot be split)."""
    env = dict(os.environ) if env is None else env
    raw = (env.get("VISUAL") or env.get("EDITOR") or "").strip()
    try:
        argv = shlex.split(raw)
    except ValueError:
        return None
    if not argv:
        return None
    base = Path(argv[0]).name.removesuffix(".exe")
    if base in _GOTO_FLAG:
        return [*argv, "--goto", f"{path}:{line}"]
    if base in _COLON_LINE:
        return [*argv, f"{path}:{line}"]
    return [*argv, f"+{line}", str(path)]


def short_repositories(repos: Sequence[str]) -> dict[str, str]:
    """Full repository slug -> a short label: the common leading part of all slugs
    (``-home-dev-projects-``) cut at a ``-`` boundary."""
    if len(repos) < 2:
        return {r: r for r in repos}
    prefix = os.path.commonprefix(list(repos))
    cut = prefix.rfind("-") + 1
    out = {}
    for r in repos:
        label = r[cut:] if cut and len(r) > cut else r
        out[r] = label or r
    return out


def preview_content(src: HitSource, spans: Sequence[tuple[int, int]]) -> tuple[Content, int]:
    """The chunk with the query's terms highlighted, under a line saying where it is,
    and the line (of the text, before wrapping) of the first highlight."""
    head = f"{src.repository}/{src.path} #{src.ordinal} · line {src.line}"
    parts: list[Any] = [(head, "$text-muted"), "\n"]
    if src.heading_path:
        parts += [(" > ".join(src.heading_path), "bold"), "\n"]
    parts.append("\n")
    first = min((a for a, _ in spans), default=0)
    first_line = sum(1 for p in parts if p == "\n") + src.text[:first].count("\n")
    text, pos = src.text, 0
    for a, b in sorted(spans):
        a, b = max(a, pos), min(b, len(text))
        if a >= b:
            continue
        parts += [text[pos:a], (text[a:b], "bold reverse $text-warning")]
        pos = b
    parts.append(text[pos:])
    return Content.assemble(*parts), first_line


class HitPreview(VerticalScroll, can_focus=False):
    """The whole chunk of the highlighted hit (word-wrapped, scrolls with the mouse)."""

    DEFAULT_CSS = """
    HitPreview {
        border-left: vkey $foreground 20%;
        padding: 0 1;
        & #hit-preview-text { width: 1fr; height: auto; }
    }
    """

    def compose(self) -> Any:
        """One Static holding the text."""
        yield Static("", id="hit-preview-text")

    def show(self, content: Content | str, line: int = 0) -> None:
        """Replace the text; scroll so that ``line`` (the first highlight) is in view."""
        self.query_one("#hit-preview-text", Static).update(content)
        self.scroll_home(animate=False)
        if line > 2:  # after the new text is laid out (wrapping only moves it further down)
            self.call_after_refresh(self._reveal, line)

    def _reveal(self, line: int) -> None:
        if line >= self.size.height - 1:  # not in view from the top
            self.scroll_to(y=line - 2, animate=False)

    @property
    def text(self) -> str:
        """The text shown (for tests)."""
        return str(self.query_one("#hit-preview-text", Static).render())
