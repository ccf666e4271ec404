"""What a line-API widget asks for on every line, resolved once per frame.

Textual's ``Widget.rich_style`` walks the widget's ancestors for their backgrounds on every
call, ``Widget.size`` walks up to the screen and looks the widget up in the compositor, and
``get_component_styles`` merges a new styles object each time; a ``render_line`` that asks
for them pays that for every line of every frame (Textual's ``Tree`` asks ``size`` four
times and ``get_component_styles`` three times a line; at 10k documents they were a
measurable part of the start-up stall and a sixth of a tree line's cost,
docs/benchmarks.md, "Start-up stall: what is left" and "Filter results without a message
per repository"). Nothing changes them within one frame, so :class:`FrameMemo` resolves
them when ``render_lines`` starts and forgets them when it ends: its ``render_line`` reads
``_frame_style`` (None outside a frame: then it asks ``rich_style`` itself), and ``size``
and ``get_component_styles`` answer from the frame while it draws.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.style import Style
from textual.css.styles import RenderStyles
from textual.geometry import Region, Size
from textual.strip import Strip

if TYPE_CHECKING:
    from textual.widget import Widget

    _Base = Widget
else:
    _Base = object


class FrameMemo(_Base):
    """Mixin (before the Textual widget class): base style, size and component styles
    resolved once per ``render_lines`` call."""

    _frame_style: Style | None = None  # rich_style during one render_lines call
    _frame_size: Size | None = None  # size, ditto
    _frame_components: dict[tuple[str, ...], RenderStyles] | None = None  # ditto

    def render_lines(self, crop: Region) -> list[Strip]:
        """The widget's lines for one frame, with the frame's values in place."""
        self._frame_style = self.rich_style
        self._frame_size = super().size
        self._frame_components = {}
        try:
            return super().render_lines(crop)
        finally:
            self._frame_style = self._frame_size = self._frame_components = None

    @property
    def size(self) -> Size:
        """The content size (the frame's, while :meth:`render_lines` draws)."""
        frame = self._frame_size
        return frame if frame is not None else super().size

    def get_component_styles(self, *names: str) -> RenderStyles:
        """Textual's, asked once per frame and name while :meth:`render_lines` draws."""
        memo = self._frame_components
        if memo is None:
            return super().get_component_styles(*names)
        styles = memo.get(names)
        if styles is None:
            styles = memo[names] = super().get_component_styles(*names)
        return styles
