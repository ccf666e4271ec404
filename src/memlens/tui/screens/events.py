"""The events pane: what happened while the TUI ran, newest first.

:class:`EventLog` is a bounded, thread-safe list of :class:`EventEntry` rows
(watcher events, ingest failures, projection errors and retries, worker
failures, Python warnings). :class:`EventsScreen` shows it (k9s/lazygit style).

The log is history; its problem count is state (issue 42). A problem about a file or a
projection is added with a :data:`ProblemKey`: it counts while it lasts, is logged once
however often it is seen again (each periodic reconcile re-reads an unreadable file) and
stops counting when it is cleared (the file reads again, the projection is ready). A
problem without a key (a worker that failed, a warning) counts until the events pane is
opened (:meth:`EventLog.acknowledge`).
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
ProblemKey = tuple[str, str, str]
"""What a lasting problem is about: ``("file", repository, path)`` (the file cannot be
read) or ``("projection", repository, path)`` (its projection failed)."""
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
        self._seq = 0
        self._active: dict[ProblemKey, tuple[int, EventEntry]] = {}
        self._unseen = 0
        self._unseen_latest: tuple[int, EventEntry] | None = None

    @property
    def problems(self) -> int:
        """Problems now: files and projections failing, plus problems without a key that
        came since the pane was last opened (the status bar's ``✗ N``)."""
        with self._lock:
            return len(self._active) + self._unseen

    def add(self, kind: str, text: str, *, level: Level = "info",
            path: str | None = None, detail: str | None = None,
            key: ProblemKey | None = None) -> EventEntry | None:
        """Record one event and return it; None when ``key`` names a problem that is
        already counted with the same text (a persisting failure is logged once)."""
        entry = EventEntry(self._clock(), kind, text, level, path, detail)
        with self._lock:
            self._seq += 1
            if entry.is_problem and key is not None:
                known = self._active.get(key)
                if known is not None and known[1].text == text:
                    return None
                self._active[key] = (self._seq, entry)
            elif entry.is_problem:
                self._unseen += 1
                self._unseen_latest = (self._seq, entry)
            self._rows.appendleft(entry)
        return entry

    def is_active(self, key: ProblemKey, text: str) -> bool:
        """Whether ``key`` is counted now with this very text."""
        with self._lock:
            known = self._active.get(key)
            return known is not None and known[1].text == text

    def clear(self, key: ProblemKey) -> EventEntry | None:
        """Stop counting the problem ``key`` (it was fixed); the entry it had, if any."""
        with self._lock:
            known = self._active.pop(key, None)
        return known[1] if known is not None else None

    def acknowledge(self) -> None:
        """The pane was opened: problems without a key stop counting."""
        with self._lock:
            self._unseen, self._unseen_latest = 0, None

    def entries(self) -> list[EventEntry]:
        """All rows, newest first."""
        with self._lock:
            return list(self._rows)

    def latest_problem(self) -> EventEntry | None:
        """The newest problem that still counts."""
        with self._lock:
            counted = list(self._active.values())
            if self._unseen_latest is not None:
                counted.append(self._unseen_latest)
        return max(counted, key=lambda c: c[0])[1] if counted else None

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
