"""`memlens --demo` tells a CLI user where the demo memory is stored."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from memlens.cli import main as cli
from memlens.tui.app import MemlensApp


@pytest.fixture
def no_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[MemlensApp]:
    """The apps ``memlens tui`` builds, instead of running them."""
    built: list[MemlensApp] = []

    def fake_run(self: MemlensApp, *args: Any, **kwargs: Any) -> None:
        built.append(self)

    monkeypatch.setattr(MemlensApp, "run", fake_run)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "no-claude"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "da ta"))  # a space: quoted
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MEMLENS_DB", raising=False)
    return built


def test_demo_names_its_database_on_exit(no_run: list[MemlensApp], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The demo keeps its own database apart from the real one; nothing told a user of
    `memlens search` where it was, so the CLI could not read what the TUI showed."""
    assert cli.main(["--demo", "--no-watch", "--no-ingest"]) == 0
    db = no_run[0].service.db_path
    assert str(db).startswith(str(tmp_path / "da ta"))
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"memlens: the demo database is {shlex.quote(str(db))};"
                   f" e.g. memlens search QUERY --db {shlex.quote(str(db))}"]
    # Not said when the TUI runs over the user's own memory.
    mem = tmp_path / "mine" / "memory"
    mem.mkdir(parents=True)
    (mem / "a.md").write_text("# A\n\nnote\n")
    assert cli.main(["tui", str(mem), "--db", str(tmp_path / "m.db"), "--no-watch",
                     "--no-ingest"]) == 0
    assert capsys.readouterr().err == ""
