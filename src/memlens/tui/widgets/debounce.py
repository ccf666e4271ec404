"""A restartable one-shot timer that knows whether it is still waiting.

Typing restarts it; only the last keystroke's callback runs. ``pending`` lets
the app (and tests) tell "nothing scheduled" apart from "about to search". A callback
whose time comes while the app is leaving is dropped: its widgets may already be gone
(a filter typed just before quitting raised ``NoMatches`` for ``#filter`` at exit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.timer import Timer

from memlens.tui.closing import exit_requested


class Debouncer:
    """Run the latest callback ``delay`` seconds after the last :meth:`start`."""

    def __init__(self, owner: Any, delay: float) -> None:
        """Args: owner: the widget, screen or app whose timers to use; delay: seconds."""
        self.owner = owner
        self.delay = delay
        self.pending = False
        self._timer: Timer | None = None

    def start(self, callback: Callable[[], object]) -> None:
        """(Re)start the timer for ``callback``; an earlier callback is dropped."""
        self.cancel()
        self.pending = True

        def fire() -> None:
            self.pending = False
            self._timer = None
            owner = self.owner
            if not exit_requested(owner if isinstance(owner, App) else owner.app):
                callback()

        self._timer = self.owner.set_timer(self.delay, fire)

    def cancel(self) -> None:
        """Drop the waiting callback, if any."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.pending = False
