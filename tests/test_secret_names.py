"""Secrets used as file or folder names never reach the database or any output.

A file named by a token is stored under its redacted name plus a keyed tag
(:mod:`memlens.core.ingest.names`); the tests drive the real CLI (and the watcher and
`purge` in process) and then grep every byte memlens wrote — the database, its
-wal/-shm, and the decompressed columns — and every line it printed.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlens.core.ingest.names import is_tagged, needs_new_name, stored_logical_path
from memlens.core.store import db as dbm
from memlens.watch.watcher import Watcher
from tests.conftest import MemoryTree, run_cli

GH = "ghp_" + "Zq7Xk2Lm9Pw4Rt6Yv8Bn3Cd5Fg1Hj0KsQeWa"
GH2 = "ghp_" + "Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0KkLlMm"
SLACK = "xoxb-" + "2048163093-4096326187-Qw3Er4Ty5Ui6Op7As8Df9Gh"
AWS = "AKIA" + "QX7WZ3M5N2P4R6T8"
SECRETS = [GH, GH2, SLACK, AWS]
ENV = {"MEMLENS_EMBEDDER": "hashing"}
PACKED = [(t, c) for t, c in dbm.PACKED_COLUMNS]  # every compressed column


def _needles() -> list[bytes]:
    out = []
    for s in SECRETS:
        body = s.split("_", 1)[-1] if s.startswith("ghp_") else s
        for t in {s, body, body.lower()}:
            out += [t.encode(enc) for enc in ("utf-8", "utf-16-le", "utf-16-be")]
    return out


def leaks(db: Path) -> list[str]:
    """Files of the database (and decompressed columns) that hold any secret."""
    found = []
    for suffix in ("", "-wal", "-shm", "-journal"):
        f = Path(f"{db}{suffix}")
        if f.exists():
            data = f.read_bytes()
            if any(n in data for n in _needles()):
                found.append(f.name)
    conn = dbm.connect(db, readonly=True, migrate=False)
    try:
        for table, col in PACKED:
            for (z,) in conn.execute(f"SELECT {col}_z FROM {table}"):
                text = dbm.unpack_text(z) or ""
                if any(n.decode("utf-8") in text for n in _needles()[::3]):
                    found.append(f"{table}.{col}")
                    break
    finally:
        conn.close()
    return found


def printed(out: Any) -> bool:
    text = out.stdout + out.stderr
    return any(n.decode("utf-8") in text for n in _needles()[::3])


def test_stored_name_is_redacted_tagged_stable_and_unique() -> None:
    key, other = b"k" * 32, b"o" * 32
    a = stored_logical_path(f"{GH}.md", key)
    assert re.fullmatch(r"\[REDACTED:github-token\]~[0-9a-f]{10}\.md", a), a
    assert a == stored_logical_path(f"{GH}.md", key)  # stable
    assert a != stored_logical_path(f"{GH2}.md", key)  # two names that redact alike
    assert a != stored_logical_path(f"{GH}.md", other)  # keyed
    assert stored_logical_path("notes/plain-name.md", key) == "notes/plain-name.md"
    nested = stored_logical_path(f"{SLACK}/notes.md", key)
    assert nested.startswith("[REDACTED:") and nested.endswith(".md") and SLACK not in nested
    assert is_tagged(a) and is_tagged(nested) and not is_tagged("notes/plain-name.md")
    # the stored form is a fixed point: it is never renamed again
    assert needs_new_name(a, key) is None and needs_new_name(nested, key) is None
    assert needs_new_name(f"{GH}.md", key) == a


def _docs(db: Path) -> dict[str, dict[str, Any]]:
    out = run_cli("docs", "--json", "--db", str(db), env=ENV)
    assert out.returncode == 0, out.stderr
    assert not printed(out)
    return {d["path"]: d for d in json.loads(out.stdout)["documents"]}


def test_secret_names_through_the_cli_leave_no_byte(tree: MemoryTree, tmp_path: Path) -> None:
    """Create, re-scan, edit, rename (secret to secret) and delete files named by
    secrets, in a folder named by one too; every command's output and every byte of
    the database stay clean, and the documents keep their identity."""
    db = tmp_path / "names.db"
    mem = tree.memdir()
    tree.write("MEMORY.md", "# Memory\n\n- registry notes and keys\n")
    tree.write(f"{GH}.md", "# Registry\n\nthe registry notes live here quuxregistry\n")
    tree.write(f"{GH2}.md", "# Second\n\nanother file, same kind of name quuxsecond\n")
    tree.write(f"{SLACK}/notes.md", "# Slack\n\nbot notes in a folder quuxfolder\n")
    tree.write(f"{AWS}.md", "# Cloud\n\ncloud account notes quuxcloud\n")

    def ingest() -> dict[str, Any]:
        out = run_cli("ingest", str(mem), "--db", str(db), "--json", env=ENV)
        assert out.returncode == 0, out.stderr
        assert not printed(out), out.stdout
        counts = json.loads(out.stdout)
        assert counts["failed"] == []
        return {k: counts[k] for k in ("created", "updated", "renamed", "deleted", "unchanged")}

    assert ingest() == {"created": 5, "updated": 0, "renamed": 0, "deleted": 0, "unchanged": 0}
    docs = _docs(db)
    assert len(docs) == 5
    tagged = sorted(p for p in docs if is_tagged(p))
    assert len(tagged) == 4 and len(set(tagged)) == 4
    ids = {p: d["id"] for p, d in docs.items()}
    assert ingest()["unchanged"] == 5  # found again under the stored names
    assert {p: d["id"] for p, d in _docs(db).items()} == ids  # and no duplicates

    hit_paths = {}
    for q in ("quuxregistry", "quuxsecond", "quuxfolder", "quuxcloud"):
        out = run_cli("search", q, "--mode", "lexical", "--json", "--db", str(db), env=ENV)
        assert out.returncode == 0 and not printed(out)
        hits = json.loads(out.stdout)["hits"]
        assert len(hits) == 1 and hits[0]["path"] in docs
        hit_paths[q] = hits[0]["path"]
    assert len(set(hit_paths.values())) == 4  # the two github-named files stay apart

    # an edit updates the same document, and its history prints clean
    (mem / f"{GH}.md").write_text("# Registry\n\nedited notes quuxedited\n", encoding="utf-8")
    assert ingest()["updated"] == 1
    gh_path = hit_paths["quuxregistry"]
    assert _docs(db)[gh_path]["id"] == ids[gh_path]
    out = run_cli("history", gh_path, "--json", "--db", str(db), env=ENV)
    assert out.returncode == 0 and not printed(out), out.stderr
    assert [r["change_kind"] for r in json.loads(out.stdout)["revisions"]] == ["update", "create"]

    # a rename from one secret name to another (same content) keeps the document
    aws_path = hit_paths["quuxcloud"]
    (mem / f"{AWS}.md").rename(mem / f"{GH2[:-4]}WXYZ.md")
    counts = ingest()
    assert counts["renamed"] == 1 and counts["created"] == counts["deleted"] == 0, counts
    now = _docs(db)
    assert aws_path not in now
    moved = [p for p, d in now.items() if d["id"] == ids[aws_path]]
    assert len(moved) == 1 and moved[0].startswith("[REDACTED:github-token]~")

    # a delete tombstones it
    (mem / f"{GH}.md").unlink()
    assert ingest()["deleted"] == 1
    assert gh_path not in _docs(db)
    out = run_cli("search", "quuxedited", "--mode", "lexical", "--json", "--db", str(db),
                  env=ENV)
    assert out.returncode == 0 and json.loads(out.stdout)["hits"] == []

    for cmd in (["doctor", "--json"], ["docs", "--all", "--json"], ["project", "--json"]):
        out = run_cli(*cmd, "--db", str(db), env=ENV)
        assert out.returncode == 0 and not printed(out), (cmd, out.stdout, out.stderr)
    assert leaks(db) == []


def _legacy(tree: MemoryTree, make_service: Callable[..., Any], db: Path,
            monkeypatch: pytest.MonkeyPatch) -> int:
    """A database written before names were redacted: raw secret names in the
    document, its revisions (create, update, a rename from another secret name) and
    their diffs and summaries. Returns the document id."""
    with monkeypatch.context() as m:
        m.setattr("memlens.core.ingest.pipeline.stored_logical_path", lambda rel, key: rel)
        svc = make_service(db)
        roots = svc.resolve_roots([tree.memdir()])
        tree.write("MEMORY.md", "# Memory\n\n- the registry\n")
        tree.write(f"{GH2}.md", "# Registry\n\nfirst version quuxlegacy\n")
        svc.ingest(roots)
        tree.rename(f"{GH2}.md", f"{GH}.md")
        svc.ingest(roots)
        tree.write(f"{GH}.md", "# Registry\n\nsecond version quuxlegacy\n")
        svc.ingest(roots)
        old = time.time_ns() - 10 * 10**9  # out of the racy window: the stat fast path holds
        for f in tree.memdir().iterdir():
            os.utime(f, ns=(old, old))
        svc.ingest(roots)  # stores the settled mtimes
        conn = svc.conn()
        doc_id = int(dbm.scalar(conn, "SELECT id FROM memory_documents WHERE logical_path=?",
                                (f"{GH}.md",)))
        kinds = [r[0] for r in conn.execute(
            "SELECT change_kind FROM memory_revisions WHERE document_id=? ORDER BY seq",
            (doc_id,))]
        assert kinds == ["create", "rename", "update"]
        svc.close()
    assert leaks(db), "the legacy database should hold the raw names"
    return doc_id


def test_old_raw_names_are_renamed_in_place_by_ingest_and_gone_after_purge(
        tree: MemoryTree, make_service: Callable[..., Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A file stored under its raw name is renamed in place when it is read again
    (names are checked when a file is read, as its content is)."""
    db = tmp_path / "legacy.db"
    doc_id = _legacy(tree, make_service, db, monkeypatch)
    svc = make_service(db)
    tree.write(f"{GH}.md", "# Registry\n\nthird version quuxlegacy\n")
    out = svc.ingest(svc.resolve_roots([tree.memdir()]))
    kinds = sorted((c.kind, c.document_id) for c in out.report.changes)
    assert ("update", doc_id) in kinds and {k for k, _ in kinds} == {"update", "unchanged"}
    conn = svc.conn()
    rows = conn.execute("SELECT id, logical_path FROM memory_documents"
                        " WHERE tombstoned_at IS NULL").fetchall()
    assert len(rows) == 2  # MEMORY.md and the renamed document: no duplicate
    path = dict((r[0], r[1]) for r in rows)[doc_id]
    assert path == stored_logical_path(f"{GH}.md", b"k" * 32)
    revs = conn.execute("SELECT change_kind, logical_path, previous_path, diff, summary"
                        " FROM memory_revisions WHERE document_id=? ORDER BY seq",
                        (doc_id,)).fetchall()
    assert [r[0] for r in revs] == ["create", "rename", "update", "update"]  # history kept
    assert not any(s in str(v) for r in revs for v in r for s in SECRETS)
    assert [h.path for h in svc.search("quuxlegacy", mode="lexical").hits] == [path]
    svc.purge()
    svc.close()
    assert leaks(db) == []


def test_purge_alone_renames_old_raw_names(
        tree: MemoryTree, make_service: Callable[..., Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An unchanged file keeps the name it was stored under until `memlens purge`
    applies the current rules to what is stored."""
    db = tmp_path / "legacy.db"
    doc_id = _legacy(tree, make_service, db, monkeypatch)
    svc = make_service(db)
    roots = svc.resolve_roots([tree.memdir()])
    out = svc.ingest(roots)
    assert {c.kind for c in out.report.changes} == {"unchanged"}
    assert f"{GH}.md" in [d.path for d in svc.list_documents()]
    outcome = svc.purge()
    assert doc_id in [d.id for d in svc.list_documents()]
    assert outcome.changed >= 1
    path = next(d.path for d in svc.list_documents() if d.id == doc_id)
    assert is_tagged(path)
    assert [h.path for h in svc.search("quuxlegacy", mode="lexical").hits] == [path]
    # and the next ingest finds the file under that name
    out = svc.ingest(svc.resolve_roots([tree.memdir()]))
    assert {c.kind for c in out.report.changes} == {"unchanged"}, out.report.changes
    svc.close()
    assert leaks(db) == []


def test_watcher_sees_secret_named_files_come_and_go(
        tree: MemoryTree, make_service: Callable[..., Any], tmp_path: Path) -> None:
    db = tmp_path / "watch.db"
    svc = make_service(db)
    tree.write("MEMORY.md", "# Memory\n\n- notes\n")
    mem = tree.memdir()
    roots = svc.resolve_roots([mem])
    svc.ingest(roots)
    watcher = Watcher(svc, roots, debounce_ms=50)
    stop = threading.Event()
    th = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    th.start()

    def wait(pred: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + 30
        while not pred():
            assert time.monotonic() < deadline, what
            time.sleep(0.05)

    def hits(q: str) -> list[str]:
        return [h.path for h in svc.search(q, mode="lexical").hits]

    try:
        wait(lambda: watcher.state == "watching", "watcher start")
        (mem / f"{GH}.md").write_text("# Key\n\nwatched notes quuxwatched\n", encoding="utf-8")
        (mem / SLACK).mkdir()
        (mem / SLACK / "inner.md").write_text("# Inner\n\nquuxinner\n", encoding="utf-8")
        wait(lambda: len(hits("quuxwatched")) == 1 and len(hits("quuxinner")) == 1,
             "created files searchable")
        assert all(is_tagged(p) for p in hits("quuxwatched") + hits("quuxinner"))
        (mem / f"{GH}.md").unlink()
        wait(lambda: not hits("quuxwatched"), "deleted file leaves search")
        for f in (mem / SLACK).iterdir():
            f.unlink()
        (mem / SLACK).rmdir()
        wait(lambda: not hits("quuxinner"), "deleted folder leaves search")
    finally:
        stop.set()
        th.join(timeout=15)
    live = [d.path for d in svc.list_documents()]
    assert live == ["MEMORY.md"], live
    svc.close()
    assert leaks(db) == []


def test_hit_source_finds_the_file_of_a_secret_name(
        tree: MemoryTree, make_service: Callable[..., Any], tmp_path: Path) -> None:
    """The search screen's "open the file" still reaches a file named by a secret."""
    svc = make_service(tmp_path / "hit.db")
    f = tree.write(f"{GH}.md", "# Key\n\nopen me quuxopen\n")
    svc.ingest(svc.resolve_roots([tree.memdir()]))
    hit = svc.search("quuxopen", mode="lexical").hits[0]
    src = svc.hit_source(hit.document_id, hit.chunk_id)
    assert src is not None and is_tagged(src.path) and src.file == f
    svc.close()


@pytest.mark.parametrize("rel", [f"{GH}.md", f"a/{SLACK}/b.md", "a\\b/c.md", "a//b.md",
                                 f"x/{AWS}", "/abs/plain.md", "", f"{GH}\\{AWS}.md"])
def test_cached_redaction_equals_redact_path(rel: str) -> None:
    from memlens.core.ingest import names
    from memlens.core.redact.engine import redact_path

    assert names._redacted(rel) == redact_path(rel)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "notes", GH, SLACK, AWS, "x.md", ".md", "\\", "-", "_",
                                 "password=", "hunter2", "0123456789abcdefABCDEF"]),
                max_size=8),
       st.lists(st.sampled_from(["/", "\\", ".", ""]), min_size=8, max_size=8))
def test_cached_redaction_equals_redact_path_property(parts: list[str], seps: list[str]
                                                      ) -> None:
    from memlens.core.ingest import names
    from memlens.core.redact.engine import redact_path

    rel = "".join(p + s for p, s in zip(parts, seps, strict=False))
    assert names._redacted(rel) == redact_path(rel)
    key = b"k" * 32
    stored = stored_logical_path(rel, key)
    assert needs_new_name(stored, key) is None  # the stored form is a fixed point


def test_a_new_install_key_renames_instead_of_duplicating(
        tree: MemoryTree, tmp_path: Path, clock: Any) -> None:
    from memlens.core.config.settings import load_settings
    from memlens.core.embedders.registry import make_embedder
    from memlens.core.service import MemoryService

    db = tmp_path / "rekey.db"

    def service(key: bytes) -> MemoryService:
        settings = load_settings(tmp_path / "none.toml", env={}, overrides={"db": str(db)})
        return MemoryService(settings, clock=clock, install_key=key,
                             embedder=make_embedder("hashing", {"dim": 64}))

    tree.write(f"{GH}.md", "# Key\n\nrekeyed notes quuxrekey\n")
    a = service(b"a" * 32)
    a.ingest(a.resolve_roots([tree.memdir()]))
    first = a.list_documents()
    a.close()
    b = service(b"b" * 32)
    out = b.ingest(b.resolve_roots([tree.memdir()]))
    assert [c.kind for c in out.report.changes] == ["rename"], out.report.changes
    after = b.list_documents()
    assert [d.id for d in after] == [d.id for d in first]
    assert after[0].path != first[0].path and is_tagged(after[0].path)
    b.close()
    assert leaks(db) == []
