"""memlens' two themes: Textual's dark and light themes with text contrast fixed.

Every text colour the UI uses must reach WCAG AA (4.5:1) against the background it
is drawn on; ``tests/test_contrast.py`` measures it on the rendered screen. Textual's
built-in themes miss that in places: in the light one the tree's sizes and counts,
the chunk gutter and tombstoned names are drawn white on light grey (``auto 60%``
resolved against the wrong background), and green, amber and the footer keys are
too pale; in the dark one white text on the primary blue (tree cursor, primary
buttons) is 3.8:1. These themes keep Textual's palette and fix only that.

:func:`install_themes` registers both and switches a running app from Textual's
built-in dark/light to the matching memlens theme; the browser redirects the palette's
theme picker, which still offers the built-in ones.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from textual.app import App
from textual.theme import BUILTIN_THEMES, Theme

DARK = "memlens-dark"
LIGHT = "memlens-light"


def _fixed(base: str, name: str, variables: dict[str, str], **colours: Any) -> Theme:
    """Textual's theme ``base`` renamed, with only the given colours and variables changed."""
    theme = BUILTIN_THEMES[base]
    return replace(theme, name=name, variables={**theme.variables, **variables}, **colours)


MEMLENS_DARK = _fixed(
    "textual-dark", DARK,
    primary="#0069BA",  # textual-dark's #0178D4 is 3.8:1 under its own text
    variables={
        "text-primary": "#6AAFE6",
        "text-secondary": "#7FA8C8",
        "block-cursor-foreground": "#ffffff",
    },
)

MEMLENS_LIGHT = _fixed(
    "textual-light", LIGHT,
    secondary="#0163AE",
    variables={
        # Concrete colours: "auto 60%" is resolved against the wrong background in
        # component styles (white on light grey).
        "text-muted": "#3E3E3E",
        "text-success": "#1B5E2F",
        "text-warning": "#6B4300",
        "text-accent": "#6B4300",
        "text-error": "#7A273C",
        "text-secondary": "#003F70",
        "primary-muted": "#BCCFDD",
        "warning-muted": "#EED9BB",
        "error-muted": "#E2C6CD",
        "block-cursor-blurred-background": "#BCCFDD",
        "footer-key-foreground": "#004578",
        "footer-description-foreground": "#1F1F1F",
    },
)

THEMES = (MEMLENS_DARK, MEMLENS_LIGHT)
_REPLACES = {"textual-dark": DARK, "textual-light": LIGHT}


def memlens_theme(name: str) -> str:
    """The memlens theme standing for ``name`` (Textual's dark/light), else ``name``."""
    return _REPLACES.get(name, name)


def toggled(dark: bool) -> str:
    """The theme to switch to from a dark (``True``) or light one."""
    return LIGHT if dark else DARK


def install_themes(app: App[Any]) -> None:
    """Register both themes and use the one matching the app's current theme."""
    for theme in THEMES:
        if theme.name not in app.available_themes:
            app.register_theme(theme)
    wanted = memlens_theme(app.theme)
    if wanted != app.theme:
        app.theme = wanted
