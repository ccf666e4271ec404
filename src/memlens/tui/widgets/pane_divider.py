"""The draggable line between the tree and the detail pane.

Press the mouse on it and drag: it posts :class:`PaneDivider.Dragged` with the
pointer's screen column, and the browser sets the tree's width from it (``<`` and
``>`` do the same from the keyboard).
"""

from __future__ import annotations

from textual import events
from textual.message import Message
from textual.widget import Widget


class PaneDivider(Widget):
    """A one-column rule that resizes the pane on its left when dragged."""

    DEFAULT_CSS = """
    PaneDivider {
        width: 1;
        height: 1fr;
        color: $panel-lighten-2;
        &:hover, &.-dragging { color: $primary; background: $primary-muted; }
    }
    """

    class Dragged(Message):
        """The divider was dragged to screen column ``x``; ``done`` when released."""

        def __init__(self, x: int, done: bool = False) -> None:
            super().__init__()
            self.x = x
            self.done = done

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.tooltip = "drag to resize the tree  (< > keys; z hides it)"
        self.dragging = False

    def render(self) -> str:
        """A vertical rule as tall as the pane."""
        return "\n".join("┃" if self.dragging else "│" for _ in range(self.size.height))

    def on_mouse_down(self, event: events.MouseDown) -> None:
        """Start dragging: every move goes here until the button is released."""
        event.stop()
        self.dragging = True
        self.add_class("-dragging")
        self.capture_mouse()
        self.refresh()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        """Follow the pointer."""
        if self.dragging:
            event.stop()
            self.post_message(self.Dragged(event.screen_x))

    def on_mouse_up(self, event: events.MouseUp) -> None:
        """Drop: the width stays where the pointer is."""
        if self.dragging:
            event.stop()
            self._stop()
            self.post_message(self.Dragged(event.screen_x, done=True))

    def on_mouse_release(self, event: events.MouseRelease) -> None:
        """The capture ended without a button release (e.g. focus left the window)."""
        if self.dragging:
            self._stop()

    def _stop(self) -> None:
        self.dragging = False
        self.remove_class("-dragging")
        if self.app.mouse_captured is self:
            self.release_mouse()
        self.refresh()
