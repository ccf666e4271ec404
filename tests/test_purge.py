"""`memlens purge`: a secret stored before a rule could catch it leaves no byte behind.

The secret is stored by ingesting with redaction switched off (in-process: the
subprocess CLI cannot be patched), then purged with the real rules; every byte of
the database file and its -wal/-shm files is searched afterwards.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memlens.core.redact.engine import RedactionResult
from memlens.core.store import db as dbm
from tests.conftest import MemoryTree, run_cli

SECRET = "ghp_" + "Zq7Xk2Lm9Pw4Rt6Yv8Bn3Cd5Fg1Hj0KsQeWa"
BODY = SECRET[4:]  # the part without the well-known prefix
ENV = {"MEMLENS_EMBEDDER": "hashing"}


def _db_bytes(db: Path) -> dict[str, bytes]:
    out = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        f = Path(f"{db}{suffix}")
        if f.exists():
            out[f.name] = f.read_bytes()
    return out


PACKED = [(t, c) for t, c in dbm.PACKED_COLUMNS]  # every compressed column


def _packed_leaks(db: Path) -> list[str]:
    """Compressed columns (their bytes hide text from a grep) whose text holds the secret."""
    conn = dbm.connect(db, readonly=True, migrate=False)
    try:
        out = []
        for table, col in PACKED:
            texts = [dbm.unpack_text(r[0]) or "" for r in conn.execute(
                f"SELECT {col}_z FROM {table}")]
            if any(BODY in t or BODY.lower() in t for t in texts):
                out.append(f"{table}.{col}")
        return out
    finally:
        conn.close()


def _leaks(db: Path) -> list[str]:
    """Files (of the database) that still hold the secret, in any common encoding, and
    compressed columns whose text holds it."""
    needles = [s.encode(enc) for s in (SECRET, BODY, BODY.lower())
               for enc in ("utf-8", "utf-16-le", "utf-16-be")]
    return [name for name, data in _db_bytes(db).items() if any(n in data for n in needles)] \
        + _packed_leaks(db)


def _store_unredacted(tree: MemoryTree, make_service: Callable[..., Any], db: Path,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Ingest a history full of the secret with redaction off (as an older rule set
    that missed it would have): snapshots, diffs, summaries, chunks, front matter,
    nodes, FTS, vectors, a rename and a deleted file."""
    monkeypatch.setattr("memlens.core.ingest.pipeline.redact", lambda t: RedactionResult(t, ()))
    svc = make_service(db)
    mem = tree.memdir()
    tree.write("MEMORY.md", "# Memory\n\n- [Deploy](deploy.md) how we deploy\n")
    tree.write("deploy.md", f"---\nname: deploy\ndescription: uses {SECRET}\n---\n"
               f"# Deploy with {SECRET}\n\nUse token {SECRET} for the registry.\n\n"
               "## Steps\n\nRun the pipeline, then check the dashboards.\n")
    tree.write("gone.md", f"# Gone\n\nold key {SECRET} kept here\n")
    tree.write("moved.md", f"# Moved\n\nmoving {SECRET} around\n")
    svc.ingest(svc.resolve_roots([mem]))
    # an edit: the old revision keeps a diff and a summary with the secret in them
    tree.write("deploy.md", "# Deploy\n\nUse the registry token from the vault.\n\n"
               f"## Steps\n\nRun the pipeline.\n\n## Old {SECRET}\n\nremoved later\n")
    tree.remove("gone.md")
    tree.rename("moved.md", "sub/moved-here.md")
    svc.ingest(svc.resolve_roots([mem]))
    svc.close()
    monkeypatch.undo()
    assert _leaks(db), "the secret should be stored before the purge (test setup)"
    # every compressed copy holds it too, so the purge is checked on each of them
    assert _packed_leaks(db) == [f"{t}.{c}" for t, c in PACKED]


def test_purge_leaves_no_byte_of_a_late_caught_secret(
        tree: MemoryTree, make_service: Callable[..., Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "m.db"
    _store_unredacted(tree, make_service, db, monkeypatch)
    svc = make_service(db)
    out = svc.purge()
    assert out.complete and out.wal_truncated, out
    assert out.changed == 3 and out.revisions >= 4 and out.chunks >= 1
    assert _leaks(db) == []  # while the connection is still open
    # everything still works, and shows the marker where the secret was
    res = svc.search("registry", mode="lexical")
    assert {h.path for h in res.hits} >= {"deploy.md"}
    assert all(SECRET not in h.snippet for h in res.hits)
    doc = svc.locate(None, "deploy.md")
    assert doc is not None and "[REDACTED:github-token]" in svc.revisions(doc.id)[-1].summary \
        + (svc.revisions(doc.id)[-1].diff or "")
    checks, problems = svc.doctor()
    assert problems == [], problems
    # a later ingest of the unchanged files (with the real rules) finds nothing to do
    again = svc.ingest(svc.resolve_roots([tree.memdir()]))
    assert again.as_json()["created"] == 0 and again.as_json()["updated"] == 0
    # a second purge finds nothing more
    assert svc.purge().changed == 0
    svc.close()
    assert _leaks(db) == []


def test_purge_cli(tree: MemoryTree, make_service: Callable[..., Any], tmp_path: Path,
                   monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "m.db"
    _store_unredacted(tree, make_service, db, monkeypatch)
    p = run_cli("purge", "--db", str(db), "--json", env=ENV)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["changed"] == 3 and data["complete"] is True and data["wal_truncated"] is True
    assert p.stderr == ""
    assert _leaks(db) == []
    text = run_cli("purge", "--db", str(db), env=ENV)
    assert text.returncode == 0 and "0 changed" in text.stdout, text.stderr
    doctor = run_cli("doctor", "--db", str(db), env=ENV)
    assert doctor.returncode == 0, doctor.stdout


def test_purge_leaves_every_ready_document_searchable(
        tree: MemoryTree, make_service: Callable[..., Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Purging with another embedder than the one the database was built with (the CLI's
    default against the fixture's): documents purge did not change are queued again by
    the embedder change, and purge projects them too; none is left pending."""
    from memlens.core.embedders.registry import make_embedder

    db = tmp_path / "m.db"
    _store_unredacted(tree, make_service, db, monkeypatch)

    def statuses(svc: Any) -> dict[str, str]:
        return {str(r[0]): str(r[1]) for r in svc.conn().execute(
            "SELECT logical_path, projection_status FROM memory_documents"
            " WHERE tombstoned_at IS NULL")}

    svc = make_service(db, embedder=make_embedder("hashing", {}))
    before = statuses(svc)
    assert set(before.values()) == {"ready"} and "MEMORY.md" in before, before
    out = svc.purge()
    assert out.changed == 3, out
    assert statuses(svc) == before
    words = {"MEMORY.md": "Memory", "deploy.md": "registry", "sub/moved-here.md": "moving"}
    for path, word in words.items():
        hits = svc.search(word, mode="lexical").hits
        assert path in {h.path for h in hits}, (path, word, hits)
    checks, problems = svc.doctor()
    assert problems == [], problems
    svc.close()


def test_purge_of_a_missing_database_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "no" / "such" / "m.db"
    p = run_cli("purge", "--db", str(db), env=ENV)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert "does not exist" in p.stderr and not (tmp_path / "no").exists()


def test_purge_rolls_back_a_document_cleanly(
        tree: MemoryTree, make_service: Callable[..., Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault in the middle of re-redacting a document leaves it as it was; purge again
    finishes the job."""
    from memlens.core import faults

    db = tmp_path / "m.db"
    _store_unredacted(tree, make_service, db, monkeypatch)
    svc = make_service(db)

    def boom(step: str) -> None:
        if step == "store.reredact":
            raise faults.InjectedFault(step)

    faults.set_hook(boom)
    try:
        with pytest.raises(faults.InjectedFault):
            svc.purge()
    finally:
        faults.set_hook(None)
    assert svc.doctor()[1] == []
    out = svc.purge()
    assert out.complete and out.changed == 3
    svc.close()
    assert _leaks(db) == []
    assert os.stat(db).st_size > 0


def test_purge_with_a_reader_open_says_what_is_left(
        tree: MemoryTree, make_service: Callable[..., Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A process reading an old snapshot keeps the WAL from being truncated: purge says so
    (not complete) instead of claiming success, and a later purge finishes."""
    from memlens.core.store import db as dbm

    db = tmp_path / "m.db"
    _store_unredacted(tree, make_service, db, monkeypatch)
    reader = dbm.connect(db)
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM memory_documents").fetchall()
    svc = make_service(db)
    first = svc.purge()
    assert first.changed == 3 and not first.wal_truncated and not first.complete
    reader.execute("COMMIT")
    reader.close()
    second = svc.purge()
    assert second.complete and second.changed == 0
    svc.close()
    assert _leaks(db) == []


def test_secret_file_name_is_not_indexed_or_printed_by_search(
        tree: MemoryTree, make_service: Callable[..., Any], tmp_path: Path) -> None:
    """A token used as a file name: the document, its revisions, the search projection
    (nodes, FTS vocabulary) and search results carry the redacted name with a keyed tag
    (``memlens.core.ingest.names``); no byte of the database holds the name."""
    db = tmp_path / "names.db"
    svc = make_service(db)
    tree.write("MEMORY.md", "# Memory\n\n- notes on the registry\n")
    tree.write(f"{SECRET}.md", "# Registry\n\nthe registry notes live here\n")
    svc.ingest(svc.resolve_roots([tree.memdir()]))
    conn = svc.conn()
    nodes = [r[0] for r in conn.execute("SELECT logical_path FROM knowledge_nodes")]
    assert nodes and all(SECRET not in p and BODY not in p for p in nodes)
    fts = conn.execute("SELECT COUNT(*) FROM knowledge_nodes_fts WHERE knowledge_nodes_fts"
                       " MATCH ?", (f'logical_path : "{BODY.lower()}"',)).fetchall()[0][0]
    assert fts == 0
    assert conn.execute("SELECT COUNT(*) FROM knowledge_nodes_fts WHERE knowledge_nodes_fts"
                        " MATCH 'logical_path : redacted'").fetchall()[0][0] >= 1
    hits = svc.search("registry notes", mode="lexical", k=5).hits
    assert hits and all(SECRET not in h.path for h in hits)
    assert any(re.fullmatch(r"\[REDACTED:github-token\]~[0-9a-f]{10}\.md", h.path)
               for h in hits)
    svc.close()
    assert _leaks(db) == []
    out = run_cli("search", "registry notes", "--mode", "lexical", "--json", "--db", str(db),
                  env=ENV)
    assert out.returncode == 0 and SECRET not in out.stdout and BODY not in out.stdout
