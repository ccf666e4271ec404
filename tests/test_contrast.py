"""Text contrast of both themes: WCAG AA, 4.5:1, measured on what the app draws.

Two levels:

* the theme variables the UI's text styles use (``$text-muted``, ``$text-success``,
  ...), read from the running app with :meth:`App.get_css_variables`, against the
  backgrounds text is drawn on (``$surface``, ``$panel``, the selected band, the
  overlap and warning tints);
* every character of text on the rendered screen (tree sizes and counts, the chunk
  gutter, tombstoned names, muted labels, the rechunk dialog, help), taken from the
  compositor's segments, so styles from ``app.tcss``, ``DEFAULT_CSS`` and Content
  markup are all measured as drawn.

The contrast ratio is WCAG 2's ``(L1 + 0.05) / (L2 + 0.05)`` over relative
luminance ``0.2126 R + 0.7152 G + 0.0722 B`` of linearised sRGB channels.
Exempt, as WCAG does: disabled controls, the dimmed screen behind a dialog, and
non-text glyphs (box drawing and block elements: borders, bars, scrollbars).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual._context import visible_screen_stack
from textual.color import Color
from textual.pilot import Pilot
from textual.screen import ModalScreen

from memlens.tui.app import MemlensApp
from memlens.tui.theme import DARK, LIGHT
from tests.conftest import Clock
from tests.test_tui import (
    LANTERN,
    ORCHARD,
    TIDEWATER,
    Scenario,
    async_test,
    build_scenario,
    select_doc,
    settle,
)

AA = 4.5


def _channel(v: int) -> float:
    c = v / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def luminance(rgb: tuple[int, int, int]) -> float:
    """WCAG relative luminance of an sRGB colour."""
    r, g, b = rgb
    return 0.2126 * _channel(r) + 0.7152 * _channel(g) + 0.0722 * _channel(b)


def contrast(fg: tuple[int, int, int], bg: tuple[int, int, int]) -> float:
    """WCAG contrast ratio, 1 to 21."""
    hi, lo = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_contrast_formula() -> None:
    """Known values: black on white 21:1, a colour on itself 1:1, #767676 on white just
    passes AA and #777777 just fails (the usual reference pair)."""
    assert contrast((0, 0, 0), (255, 255, 255)) == pytest.approx(21.0)
    assert contrast((200, 10, 10), (200, 10, 10)) == pytest.approx(1.0)
    assert contrast((0x76,) * 3, (255,) * 3) == pytest.approx(4.54, abs=0.01)
    assert contrast((0x77,) * 3, (255,) * 3) < AA


# -- theme variables ----------------------------------------------------------------

TEXT_VARIABLES = ["text", "text-muted", "text-primary", "text-success", "text-warning",
                  "text-error", "text-accent", "text-secondary", "foreground"]
"""The variables the UI's text is styled with."""

PLAIN_BACKGROUNDS = ["background", "surface", "panel", "primary-muted",
                     "block-cursor-blurred-background"]
"""Where any of that text may stand: panes, title/status/info bars, the selected chunk
band and the highlighted (unfocused) timeline row."""

TINTED = {"warning-muted": ["text", "text-muted", "text-warning", "foreground"],
          "error-muted": ["text", "text-error", "foreground"]}
"""The tints and what is drawn on them: the index-warnings box and the overlap lines;
the "Claude stops loading here" rule."""


def resolve(variables: dict[str, str], name: str, under: Color) -> Color:
    """A variable's colour as drawn over ``under`` (``auto N%`` and alpha blended)."""
    value = variables[name]
    if value.startswith("auto"):
        alpha = float(value.split()[1].rstrip("%")) / 100 if " " in value else 1.0
        colour = under.get_contrast_text(alpha)
    else:
        colour = Color.parse(value)
    return under.blend(colour.with_alpha(1.0), colour.a) if colour.a < 1 else colour


def theme_failures(variables: dict[str, str]) -> list[str]:
    """``text on background: ratio`` for every used pair under 4.5:1."""
    base = Color.parse(variables["background"])
    pairs = [(fg, bg) for bg in PLAIN_BACKGROUNDS for fg in TEXT_VARIABLES]
    pairs += [(fg, bg) for bg, fgs in TINTED.items() for fg in fgs]
    out = []
    for fg, bg in pairs:
        under = resolve(variables, bg, base)
        ratio = contrast(resolve(variables, fg, under).rgb, under.rgb)
        if ratio < AA:
            out.append(f"${fg} on ${bg}: {ratio:.2f}")
    return out


@pytest.fixture
def scenario(tmp_path: Path, clock: Clock, make_service: Callable[..., Any]) -> Scenario:
    """The corpus with every state (tombstoned, failed, stale, overlapping chunks...)."""
    return build_scenario(tmp_path, clock, make_service)


@async_test
async def test_theme_text_colours_pass_aa(scenario: Scenario) -> None:
    """Dark and light, reached with `d` as a user would: every text colour the UI
    uses reaches 4.5:1 on every background it is drawn on."""
    app = scenario.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        seen = {}
        for _ in range(2):
            seen[app.theme] = theme_failures(app.get_css_variables())
            await pilot.press("d")
            await settle(pilot)
        assert set(seen) == {DARK, LIGHT}, seen.keys()
        assert seen == {DARK: [], LIGHT: []}


def test_textual_light_fails_where_the_issue_says() -> None:
    """The measure can fail: Textual's own light theme is below AA for the amber and
    green the statuses use (the reason memlens-light exists)."""
    from textual.theme import BUILTIN_THEMES

    variables = BUILTIN_THEMES["textual-light"].to_color_system().generate()
    failures = theme_failures(variables)
    assert "$text-warning on $panel: 2.80" in failures
    assert any(f.startswith("$text-success on $surface") for f in failures)


# -- the rendered screen ----------------------------------------------------------


def _non_text(ch: str) -> bool:
    return "\u2500" <= ch <= "\u259f" or ch.isspace()


def screen_failures(app: MemlensApp) -> tuple[list[str], str]:
    """Text runs under 4.5:1 on the current screen, and all the text measured."""
    visible_screen_stack.set(app._background_screens)
    strips = app.screen._compositor.render_strips()
    failures: list[str] = []
    measured: list[str] = []
    for y, strip in enumerate(strips):
        x = 0
        for seg in strip:
            text, style = seg.text, seg.style
            at, x = x, x + seg.cell_length
            if style is None or all(_non_text(c) for c in text):
                continue
            fg, bg = style.color, style.bgcolor
            if style.reverse:
                fg, bg = bg, fg
            assert fg is not None and bg is not None, f"no colour for {text!r} at {at},{y}"
            widget, _ = app.screen.get_widget_at(at, y)
            if widget is app.screen and isinstance(app.screen, ModalScreen):
                continue  # the dimmed screen behind a dialog
            if widget.is_disabled:
                continue  # WCAG exempts inactive controls
            f, b = fg.get_truecolor(), bg.get_truecolor()
            if style.dim:
                f = type(f)(*((a + c) // 2 for a, c in zip(f, b, strict=True)))
            ratio = contrast((f.red, f.green, f.blue), (b.red, b.green, b.blue))
            measured.append(text)
            if ratio < AA:
                failures.append(f"{text.strip()!r} {f.hex} on {b.hex} = {ratio:.2f} "
                                f"({type(widget).__name__}#{widget.id} at {at},{y})")
    return failures, "".join(measured)


async def _views(pilot: Pilot[Any], sc: Scenario) -> list[tuple[str, list[str], str]]:
    """Walk the views a user sees; the failures and measured text of each."""
    app = pilot.app
    assert isinstance(app, MemlensApp)
    out = []

    async def look(name: str) -> None:
        await settle(pilot)
        app.clear_notifications()
        await pilot.pause()
        out.append((name, *screen_failures(app)))

    await app.run_action("toggle_tombstoned")
    await settle(pilot)
    for node in app.doc_tree.root.children:
        node.expand()
    for repo, path, tab in [(LANTERN, "performance.md", "chunks"),
                            (LANTERN, "build.md", "timeline"),
                            (LANTERN, "scratch.md", "chunks"),
                            (ORCHARD, "flaky-notes.md", "projection"),
                            (TIDEWATER, "auth.md", "projection")]:
        await select_doc(pilot, sc.doc_id(repo, path))
        await app.run_action(f"show_tab('{tab}')")
        await look(f"{path} {tab}")
        if path == "performance.md":
            await pilot.press("n")  # chunk #1 starts with lines shared with #0 (↑ovl)
            await look(f"{path} chunk #1")
    await select_doc(pilot, sc.doc_id(TIDEWATER, "architecture.md"))
    await pilot.press("c")
    await look("rechunk dialog")
    await pilot.press("escape")
    await settle(pilot)
    await pilot.press("question_mark")
    await look("help")
    await pilot.press("escape")
    return out


@pytest.mark.parametrize("size", [(120, 36), (80, 24)], ids=["120x36", "80x24"])
@pytest.mark.parametrize("theme", ["dark", "light"])
@async_test
async def test_rendered_text_passes_aa(scenario: Scenario, theme: str,
                                       size: tuple[int, int]) -> None:
    """Every text run on the browser (tree, chunks, timeline, projection), the rechunk
    dialog and help reaches 4.5:1 against the background it is drawn on; the sizes,
    counts, gutter and tombstoned names the issue names are among what is measured."""
    app = scenario.app()
    app.animation_level = "none"
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if theme == "light":
            await pilot.press("d")
            await settle(pilot)
        assert app.theme == (LIGHT if theme == "light" else DARK)
        views = await _views(pilot, scenario)
    text = "".join(measured for _, _, measured in views)
    for sample in ("KB", "docs", "1ch", "↑ovl", "91t", "scratch.md", "Cancel", "Keys"):
        assert sample in text, f"{sample!r} was not measured"
    failing = [f"{name}: {f}" for name, fails, _ in views for f in fails]
    assert not failing, "\n".join(failing[:40])
