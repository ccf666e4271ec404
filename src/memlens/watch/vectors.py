"""The watcher's vector worker: stage 2 of the projection on a thread of its own.

Part of :mod:`memlens.watch.watcher`. The consumer runs stage 1 of each batch (the file
is searchable by its words when it returns) and asks for vectors; this thread then runs
the door's :meth:`~memlens.core.service.MemoryService.vectors_between_changes` in short
slices. Before each slice it asks whether a change waits (a path collected by the
producer, or a batch the consumer is settling or ingesting): then it stops after the
slice in hand and starts again once the consumer is idle. So a save's stage 1 never
waits for another save's embedding, and stage 2 yields the CPU to the next change.

It never calls ``on_event``: its events (a vector run that wrote something, an error)
are queued with :meth:`~memlens.watch.events.WatcherBase._post` and emitted by the
consumer like the producer's.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from memlens.watch.events import AnyEvent, WatcherBase, log

#: How often an idle vector worker looks at ``stop`` while it waits for work.
IDLE_WAIT_SECONDS = 0.1


class WatchVectors(WatcherBase):
    """The vector-worker half of :class:`memlens.watch.watcher.Watcher`."""

    def _changes_waiting(self) -> bool:
        """A change is collected, settling or being ingested (stage 2 yields to it)."""
        return self._busy or bool(self._pending)

    @contextlib.contextmanager
    def _consuming(self) -> Iterator[None]:
        """Around the consumer's work on a batch or reconcile: the vector worker yields
        meanwhile, and is asked for vectors when it ends."""
        with self._cond:
            self._busy = True
        try:
            yield
        finally:
            with self._cond:
                self._busy = False
                self._vectors_wanted = True
                self._cond.notify_all()

    def _vectors_loop(self, stop_event: threading.Event) -> None:
        """The vector worker's thread: wait for work and an idle consumer, run stage 2
        until done or until a change waits, repeat until the watcher stops."""
        stop = AnyEvent(stop_event, self._halt)
        self._vectors_error: str | None = None  # the last failure reported
        try:
            while not stop.is_set():
                with self._cond:
                    ready = (self._vectors_wanted and not self._paused
                             and not self._changes_waiting())
                    if not ready:
                        self._cond.wait(IDLE_WAIT_SECONDS)
                        continue
                    self._vectors_wanted = False
                self._vectors_run(stop)
        finally:
            self._service.release_thread_connection()

    def _vectors_run(self, stop: AnyEvent) -> None:
        """One stage-2 run; asks for another when it yielded to a change."""
        yielded = False

        def cancelled() -> bool:
            nonlocal yielded
            if stop.is_set():
                return True
            if self._paused or self._changes_waiting():
                yielded = True
                return True
            return False

        try:
            rep = self._service.vectors_between_changes(cancelled=cancelled)
        except Exception as exc:  # a failing database: the vectors wait for the next batch
            log.debug("memlens watch: vector run failed", exc_info=True)
            self._post(self._event("error", f"vectors failed: {type(exc).__name__}: {exc}; "
                                   "the documents stay searchable by their words"))
            return
        vec = rep.vectors
        if vec is not None and vec.written:
            self._post(self._event(
                "projection", f"vectors: {vec.written} written ({vec.cached} from the cache)"
                + (f"; {vec.waiting} document(s) wait for more" if vec.waiting else "")))
        error = vec.error if vec is not None else None
        if error and error != self._vectors_error:  # once, not at every save
            self._post(self._event("error", f"vectors failed: {error}; the documents "
                                   "stay searchable by their words and are retried later"))
        self._vectors_error = error
        if yielded:
            with self._cond:
                self._vectors_wanted = True


__all__ = ["IDLE_WAIT_SECONDS", "WatchVectors"]
