"""Watcher building blocks: constants, :class:`WatchEvent` and the shared state.

Part of :mod:`memlens.watch.watcher` (see its docstring for how the watcher works).
:class:`WatcherBase` holds the state shared by the producer thread
(:mod:`memlens.watch.producer`) and the consumer
(:mod:`memlens.watch.reconcile`), and the event plumbing: events made on the
producer thread are queued (:meth:`WatcherBase._post`) and emitted by the
consumer, which runs every ``on_event`` callback.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from watchfiles import Change

from memlens.core.service import MemoryService
from memlens.core.types import MemoryRoot, claude_projects_dir

# The logger keeps the name it had when all of the watcher lived in one module.
log = logging.getLogger("memlens.watch.watcher")

#: How long one batch may wait for its files to settle before they are ingested anyway.
MAX_SETTLE_SECONDS = 2.0
#: How long ``watchfiles`` may keep gathering one burst before it hands it over.
MAX_BATCH_MS = 1000
#: How often the producer wakes up when nothing happens (checks that folders still exist).
POLL_MS = 250
#: Reconcile interval while the file watch is broken (polling fallback).
ERROR_RECONCILE_SECONDS = 5.0
#: Back-off of watch restarts and failed batches: first delay and cap, in seconds.
RETRY_BASE_SECONDS = 0.5
RETRY_CAP_SECONDS = 30.0
#: How long ``run`` waits for the file watch before the first reconcile anyway.
STARTUP_WAIT_SECONDS = 3.0

EventKind = Literal["change", "projection", "state", "error", "reconcile", "seen"]
State = Literal["starting", "watching", "paused", "error", "stopped"]


@dataclass(frozen=True)
class WatchEvent:
    """Something the watcher did or noticed, for a status line, a log or ``--json``.

    Attributes:
        kind: ``change`` (one applied file change), ``projection`` (one document's
            projection finished), ``state`` (the watcher's state changed),
            ``error`` (a problem; the watcher keeps going) or ``reconcile``
            (a full rescan finished, or a memory folder appeared); with
            ``announce=True`` also ``seen`` (a Markdown file changed and will be read:
            sent before it settles, so a big new file can be listed at once).
        time: Wall-clock time of the event (seconds since the epoch).
        repository: Repository of the document or folder, when there is one.
        path: Logical path of the document (relative to its memory folder).
        change_kind: For ``change``: create, update, rename, delete or failed.
        result: Projection result (ready, failed, stale, discarded) for
            ``projection`` events, and for ``change`` events whose document was
            projected in the same batch; None when nothing was projected.
        message: A line a person can read.
        error: For a ``failed`` change, why the file could not be read (not in JSON:
            ``message`` holds it already).
    """

    kind: str
    time: float
    repository: str | None = None
    path: str | None = None
    change_kind: str | None = None
    result: str | None = None
    message: str = ""
    error: str | None = None

    def as_json(self) -> dict[str, object]:
        """The JSON object printed by ``memlens watch --json`` (one per line)."""
        return {
            "time": self.time, "event": self.kind, "repository": self.repository,
            "path": self.path, "change": self.change_kind, "result": self.result,
            "message": self.message,
        }


class Interrupted(Exception):
    """Raised from the ingest progress callback to stop between two files."""


class AnyEvent:
    """``is_set`` is true when any of the given events is set (for watchfiles)."""

    def __init__(self, *events: threading.Event) -> None:
        self._events = events

    def is_set(self) -> bool:
        return any(e.is_set() for e in self._events)


@dataclass
class Scope:
    """One folder the user gave (``scan_paths``) and how it maps to memory roots."""

    path: Path
    kind: str | None = None  # projects | project | memory; None until it first exists
    root: MemoryRoot | None = None  # the fixed root of a 'project' or 'memory' scope


def is_under(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def ident(p: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(p)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def sig(p: Path) -> tuple[int, int] | None:
    """(size, mtime_ns) of a file, or None when it does not exist."""
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return None
    except OSError:
        return (-1, -1)  # unreadable: treat as settled, ingest reports the error
    return (st.st_size, st.st_mtime_ns)


class WatcherBase:
    """State shared by the watcher's producer and consumer, and event plumbing."""

    def __init__(self, service: MemoryService, roots: Sequence[MemoryRoot] | None = None, *,
                 scan_paths: Sequence[Path] | None = None, debounce_ms: int | None = None,
                 stable_ms: int | None = None, reconcile_seconds: float | None = None,
                 on_event: Callable[[WatchEvent], None] | None = None,
                 repository: str | None = None, announce: bool = False) -> None:
        """Set up a watcher (nothing is watched until :meth:`run`).

        Args:
            service: The service whose database is kept up to date.
            roots: Memory roots to watch. With neither ``roots`` nor ``scan_paths``,
                the service's configured roots or the discovered Claude memory
                folders are used, and ``~/.claude/projects`` is watched for new ones.
            scan_paths: Folders the user gave (a folder of projects, a project
                folder or a memory folder). They are watched themselves, so memory
                folders created inside them later are picked up.
            debounce_ms: Quiet time before a burst of events is handed over
                (default: setting ``watch.debounce_ms``).
            stable_ms: How long a changed file's size and mtime must stay the same
                before it is read (default: setting ``watch.stable_ms``).
            reconcile_seconds: Interval of the full reconcile; 0 or less disables
                the periodic one (default: setting ``watch.reconcile_seconds``).
            on_event: Called with every :class:`WatchEvent`.
            repository: Repository name override used when re-resolving a single
                memory folder from ``scan_paths``.
            announce: Also emit a ``seen`` event for each changed Markdown file the
                moment its batch is taken, before it settles and is read (the TUI
                lists a big new file at once; issue 42).
        """
        s = service.settings
        self._service = service
        self._on_event = on_event
        self._repository = repository
        self._announce_seen = announce
        self._debounce_ms = max(1, int(debounce_ms if debounce_ms is not None
                                       else s.watch.debounce_ms))
        self._stable_s = max(0, int(stable_ms if stable_ms is not None
                                    else s.watch.stable_ms)) / 1000.0
        self._reconcile_s = float(reconcile_seconds if reconcile_seconds is not None
                                  else s.watch.reconcile_seconds)
        if roots is None and scan_paths is None:
            roots = service.resolve_roots(None, repository)
            scan_paths = list(s.roots) if s.roots else [claude_projects_dir()]
        self._explicit: list[MemoryRoot] = list(roots or [])
        self._scopes = [Scope(Path(p).expanduser().absolute()) for p in (scan_paths or [])]
        self._roots: dict[Path, MemoryRoot] = {}
        self._missing_reported: set[Path] = set()

        self._cond = threading.Condition()
        self._pending: dict[str, Change] = {}
        self._outbox: list[WatchEvent] = []
        self._reconcile_reason: str | None = None
        self._ready = threading.Event()
        self._restart = threading.Event()
        self._halt = threading.Event()
        self._paused = False
        self._watch_error: str | None = None
        self._phase = "starting"
        self._emitted_state: str | None = None
        self._last_event: WatchEvent | None = None
        #: Number of change batches ingested (a reconcile is not a batch).
        self.batches = 0
        #: Number of full reconciles run.
        self.reconciles = 0

    # -- state and events ---------------------------------------------------------
    @property
    def state(self) -> str:
        """``starting`` | ``watching`` | ``paused`` | ``error`` | ``stopped``."""
        if self._phase in ("starting", "stopped"):
            return self._phase
        if self._paused:
            return "paused"
        if self._watch_error is not None:
            return "error"
        return "watching"

    def _event(self, kind: EventKind, message: str, *, repository: str | None = None,
               path: str | None = None, change_kind: str | None = None,
               result: str | None = None, error: str | None = None) -> WatchEvent:
        return WatchEvent(kind=kind, time=time.time(), repository=repository, path=path,
                          change_kind=change_kind, result=result, message=message,
                          error=error)

    def _emit(self, ev: WatchEvent) -> None:
        self._last_event = ev
        if self._on_event is None:
            return
        try:
            self._on_event(ev)
        except Exception:  # a broken callback must not stop the watcher
            log.exception("memlens watch: on_event callback failed")

    def _post(self, ev: WatchEvent) -> None:
        """Queue an event from the producer thread (emitted by the consumer)."""
        with self._cond:
            self._outbox.append(ev)
            self._cond.notify_all()

    def _flush_outbox(self) -> None:
        with self._cond:
            out, self._outbox = self._outbox, []
        for ev in out:
            self._emit(ev)

    def _sync_state(self) -> None:
        st = self.state
        if st != self._emitted_state:
            self._emitted_state = st
            n = len(self._roots)
            msg = {"starting": "starting", "watching": f"watching {n} memory folder(s)"
                   + (": " + ", ".join(r.repository for r in self._roots.values())
                      if 0 < n <= 5 else ""),
                   "paused": "paused; changes are collected and applied on resume",
                   "error": f"file watch broken: {self._watch_error}; retrying, "
                   f"reconciling every {ERROR_RECONCILE_SECONDS:g} s meanwhile",
                   "stopped": "stopped"}[st]
            self._emit(self._event("state", msg))


__all__ = ["ERROR_RECONCILE_SECONDS", "MAX_BATCH_MS", "MAX_SETTLE_SECONDS", "POLL_MS",
           "RETRY_BASE_SECONDS", "RETRY_CAP_SECONDS", "STARTUP_WAIT_SECONDS", "EventKind",
           "State", "WatchEvent", "WatcherBase"]
