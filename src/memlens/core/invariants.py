"""``memlens doctor``'s invariants by name (issue 42): what must hold while memlens runs,
each finding one :class:`~memlens.core.doctor.Problem` with its ``fix``.

* ``watcher_heartbeat``: every watcher registered as running (``memlens watch``, the
  TUI's, ``memlens mcp --watch``; :mod:`memlens.core.store.processes`) is alive and beat
  within three of its intervals.
* ``repeated_failures``: no document failed its indexing (or its vectors)
  :data:`FAILURES` times or more in a row.
* ``projection_lag``: no change stored more than ``lag_minutes`` ago is still waiting
  to be searchable (words), or for its vectors.
* ``schema_skew``: the file's schema version and tables are those this memlens makes.

Orphan links and vectors are the ``junction`` and ``vectors`` checks of
:mod:`memlens.core.doctor`.
"""

from __future__ import annotations

import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw

from memlens.core.doctor import Problem
from memlens.core.store import db as dbm
from memlens.core.store import processes

FAILURES = 3
"""Failed attempts in a row of one document that make ``repeated_failures``."""
LAG_MINUTES = 10.0
"""Default of ``memlens doctor --lag-minutes``."""
NAMES = ("watcher_heartbeat", "repeated_failures", "projection_lag", "schema_skew")


def _ago(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def check_invariants(conn: apsw.Connection, now: float, *,
                     lag_minutes: float = LAG_MINUTES) -> list[Problem]:
    """Every invariant's findings (empty when all hold)."""
    found: list[Problem] = []
    found += _heartbeats(conn, now)
    found += _repeated_failures(conn)
    found += _lag(conn, now, lag_minutes * 60.0)
    found += _schema_skew(conn)
    return found


def _heartbeats(conn: apsw.Connection, now: float) -> list[Problem]:
    out = []
    host = socket.gethostname()
    for r in processes.registered(conn):
        who = f"{r['label']} (pid {r['pid']}{'' if r['host'] == host else ' on ' + r['host']})"
        quiet = now - float(r["heartbeat_at"])
        if r["host"] == host and not processes.pid_alive(int(r["pid"])):
            out.append(Problem(
                "watcher_heartbeat", f"{who} is registered as watching but is gone (last "
                f"heartbeat {_ago(quiet)} ago): changes since then are not followed",
                fix="start a watcher again (`memlens watch`, the TUI or `memlens mcp --watch`);"
                " it replaces the row"))
        elif quiet > processes.STALE_BEATS * float(r["interval"]):
            out.append(Problem(
                "watcher_heartbeat", f"{who} is running but has not beaten for {_ago(quiet)}"
                f" (it beats every {_ago(float(r['interval']))}): stuck, or busy with one "
                "long batch", fix=f"look at its events; if it stays so, stop it (kill "
                f"{r['pid']}) and start it again"))
    return out


def _repeated_failures(conn: apsw.Connection) -> list[Problem]:
    out = []
    for r in dbm.rows(conn, "SELECT repository, logical_path, projection_attempts,"
                      " projection_error, projection_status, vector_attempts, vector_error"
                      " FROM memory_documents WHERE tombstoned_at IS NULL AND"
                      " ((projection_status IN ('failed','stale') AND projection_attempts>=?)"
                      " OR (vector_error IS NOT NULL AND vector_attempts>=?))"
                      " ORDER BY repository, logical_path", (FAILURES, FAILURES)):
        name = f"{r['repository']}/{r['logical_path']}"
        if r["projection_status"] in ("failed", "stale") and r["projection_attempts"] >= FAILURES:
            out.append(Problem(
                "repeated_failures", f"{name}: indexing failed {r['projection_attempts']} "
                f"times in a row: {r['projection_error']}",
                fix="fix what the error names (the file, the disk), then `memlens project "
                "--force`"))
        if r["vector_error"] and r["vector_attempts"] >= FAILURES:
            out.append(Problem(
                "repeated_failures", f"{name}: its vectors failed {r['vector_attempts']} "
                f"times in a row: {r['vector_error']}",
                fix="check the embedder (`memlens config`), then `memlens project --force`;"
                " its words stay searchable meanwhile"))
    return out


_LAGGING = ("SELECT d.repository, d.logical_path, r.observed_at FROM memory_documents d"
            " JOIN memory_revisions r ON r.id=d.current_revision_id WHERE d.tombstoned_at IS"
            " NULL AND {waiting} AND r.observed_at<? ORDER BY r.observed_at")
"""Live documents changed before a cut that still wait (``waiting``: for which stage)."""


def _lag(conn: apsw.Connection, now: float, lag: float) -> list[Problem]:
    out = []
    cases: tuple[tuple[str, Callable[[Any], str], str], ...] = (
            ("d.projection_status IN ('pending','processing')",
             lambda old: (f"ago are not searchable yet (oldest: {old['repository']}/"
                          f"{old['logical_path']}, {_ago(now - float(old['observed_at']))})"),
             "run `memlens project` (or keep `memlens watch` running); if it comes back, "
             "see repeated_failures"),
            ("d.projection_status='ready' AND d.vector_done<d.vector_total",
             lambda old: (f"ago still wait for their vectors (oldest: {old['repository']}/"
                          f"{old['logical_path']}); they are searchable by words only"),
             "run `memlens project` (the embedder must answer: `memlens config`)"))
    for waiting, says, fix in cases:
        late = dbm.rows(conn, _LAGGING.format(waiting=waiting), (now - lag,))
        if late:
            out.append(Problem("projection_lag", f"{len(late)} document(s) changed more than "
                               f"{_ago(lag)} {says(late[0])}", fix=fix))
    return out


def _objects(conn: apsw.Connection) -> set[tuple[str, str]]:
    """The schema's tables, indexes, triggers and views, without SQLite's own, the
    vector spaces' vec0 tables (one per space) and the optional process registry."""
    out = set()
    for r in dbm.rows(conn, "SELECT type, name FROM sqlite_master WHERE name NOT LIKE"
                      " 'sqlite_%'"):
        name = str(r["name"])
        if name.startswith("vec_") or name == processes.TABLE:
            continue
        out.add((str(r["type"]), name))
    return out


def _schema_skew(conn: apsw.Connection) -> list[Problem]:
    version = int(dbm.scalar(conn, "PRAGMA user_version") or 0)
    fix = ("open it once with this memlens on a writable file (`memlens doctor` or any "
           "command migrates it), or rebuild it: `memlens ingest --db NEW.db`")
    if version != dbm.SCHEMA_VERSION:
        return [Problem("schema_skew", f"schema version {version}, this memlens makes "
                        f"{dbm.SCHEMA_VERSION}", fix=fix)]
    with tempfile.TemporaryDirectory(prefix="memlens-schema-") as tmp:
        fresh = dbm.connect(Path(tmp) / "fresh.db")
        try:
            want = _objects(fresh)
        finally:
            fresh.close()
    have = _objects(conn)
    out = []
    missing, extra = sorted(want - have), sorted(have - want)
    if missing:
        out.append(Problem("schema_skew", "missing from the schema: " + ", ".join(
            f"{t} {n}" for t, n in missing), fix=fix))
    if extra:
        out.append(Problem("schema_skew", "not made by this memlens: " + ", ".join(
            f"{t} {n}" for t, n in extra),
            fix="written by another program or version: rebuild it with `memlens ingest "
            "--db NEW.db` if memlens misbehaves"))
    return out


__all__ = ["FAILURES", "LAG_MINUTES", "NAMES", "check_invariants"]
