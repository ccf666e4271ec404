"""The key bar at the bottom of every screen: one widget that draws one line.

Textual's ``Footer`` is a container of one ``FooterKey`` widget per binding and composes
them again whenever the screen's bindings change (every focus move): each key is a
widget to mount, style and render. At start-up that cost about half a second of CPU and
~25 ms of the longest event-loop stall at 10,000 documents (``--startup-only`` of
``benchmarks/tui.py``;
``docs/benchmarks.md``, "Start-up: a key bar that draws one line"). This bar keeps the
footer's look (the same theme variables, key and description styles, the command
palette key at the right behind a thin rule) and its behaviour (click a key to press
it, a disabled key rings the bell and is drawn dim, the hovered key is highlighted and
shows its tooltip), and draws it as one line of text, recomputed when the bindings
change.

Keys appear in the screen's binding order, as many as fit whole: screens list their
bindings most important first, so what falls off the right edge is what matters least;
every key still works and all are in help (``?``) and the palette.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import groupby
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.widget import Widget

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.binding import Binding
    from textual.screen import Screen

PALETTE_ROOM = 14
"""Cells kept free at the right for the palette key (``▏^p palette`` and a cell of padding
either side)."""

RULE = "▏"
"""Drawn left of the palette key (Textual's ``vkey`` border)."""


@dataclass(frozen=True)
class BarKey:
    """One key of the bar."""

    key: str  # pressed when clicked
    display: str  # as drawn (``^t``, ``esc``)
    description: str  # "" for a key of a group (its label follows the group)
    enabled: bool
    tooltip: str = ""
    palette: bool = False  # the command palette key, at the right edge


@dataclass(frozen=True)
class BarLabel:
    """A binding group's description, after the group's keys."""

    text: str


def bar_items(screen: Screen[object], palette_binding: str | None,
              display: Callable[[Binding], str]) -> list[BarKey | BarLabel]:
    """What Textual's footer would show for ``screen``, in order (palette key last).

    ``display``: the app's ``get_key_display``. Bindings with ``show=False`` are
    left out; one key per action (the first bound); a group of several actions is drawn
    as its keys followed by the group's description."""
    active = screen.active_bindings
    per_action: defaultdict[str, list[tuple[Binding, bool, str]]] = defaultdict(list)
    for _node, binding, enabled, tooltip in active.values():
        if binding.show:
            per_action[binding.action].append((binding, enabled, tooltip))
    items: list[BarKey | BarLabel] = []
    for group, members in groupby(per_action.values(), lambda m: m[0][0].group):
        grouped = list(members)
        if group is not None and len(grouped) > 1:
            for (binding, enabled, tooltip), *_ in grouped:
                items.append(BarKey(binding.key, display(binding), "", enabled,
                                    tooltip or binding.description))
            items.append(BarLabel(group.description))
            continue
        for (binding, enabled, tooltip), *_ in grouped:
            items.append(BarKey(binding.key, display(binding), binding.description,
                                enabled, tooltip))
    if palette_binding is not None and palette_binding in active:
        _node, binding, enabled, _tip = active[palette_binding]
        items.append(BarKey(binding.key, display(binding), binding.description,
                            enabled, binding.tooltip or binding.description, palette=True))
    return items


def item_text(item: BarKey | BarLabel) -> str:
    """The cells one item takes, as drawn (without the palette's rule and padding)."""
    if isinstance(item, BarLabel):
        return f"{item.text} "
    if item.palette:  # drawn after the rule as Textual's footer draws it: "^p palette"
        return f"{item.display} {item.description}" if item.description else item.display
    if item.description:
        return f" {item.display} {item.description} "
    return f" {item.display} "


class FittingFooter(Widget, can_focus=False):
    """The key bar (see the module): every screen's last line."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"footer--key", "footer--description", "footer--hover",
                         "footer--rule"}
    DEFAULT_CSS = """
    FittingFooter {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        text-wrap: nowrap;
        & > .footer--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .footer--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        & > .footer--hover {
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
        & > .footer--rule {
            color: $foreground 20%;
        }
    }
    """

    def __init__(self, *, show_command_palette: bool = True, id: str | None = None) -> None:
        super().__init__(id=id)
        self.show_command_palette = show_command_palette
        self._items: list[BarKey | BarLabel] | None = None  # None: read them at the next render
        self._spans: list[tuple[int, int, BarKey]] = []  # (first cell, end cell, key) as drawn
        self._hover: BarKey | None = None

    # -- what to draw ------------------------------------------------------------
    def on_mount(self) -> None:
        """Follow the screen's bindings (they change with the focus)."""
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if screen is self.screen and self.is_attached:
            self._items = None
            self.refresh()

    def items(self) -> list[BarKey | BarLabel]:
        """The screen's keys now (cached until its bindings change)."""
        if self._items is None:
            app = self.app
            palette = app.COMMAND_PALETTE_BINDING \
                if self.show_command_palette and app.ENABLE_COMMAND_PALETTE else None
            self._items = bar_items(self.screen, palette, app.get_key_display)
        return self._items

    def visible_keys(self) -> list[BarKey]:
        """The keys drawn at the current width, left to right (the palette key last)."""
        return [key for _x0, _x1, key in self._layout(self.size.width or self.app.size.width)[1]]

    def _layout(self, width: int) -> tuple[list[BarKey | BarLabel], list[tuple[int, int, BarKey]]]:
        """The items that fit whole (in order), and each drawn key's cells."""
        items = self.items()
        room = width - PALETTE_ROOM
        shown: list[BarKey | BarLabel] = []
        spans: list[tuple[int, int, BarKey]] = []
        x = 0
        for item in items:
            if isinstance(item, BarKey) and item.palette:
                continue
            cells = cell_len(item_text(item))
            if x + cells > room:
                break  # what follows matters less: none of it is drawn
            shown.append(item)
            if isinstance(item, BarKey):
                spans.append((x, x + cells, item))
            x += cells
        palette = next((i for i in items if isinstance(i, BarKey) and i.palette), None)
        if palette is not None:
            cells = cell_len(item_text(palette)) + 2  # the rule before, one cell of padding after
            spans.append((max(x, width - cells) + 1, width - 1, palette))
            shown.append(palette)
        return shown, spans

    def render(self) -> Text:
        """The whole line."""
        width = self.size.width
        shown, spans = self._layout(width)
        key_style = self.get_component_rich_style("footer--key")
        desc_style = self.get_component_rich_style("footer--description")
        line = Text(no_wrap=True, end="")
        for item in shown:
            if isinstance(item, BarLabel):
                line.append(item_text(item), desc_style)
                continue
            if item.palette:
                pad = width - line.cell_len - cell_len(item_text(item)) - 2
                line.append(" " * max(0, pad))
                line.append(RULE, self.get_component_rich_style("footer--rule"))
            dim = Style(dim=True) if not item.enabled else Style()
            start = line.cell_len
            if item.palette:
                line.append(item.display, key_style + dim)
                if item.description:
                    line.append(f" {item.description}", desc_style + dim)
            else:
                line.append(f" {item.display} ", key_style + dim)
                if item.description:
                    line.append(f"{item.description} ", desc_style + dim)
            if item is self._hover:
                line.stylize(self.get_component_rich_style("footer--hover"), start,
                             line.cell_len)
            if item.palette:
                line.append(" ")
        self._spans = spans
        if line.cell_len < width:
            line.append(" " * (width - line.cell_len))
        line.truncate(width)
        return line

    # -- the mouse -----------------------------------------------------------------
    def key_at(self, x: int) -> BarKey | None:
        """The key drawn at cell ``x`` (as last rendered), if any."""
        return next((key for x0, x1, key in self._spans if x0 <= x < x1), None)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        key = self.key_at(event.x)
        if key is not self._hover:
            self._hover = key
            self.tooltip = (key.tooltip or None) if key is not None else None
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hover is not None:
            self._hover = None
            self.tooltip = None
            self.refresh()

    def on_mouse_down(self, event: events.MouseDown) -> None:
        """Press the clicked key (a disabled one rings the bell)."""
        key = self.key_at(event.x)
        if key is None:
            return
        event.stop()
        if key.enabled:
            self.app.simulate_key(key.key)
        else:
            self.app.bell()

    def on_resize(self, event: events.Resize) -> None:
        """Fit again at the new width."""
        self.refresh()
