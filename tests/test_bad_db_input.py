"""Issue 42, item 5 (the small parts): a `--db` that is not a regular file is one line
and exit 2 (not "disk I/O error … check the disk", exit 1); `ingest PATH` where PATH holds
no Markdown memory says so, exit 1 (it exited 0 silently); a database an older memlens
left 0644 is made 0600 when opened."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.conftest import CORPUS, run_cli

ENV = {"MEMLENS_EMBEDDER": "hashing", "HF_HUB_OFFLINE": "1"}


def _env(tmp_path: Path) -> dict[str, str]:
    return {**ENV, "MEMLENS_CONFIG": str(tmp_path / "none.toml"),
            "MEMLENS_INSTALL_KEY_FILE": str(tmp_path / "install.key")}


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize("args", [("docs",), ("search", "retry"), ("search", "retry", "--json"),
                                  ("history", "a.md"), ("ingest", str(CORPUS))])
def test_dev_null_is_not_a_regular_file(tmp_path: Path, args: tuple[str, ...]) -> None:
    proc = run_cli(*args, "--db", os.devnull, env=_env(tmp_path))
    line = _one_line(proc.stderr)
    assert proc.returncode == 2, (proc.returncode, line)
    assert "not a regular file" in line and "I/O error" not in line and "disk" not in line


def test_a_fifo_or_a_folder_is_not_a_database(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.db"
    os.mkfifo(fifo)
    proc = run_cli("docs", "--db", str(fifo), env=_env(tmp_path), timeout=60)
    assert proc.returncode == 2 and "not a regular file" in _one_line(proc.stderr)
    folder = tmp_path / "folder.db"
    folder.mkdir()
    proc = run_cli("ingest", str(CORPUS), "--db", str(folder), env=_env(tmp_path))
    assert proc.returncode == 2 and "is a folder" in _one_line(proc.stderr)


def test_ingest_of_a_folder_without_memory_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "nothing-here"
    (empty / "sub").mkdir(parents=True)
    (empty / "sub" / "notes.txt").write_text("not markdown\n", encoding="utf-8")
    db = str(tmp_path / "m.db")
    proc = run_cli("ingest", str(empty), "--db", db, env=_env(tmp_path))
    assert proc.returncode == 1 and proc.stdout == ""
    line = _one_line(proc.stderr)
    assert line.startswith(f"memlens: no Markdown memory file under {empty}")
    as_json = run_cli("ingest", str(empty), "--db", db, "--json", env=_env(tmp_path))
    assert as_json.returncode == 1 and "no Markdown memory file" in _one_line(as_json.stderr)
    assert json.loads(as_json.stdout)["created"] == 0
    # a folder with memory in it is still exit 0, also when nothing changed since
    for _ in range(2):
        ok = run_cli("ingest", str(CORPUS), "--db", db, env=_env(tmp_path))
        assert ok.returncode == 0 and ok.stderr == "", ok.stderr


@pytest.mark.parametrize("command", [("docs",), ("search", "retry"), ("search", "retry", "--json")])
def test_an_old_world_readable_database_is_made_private_on_open(
        tmp_path: Path, command: tuple[str, ...]) -> None:
    db = tmp_path / "old.db"
    assert run_cli("ingest", str(CORPUS), "--db", str(db), env=_env(tmp_path)).returncode == 0
    files = [f for f in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if f.exists()]
    for f in files:
        f.chmod(0o644)  # as an older memlens (or a copy) left it
    proc = run_cli(*command, "--db", str(db), env=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    for f in files:
        if f.exists():
            assert stat.S_IMODE(f.stat().st_mode) == 0o600, f


@pytest.mark.parametrize("which", ["root", "home"])
def test_ingest_of_the_filesystem_root_or_home_is_refused(tmp_path: Path, which: str) -> None:
    """`ingest /` walked every disk with no word (issue 42): the filesystem root and the
    home folder, holding no project memory, are not memory folders: one line, exit 2."""
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "todo.md").write_text("# a note outside memory\n", encoding="utf-8")
    target = "/" if which == "root" else str(home)
    env = {**_env(tmp_path), "HOME": str(home)}
    db = tmp_path / "m.db"
    proc = run_cli("ingest", target, "--db", str(db), env=env, timeout=60)
    line = _one_line(proc.stderr)
    assert proc.returncode == 2, line
    assert ("filesystem root" if which == "root" else "home folder") in line
    assert "~/.claude/projects" in line
    # a project folder under home still works
    project = home / ".claude" / "projects" / "-home-dev-x"
    (project / "memory").mkdir(parents=True)
    (project / "memory" / "a.md").write_text("# A\n\nhello\n", encoding="utf-8")
    ok = run_cli("ingest", str(home / ".claude" / "projects"), "--db", str(db), env=env)
    assert ok.returncode == 0, ok.stderr
