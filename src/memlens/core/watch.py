"""Live re-ingest: watch memory folders and feed debounced batches into ingest.

:class:`Watcher` runs two threads:

* a *producer* thread runs :func:`watchfiles.watch` (inotify on Linux) over every
  folder in scope and collects the changed paths that can matter (Markdown
  files, folders) into a pending set. It never touches the database. When the
  watch cannot be set up or dies (lost inotify watches, the iterator raising, a
  watched folder deleted and re-created), it reports an ``error`` and starts
  again with exponential back-off, followed by a reconcile that covers the gap;
* the thread that calls :meth:`Watcher.run` (the *consumer*) takes the pending
  paths in batches, waits until each changed file has been quiet for
  ``stable_ms`` (a half-written file is not ingested while an editor is still
  writing it), maps paths to (memory root, logical path) and calls
  :meth:`MemoryService.ingest` with ``only_paths``. Every ``on_event`` callback
  runs on this thread.

Why a batch contains both sides of a rename: the producer keeps collecting while
the consumer waits for files to settle, and a *missing* path must also stay
missing for ``stable_ms`` before it counts as deleted. An editor's "rename the
original away, write a new file" save therefore ends up as one ``update``, and a
``mv a.md b.md`` as one ``rename`` (ingest infers renames within one batch).

A periodic reconcile (``reconcile_seconds``; once at start and after every
watcher restart) runs a full :meth:`MemoryService.ingest` over the roots, which is
cheap thanks to the stat fast path, and catches whatever events were missed.
While the file watch is broken the reconcile runs every
:data:`ERROR_RECONCILE_SECONDS` instead, so the index keeps following the files.

Memory folders that vanish are never tombstoned wholesale: a missing root is
reported as an ``error`` event, its documents stay as they are, and the watcher
keeps looking for the folder to come back (then it is re-ingested in full).
When the scope is a folder of projects (``~/.claude/projects``), that folder is
watched itself and a new ``<slug>/memory`` folder is picked up without a restart.
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

import watchfiles
from watchfiles import Change

from . import db as dbm
from .ingest import FileChange
from .projection import ProjectionReport
from .service import MemoryService
from .sources import (
    MemoryRoot,
    UsageError,
    claude_projects_dir,
    is_ignored_name,
    is_markdown_name,
    roots_for_path,
)

log = logging.getLogger(__name__)

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

EventKind = Literal["change", "projection", "state", "error", "reconcile"]
State = Literal["starting", "watching", "paused", "error", "stopped"]


@dataclass(frozen=True)
class WatchEvent:
    """Something the watcher did or noticed, for a status line, a log or ``--json``.

    Attributes:
        kind: ``change`` (one applied file change), ``projection`` (one document's
            projection finished), ``state`` (the watcher's state changed),
            ``error`` (a problem; the watcher keeps going) or ``reconcile``
            (a full rescan finished, or a memory folder appeared).
        time: Wall-clock time of the event (seconds since the epoch).
        repository: Repository of the document or folder, when there is one.
        path: Logical path of the document (relative to its memory folder).
        change_kind: For ``change``: create, update, rename, delete or failed.
        result: Projection result (ready, failed, stale, discarded) for
            ``projection`` events, and for ``change`` events whose document was
            projected in the same batch; None when nothing was projected.
        message: A line a person can read.
    """

    kind: str
    time: float
    repository: str | None = None
    path: str | None = None
    change_kind: str | None = None
    result: str | None = None
    message: str = ""

    def as_json(self) -> dict[str, object]:
        """The JSON object printed by ``memlens watch --json`` (one per line)."""
        return {
            "time": self.time, "event": self.kind, "repository": self.repository,
            "path": self.path, "change": self.change_kind, "result": self.result,
            "message": self.message,
        }


class _Interrupted(Exception):
    """Raised from the ingest progress callback to stop between two files."""


class _AnyEvent:
    """``is_set`` is true when any of the given events is set (for watchfiles)."""

    def __init__(self, *events: threading.Event) -> None:
        self._events = events

    def is_set(self) -> bool:
        return any(e.is_set() for e in self._events)


@dataclass
class _Scope:
    """One folder the user gave (``scan_paths``) and how it maps to memory roots."""

    path: Path
    kind: str | None = None  # projects | project | memory; None until it first exists
    root: MemoryRoot | None = None  # the fixed root of a 'project' or 'memory' scope


def _is_under(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def _ident(p: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(p)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _sig(p: Path) -> tuple[int, int] | None:
    """(size, mtime_ns) of a file, or None when it does not exist."""
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return None
    except OSError:
        return (-1, -1)  # unreadable: treat as settled, ingest reports the error
    return (st.st_size, st.st_mtime_ns)


class Watcher:
    """Watches memory folders and re-ingests what changes (see the module docstring).

    Usable from any thread: :meth:`run` blocks until ``stop`` is set; the
    ``state``, ``last_event`` and ``queue_size`` properties and :meth:`pause` /
    :meth:`resume` may be used from other threads. ``on_event`` is always called
    on the thread running :meth:`run`; it must not block for long.
    """

    def __init__(self, service: MemoryService, roots: Sequence[MemoryRoot] | None = None, *,
                 scan_paths: Sequence[Path] | None = None, debounce_ms: int | None = None,
                 stable_ms: int | None = None, reconcile_seconds: float | None = None,
                 on_event: Callable[[WatchEvent], None] | None = None,
                 repository: str | None = None) -> None:
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
        """
        s = service.settings
        self._service = service
        self._on_event = on_event
        self._repository = repository
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
        self._scopes = [_Scope(Path(p).expanduser().absolute()) for p in (scan_paths or [])]
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

    # -- public state ---------------------------------------------------------
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

    @property
    def last_event(self) -> WatchEvent | None:
        """The most recent event emitted (None before the first)."""
        return self._last_event

    @property
    def queue_size(self) -> int:
        """Changed paths waiting to be ingested."""
        with self._cond:
            return len(self._pending)

    @property
    def roots(self) -> list[MemoryRoot]:
        """The memory roots currently watched (present on disk)."""
        return list(self._roots.values())

    def pause(self) -> None:
        """Stop ingesting; changes keep being collected and are applied on resume."""
        self._paused = True
        with self._cond:
            self._cond.notify_all()

    def resume(self) -> None:
        """Apply what was collected while paused and continue."""
        self._paused = False
        with self._cond:
            self._cond.notify_all()

    # -- run --------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Watch until ``stop`` is set; never raises for watcher or ingest errors.

        Args:
            stop: Set it (from any thread or a signal handler) to return. A batch
                being ingested stops between two files (each file is its own
                transaction, so nothing is half written).
        """
        self._phase = "starting"
        self._halt.clear()
        self._ready.clear()
        self._sync_state()
        producer = threading.Thread(target=self._produce, args=(stop,),
                                    name="memlens-watch", daemon=True)
        producer.start()
        try:
            waited = time.monotonic() + STARTUP_WAIT_SECONDS
            while not stop.is_set() and not self._ready.is_set() and time.monotonic() < waited:
                self._ready.wait(0.05)
            with self._cond:
                if self._reconcile_reason is None:  # the producer could not start watching
                    self._reconcile_reason = "start"
            retry_at = 0.0
            retry_delay = RETRY_BASE_SECONDS
            last_reconcile = time.monotonic()
            while not stop.is_set():
                self._flush_outbox()
                self._sync_state()
                if self._paused:
                    stop.wait(0.05)
                    continue
                interval = self._reconcile_s if self._reconcile_s > 0 else float("inf")
                if self._watch_error is not None:
                    interval = min(interval, ERROR_RECONCILE_SECONDS)
                with self._cond:
                    reason = self._reconcile_reason
                    self._reconcile_reason = None
                if reason is None and time.monotonic() - last_reconcile >= interval:
                    reason = "periodic"
                if reason is not None:
                    self._reconcile(reason, stop)
                    last_reconcile = time.monotonic()
                    if self._phase == "starting":
                        self._phase = "running"
                    continue
                if self._phase == "starting":
                    stop.wait(0.02)
                    continue
                if time.monotonic() < retry_at:
                    stop.wait(min(0.05, retry_at - time.monotonic()))
                    continue
                batch = self._take(wait=0.05)
                if not batch:
                    continue
                if self._process(batch, stop):
                    retry_delay = RETRY_BASE_SECONDS
                else:
                    retry_at = time.monotonic() + retry_delay
                    retry_delay = min(RETRY_CAP_SECONDS, retry_delay * 2)
        finally:
            self._halt.set()
            producer.join(timeout=10)
            self._phase = "stopped"
            self._flush_outbox()
            self._sync_state()

    # -- events -------------------------------------------------------------------
    def _event(self, kind: EventKind, message: str, *, repository: str | None = None,
               path: str | None = None, change_kind: str | None = None,
               result: str | None = None) -> WatchEvent:
        return WatchEvent(kind=kind, time=time.time(), repository=repository, path=path,
                          change_kind=change_kind, result=result, message=message)

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

    # -- producer ----------------------------------------------------------------
    def _desired_targets(self) -> dict[Path, tuple[int, int] | None]:
        """Existing folders to watch, with their (device, inode)."""
        want: list[Path] = [sc.path for sc in self._scopes]
        for r in self._explicit:
            if not any(_is_under(r.path, sc.path) for sc in self._scopes):
                want.append(r.path)
        out: dict[Path, tuple[int, int] | None] = {}
        for p in want:
            if p in out or any(_is_under(p, q) and p != q for q in want):
                continue
            if p.is_dir():
                out[p] = _ident(p)
        return out

    def _request_reconcile(self, reason: str) -> None:
        with self._cond:
            self._reconcile_reason = self._reconcile_reason or reason
            self._cond.notify_all()

    def _filter(self, change: Change, path: str) -> bool:
        name = os.path.basename(path)
        if is_ignored_name(name):
            return False
        if is_markdown_name(name):
            return True
        if change == Change.deleted:
            return True  # maybe a folder; the consumer decides
        return change == Change.added and os.path.isdir(path)

    def _produce(self, stop_event: threading.Event) -> None:
        stop = _AnyEvent(stop_event, self._halt)
        delay = RETRY_BASE_SECONDS
        restarted = False
        while not stop.is_set():
            targets = self._desired_targets()
            if not targets:
                missing = ", ".join(str(sc.path) for sc in self._scopes) or ", ".join(
                    str(r.path) for r in self._explicit) or "(nothing in scope)"
                self._watch_failed(f"no folder to watch exists yet ({missing}); "
                                   "waiting for it to appear", delay)
                self._ready.set()
                self._sleep(stop, 1.0)
                continue
            self._restart.clear()
            first = True
            try:
                for changes in watchfiles.watch(
                        *targets, watch_filter=self._filter, debounce=MAX_BATCH_MS,
                        step=self._debounce_ms, stop_event=_AnyEvent(self._restart, stop_event, self._halt),
                        rust_timeout=POLL_MS, yield_on_timeout=True, raise_interrupt=False,
                        ignore_permission_denied=True):
                    if first:
                        first = False
                        delay = RETRY_BASE_SECONDS
                        recovered = self._watch_error is not None
                        self._watch_error = None
                        self._request_reconcile(
                            "start" if not restarted else
                            ("file watch recovered" if recovered else "file watch restarted"))
                        restarted = True
                        self._ready.set()
                    if changes:
                        with self._cond:
                            for ch, p in changes:
                                self._pending[p] = ch
                            self._cond.notify_all()
                    if self._desired_targets() != targets:
                        self._restart.set()
            except Exception as exc:  # watchfiles / notify errors of any kind
                restarted = True
                self._watch_failed(f"{type(exc).__name__}: {exc}", delay)
                self._ready.set()
                self._sleep(stop, delay)
                delay = min(RETRY_CAP_SECONDS, delay * 2)

    def _watch_failed(self, message: str, delay: float) -> None:
        first = self._watch_error != message
        self._watch_error = message
        if first:
            self._post(self._event("error", f"file watch failed: {message}; retrying in "
                                   f"{delay:g} s"))

    @staticmethod
    def _sleep(stop: _AnyEvent, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not stop.is_set() and time.monotonic() < end:
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))

    # -- roots ---------------------------------------------------------------------
    def _resolve_scope(self, sc: _Scope) -> list[MemoryRoot]:
        p = sc.path
        if not p.is_dir():
            return []
        if sc.kind is None:
            if p == claude_projects_dir().expanduser().absolute():
                sc.kind = "projects"
            else:
                found = roots_for_path(p, self._repository)
                if len(found) == 1 and found[0].path == p / "memory":
                    sc.kind, sc.root = "project", found[0]
                elif len(found) == 1 and found[0].path == p:
                    sc.kind, sc.root = "memory", found[0]
                else:
                    sc.kind = "projects"
        if sc.kind == "projects":
            out = []
            try:
                children = sorted(p.iterdir())
            except OSError:
                return []
            for child in children:
                mem = child / "memory"
                if not is_ignored_name(child.name) and mem.is_dir():
                    out.append(MemoryRoot(repository=child.name, path=mem))
            return out
        assert sc.root is not None
        return [sc.root] if sc.root.path.is_dir() else []

    def _refresh_roots(self) -> list[MemoryRoot]:
        """Re-resolve the roots in scope; report vanished ones; return new ones."""
        now: dict[Path, MemoryRoot] = {}
        for sc in self._scopes:
            try:
                for r in self._resolve_scope(sc):
                    now.setdefault(r.path, r)
            except (UsageError, OSError) as exc:
                self._emit(self._event("error", f"{sc.path}: {exc}"))
        for r in self._explicit:
            if r.path.is_dir():
                now.setdefault(r.path, r)
        expected = set(self._roots) | {r.path for r in self._explicit}
        for p in sorted(expected - set(now)):
            if p in self._missing_reported:
                continue
            self._missing_reported.add(p)
            old = self._roots.get(p) or next(r for r in self._explicit if r.path == p)
            n = self._live_count(old)
            self._emit(self._event(
                "error", f"memory folder {p} is missing; its {n} document(s) are kept (not "
                "deleted); watching for the folder to come back", repository=old.repository))
        appeared = [r for p, r in now.items() if p not in self._roots]
        for r in appeared:
            self._missing_reported.discard(r.path)
        self._roots = now
        return appeared

    def _live_count(self, root: MemoryRoot) -> int:
        try:
            return int(dbm.scalar(self._service.conn(), "SELECT COUNT(*) FROM memory_documents"
                                  " WHERE source_root=? AND tombstoned_at IS NULL",
                                  (str(root.path),)) or 0)
        except Exception:  # counting is cosmetic
            return 0

    def _root_of(self, p: Path) -> MemoryRoot | None:
        best: MemoryRoot | None = None
        for rp, r in self._roots.items():
            if _is_under(p, rp) and (best is None or len(rp.parts) > len(best.path.parts)):
                best = r
        return best

    def _has_docs_under(self, root: MemoryRoot, rel: str) -> bool:
        lo = rel + "/"
        hi = rel + "0"  # '0' sorts right after '/'
        try:
            return dbm.scalar(self._service.conn(), "SELECT 1 FROM memory_documents WHERE"
                              " source_root=? AND tombstoned_at IS NULL AND logical_path>=?"
                              " AND logical_path<? LIMIT 1", (str(root.path), lo, hi)) is not None
        except Exception:
            return True  # when in doubt, rescan the root

    # -- consumer --------------------------------------------------------------------
    def _take(self, wait: float = 0.0) -> dict[str, Change]:
        with self._cond:
            if not self._pending and wait > 0:
                self._cond.wait(wait)
            out, self._pending = self._pending, {}
        return out

    def _requeue(self, batch: dict[str, Change]) -> None:
        with self._cond:
            for p, ch in batch.items():
                self._pending.setdefault(p, ch)

    def _wait_stable(self, paths: Sequence[Path], deadline: float,
                     stop: threading.Event) -> None:
        """Wait until every path kept its (size, mtime) — or stayed missing — for stable_ms."""
        if self._stable_s <= 0:
            return
        now = time.time()
        quiet: dict[Path, tuple[tuple[int, int] | None, float]] = {}
        for p in paths:
            sg = _sig(p)
            since = now if sg is None else min(now, sg[1] / 1e9 if sg[1] > 0 else now)
            quiet[p] = (sg, since)
        while quiet and not stop.is_set():
            now = time.time()
            for p in list(quiet):
                sg = _sig(p)
                old, since = quiet[p]
                if sg != old:
                    quiet[p] = (sg, now)
                elif now - since >= self._stable_s:
                    del quiet[p]
            if not quiet or time.monotonic() >= deadline:
                return
            nxt = min(since for _, since in quiet.values()) + self._stable_s - now
            stop.wait(max(0.005, min(nxt, deadline - time.monotonic(), 0.05)))

    def _process(self, batch: dict[str, Change], stop: threading.Event) -> bool:
        """Settle, classify and ingest one batch; False when it must be retried."""
        deadline = time.monotonic() + MAX_SETTLE_SECONDS
        todo = dict(batch)
        while True:
            self._wait_stable([Path(p) for p in todo if is_markdown_name(os.path.basename(p))],
                              deadline, stop)
            more = self._take()
            if not more:
                break
            if time.monotonic() >= deadline:
                self._requeue(more)
                break
            batch.update(more)
            todo = more
        appeared = self._refresh_roots()
        full: dict[Path, MemoryRoot] = {r.path: r for r in appeared}
        partial: dict[Path, set[str]] = {}
        for raw in batch:
            p = Path(raw)
            root = self._root_of(p)
            if root is None or p == root.path:
                continue  # outside every memory folder, or the folder itself (handled above)
            rel_parts = p.relative_to(root.path).parts
            if any(is_ignored_name(part) for part in rel_parts):
                continue
            rel = "/".join(rel_parts)
            if is_markdown_name(p.name) and not p.is_dir():
                partial.setdefault(root.path, set()).add(rel)
            elif p.is_dir() or (not p.exists() and self._has_docs_under(root, rel)):
                full[root.path] = root  # a folder appeared, vanished or moved: rescan the root
        for rp in full:
            partial.pop(rp, None)
        # a root that vanished while we waited is skipped (never tombstoned wholesale)
        full = {rp: r for rp, r in full.items() if rp.is_dir()}
        partial = {rp: s for rp, s in partial.items() if rp.is_dir()}
        for r in appeared:
            if r.path in full:
                self._emit(self._event("reconcile", f"new memory folder {r.path}; ingesting it",
                                       repository=r.repository))
        if not full and not partial:
            return True
        self.batches += 1
        ok, _ = self._ingest(list(full.values()),
                             {self._roots[rp]: s for rp, s in partial.items()}, stop)
        if not ok:
            self._requeue(batch)
        return ok

    def _ingest(self, full: list[MemoryRoot], partial: dict[MemoryRoot, set[str]],
                stop: threading.Event, *, always_project: bool = False
                ) -> tuple[bool, list[FileChange]]:
        """Ingest, project and emit events.

        Returns:
            (ok, changes): ``ok`` is False when ingest raised and the batch should
            be retried; ``changes`` are the file changes applied (also on failure).
        """
        changes: list[FileChange] = []

        def collect(ch: FileChange) -> None:
            changes.append(ch)
            if stop.is_set():
                raise _Interrupted

        ok = True
        interrupted = False
        try:
            if full:
                self._service.ingest(full, project=False, on_change=collect)
            if partial:
                self._service.ingest(list(partial), project=False, on_change=collect,
                                     only_paths={r.path: s for r, s in partial.items()})
        except _Interrupted:
            interrupted = True
        except Exception as exc:
            ok = False
            self._emit(self._event("error", f"ingest failed: {type(exc).__name__}: {exc}; "
                                   "will retry"))
        report: ProjectionReport | None = None
        if not interrupted and (always_project or any(c.kind != "unchanged" for c in changes)):
            try:
                report = self._service.project()
            except Exception as exc:
                self._emit(self._event("error", f"projection failed: {type(exc).__name__}: "
                                       f"{exc}; documents stay queued"))
        self._emit_changes(changes, report)
        return ok, changes

    def _emit_changes(self, changes: Sequence[FileChange], report: ProjectionReport | None
                      ) -> None:
        results = {o.document_id: o for o in report.outcomes} if report else {}
        where: dict[int, tuple[str | None, str | None]] = {}
        for ch in changes:
            if ch.kind == "unchanged":
                continue
            if ch.document_id is not None:
                where[ch.document_id] = (ch.repository, ch.path)
            o = results.get(ch.document_id) if ch.document_id is not None else None
            if ch.kind == "failed":
                msg = f"{ch.repository}/{ch.path}: {ch.error}"
            elif ch.kind == "rename":
                msg = f"{ch.repository}/{ch.previous_path} -> {ch.path}"
            else:
                msg = f"{ch.repository}/{ch.path}"
            self._emit(self._event("change", msg, repository=ch.repository, path=ch.path,
                                   change_kind=ch.kind, result=o.result if o else None))
        for o in (report.outcomes if report else []):
            repo_path = where.get(o.document_id)
            if repo_path is None:
                doc = self._service.detail(o.document_id)
                repo_path = (doc.repository, doc.path) if doc else (None, None)
            repo, path = repo_path
            msg = (f"{o.result}: {o.nodes} chunk(s)" if o.error is None
                   else f"{o.result}: {o.error}")
            self._emit(self._event("projection", msg, repository=repo, path=path,
                                   result=o.result))

    def _reconcile(self, reason: str, stop: threading.Event) -> None:
        """Full ingest of every present root (catches missed events)."""
        t0 = time.monotonic()
        self._refresh_roots()
        roots = list(self._roots.values())
        self.reconciles += 1
        ok, changes = self._ingest(roots, {}, stop, always_project=True)
        counts: dict[str, int] = {}
        for ch in changes:
            counts[ch.kind] = counts.get(ch.kind, 0) + 1
        ms = (time.monotonic() - t0) * 1000
        parts = [f"{counts.get(k, 0)} {k}" for k in ("create", "update", "rename", "delete",
                                                         "failed")]
        self._emit(self._event(
            "reconcile", f"reconcile ({reason}): {len(roots)} folder(s), "
            + ", ".join(parts) + f", {counts.get('unchanged', 0)} unchanged in {ms:.0f} ms"
            + ("" if ok else " (incomplete)")))


__all__ = ["Watcher", "WatchEvent", "ERROR_RECONCILE_SECONDS", "MAX_SETTLE_SECONDS"]
