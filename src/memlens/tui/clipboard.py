"""What ``y`` says after copying: how the text travelled and, where it may not arrive,
what to do.

Textual copies with an OSC 52 escape sequence: the terminal puts the text on the system
clipboard. Inside tmux the sequence reaches the outer terminal only with tmux's
``set-clipboard`` option on (issue 42: "copied" was said, nothing arrived).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memlens.core.types import HitSource

TMUX_HINT = "inside tmux it arrives only with `set -g set-clipboard on` in ~/.tmux.conf"


def chunk_clip(src: HitSource) -> str:
    """What ``y`` copies: where the chunk is, a blank line, the chunk."""
    return f"{src.repository}/{src.path} #{src.ordinal} (line {src.line})\n\n{src.text}"


def copy_note(what: str, characters: int, env: Mapping[str, str] | None = None
              ) -> tuple[str, float]:
    """The toast after a copy, and how long it stays: ``("copied notes.md #3 (1,234
    characters) via the terminal (OSC 52)", 4)``; longer, with the tmux hint, in tmux."""
    env = os.environ if env is None else env
    note = f"copied {what} ({characters:,} characters) via the terminal (OSC 52)"
    if env.get("TMUX"):
        return f"{note}; {TMUX_HINT}", 10.0
    return note, 4.0
