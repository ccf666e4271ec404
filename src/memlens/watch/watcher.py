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
  :meth:`MemoryService.ingest` with ``only_paths``, then stage 1 of the projection
  (:meth:`MemoryService.after_change`: searchable by words). Every ``on_event``
  callback runs on this thread;
* a *vector* thread computes the vectors (stage 2) between batches, in short
  slices, and stops after the slice in hand as soon as a change waits
  (:mod:`memlens.watch.vectors`), so a save is never held back by another's
  embedding.

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

import os
import sys
import threading
import time

from memlens.core.types import MemoryRoot
from memlens.watch.events import (
    ERROR_RECONCILE_SECONDS,
    HEARTBEAT_SECONDS,
    MAX_BATCH_MS,
    MAX_SETTLE_SECONDS,
    POLL_MS,
    RETRY_BASE_SECONDS,
    RETRY_CAP_SECONDS,
    STARTUP_WAIT_SECONDS,
    EventKind,
    State,
    WatchEvent,
)
from memlens.watch.producer import WatchProducer
from memlens.watch.reconcile import WatchConsumer
from memlens.watch.vectors import WatchVectors


class Watcher(WatchConsumer, WatchProducer, WatchVectors):
    """Watches memory folders and re-ingests what changes (see the module docstring).

    Usable from any thread: :meth:`run` blocks until ``stop`` is set; the
    ``state``, ``last_event`` and ``queue_size`` properties and :meth:`pause` /
    :meth:`resume` may be used from other threads. ``on_event`` is always called
    on the thread running :meth:`run`; it must not block for long. The constructor
    is :meth:`memlens.watch.events.WatcherBase.__init__` (nothing is watched
    until :meth:`run`).
    """

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
        # registered as running for `memlens doctor` (watcher_heartbeat), beating below
        registration = self._service.register_process("watch", _label(), HEARTBEAT_SECONDS)
        beat = time.monotonic()
        producer = threading.Thread(target=self._produce, args=(stop,),
                                    name="memlens-watch", daemon=True)
        producer.start()
        vectors = threading.Thread(target=self._vectors_loop, args=(stop,),
                                   name="memlens-watch-vectors", daemon=True)
        vectors.start()
        try:
            self._wait_for_producer(stop)
            retry_at = 0.0
            retry_delay = RETRY_BASE_SECONDS
            last_reconcile = time.monotonic()
            while not stop.is_set():
                if time.monotonic() - beat >= HEARTBEAT_SECONDS:
                    self._service.heartbeat_process(registration)
                    beat = time.monotonic()
                self._flush_outbox()
                self._sync_state()
                if self._paused:
                    stop.wait(0.05)
                    continue
                reason = self._reconcile_due(last_reconcile)
                if reason is not None:
                    with self._consuming():
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
                with self._consuming():
                    ok = self._process(batch, stop)
                if ok:
                    retry_delay = RETRY_BASE_SECONDS
                else:
                    retry_at = time.monotonic() + retry_delay
                    retry_delay = min(RETRY_CAP_SECONDS, retry_delay * 2)
        finally:
            self._halt.set()
            with self._cond:
                self._cond.notify_all()
            producer.join(timeout=10)
            vectors.join()  # after its slice in hand: it uses the service's database
            self._service.unregister_process(registration)
            self._phase = "stopped"
            self._flush_outbox()
            self._sync_state()

    def _wait_for_producer(self, stop: threading.Event) -> None:
        """Give the file watch up to STARTUP_WAIT_SECONDS to start; then reconcile anyway."""
        waited = time.monotonic() + STARTUP_WAIT_SECONDS
        while not stop.is_set() and not self._ready.is_set() and time.monotonic() < waited:
            self._ready.wait(0.05)
        with self._cond:
            if self._reconcile_reason is None:  # the producer could not start watching
                self._reconcile_reason = "start"

    def _reconcile_due(self, last_reconcile: float) -> str | None:
        """Take the requested reconcile reason, or ``periodic`` when the interval is up."""
        interval = self._reconcile_s if self._reconcile_s > 0 else float("inf")
        if self._watch_error is not None:
            interval = min(interval, ERROR_RECONCILE_SECONDS)
        with self._cond:
            reason = self._reconcile_reason
            self._reconcile_reason = None
        if reason is None and time.monotonic() - last_reconcile >= interval:
            reason = "periodic"
        return reason


def _label() -> str:
    """What runs this watcher, for the registry: ``memlens watch``, ``memlens mcp``, ``memlens``
    (the TUI) or the program's name."""
    argv = [a for a in sys.argv[1:] if not a.startswith("-")][:1]
    return " ".join(["memlens", *argv]) if "memlens" in sys.argv[0] else os.path.basename(
        sys.argv[0] or "python")


__all__ = ["Watcher", "WatchEvent", "ERROR_RECONCILE_SECONDS", "MAX_SETTLE_SECONDS",
           "MAX_BATCH_MS", "POLL_MS", "RETRY_BASE_SECONDS", "RETRY_CAP_SECONDS",
           "STARTUP_WAIT_SECONDS", "EventKind", "State"]
