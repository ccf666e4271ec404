"""``memlens watch``: keep the database in step with memory folders, headless.

Runs in the foreground until SIGINT (Ctrl-C) or SIGTERM and prints one line per
applied change on stdout::

    2025-06-01T12:00:00.123+00:00  update  -home-dev-proj/testing.md  ready

(ISO time in UTC, change kind, repository/path, projection result). Projections
of documents that did not change in the same batch (retries) get a ``project``
line. Watcher state, reconciles and errors go to stderr. With ``--json`` every
event is one JSON object per line on stdout (JSONL); errors are also repeated on
stderr. A stop signal ends the current file's transaction, never half of one,
and the command exits 0.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from datetime import UTC, datetime
from types import FrameType
from typing import Any

import click

from memlens.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    PATH,
    Args,
    Command,
    db_options,
    service,
)
from memlens.core.types import UsageError


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")


class _Printer:
    """Turns watch events into stdout lines (text or JSONL) and stderr notes."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self._batch: set[tuple[str | None, str | None]] = set()
        self._last_kind = ""
        self._changes = 0  # change lines since the last reconcile note
        # files failing now, with their reason: a failure each periodic reconcile meets
        # again is told once, and its fix is told (issue 42 item 3)
        self._failing: dict[str, str] = {}

    def _out(self, line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    @staticmethod
    def _note(line: str) -> None:
        sys.stderr.write(f"memlens: {line}\n")
        sys.stderr.flush()

    def _still_failing(self, ev: Any) -> bool:
        """Whether this change repeats a failure already told (then it is not told again);
        a change that is not a failure clears the file's, saying so."""
        if ev.kind != "change":
            return False
        where = f"{ev.repository}/{ev.path}"
        if ev.change_kind == "failed":
            if self._failing.get(where) == ev.message:
                return True
            self._failing[where] = ev.message
        elif self._failing.pop(where, None) is not None:
            self._note(f"fixed: {where} ({ev.change_kind})")
        return False

    def __call__(self, ev: Any) -> None:
        if ev.kind == "change" and self._last_kind != "change":
            self._batch = set()
        self._last_kind = ev.kind
        repeated = self._still_failing(ev)
        if self.as_json:
            data = ev.as_json()
            data["time"] = _iso(ev.time)
            self._out(json.dumps(data, ensure_ascii=False))  # the stream keeps every event
            if ev.kind == "error" or (ev.change_kind == "failed" and not repeated):
                self._note(ev.message)
            return
        where = f"{ev.repository}/{ev.path}"
        if ev.kind == "change":
            if repeated:
                return  # told already: not a line, and not news for the reconcile note
            self._changes += 1
            self._batch.add((ev.repository, ev.path))
            if ev.change_kind == "failed":
                self._note(f"{where}: {ev.message.split(': ', 1)[-1]}")
                return
            extra = ""
            if ev.change_kind == "rename":
                extra = f"  (from {ev.message.split(' -> ')[0].split('/', 1)[-1]})"
            result = ev.result or ("-" if ev.change_kind == "delete" else "pending")
            self._out(f"{_iso(ev.time)}  {ev.change_kind:<7} {where}{extra}  {result}")
        elif ev.kind == "projection":
            if (ev.repository, ev.path) not in self._batch:
                self._out(f"{_iso(ev.time)}  project {where}  {ev.result}")
        elif ev.kind == "error":
            self._note(f"error: {ev.message}")
        elif ev.kind == "reconcile":
            # a periodic rescan that found nothing is not worth a line every minute
            if self._changes or "(periodic)" not in ev.message:
                self._note(ev.message)
            self._changes = 0
        else:
            self._note(ev.message)


def _fail(message: str, code: int) -> int:
    sys.stderr.write(f"memlens: {message}\n")
    return code


def cmd_watch(args: Args) -> int:
    """``memlens watch [PATH...]``: watch until SIGINT/SIGTERM, then exit 0."""
    if args.debounce_ms is not None and args.debounce_ms <= 0:
        return _fail("--debounce-ms must be a positive number of milliseconds", EXIT_USAGE)
    if args.reconcile_seconds is not None and args.reconcile_seconds < 0:
        return _fail("--reconcile-seconds must be 0 (off) or more", EXIT_USAGE)
    svc = service(args)  # a CliError is printed by Command.invoke (one line)
    try:
        try:
            roots = svc.resolve_roots(args.paths or None, args.repository)
        except UsageError as exc:
            return _fail(str(exc), EXIT_USAGE)
        scan = svc.watch_scan_paths(args.paths or None)
        if not args.paths:
            if not roots and not scan:
                return _fail("no memory folders found (looked in ~/.claude/projects/*/memory); "
                             "pass a PATH, e.g. `memlens watch corpus/`", EXIT_FAIL)
        printer = _Printer(bool(args.json))
        from memlens.watch.watcher import Watcher

        watcher = Watcher(svc, roots, scan_paths=scan, debounce_ms=args.debounce_ms,
                          reconcile_seconds=args.reconcile_seconds, on_event=printer,
                          repository=args.repository)
        stop = threading.Event()

        def on_signal(signum: int, frame: FrameType | None) -> None:
            if stop.is_set():  # second Ctrl-C: give up waiting for the current batch
                raise KeyboardInterrupt
            stop.set()

        old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            watcher.run(stop)
        finally:
            for s, h in old.items():
                signal.signal(s, h)
    finally:
        svc.close()
    return EXIT_OK


command = Command(
    "watch", handler=cmd_watch,
    short_help="watch memory folders and re-ingest changes as they happen",
    help="Watch memory folders (recursively, Markdown only) and keep the database in step: "
    "edits, new files, renames and deletions are ingested and projected within a fraction of "
    "a second, and a periodic full reconcile catches anything missed. PATH is a memory "
    "folder, a Claude project folder or a folder of project folders (like ~/.claude/projects; "
    "new projects are picked up without a restart). With no PATH, the configured roots or "
    "~/.claude/projects are watched. Prints one line per change; stop with Ctrl-C or SIGTERM.",
    params=[
        click.Argument(["paths"], nargs=-1, type=PATH, metavar="[PATH]..."),
        click.Option(["--repository"], help="repository name for a single memory folder"),
        click.Option(["--debounce-ms"], type=int, default=None, metavar="MS",
                     help="quiet time before a burst of file events is ingested "
                     "(default from config: 50)"),
        click.Option(["--reconcile-seconds"], type=float, default=None, metavar="S",
                     help="interval of the full reconcile rescan; 0 turns it off "
                     "(default from config: 60)"),
        *db_options(),
    ])
