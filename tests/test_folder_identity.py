"""A memory folder keeps its identity when it is reached by another path (issue 16).

End-to-end through the real CLI and a real SQLite file: documents are found by
repository + logical path, so a moved or symlinked folder updates the same documents
and deletes made there are seen; a file replaced by a folder is a delete.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import run_cli

ENV = {"MEMLENS_EMBEDDER": "hashing"}


def _memory(base: Path) -> Path:
    mem = base / "proj-larkspur" / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text("# Index\n\n- [Deploy](deploy.md)\n- [Owls](owls.md)\n")
    (mem / "deploy.md").write_text("# Deploy\n\nThe quokkafrost deploy runs at dawn.\n")
    (mem / "owls.md").write_text("# Owls\n\nThe barn owl roosts in the zephyrwood loft.\n")
    return mem


def _ok(proc: object) -> dict:
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    return json.loads(proc.stdout)  # type: ignore[attr-defined]


def _docs(db: str) -> dict[str, int]:
    out = _ok(run_cli("docs", "--db", db, "--json", env=ENV))["documents"]
    return {d["path"]: d["id"] for d in out}


def _hits(db: str, word: str) -> list[str]:
    res = _ok(run_cli("search", word, "--db", db, "--json", "--mode", "lexical", env=ENV))
    return [h["path"] for h in res["hits"]]


def test_moved_folder_keeps_documents_and_sees_deletes(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    mem = _memory(tmp_path / "old")
    first = _ok(run_cli("ingest", str(mem), "--db", db, "--json", env=ENV))
    assert first["created"] == 3
    ids = _docs(db)
    assert _hits(db, "zephyrwood") == ["owls.md"]

    new_parent = tmp_path / "new"
    new_parent.mkdir()
    moved = new_parent / "proj-larkspur"
    shutil.move(str(mem.parent), str(moved))
    (moved / "memory" / "owls.md").unlink()

    again = _ok(run_cli("ingest", str(moved / "memory"), "--db", db, "--json", env=ENV))
    assert again["created"] == 0, again
    assert again["deleted"] == 1 and again["unchanged"] == 2, again
    after = _docs(db)
    assert after == {p: i for p, i in ids.items() if p != "owls.md"}, "same ids, owls gone"
    assert _hits(db, "zephyrwood") == []
    assert _hits(db, "quokkafrost") == ["deploy.md"]
    # the moved folder is now the remembered one: a further change there is an update
    (moved / "memory" / "deploy.md").write_text("# Deploy\n\nThe quokkafrost deploy runs at noon.\n")
    third = _ok(run_cli("ingest", str(moved / "memory"), "--db", db, "--json", env=ENV))
    assert third["updated"] == 1 and third["created"] == 0 and third["deleted"] == 0, third
    hist = _ok(run_cli("history", "deploy.md", "--db", db, "--json", env=ENV))
    assert len(hist["revisions"]) == 2


def test_symlinked_folder_is_the_same_folder(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    mem = _memory(tmp_path / "real")
    link_parent = tmp_path / "link"
    link_parent.mkdir()
    (link_parent / "proj-larkspur").symlink_to(mem.parent, target_is_directory=True)
    via_link = link_parent / "proj-larkspur" / "memory"
    assert _ok(run_cli("ingest", str(via_link), "--db", db, "--json", env=ENV))["created"] == 3
    (mem / "deploy.md").unlink()
    out = _ok(run_cli("ingest", str(mem), "--db", db, "--json", env=ENV))
    assert out["created"] == 0 and out["deleted"] == 1, out
    assert set(_docs(db)) == {"MEMORY.md", "owls.md"}


def test_other_folder_of_same_repository_is_not_deleted(tmp_path: Path) -> None:
    """Two live folders that map to one repository: ingesting one never deletes the
    other's documents while their files exist."""
    db = str(tmp_path / "m.db")
    a = _memory(tmp_path / "a")
    b = tmp_path / "b" / "proj-larkspur" / "memory"
    b.mkdir(parents=True)
    (b / "extra.md").write_text("# Extra\n\nThe heronmoss note lives in the second folder.\n")
    assert _ok(run_cli("ingest", str(a), "--db", db, "--json", env=ENV))["created"] == 3
    assert _ok(run_cli("ingest", str(b), "--db", db, "--json", env=ENV))["created"] == 1
    again = _ok(run_cli("ingest", str(a), "--db", db, "--json", env=ENV))
    assert again["deleted"] == 0 and again["created"] == 0, again
    assert set(_docs(db)) == {"MEMORY.md", "deploy.md", "owls.md", "extra.md"}
    assert _hits(db, "heronmoss") == ["extra.md"]


def test_file_replaced_by_folder_is_a_delete(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    mem = _memory(tmp_path)
    assert _ok(run_cli("ingest", str(mem), "--db", db, "--json", env=ENV))["created"] == 3
    (mem / "owls.md").unlink()
    (mem / "owls.md").mkdir()
    (mem / "owls.md" / "inside.md").write_text("# Inside\n\nA note in a folder named like a file.\n")
    out = _ok(run_cli("ingest", str(mem), "--db", db, "--json", env=ENV))
    assert out["deleted"] == 1 and out["created"] == 1, out
    assert set(_docs(db)) == {"MEMORY.md", "deploy.md", "owls.md/inside.md"}
    assert _hits(db, "zephyrwood") == []


def test_a_second_name_for_a_stored_folder_is_refused(tmp_path: Path) -> None:
    """`ingest DIR --repository other` on a folder stored under another repository said
    "10 unchanged" and kept the old name: the flag was silently ignored. It is one line,
    exit 2, naming the stored repository, and nothing changes."""
    mem = _memory(tmp_path)
    db = str(tmp_path / "m.db")
    first = _ok(run_cli("ingest", str(mem), "--repository", "larks", "--db", db, "--json", env=ENV))
    assert first["created"] == 3
    before = _ok(run_cli("docs", "--db", db, "--json", env=ENV))
    for cmd in ("ingest", "watch"):
        p = run_cli(cmd, str(mem), "--repository", "owls", "--db", db, env=ENV)
        assert p.returncode == 2 and p.stdout == ""
        assert p.stderr.strip().splitlines() == [
            f"memlens: {mem} is stored as repository 'larks'; a folder keeps its name"
            " (run without --repository, or with --repository larks)"]
    assert _ok(run_cli("docs", "--db", db, "--json", env=ENV)) == before
    same = _ok(run_cli("ingest", str(mem), "--repository", "larks", "--db", db, "--json", env=ENV))
    assert same["unchanged"] == 3
    # A new folder may still be given any name.
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "n.md").write_text("# N\n\nnote\n")
    new = _ok(run_cli("ingest", str(other), "--repository", "owls", "--db", db, "--json", env=ENV))
    assert new["created"] == 1
