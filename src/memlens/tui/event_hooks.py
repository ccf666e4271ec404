"""What feeds the events pane: the app-level log, every warning/error notice, watcher events.

:class:`EventsApp` sits under :class:`memlens.tui.workers.AppWorkers`. Every notice the app
shows with severity ``warning`` or ``error`` (worker failures named by what the user tried,
files that could not be read with their reason, projection retries that failed, watcher
errors) is also kept in :attr:`EventsApp.events_log`; watcher events are kept as they arrive.
The status bar shows the latest problem and the count; ``E`` (or the palette) opens the pane.
"""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import App
from textual.notifications import SeverityLevel

from memlens.tui.messages import WatchStatus
from memlens.tui.screens.events import EventLog, EventsScreen, Level
from memlens.tui.widgets.status_bar import StatusBar

_LEVELS: dict[str, Level] = {"warning": "warning", "error": "error"}


def failure_sentence(task: str) -> str:
    """``Could not load statistics. The details are in the events pane (E).``: what a
    toast says when something failed (the exception's text goes to the events pane)."""
    return f"Could not {task}. The details are in the events pane (E)."


def failure_detail(error: BaseException | str | None) -> str:
    """``OSError: disk I/O error``: the events pane's detail of a failure."""
    if error is None:
        return "unknown error"
    if isinstance(error, str):
        return error.strip() or "unknown error"
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class EventsApp(App[None]):
    """An app whose warnings and errors are also kept in an :class:`EventLog`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.events_log = EventLog()
        self._last_watch_event = ""

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True,
               detail: str | None = None) -> None:
        """Show a toast; warnings and errors are also recorded in the events pane, with
        ``detail`` (the exception's text, which the toast never shows) after them."""
        level = _LEVELS.get(severity)
        if level is not None:  # a notice listing several files is one line per file
            for line in message.splitlines() or [""]:
                self.record(title or severity, line, level=level, detail=detail)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def record(self, kind: str, text: str, *, level: Level = "info",
               path: str | None = None, detail: str | None = None) -> None:
        """Add one line to the events pane and update the status bar's problem field."""
        self.events_log.add(kind, text, level=level, path=path, detail=detail)
        latest = self.events_log.latest_problem()
        self.show_problem(latest.text if latest else "", self.events_log.problems)
        screen = self.screen_stack[-1] if self.screen_stack else None
        if isinstance(screen, EventsScreen):
            screen.refresh_events()

    def show_problem(self, text: str, count: int) -> None:
        """Put the latest problem and the count on every status bar on the screen stack."""
        for screen in self.screen_stack:
            for bar in screen.query(StatusBar):
                bar.problem = text
                bar.problems = count

    @on(WatchStatus)
    def _record_watch_event(self, message: WatchStatus) -> None:
        if not message.last or message.last == self._last_watch_event:
            return
        self._last_watch_event = message.last
        if message.error:
            return  # a problem: the app's watcher notice records it, with the reason
        stamp, _, text = message.last.partition(" ")  # the pane has its own time column
        self.record("watch", text if _is_clock(stamp) and text else message.last)

    def action_events(self) -> None:
        """Open (or close) the events pane."""
        if isinstance(self.screen, EventsScreen):
            self.screen.dismiss(None)
            return
        self.push_screen(EventsScreen(self.events_log))


def _is_clock(text: str) -> bool:
    """``HH:MM:SS``, the stamp the status bar's watcher field starts with."""
    return len(text) == 8 and text[2] == text[5] == ":" and text.replace(":", "").isdigit()
