"""Three writers on one database at once, with the REAL watcher.

* ``memlens watch`` (subprocess, the CLI),
* an ingest loop (a process calling ``memlens ingest`` again and again),
* a Python process running a :class:`~memlens.watch.watcher.Watcher` on the service,

while this test keeps changing files (in-place writes, atomic replaces, vim-style
saves, deletes and re-creates). Afterwards: no process printed SQLITE_BUSY /
"database is locked" / a traceback, every live file's current revision is its
final content (no lost revision), deleted files are tombstoned, and ``memlens
doctor`` is clean. The default run writes for ~10 s; ``--run-slow`` for 60 s.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memlens.core.store import db as dbm
from memlens.core.store.schema import DOC_CONTENT_SQL
from tests.conftest import REPO, MemoryTree, run_cli

SLUG = "-home-dev-multi"
BAD = ("SQLITE_BUSY", "database is locked", "Traceback", "BusyError", "LockedError")

INGEST_LOOP = textwrap.dedent("""
    import os, sys, time
    from memlens.cli.main import main
    folder, db, stopfile = sys.argv[1:4]
    n = 0
    while not os.path.exists(stopfile) or n < 2:
        rc = main(["ingest", folder, "--db", db, "--json"])
        n += 1
        print(f"ingest #{n} rc={rc}", flush=True)
        time.sleep(0.05)
    # one last full pass after the writers stopped
    print("final rc=", main(["ingest", folder, "--db", db, "--json"]), flush=True)
""")

SERVICE_WATCHER = textwrap.dedent("""
    import signal, sys, threading
    from pathlib import Path
    from memlens.core.config.settings import load_settings
    from memlens.core.service import MemoryService
    from memlens.watch.watcher import Watcher
    folder, db = sys.argv[1:3]
    svc = MemoryService(load_settings(overrides={"db": db}))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    def show(ev):
        print(ev.kind, ev.change_kind or "", ev.repository or "", ev.path or "",
              ev.result or "", ev.message, flush=True)
    Watcher(svc, scan_paths=[Path(folder)], debounce_ms=20, reconcile_seconds=1,
            on_event=show).run(stop)
    svc.close()
    print("clean exit", flush=True)
""")


def _content(i: int, rev: int) -> str:
    return f"# File {i}\n\nRevision {rev} of file {i}.\n" + "filler words here\n" * (rev % 7)


def _run(seconds: float, tree: MemoryTree, tmp_path: Path) -> None:
    mem = tree.memdir(SLUG)
    files = 12
    rev = dict.fromkeys(range(files), 0)
    for i in range(files):
        (mem / f"f{i}.md").write_text(_content(i, 0))
    db = tmp_path / "shared.db"
    env = {**os.environ, "MEMLENS_EMBEDDER": "hashing", "PYTHONUNBUFFERED": "1"}
    stopfile = tmp_path / "stop"
    (tmp_path / "loop.py").write_text(INGEST_LOOP)
    (tmp_path / "svcwatch.py").write_text(SERVICE_WATCHER)
    logs = {name: open(tmp_path / f"{name}.log", "w+") for name in ("watch", "loop", "svc")}
    procs = {
        "watch": subprocess.Popen(
            [sys.executable, "-m", "memlens.cli.main", "watch", str(tree.projects), "--db",
             str(db), "--debounce-ms", "20", "--reconcile-seconds", "2"],
            stdout=logs["watch"], stderr=subprocess.STDOUT, env=env, cwd=REPO),
        "loop": subprocess.Popen(
            [sys.executable, str(tmp_path / "loop.py"), str(tree.projects), str(db),
             str(stopfile)], stdout=logs["loop"], stderr=subprocess.STDOUT, env=env, cwd=REPO),
        "svc": subprocess.Popen(
            [sys.executable, str(tmp_path / "svcwatch.py"), str(tree.projects), str(db)],
            stdout=logs["svc"], stderr=subprocess.STDOUT, env=env, cwd=REPO),
    }
    rng = random.Random(7)
    deleted: set[int] = set()
    try:
        time.sleep(1.5)  # let all three start
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            i = rng.randrange(files)
            p = mem / f"f{i}.md"
            if i in deleted:
                p.write_text(_content(i, rev[i] + 1))
                rev[i] += 1
                deleted.discard(i)
                continue
            op = rng.random()
            rev[i] += 1
            if op < 0.5:
                p.write_text(_content(i, rev[i]))
            elif op < 0.75:
                tmp = mem / f".f{i}.md.tmp"
                tmp.write_text(_content(i, rev[i]))
                os.replace(tmp, p)
            elif op < 0.92:
                os.rename(p, mem / f"f{i}.md~")
                p.write_text(_content(i, rev[i]))
                (mem / f"f{i}.md~").unlink()
            else:
                p.unlink()
                deleted.add(i)
            time.sleep(rng.uniform(0.0, 0.08))
        stopfile.write_text("stop")
        assert procs["loop"].wait(60) == 0
        # the two watchers must converge on the final files by themselves
        deadline = time.monotonic() + 20
        while (problems := _problems(db, files, rev, deleted)) and time.monotonic() < deadline:
            time.sleep(0.1)
        for name in ("watch", "svc"):
            procs[name].send_signal(signal.SIGTERM)
        for name in ("watch", "svc"):
            assert procs[name].wait(30) == 0, name
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    out = {}
    for name, f in logs.items():
        f.seek(0)
        out[name] = f.read()
        f.close()
        for bad in BAD:
            assert bad not in out[name], f"{name} printed {bad!r}:\n{out[name][-3000:]}"
    assert "clean exit" in out["svc"]
    assert "final rc= 0" in out["loop"], out["loop"][-2000:]
    assert out["loop"].count("rc=0") >= 3
    assert not problems, problems
    assert not _problems(db, files, rev, deleted)
    doctor = run_cli("doctor", "--db", str(db), env={"MEMLENS_EMBEDDER": "hashing"})
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr


def _problems(db: Path, files: int, rev: dict[int, int], deleted: set[int]) -> list[str]:
    """What differs between the database and the final files (empty: all good)."""
    import apsw

    out: list[str] = []
    conn = dbm.connect(db)
    try:
        docs = {r["logical_path"]: r for r in dbm.rows(
            conn, f"SELECT d.*, {DOC_CONTENT_SQL} AS content FROM memory_documents d"
            " WHERE repository=?", (SLUG,))}
    finally:
        try:
            conn.close()
        except apsw.Error:
            pass
    for i in range(files):
        d = docs.get(f"f{i}.md")
        if d is None:
            out.append(f"f{i}.md missing")
        elif i in deleted:
            if d["tombstoned_at"] is None:
                out.append(f"f{i}.md should be tombstoned")
        elif d["tombstoned_at"] is not None:
            out.append(f"f{i}.md should be live")
        elif d["content"] != _content(i, rev[i]):
            out.append(f"f{i}.md: lost revision {rev[i]}")
        elif d["active_revision_id"] != d["current_revision_id"] or \
                d["projection_status"] != "ready":
            out.append(f"f{i}.md not projected ({d['projection_status']})")
    return out


def test_three_writers_one_database(tree: MemoryTree, tmp_path: Path) -> None:
    _run(10.0, tree, tmp_path)


@pytest.mark.slow
def test_three_writers_one_database_soak(tree: MemoryTree, tmp_path: Path) -> None:
    _run(60.0, tree, tmp_path)
