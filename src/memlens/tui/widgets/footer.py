"""A footer that drops whole keys, lowest priority last in the list first, instead of
cutting a label in the middle ("n Next c") when the terminal is narrow."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, FooterLabel, KeyGroup

PALETTE_ROOM = 14
"""Cells kept free at the right for the palette key (``^p palette``)."""


def key_width(widget: object) -> int:
    """Cells one footer entry takes (key, description and their padding)."""
    if isinstance(widget, FooterKey):
        desc = widget.description
        return len(widget.key_display) + (len(desc) + 1 if desc else 0) + 2
    if isinstance(widget, FooterLabel):
        return len(str(widget.render())) + 2
    return 0


class FittingFooter(Footer):
    """:class:`Footer` with keys in the screen's binding order, as many as fit whole.

    Screens list their bindings most important first, so what falls off the right edge
    is what matters least; every key still works and all are in help (``?``) and the
    palette."""

    def compose(self) -> ComposeResult:
        """Textual's footer entries, cut after the last one that fits."""
        width = self.size.width or self.app.size.width
        room = width - PALETTE_ROOM
        used = 0
        for widget in super().compose():
            if isinstance(widget, FooterKey) and widget.has_class("-command-palette"):
                yield widget
                continue
            if isinstance(widget, KeyGroup):  # a group's keys are composed as its children
                yield widget
                continue
            used += key_width(widget)
            if used > room:
                continue
            yield widget

    def on_resize(self, event: events.Resize) -> None:
        """Fit again at the new width."""
        self.refresh(recompose=True)
