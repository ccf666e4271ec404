"""The registry of long-running processes that keep the database fresh (issue 42).

A watcher (``memlens watch``, the TUI's, ``memlens mcp --watch``) registers itself
when it starts with its heartbeat interval, beats at that interval and removes its row
when it stops. ``memlens doctor`` reads the rows: a registered process whose heartbeat is
stale, or that is gone without removing its row, is the ``watcher_heartbeat``
invariant. The table is created on first registration (``CREATE TABLE IF NOT
EXISTS``), so an older database needs no migration and a read-only one simply has no
registry; every write here is best effort for the caller. This module is the table's
only writer (tests/test_table_owners.py).
"""

from __future__ import annotations

import os
import socket
from typing import Any

import apsw

from memlens.core.store.rows import rows, write_txn

TABLE = "memlens_processes"
STALE_BEATS = 3
"""A heartbeat older than this many of the process's own intervals is stale."""

_DDL = ("CREATE TABLE IF NOT EXISTS memlens_processes (id TEXT PRIMARY KEY, kind TEXT NOT NULL,"
        " label TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,"
        " started_at REAL NOT NULL, heartbeat_at REAL NOT NULL, interval REAL NOT NULL)")


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs on this host (signal 0 probes it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    except OSError:
        return False
    return True


def register(conn: apsw.Connection, kind: str, label: str, now: float, interval: float) -> str:
    """Register this process (``kind``: ``watch``), beating every ``interval`` seconds;
    rows of this host whose process is gone are dropped first. Returns the row's id
    (``host:pid:kind``)."""
    host, pid = socket.gethostname(), os.getpid()
    key = f"{host}:{pid}:{kind}"
    with write_txn(conn):
        conn.execute(_DDL)
        for r in rows(conn, "SELECT id, pid FROM memlens_processes WHERE host=?", (host,)):
            if not pid_alive(int(r["pid"])):
                conn.execute("DELETE FROM memlens_processes WHERE id=?", (r["id"],))
        conn.execute("INSERT OR REPLACE INTO memlens_processes(id, kind, label, host, pid, started_at,"
                     " heartbeat_at, interval) VALUES (?,?,?,?,?,?,?,?)",
                     (key, kind, label, host, pid, now, now, interval))
    return key


def heartbeat(conn: apsw.Connection, key: str, now: float) -> None:
    """This process is alive and working."""
    with write_txn(conn):
        conn.execute("UPDATE memlens_processes SET heartbeat_at=? WHERE id=?", (now, key))


def unregister(conn: apsw.Connection, key: str) -> None:
    """This process stopped cleanly: its row goes."""
    with write_txn(conn):
        conn.execute("DELETE FROM memlens_processes WHERE id=?", (key,))


def registered(conn: apsw.Connection) -> list[dict[str, Any]]:
    """Every registered process (none when the table does not exist yet)."""
    if not rows(conn, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (TABLE,)):
        return []
    return rows(conn, "SELECT id, kind, label, host, pid, started_at, heartbeat_at, interval"
                " FROM memlens_processes ORDER BY started_at")
