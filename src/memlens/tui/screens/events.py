"""The events pane: what happened while the TUI ran, newest first.

:class:`EventLog` is a bounded, thread-safe list of :class:`EventEntry` rows
(watcher events, ingest failures, projection errors and retries, worker
failures, Python warnings). :class:`EventsScreen` shows it (k9s/lazygit style).
:func:`capture_warnings` routes ``warnings.warn`` output into a log instead of
letting it print on stderr over the screen.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TextIO

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static

from memlens.tui.widgets.footer import FittingFooter

Level = Literal["info", "warning", "error"]
LEVEL_STYLE: dict[str, str] = {"info": "$text-muted", "warning": "$text-warning",
                               "error": "$text-error bold"}
LEVEL_MARK: dict[str, str] = {"info": "·", "warning": "!", "error": "✗"}


@dataclass(frozen=True)
class EventEntry:
    """One line of the events pane."""

    at: float
    kind: str  # "watch", "ingest", "projection", "worker", "warning"
    text: str
    level: Level = "info"
    path: str | None = None
    detail: str | None = None
    """What went wrong, for whoever digs (``ValueError: …``): shown after the sentence
    in the events pane, never in a toast."""

    @property
    def is_problem(self) -> bool:
        """Whether this entry counts as a problem (status bar count)."""
        return self.level != "info"


class EventLog:
    """Newest-first events, bounded to ``limit`` rows; safe to add from threads."""

    def __init__(self, *, limit: int = 500, clock: Callable[[], float] = time.time) -> None:
        self._rows: deque[EventEntry] = deque(maxlen=limit)
        self._lock = threading.Lock()
        self._clock = clock
        self.problems = 0
        """Problems recorded since start (not bounded by ``limit``)."""

    def add(self, kind: str, text: str, *, level: Level = "info",
            path: str | None = None, detail: str | None = None) -> EventEntry:
        """Record one event and return it."""
        entry = EventEntry(self._clock(), kind, text, level, path, detail)
        with self._lock:
            self._rows.appendleft(entry)
            if entry.is_problem:
                self.problems += 1
        return entry

    def entries(self) -> list[EventEntry]:
        """All rows, newest first."""
        with self._lock:
            return list(self._rows)

    def latest_problem(self) -> EventEntry | None:
        """The newest warning or error still in the log."""
        with self._lock:
            return next((e for e in self._rows if e.is_problem), None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._rows)


def format_entry(entry: EventEntry) -> Content:
    """``14:03:07 ✗ ingest  notes/bad.md: file is not valid UTF-8 …``, then the
    detail, if any, muted (``… · detail: ValueError: …``)."""
    stamp = time.strftime("%H:%M:%S", time.localtime(entry.at))
    style = LEVEL_STYLE[entry.level]
    detail = ("", "") if not entry.detail else (f" · detail: {entry.detail}", "$text-muted")
    return Content.assemble(
        (stamp, "$text-muted"), " ", (LEVEL_MARK[entry.level], style), " ",
        (f"{entry.kind:<10}", "$text-muted"), " ", (entry.text, style if entry.is_problem else ""),
        detail)


@contextmanager
def capture_warnings(log: EventLog) -> Iterator[None]:
    """Route Python warnings raised inside the block into ``log``."""
    previous = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        log.add("warning", f"{category.__name__}: {message}", level="warning")

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous


class EventsScreen(ModalScreen[None]):
    """The events pane, newest first; Escape or the opening key closes it."""

    DEFAULT_CSS = """
    EventsScreen { align: center middle; }
    EventsScreen > Vertical {
        width: 100%; height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    EventsScreen #events-title { height: 1; color: $text-accent; text-style: bold; }
    EventsScreen OptionList { height: 1fr; border: none; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("E", "dismiss", "Close", show=False),
    ]

    def __init__(self, log: EventLog, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.log_source = log

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self._title(), id="events-title")
            yield OptionList(*self._rows(), id="events-list")
        yield FittingFooter()

    def _title(self) -> str:
        n = len(self.log_source)
        k = self.log_source.problems
        return f"Events ({n:,}, {k:,} problem{'' if k == 1 else 's'}) — newest first"

    def _rows(self) -> list[Content]:
        rows = [format_entry(e) for e in self.log_source.entries()]
        return rows or [Content.styled("no events yet", "$text-muted")]

    def refresh_events(self) -> None:
        """Re-read the log (call after adding entries while the pane is open)."""
        self.query_one("#events-title", Static).update(self._title())
        box = self.query_one("#events-list", OptionList)
        box.clear_options()
        box.add_options(self._rows())

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
