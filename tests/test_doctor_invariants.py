"""Issue 42: `memlens doctor` names its invariants, each problem one line with its fix:
watcher_heartbeat (a registered watcher that stopped beating or died), repeated_failures,
projection_lag, schema_skew; orphans stay the `vectors` / `junction` checks. Real CLI,
real SQLite files, a real `memlens watch` process (stopped with SIGSTOP, killed with
SIGKILL, ended with SIGTERM)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.conftest import REPO, run_cli

ENV = {"MEMLENS_EMBEDDER": "hashing"}
NAMES = ["watcher_heartbeat", "repeated_failures", "projection_lag", "schema_skew"]


def _mem(tmp_path: Path, name: str = "proj") -> Path:
    mem = tmp_path / name / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text("# Memory\n\n- [deploy](deploy.md)\n", encoding="utf-8")
    (mem / "deploy.md").write_text("# Deploy\n\nRoll back with helm rollback.\n",
                                   encoding="utf-8")
    return mem


def _doctor(db: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, Any, str]:
    j = run_cli("doctor", "--db", str(db), "--json", *args, env=env or ENV)
    t = run_cli("doctor", "--db", str(db), *args, env=env or ENV)
    assert "Traceback" not in j.stderr + t.stderr
    assert j.returncode == t.returncode, (j.stderr, t.stderr)
    return j.returncode, json.loads(j.stdout), t.stdout


def _found(data: Any, name: str) -> list[dict[str, Any]]:
    return [p for p in data["problems"] if p["check"] == name]


def test_a_fresh_database_holds_every_invariant(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    assert run_cli("ingest", str(_mem(tmp_path)), "--db", str(db), env=ENV).returncode == 0
    code, data, text = _doctor(db)
    assert code == 0 and data["ok"] and data["problems"] == [], data
    assert data["checks"][-4:] == NAMES and text.strip().endswith("ok")


def _registered(db: Path) -> list[tuple[Any, ...]]:
    c = apsw.Connection(str(db))
    c.set_busy_timeout(15_000)  # the watcher writes meanwhile
    try:
        return list(c.execute("SELECT pid, label, heartbeat_at FROM memlens_processes"))
    except apsw.SQLError:
        return []
    finally:
        c.close()


def _watch(db: Path, mem: Path) -> subprocess.Popen[str]:
    env = {**os.environ, **ENV, "MEMLENS_HEARTBEAT_SECONDS": "1"}
    return subprocess.Popen([sys.executable, "-m", "memlens.launch", "watch", str(mem),
                             "--db", str(db)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)


def _wait(cond: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_watcher_heartbeat_stale_then_gone(tmp_path: Path) -> None:
    db, mem = tmp_path / "m.db", _mem(tmp_path)
    proc = _watch(db, mem)
    try:
        _wait(lambda: [r for r in _registered(db) if r[0] == proc.pid], "registration")
        first = _registered(db)[0][2]
        _wait(lambda: _registered(db)[0][2] > first, "a heartbeat")  # it beats
        j = run_cli("doctor", "--db", str(db), "--json", env=ENV)
        assert not _found(json.loads(j.stdout), "watcher_heartbeat"), j.stdout
        os.kill(proc.pid, signal.SIGSTOP)  # alive, but no longer beating
        time.sleep(4.0)  # > 3 intervals of 1 s
        code, data, text = _doctor(db)
        stale = _found(data, "watcher_heartbeat")
        assert code == 1 and len(stale) == 1, data
        assert f"memlens watch (pid {proc.pid})" in stale[0]["message"]
        assert "has not beaten" in stale[0]["message"] and f"kill {proc.pid}" in stale[0]["fix"]
        assert f"PROBLEM [watcher_heartbeat] memlens watch (pid {proc.pid})" in text
        assert " — fix: " in text
        os.kill(proc.pid, signal.SIGKILL)  # gone without unregistering
        proc.wait(timeout=30)
        code, data, _ = _doctor(db)
        gone = _found(data, "watcher_heartbeat")
        assert code == 1 and len(gone) == 1 and "is gone" in gone[0]["message"], data
        assert "memlens watch" in gone[0]["fix"]
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.wait(timeout=30)
    # a new watcher drops the dead row and registers; a clean stop unregisters
    proc = _watch(db, mem)
    try:
        _wait(lambda: [r[0] for r in _registered(db)] == [proc.pid], "the new registration")
        code, data, _ = _doctor(db)
        assert code == 0, data
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    assert _registered(db) == []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_repeated_failures(tmp_path: Path) -> None:
    """An embedder that refuses, three runs in a row: the vectors failed 3 times."""
    db, mem = tmp_path / "m.db", _mem(tmp_path)
    cfg = tmp_path / "refused.toml"
    cfg.write_text("[embedder]\nname = \"openai\"\n"
                   f"base_url = \"http://127.0.0.1:{_closed_port()}/v1\"\nmodel = \"m\"\n"
                   "dim = 8\nmax_retries = 0\n", encoding="utf-8")
    env = {"MEMLENS_CONFIG": str(cfg)}
    assert run_cli("ingest", str(mem), "--db", str(db), env=env).returncode == 1
    code, data, _ = _doctor(db, env=env)
    assert not _found(data, "repeated_failures")  # once is not repeated
    for _ in range(2):
        assert run_cli("project", "--force", "--db", str(db), env=env).returncode == 1
    code, data, text = _doctor(db, env=env)
    found = _found(data, "repeated_failures")
    assert code == 1 and {p["message"].split(":")[0] for p in found} == {
        "proj/MEMORY.md", "proj/deploy.md"}, data
    assert all("vectors failed 3 times in a row" in p["message"] and "connection refused"
               in p["message"] and "memlens project --force" in p["fix"] for p in found)
    assert "PROBLEM [repeated_failures] proj/deploy.md: its vectors failed 3 times" in text


def test_projection_lag(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    p = run_cli("ingest", str(_mem(tmp_path)), "--db", str(db), "--defer-projection", env=ENV)
    assert p.returncode == 0, p.stderr
    code, data, _ = _doctor(db)  # just stored: waiting, not lagging (a notice only)
    assert code == 0 and not _found(data, "projection_lag") and data["notices"], data
    code, data, text = _doctor(db, "--lag-minutes", "0")
    lag = _found(data, "projection_lag")
    assert code == 1 and len(lag) == 1, data
    assert lag[0]["message"].startswith("2 document(s) changed more than 0 s ago are not "
                                        "searchable yet (oldest: proj/")
    assert "memlens project" in lag[0]["fix"] and "PROBLEM [projection_lag]" in text
    assert run_cli("project", "--db", str(db), env=ENV).returncode == 0
    code, data, _ = _doctor(db, "--lag-minutes", "0")
    assert code == 0, data
    bad = run_cli("doctor", "--db", str(db), "--lag-minutes", "-1", env=ENV)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_schema_skew(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    assert run_cli("ingest", str(_mem(tmp_path)), "--db", str(db), env=ENV).returncode == 0
    c = apsw.Connection(str(db))
    idx = c.execute("SELECT name FROM sqlite_master WHERE type='index' AND tbl_name="
                    "'memory_revisions' AND sql IS NOT NULL").fetchone()[0]
    c.execute(f"DROP INDEX {idx}")
    c.execute("CREATE TABLE notes_of_someone_else (x)")
    c.close()
    code, data, text = _doctor(db)
    skew = _found(data, "schema_skew")
    assert code == 1 and len(skew) == 2, data
    assert skew[0]["message"] == f"missing from the schema: index {idx}"
    assert skew[1]["message"] == "not made by this memlens: table notes_of_someone_else"
    assert all(p["fix"] for p in skew) and "PROBLEM [schema_skew]" in text


def test_orphans_are_named_with_their_fix(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    assert run_cli("ingest", str(_mem(tmp_path)), "--db", str(db), env=ENV).returncode == 0
    c = apsw.Connection(str(db))
    c.execute("INSERT INTO knowledge_node_memory_chunks(node_id, chunk_id)"
              " SELECT node_id + 100000, chunk_id FROM knowledge_node_memory_chunks LIMIT 1")
    c.close()
    code, data, text = _doctor(db)
    junction = _found(data, "junction")
    assert code == 1 and junction and junction[0]["fix"], data
    assert "PROBLEM [junction] 1 orphan junction rows — fix: " in text


@pytest.mark.parametrize("lag", ["abc"])
def test_bad_lag_is_a_usage_error(tmp_path: Path, lag: str) -> None:
    p = run_cli("doctor", "--db", str(tmp_path / "x.db"), "--lag-minutes", lag, env=ENV)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
