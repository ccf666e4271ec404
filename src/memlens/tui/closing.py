"""Dropping worker messages that arrive while the app takes its widgets down."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from textual.app import App
from textual.css.query import NoMatches

_F = TypeVar("_F", bound=Callable[..., Any])


def exit_requested(app: App[Any]) -> bool:
    """The app is leaving, or its default screen is being dismantled (a test ending)."""
    if app._exit or app._closing or app._closed or not app.screen_stack:
        return True
    return bool(app.screen._closing or app.screen._closed)


def quiet_when_closing(handler: _F) -> _F:
    """Drop a worker message that arrives while the app is tearing its widgets down."""

    @wraps(handler)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return handler(self, *args, **kwargs)
        except NoMatches:
            if not exit_requested(self.app):
                raise
            return None

    return cast(_F, wrapper)
