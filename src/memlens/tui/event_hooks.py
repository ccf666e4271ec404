"""What feeds the events pane: the app-level log, every warning/error notice, watcher events.

:class:`EventsApp` sits under :class:`memlens.tui.workers.AppWorkers`. Every notice the app
shows with severity ``warning`` or ``error`` (worker failures named by what the user tried,
files that could not be read with their reason, projection retries that failed, watcher
errors) is also kept in :attr:`EventsApp.events_log`; watcher events are kept as they arrive.
The status bar shows the latest problem and the count; ``E`` (or the palette) opens the pane.
The count is of problems now (:class:`~memlens.tui.screens.events.EventLog`): a file or a
projection failing counts once while it fails (:meth:`EventsApp.report_problem`) and no more
once fixed (:meth:`EventsApp.clear_problem`); other problems count until the pane is opened.
"""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import App
from textual.notifications import SeverityLevel

from memlens.tui.messages import WatchStatus
from memlens.tui.screens.events import EventLog, EventsScreen, Level, ProblemKey
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
               detail: str | None = None, record: bool = True) -> None:
        """Show a toast; warnings and errors are also recorded in the events pane (unless
        ``record`` is False: the caller recorded them), with ``detail`` (the exception's
        text, which the toast never shows) after them."""
        level = _LEVELS.get(severity)
        if level is not None and record:  # a notice listing several files: a line per file
            for line in message.splitlines() or [""]:
                self.record(title or severity, line, level=level, detail=detail)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def record(self, kind: str, text: str, *, level: Level = "info",
               path: str | None = None, detail: str | None = None,
               key: ProblemKey | None = None) -> bool:
        """Add one line to the events pane and update the status bar's problem field;
        False when ``key``'s problem was counted already with this text (not logged)."""
        added = self.events_log.add(kind, text, level=level, path=path, detail=detail, key=key)
        if added is not None:
            self._problems_changed()
        return added is not None

    def report_problem(self, key: ProblemKey, text: str, *, title: str,
                       severity: SeverityLevel = "warning", toast: bool = True) -> None:
        """A file or a projection failing now: logged and shown once while it lasts, then
        counted until :meth:`clear_problem` (seen again by a reconcile: nothing happens)."""
        if self.events_log.is_active(key, text):
            return
        self.record(title, text, level=_LEVELS.get(severity, "warning"), path=key[2], key=key)
        if toast:
            self.notify(text, title=title, severity=severity, record=False)

    def clear_problem(self, key: ProblemKey) -> None:
        """The problem ``key`` is fixed: it no longer counts (the pane keeps its line and
        gets one saying so)."""
        gone = self.events_log.clear(key)
        if gone is not None:
            self.record(gone.kind, f"fixed: {gone.text}", path=key[2])
            self._problems_changed()

    def _problems_changed(self) -> None:
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
        for key in message.fixed:
            self.clear_problem(key)
        if message.error:  # a problem: logged with its reason, once while it lasts
            if message.problem_key is not None:
                self.report_problem(message.problem_key, message.error, title="watcher")
            else:
                self.notify(message.error, title="watcher", severity="warning")
        if not message.last or message.last == self._last_watch_event or message.seen:
            return  # "reading x.md" is for the status bar; its change gets the line
        self._last_watch_event = message.last
        if message.error:
            return
        stamp, _, text = message.last.partition(" ")  # the pane has its own time column
        self.record("watch", text if _is_clock(stamp) and text else message.last)

    def action_events(self) -> None:
        """Open (or close) the events pane; opening it acknowledges the problems that
        have no key (a worker's failure): they stop counting."""
        if isinstance(self.screen, EventsScreen):
            self.screen.dismiss(None)
            return
        self.events_log.acknowledge()
        latest = self.events_log.latest_problem()
        self.show_problem(latest.text if latest else "", self.events_log.problems)
        self.push_screen(EventsScreen(self.events_log))


def _is_clock(text: str) -> bool:
    """``HH:MM:SS``, the stamp the status bar's watcher field starts with."""
    return len(text) == 8 and text[2] == text[5] == ":" and text.replace(":", "").isdigit()
