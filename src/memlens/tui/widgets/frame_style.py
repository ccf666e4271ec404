"""The base style of a line-API widget, resolved once per frame.

Textual's ``Widget.rich_style`` walks the widget's ancestors for their backgrounds on every
call, and a ``render_line`` that asks for it pays that walk for every line of every frame
(Textual's ``Tree`` does; at 10k documents it was a measurable part of the start-up stall,
docs/benchmarks.md, "Start-up stall: what is left"). A widget's ``render_lines`` wraps its
frame in :func:`frame_style`; its ``render_line`` reads ``_frame_style`` (None outside a
frame: then it asks ``rich_style`` itself).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def frame_style(widget: Any) -> Iterator[None]:
    """Set ``widget._frame_style`` to its ``rich_style`` for the block (one frame)."""
    widget._frame_style = widget.rich_style
    try:
        yield
    finally:
        widget._frame_style = None
