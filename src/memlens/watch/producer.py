"""The watcher's producer thread: :func:`watchfiles.watch` into the pending set.

Part of :mod:`memlens.watch.watcher`. The producer never touches the database: it
collects changed paths that can matter (Markdown files, folders), restarts the
watch with back-off when it fails, and asks the consumer for a reconcile after
every (re)start.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import watchfiles
from watchfiles import Change

from memlens.core.types import is_ignored_name, is_markdown_name
from memlens.watch.events import (
    MAX_BATCH_MS,
    POLL_MS,
    RETRY_BASE_SECONDS,
    RETRY_CAP_SECONDS,
    AnyEvent,
    WatcherBase,
    ident,
    is_under,
)


class WatchProducer(WatcherBase):
    """The producer half of :class:`memlens.watch.watcher.Watcher`."""

    # -- producer ----------------------------------------------------------------
    def _desired_targets(self) -> dict[Path, tuple[int, int] | None]:
        """Existing folders to watch, with their (device, inode)."""
        want: list[Path] = [sc.path for sc in self._scopes]
        for r in self._explicit:
            if not any(is_under(r.path, sc.path) for sc in self._scopes):
                want.append(r.path)
        out: dict[Path, tuple[int, int] | None] = {}
        for p in want:
            if p in out or any(is_under(p, q) and p != q for q in want):
                continue
            if p.is_dir():
                out[p] = ident(p)
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
        stop = AnyEvent(stop_event, self._halt)
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
                        step=self._debounce_ms, stop_event=AnyEvent(self._restart, stop_event, self._halt),
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
    def _sleep(stop: AnyEvent, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not stop.is_set() and time.monotonic() < end:
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))


__all__ = ["WatchProducer"]
