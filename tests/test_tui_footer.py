"""The key bar (``memlens.tui.widgets.footer.FittingFooter``): one widget drawing one line.

It replaced Textual's ``Footer`` (one widget per key, composed again at every focus
move) and keeps its behaviour: keys in binding order, as many as fit whole, hidden
bindings left out, one key per action, the palette key at the right edge, a click
presses the key, a disabled key is dim and rings the bell, hovering highlights a key
and shows its tooltip, and the keys follow the focus.
"""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Static

from memlens.tui.app import MemlensApp
from memlens.tui.widgets.footer import PALETTE_ROOM, BarKey, FittingFooter, item_text
from tests.test_tui import SIZE, async_test, build_scenario, settle


class Panel(Widget, can_focus=True):
    """A focusable widget with a key of its own."""

    BINDINGS = [Binding("x", "app.record('panel')", "Panel key", tooltip="the panel's own")]

    def render(self) -> str:
        return "panel"


class Keys(App[None]):
    AUTO_FOCUS = None  # the panel's key shows only once the test focuses it
    CSS = "Static, Panel { height: 1; }"  # no scrollbar: the bar is as wide as the terminal
    BINDINGS = [
        Binding("a", "record('one')", "First", tooltip="the first key"),
        Binding("b", "record('two')", "Second key"),
        Binding("c", "record('hidden')", "Hidden", show=False),
        Binding("d", "record('four')", "Fourth"),
        Binding("e", "record('four')", "Also fourth"),  # same action: one key shown
        Binding("f", "record('six')", "Sixth"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.pressed: list[str] = []
        self.bells = 0
        self.four_on = True

    def compose(self) -> ComposeResult:
        yield Static("body", id="body")
        yield Panel(id="panel")
        yield FittingFooter()

    def action_record(self, what: str) -> None:
        self.pressed.append(what)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "record" and parameters == ("four",) and not self.four_on:
            return None  # shown, disabled
        return True

    def bell(self) -> None:
        self.bells += 1


def _bar(app: App[Any]) -> FittingFooter:
    return app.screen.query_one(FittingFooter)


async def _drawn(pilot: Any) -> FittingFooter:
    """The bar once the app has started, drawn once (so its key cells are known)."""
    await pilot.pause()
    bar = _bar(pilot.app)
    bar.render()
    return bar


@async_test
async def test_keys_in_binding_order_one_per_action_hidden_left_out_palette_last() -> None:
    app = Keys()
    async with app.run_test(size=(120, 6)) as pilot:
        await pilot.pause()
        keys = [k for k in _bar(app).visible_keys()]
        assert [k.key for k in keys] == ["a", "b", "d", "f", "ctrl+p"]
        assert keys[-1].palette and not any(k.palette for k in keys[:-1])
        line = _bar(app).render().plain
        assert len(line) == 120
        assert line.startswith(" a First  b Second key  d Fourth  f Sixth ")
        assert line.endswith("▏^p palette ")
        assert "Hidden" not in line and "Also fourth" not in line


@async_test
async def test_only_whole_keys_that_fit_and_nothing_after_the_first_that_does_not() -> None:
    app = Keys()
    first, second = " a First ", " b Second key "
    # Room for the first two keys and not the third (" d Fourth "), which is longer
    # than the last one (" f Sixth "): the bar stops at the third.
    width = PALETTE_ROOM + len(first) + len(second) + len(" d Fourth ") - 1
    async with app.run_test(size=(width, 6)) as pilot:
        await pilot.pause()
        bar = _bar(app)
        assert [k.key for k in bar.visible_keys()] == ["a", "b", "ctrl+p"]
        line = bar.render().plain
        assert line.startswith(first + second) and "Sixth" not in line
        assert line.endswith("▏^p palette ") and len(line) == width
        # Wider by one: the third fits whole now.
        await pilot.resize_terminal(width + 1, 6)
        await pilot.pause()
        assert [k.key for k in bar.visible_keys()] == ["a", "b", "d", "ctrl+p"]


@async_test
async def test_click_presses_the_key_disabled_key_rings_the_bell() -> None:
    app = Keys()
    async with app.run_test(size=(120, 6)) as pilot:
        bar = await _drawn(pilot)
        assert await pilot.click(FittingFooter, offset=(len(" a First ") + 2, 0))
        await pilot.pause()
        assert app.pressed == ["two"]
        app.four_on = False
        app.refresh_bindings()
        await pilot.pause()
        four = next(k for k in bar.visible_keys() if k.key == "d")
        assert not four.enabled
        x = len(" a First  b Second key ") + 1
        assert bar.key_at(x) == four
        await pilot.click(FittingFooter, offset=(x, 0))
        await pilot.pause()
        assert app.pressed == ["two"] and app.bells == 1
        # The disabled key is drawn dim; the enabled ones are not.
        text = bar.render()
        dim_at = {s.start for s in text.spans if s.style and getattr(s.style, "dim", False)}
        assert x - 1 in dim_at and 0 not in dim_at
        # Blank cells and the rule press nothing.
        await pilot.click(FittingFooter, offset=(100, 0))
        await pilot.pause()
        assert app.pressed == ["two"] and app.bells == 1


@async_test
async def test_hover_highlights_the_key_and_shows_its_tooltip() -> None:
    app = Keys()
    async with app.run_test(size=(120, 6)) as pilot:
        bar = await _drawn(pilot)
        await pilot.hover(FittingFooter, offset=(2, 0))
        await pilot.pause()
        assert bar._hover is not None and bar._hover.key == "a"
        assert bar.tooltip == "the first key"
        hover = bar.get_component_rich_style("footer--hover")
        text = bar.render()
        assert any(s.start == 0 and s.end == len(" a First ") and s.style == hover
                   for s in text.spans)
        await pilot.hover("#body")
        await pilot.pause()
        assert bar._hover is None and bar.tooltip is None


@async_test
async def test_keys_follow_the_focus() -> None:
    app = Keys()
    async with app.run_test(size=(120, 6)) as pilot:
        await pilot.pause()
        bar = _bar(app)
        app.set_focus(None)
        await pilot.pause()
        assert "x" not in [k.key for k in bar.visible_keys()]
        app.set_focus(app.query_one("#panel"))
        await pilot.pause()
        keys = bar.visible_keys()
        assert keys[0] == BarKey("x", "x", "Panel key", True, "the panel's own")
        assert bar.render().plain.startswith(item_text(keys[0]))
        await pilot.press("x")
        assert app.pressed == ["panel"]
        app.set_focus(None)
        await pilot.pause()
        assert "x" not in [k.key for k in bar.visible_keys()]


@async_test
async def test_the_app_screens_draw_the_bar_without_a_widget_per_key(
        tmp_path: Any, clock: Any, make_service: Any) -> None:
    """Every memlens screen ends in the bar, and the bar has no children to compose."""
    sc = build_scenario(tmp_path, clock, make_service, states=False)
    app: MemlensApp = sc.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key in ("", "s"):  # the browser, then search
            if key:
                await pilot.press(key)
                await settle(pilot)
            bar = _bar(app)
            assert list(bar.children) == []
            keys = [k.key for k in bar.visible_keys()]
            assert keys and keys[-1] == "ctrl+p"
            # Every other drawn key is one of the screen's shown, active bindings.
            shown = {b.binding.key for b in app.screen.active_bindings.values()
                     if b.binding.show}
            assert set(keys[:-1]) <= shown

