"""Live re-ingest with the REAL watcher (watchfiles/inotify) on real temp folders.

Every scenario ends by comparing the watched database with a fresh full scan of
the same files (``canonical``): live documents with their content hash, chunk
hashes and "active projection == current revision", plus the tombstoned set.
Waits poll with a timeout; nothing relies on fixed sleeps for correctness.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memlens.core.ingest.sources import MemoryRoot
from memlens.core.service import MemoryService
from memlens.core.store import db as dbm
from memlens.watch.watcher import Watcher, WatchEvent
from tests.conftest import REPO, MemoryTree, run_cli, scaled

SLUG = "-home-dev-proj"
TIMEOUT = 10.0

Live = dict[tuple[str, str], dict[str, Any]]


def wait_until(pred: Callable[[], object], timeout: float = TIMEOUT, what: str = "condition"
               ) -> None:
    """Poll ``pred`` until true; fail with ``what`` after ``timeout`` seconds, scaled by
    the machine's load (:func:`tests.conftest.scaled`: the bound only ends a stuck run)."""
    timeout = scaled(timeout)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.02)
    assert pred(), f"timed out after {timeout}s waiting for {what}"


def canonical(svc: MemoryService, repositories: set[str] | None = None
              ) -> tuple[Live, set[tuple[str, str]]]:
    """(live documents, tombstoned (repository, path) set) of a database."""
    conn = svc.conn()
    live: Live = {}
    tomb: set[tuple[str, str]] = set()
    for d in dbm.rows(conn, "SELECT * FROM memory_documents ORDER BY repository, logical_path"):
        key = (d["repository"], d["logical_path"])
        if repositories is not None and d["repository"] not in repositories:
            continue
        if d["tombstoned_at"] is not None:
            tomb.add(key)
            continue
        chunks = tuple(r[0] for r in conn.execute(
            "SELECT chunk_hash FROM memory_chunks WHERE revision_id=? ORDER BY ordinal",
            (d["current_revision_id"],)))
        nodes = int(dbm.scalar(conn, "SELECT COUNT(*) FROM knowledge_nodes WHERE document_id=?"
                               " AND revision_id=?", (d["id"], d["current_revision_id"])) or 0)
        live[key] = {
            "content_hash": d["content_hash"],
            "projected": d["active_revision_id"] == d["current_revision_id"]
            and d["projection_status"] == "ready",
            "chunks": chunks,
            "nodes": nodes,
        }
    return live, tomb


@dataclass
class Running:
    """A watcher running in a thread, with the events it emitted."""

    watcher: Watcher
    service: MemoryService
    events: list[WatchEvent] = field(default_factory=list)

    def changes(self, kind: str | None = None) -> list[WatchEvent]:
        return [e for e in list(self.events) if e.kind == "change"
                and (kind is None or e.change_kind == kind)]

    def errors(self) -> list[WatchEvent]:
        return [e for e in list(self.events) if e.kind == "error"]

    def history(self, path: str, repository: str = SLUG) -> list[str]:
        doc = self.service.locate(repository, path)
        assert doc is not None, f"no document {repository}/{path}"
        return [r.change_kind for r in reversed(self.service.revisions(doc.id))]

    def idle(self, quiet: float = 0.3) -> None:
        """Wait until the queue is empty and no event arrived for ``quiet`` seconds."""
        def calm() -> bool:
            last = self.watcher.last_event
            return (self.watcher.queue_size == 0
                    and (last is None or time.time() - last.time >= quiet))
        wait_until(calm, what="watcher to go idle")


@pytest.fixture
def watch(make_service: Callable[..., MemoryService], tree: MemoryTree
          ) -> Iterator[Callable[..., Running]]:
    """Start a real watcher over ``tree.projects`` (periodic reconcile off by default)."""
    stops: list[tuple[threading.Event, threading.Thread]] = []

    def start(*, roots: list[MemoryRoot] | None = None, scan: list[Path] | None = None,
              db: Path | None = None, **kw: Any) -> Running:
        svc = make_service(db) if db else make_service()
        kw.setdefault("reconcile_seconds", 0)
        if roots is None and scan is None:
            scan = [tree.projects]
        events: list[WatchEvent] = []
        kw.setdefault("on_event", events.append)
        run = Running(watcher=Watcher(svc, roots, scan_paths=scan, **kw), service=svc,
                      events=events)
        stop = threading.Event()
        th = threading.Thread(target=run.watcher.run, args=(stop,), daemon=True)
        th.start()
        stops.append((stop, th))
        wait_until(lambda: run.watcher.state in ("watching", "error"), what="watcher start")
        return run

    yield start
    for stop, th in stops:
        stop.set()
        th.join(timeout=15)
        assert not th.is_alive(), "watcher did not stop"


@pytest.fixture
def fresh(make_service: Callable[..., MemoryService], tmp_path: Path
          ) -> Callable[..., tuple[Live, set[tuple[str, str]]]]:
    """Canonical dump of a brand-new database ingested from the same folder."""
    n = [0]

    def scan(folder: Path, repositories: set[str] | None = None
             ) -> tuple[Live, set[tuple[str, str]]]:
        n[0] += 1
        svc = make_service(tmp_path / f"fresh-{n[0]}.db")
        svc.ingest(svc.resolve_roots([folder]))
        return canonical(svc, repositories)

    return scan


def assert_like_fresh(run: Running, fresh: Callable[..., tuple[Live, set[tuple[str, str]]]],
                      folder: Path, *, tombstoned: set[str] | frozenset[str] = frozenset(),
                      repositories: set[str] | None = None) -> Live:
    """The watched DB converges to a fresh full scan; ``tombstoned`` paths (of SLUG) are
    exactly the tombstones."""
    want, fresh_tomb = fresh(folder, repositories)
    assert not fresh_tomb
    assert all(v["projected"] for v in want.values())
    wait_until(lambda: canonical(run.service, repositories)[0] == want,
               what="watched database == fresh full scan")
    run.idle()
    live, tomb = canonical(run.service, repositories)
    assert live == want
    assert tomb == {(SLUG, p) for p in tombstoned}
    # and a full rescan of the watched database has nothing left to do
    out = run.service.ingest(run.service.resolve_roots([folder]), project=False)
    if repositories is None:
        assert {c.kind for c in out.report.changes} <= {"unchanged"}, out.report.changes
    return live


def seed(tree: MemoryTree, n: int = 3, slug: str = SLUG) -> None:
    tree.write("MEMORY.md", "# Memory\n\n" + "".join(f"- [t{i}](t{i}.md)\n" for i in range(n)),
               slug=slug)
    for i in range(n):
        tree.write(f"t{i}.md", f"# Topic {i}\n\nbody of topic {i} zq{i}initial\n", slug=slug)


def lexical_hits(svc: MemoryService, token: str) -> list[str]:
    return [h.path for h in svc.search(token, mode="lexical").hits]


# ---------------------------------------------------------------------------
# basic lifecycle


def test_edit_create_delete(tree: MemoryTree, watch: Callable[..., Running],
                            fresh: Callable[..., Any]) -> None:
    seed(tree)
    run = watch()
    assert_like_fresh(run, fresh, tree.projects)
    assert run.watcher.state == "watching"

    mem = tree.memdir()
    (mem / "t1.md").write_text("# Topic 1\n\nedited in place qqeditedtoken\n", encoding="utf-8")
    wait_until(lambda: lexical_hits(run.service, "qqeditedtoken") == ["t1.md"],
               what="edit searchable")
    assert_like_fresh(run, fresh, tree.projects)
    assert run.history("t1.md") == ["create", "update"]

    (mem / "new.md").write_text("brand new zzcreatedtoken\n", encoding="utf-8")
    wait_until(lambda: lexical_hits(run.service, "zzcreatedtoken") == ["new.md"],
               what="create searchable")

    (mem / "t2.md").unlink()
    wait_until(lambda: not lexical_hits(run.service, "zq2initial"), what="delete leaves search")
    assert_like_fresh(run, fresh, tree.projects, tombstoned={"t2.md"})
    kinds = {(e.change_kind, e.path) for e in run.changes()}
    assert {("update", "t1.md"), ("create", "new.md"), ("delete", "t2.md")} <= kinds
    proj = [e for e in run.events if e.kind == "projection" and e.path == "new.md"]
    assert proj and proj[-1].result == "ready"
    assert not run.errors()


def test_rename_is_recognised(tree: MemoryTree, watch: Callable[..., Running],
                              fresh: Callable[..., Any]) -> None:
    seed(tree)
    run = watch()
    mem = tree.memdir()
    (mem / "sub").mkdir()
    os.rename(mem / "t0.md", mem / "sub" / "moved.md")
    assert_like_fresh(run, fresh, tree.projects)
    assert run.history("sub/moved.md") == ["create", "rename"]
    ren = run.changes("rename")
    assert ren and ren[-1].path == "sub/moved.md" and "t0.md" in ren[-1].message
    assert not run.changes("delete")
    # a whole folder renamed: every file inside is a rename
    (mem / "sub" / "second.md").write_text("second file in sub qqsecond\n")
    wait_until(lambda: lexical_hits(run.service, "qqsecond") == ["sub/second.md"], what="second")
    os.rename(mem / "sub", mem / "archive")
    assert_like_fresh(run, fresh, tree.projects)
    assert run.history("archive/moved.md") == ["create", "rename", "rename"]
    assert run.history("archive/second.md") == ["create", "rename"]
    assert not run.changes("delete")


def test_deleted_then_recreated_is_revived(tree: MemoryTree, watch: Callable[..., Running],
                                           fresh: Callable[..., Any]) -> None:
    seed(tree)
    run = watch()
    mem = tree.memdir()
    doc_id = run.service.locate(SLUG, "t1.md").id  # type: ignore[union-attr]
    (mem / "t1.md").unlink()
    assert_like_fresh(run, fresh, tree.projects, tombstoned={"t1.md"})
    (mem / "t1.md").write_text("# Back\n\nrevived qqrevivedtoken\n", encoding="utf-8")
    assert_like_fresh(run, fresh, tree.projects)
    doc = run.service.locate(SLUG, "t1.md")
    assert doc is not None and doc.id == doc_id and not doc.tombstoned
    assert run.history("t1.md") == ["create", "delete", "create"]
    assert lexical_hits(run.service, "qqrevivedtoken") == ["t1.md"]


# ---------------------------------------------------------------------------
# editor save patterns


def test_temp_file_then_rename_over_is_an_update(tree: MemoryTree, watch: Callable[..., Running],
                                                 fresh: Callable[..., Any]) -> None:
    """VS Code / atomic-write libraries: write a temp file, rename it over the original."""
    seed(tree)
    run = watch()
    mem = tree.memdir()
    for i, tmpname in enumerate([".t0.md.tmp-4711", "t0.md.tmp", "t0.md.1234~"]):
        tmp = mem / tmpname
        tmp.write_text(f"# Topic 0\n\natomic save {i} qqatomic{i}\n", encoding="utf-8")
        os.replace(tmp, mem / "t0.md")
        wait_until(lambda i=i: lexical_hits(run.service, f"qqatomic{i}") == ["t0.md"],
                   what=f"atomic save {i}")
    assert_like_fresh(run, fresh, tree.projects)
    assert run.history("t0.md") == ["create", "update", "update", "update"]
    assert not run.changes("delete") and not run.changes("failed")


def test_vim_style_save_keeps_history(tree: MemoryTree, watch: Callable[..., Running],
                                      fresh: Callable[..., Any]) -> None:
    """vim backupcopy=no: probe file 4913, rename original to x~, write new x, drop x~."""
    seed(tree)
    run = watch()
    mem = tree.memdir()
    target = mem / "t1.md"
    for i in range(3):
        swp = mem / ".t1.md.swp"
        swp.write_bytes(b"b0VIM 9.0\x00" * 50)
        probe = mem / "4913"
        probe.write_text("")
        probe.unlink()
        os.rename(target, mem / "t1.md~")
        target.write_text(f"# Topic 1\n\nvim save {i} qqvim{i}\n", encoding="utf-8")
        (mem / "t1.md~").unlink()
        swp.unlink()
        wait_until(lambda i=i: lexical_hits(run.service, f"qqvim{i}") == ["t1.md"],
                   what=f"vim save {i}")
    assert_like_fresh(run, fresh, tree.projects)
    assert run.history("t1.md") == ["create", "update", "update", "update"]
    assert not run.changes("delete")


def test_editor_side_files_are_ignored(tree: MemoryTree, watch: Callable[..., Running],
                                       fresh: Callable[..., Any]) -> None:
    """Emacs backups/autosaves/lock symlinks and vim swap files never become documents."""
    seed(tree)
    run = watch()
    mem = tree.memdir()
    (mem / "t0.md~").write_text("emacs backup qqside\n")
    (mem / "#t0.md#").write_text("emacs autosave qqside\n")
    os.symlink("dev@host.1234:1700000000", mem / ".#t0.md")  # emacs lock (dangling symlink)
    (mem / ".t0.md.swp").write_bytes(b"b0VIM qqside")
    (mem / ".t0.md.swx").write_bytes(b"b0VIM qqside")
    (mem / "4913").write_text("")
    (mem / ".hidden.md").write_text("hidden qqside\n")
    (mem / "notes.txt").write_text("not markdown qqside\n")
    # a real change afterwards proves the watcher has seen everything before it
    (mem / "real.md").write_text("real qqrealtoken\n")
    wait_until(lambda: lexical_hits(run.service, "qqrealtoken") == ["real.md"], what="real.md")
    run.idle()
    assert [e.path for e in run.changes() if e.path != "MEMORY.md" and
            not (e.path or "").startswith("t")] == ["real.md"]
    assert not lexical_hits(run.service, "qqside")
    assert_like_fresh(run, fresh, tree.projects)


def test_git_checkout_of_many_files(tree: MemoryTree, watch: Callable[..., Running],
                                    fresh: Callable[..., Any]) -> None:
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    mem = tree.memdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}

    def git(*a: str) -> None:
        subprocess.run(["git", "-c", "init.defaultBranch=main", *a], cwd=mem, check=True,
                       env=env, capture_output=True)

    git("init", "-q")
    for i in range(30):
        (mem / f"f{i:02}.md").write_text(f"# F{i}\n\nversion A of {i}\n")
    git("add", "-A")
    git("commit", "-qm", "A")
    git("checkout", "-qb", "other")
    for i in range(0, 30, 2):
        (mem / f"f{i:02}.md").write_text(f"# F{i}\n\nversion B of {i} qqbranchb\n")
    for i in (1, 3, 5):
        (mem / f"f{i:02}.md").unlink()
    (mem / "deep").mkdir()
    for i in range(5):
        (mem / "deep" / f"n{i}.md").write_text(f"new on B {i}\n")
    git("add", "-A")
    git("commit", "-qm", "B")
    git("checkout", "-q", "main")
    run = watch()
    assert_like_fresh(run, fresh, tree.projects)
    git("checkout", "-q", "other")
    assert_like_fresh(run, fresh, tree.projects,
                      tombstoned={"f01.md", "f03.md", "f05.md"})
    git("checkout", "-q", "main")
    assert_like_fresh(run, fresh, tree.projects,
                      tombstoned={f"deep/n{i}.md" for i in range(5)})
    assert not run.changes("failed")
    assert run.history("f01.md") == ["create", "delete", "create"]


# ---------------------------------------------------------------------------
# half-written files, storms


def test_half_written_file_waits_until_stable(tree: MemoryTree, watch: Callable[..., Running],
                                              fresh: Callable[..., Any]) -> None:
    seed(tree)
    run = watch(stable_ms=400)
    p = tree.memdir() / "slow.md"
    with open(p, "w", encoding="utf-8") as f:
        f.write("# Slow\n\nfirst half qqhalfone\n")
        f.flush()
        time.sleep(0.2)  # an editor still writing (shorter than stable_ms)
        f.write("second half qqhalftwo\n")
    wait_until(lambda: lexical_hits(run.service, "qqhalftwo") == ["slow.md"], what="full file")
    assert_like_fresh(run, fresh, tree.projects)
    assert run.history("slow.md") == ["create"], "a half-written revision was ingested"


def test_burst_of_500_writes_coalesces(tree: MemoryTree, watch: Callable[..., Running],
                                       fresh: Callable[..., Any]) -> None:
    mem = tree.memdir()
    (mem / "MEMORY.md").write_text("# Memory\n")
    run = watch()
    for rnd in range(10):
        for i in range(50):
            (mem / f"b{i:02}.md").write_text(f"# B{i}\n\nround {rnd} of file {i}\n")
    assert_like_fresh(run, fresh, tree.projects)
    for i in range(50):
        assert run.service.locate(SLUG, f"b{i:02}.md").content.endswith(  # type: ignore[union-attr]
            f"round 9 of file {i}\n")
    assert run.watcher.batches <= 15, f"{run.watcher.batches} batches for one burst"
    assert not run.changes("failed")


# ---------------------------------------------------------------------------
# folders appearing and vanishing


def test_project_folder_created_and_removed(tree: MemoryTree, watch: Callable[..., Running],
                                            fresh: Callable[..., Any], tmp_path: Path) -> None:
    seed(tree)
    run = watch()
    other = "-home-dev-newproj"
    newmem = tree.projects / other / "memory"
    newmem.mkdir(parents=True)  # mkdir -p and write at once: no restart needed
    (newmem / "MEMORY.md").write_text("# New project\n\n- [a](a.md)\n")
    (newmem / "a.md").write_text("fresh project qqnewproj\n")
    wait_until(lambda: lexical_hits(run.service, "qqnewproj") == ["a.md"], what="new project")
    assert_like_fresh(run, fresh, tree.projects)
    # later edits in the new folder arrive as events (periodic reconcile is off)
    (newmem / "a.md").write_text("edited in new project qqnewedit\n")
    wait_until(lambda: lexical_hits(run.service, "qqnewedit") == ["a.md"], what="edit in new")
    assert_like_fresh(run, fresh, tree.projects)

    # the whole project folder goes away: an error, and its documents are kept
    before, _ = canonical(run.service, {other})
    os.rename(tree.projects / other, tmp_path / "parked")
    wait_until(lambda: any(other in (e.repository or "") for e in run.errors()),
               what="error event for the vanished folder")
    run.idle()
    after, tomb = canonical(run.service, {other})
    assert after == before and not tomb, "a vanished memory folder must not be tombstoned"
    assert_like_fresh(run, fresh, tree.projects, repositories={SLUG})
    # ... and it is picked up again when it comes back, with changes made meanwhile
    (tmp_path / "parked" / "memory" / "b.md").write_text("added while away qqaway\n")
    os.rename(tmp_path / "parked", tree.projects / other)
    wait_until(lambda: lexical_hits(run.service, "qqaway") == ["b.md"], what="folder back")
    assert_like_fresh(run, fresh, tree.projects)


def test_vanished_root_is_not_tombstoned_and_watch_recovers(
        tree: MemoryTree, watch: Callable[..., Running], fresh: Callable[..., Any],
        tmp_path: Path) -> None:
    """An explicitly watched memory folder deleted and re-created: error, then recovery."""
    seed(tree)
    mem = tree.memdir()
    root = MemoryRoot(SLUG, mem)
    run = watch(roots=[root])
    before, _ = canonical(run.service)
    shutil.move(str(mem), str(tmp_path / "away"))
    wait_until(lambda: run.errors(), what="error event")
    wait_until(lambda: run.watcher.state == "error", what="state error")
    assert "missing" in run.errors()[0].message
    run.idle()
    assert canonical(run.service) == (before, set())
    mem.mkdir()  # re-created empty, then files come back one by one
    for p in sorted((tmp_path / "away").iterdir()):
        shutil.copy2(p, mem / p.name)
    wait_until(lambda: run.watcher.state == "watching", what="watch recovered")
    (mem / "t0.md").write_text("# Topic 0\n\nafter recovery qqrecovered\n")
    wait_until(lambda: lexical_hits(run.service, "qqrecovered") == ["t0.md"],
               what="event after recovery")
    assert_like_fresh(run, fresh, tree.projects)


def test_ingest_of_missing_root_tombstones_nothing(tree: MemoryTree,
                                                   make_service: Callable[..., MemoryService],
                                                   tmp_path: Path) -> None:
    seed(tree)
    svc = make_service()
    root = MemoryRoot(SLUG, tree.memdir())
    svc.ingest([root])
    shutil.move(str(root.path), str(tmp_path / "gone"))
    for only in (None, {root.path: {"t0.md", "t1.md"}}):
        out = svc.ingest([root], only_paths=only)
        assert [c.kind for c in out.report.changes] == ["failed"]
        assert out.report.changes[0].path == "."
    live, tomb = canonical(svc)
    assert len(live) == 4 and not tomb


def test_scope_missing_at_start_is_an_error_then_watched(
        tree: MemoryTree, watch: Callable[..., Running], fresh: Callable[..., Any],
        tmp_path: Path) -> None:
    later = tmp_path / "later-projects"
    run = watch(scan=[later])
    wait_until(lambda: run.watcher.state == "error", what="error state")
    assert run.errors() and "no folder to watch" in run.errors()[0].message
    (later / SLUG / "memory").mkdir(parents=True)
    (later / SLUG / "memory" / "x.md").write_text("appeared qqappeared\n")
    wait_until(lambda: run.watcher.state == "watching", what="watching")
    wait_until(lambda: lexical_hits(run.service, "qqappeared") == ["x.md"], what="ingested")
    (later / SLUG / "memory" / "x.md").write_text("edited qqedited2\n")
    wait_until(lambda: lexical_hits(run.service, "qqedited2") == ["x.md"], what="edit event")
    assert_like_fresh(run, fresh, later)


# ---------------------------------------------------------------------------
# pause, reconcile, state


def test_pause_collects_and_resume_applies(tree: MemoryTree, watch: Callable[..., Running],
                                           fresh: Callable[..., Any]) -> None:
    seed(tree)
    run = watch()
    run.watcher.pause()
    wait_until(lambda: run.watcher.state == "paused", what="paused")
    (tree.memdir() / "p.md").write_text("while paused qqpaused\n")
    wait_until(lambda: run.watcher.queue_size > 0, what="change queued")
    time.sleep(0.3)
    assert not lexical_hits(run.service, "qqpaused")
    run.watcher.resume()
    wait_until(lambda: lexical_hits(run.service, "qqpaused") == ["p.md"], what="resume")
    assert run.watcher.state == "watching"
    states = [e.message.split()[0].rstrip(";") for e in run.events if e.kind == "state"]
    assert states[:3] == ["starting", "watching", "paused"] and states[-1] == "watching"
    assert_like_fresh(run, fresh, tree.projects)


class _BrokenWatchWatcher(Watcher):
    """While the file ``broken`` exists, the filter raises inside the real watchfiles
    iterator (it runs there), so the iterator itself raises, like a lost inotify watch."""

    broken: Path

    def _filter(self, change: Any, path: str) -> bool:
        if self.broken.exists():
            raise OSError(28, "inotify watch limit reached (simulated)")
        return super()._filter(change, path)


def test_watch_errors_are_surfaced_and_retried(tree: MemoryTree,
                                               make_service: Callable[..., MemoryService],
                                               fresh: Callable[..., Any], tmp_path: Path
                                               ) -> None:
    seed(tree)
    svc = make_service()
    events: list[WatchEvent] = []
    w = _BrokenWatchWatcher(svc, scan_paths=[tree.projects], reconcile_seconds=0,
                            on_event=events.append)
    w.broken = tmp_path / "broken"
    w.broken.write_text("")
    stop = threading.Event()
    th = threading.Thread(target=w.run, args=(stop,), daemon=True)
    th.start()
    try:
        wait_until(lambda: w.state == "watching", what="start")
        (tree.memdir() / "t0.md").write_text("# Topic 0\n\nthis event breaks the watch\n")
        wait_until(lambda: w.state == "error", what="error state")
        # The state flips before the error event reaches on_event: wait for the event.
        wait_until(lambda: any(e.kind == "error" for e in list(events)), what="error event")
        errs = [e for e in events if e.kind == "error"]
        assert errs and "file watch failed" in errs[0].message
        # while the watch is broken, the fallback reconcile still follows the files
        (tree.memdir() / "during.md").write_text("written while broken qqbroken\n")
        wait_until(lambda: [h.path for h in svc.search("qqbroken", mode="lexical").hits]
                   == ["during.md"], what="fallback reconcile", timeout=15)
        w.broken.unlink()
        (tree.memdir() / "t1.md").write_text("# Topic 1\n\nchanged\n")
        wait_until(lambda: w.state == "watching", what="recovery", timeout=15)
        # The recovery reconcile is requested when the watch comes back and reported by
        # the consumer thread a moment later: wait for it rather than race it.
        wait_until(lambda: any(e.kind == "reconcile" and "recovered" in e.message
                               for e in list(events)), what="recovered reconcile", timeout=15)
        (tree.memdir() / "after.md").write_text("after recovery qqafter\n")
        wait_until(lambda: [h.path for h in svc.search("qqafter", mode="lexical").hits]
                   == ["after.md"], what="events after recovery", timeout=5)
    finally:
        stop.set()
        th.join(10)
    states = [e.message.split()[0] for e in events if e.kind == "state"]
    assert "file" in states  # the 'error' state message: "file watch broken: ..."
    assert canonical(svc)[0] == fresh(tree.projects)[0]


class _DeafWatcher(Watcher):
    """A watcher that loses every file event (stands in for an overflowed inotify queue)."""

    def _filter(self, change: Any, path: str) -> bool:
        return False


def test_periodic_reconcile_catches_missed_events(tree: MemoryTree,
                                                  make_service: Callable[..., MemoryService],
                                                  fresh: Callable[..., Any]) -> None:
    seed(tree)
    svc = make_service()
    events: list[WatchEvent] = []
    w = _DeafWatcher(svc, scan_paths=[tree.projects], reconcile_seconds=0.5,
                     on_event=events.append)
    stop = threading.Event()
    th = threading.Thread(target=w.run, args=(stop,), daemon=True)
    th.start()
    try:
        wait_until(lambda: w.state == "watching")
        (tree.memdir() / "missed.md").write_text("no event for me qqmissed\n")
        wait_until(lambda: [h.path for h in svc.search("qqmissed", mode="lexical").hits]
                   == ["missed.md"], what="reconcile picked up the file")
        # The file is searchable after stage 1; the reconcile's event follows once its
        # vectors are in, so wait for it rather than expect it at once (busy machines).
        wait_until(lambda: any(e.kind == "reconcile" and "periodic" in e.message
                               for e in list(events)), what="the periodic reconcile's event")
        assert w.reconciles >= 2
    finally:
        stop.set()
        th.join(10)
    assert w.state == "stopped"
    assert canonical(svc)[0] == fresh(tree.projects)[0]


def test_on_event_errors_do_not_kill_the_watcher(tree: MemoryTree,
                                                 watch: Callable[..., Running]) -> None:
    seed(tree)
    seen: list[WatchEvent] = []

    def boom(ev: WatchEvent) -> None:
        seen.append(ev)
        raise RuntimeError("callback bug")

    run = watch(on_event=boom)
    (tree.memdir() / "cb.md").write_text("callback qqcallback\n")
    wait_until(lambda: lexical_hits(run.service, "qqcallback") == ["cb.md"], what="ingest")
    (tree.memdir() / "cb.md").write_text("callback again qqcallback2\n")
    wait_until(lambda: lexical_hits(run.service, "qqcallback2") == ["cb.md"], what="still alive")
    # The change event reaches on_event just after the write is searchable: wait for it.
    wait_until(lambda: sum(1 for e in list(seen) if e.kind == "change" and e.path == "cb.md")
               == 2, what="both change events")


def test_stop_returns_promptly(tree: MemoryTree, make_service: Callable[..., MemoryService]
                               ) -> None:
    seed(tree)
    svc = make_service()
    w = Watcher(svc, scan_paths=[tree.projects], reconcile_seconds=0)
    stop = threading.Event()
    th = threading.Thread(target=w.run, args=(stop,), daemon=True)
    th.start()
    wait_until(lambda: w.state == "watching")
    stop.set()
    th.join(5)
    assert not th.is_alive()  # joined within 5 s (no tighter wall-clock bound: CI is noisy)
    assert w.state == "stopped" and w.last_event is not None and w.last_event.kind == "state"


# ---------------------------------------------------------------------------
# the headless CLI


class _Lines:
    """Lines of a subprocess stream, read by a thread (select + buffered readline loses lines)."""

    def __init__(self, stream: Any) -> None:
        self._q: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self._done = threading.Event()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: Any) -> None:
        for line in iter(stream.readline, ""):
            self._q.put(line)
        self._done.set()

    def rest(self, timeout: float = 5.0) -> list[str]:
        """Everything left once the stream is closed."""
        self._done.wait(timeout)
        out = []
        while not self._q.empty():
            out.append(self._q.get())
        return out

    def next(self, timeout: float = 10.0) -> str:
        try:
            line = self._q.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line within {timeout}s; so far: {self.seen}") from None
        self.seen.append(line)
        return line


def test_memlens_watch_cli(tree: MemoryTree, tmp_path: Path) -> None:
    seed(tree)
    db = tmp_path / "cli.db"
    env = {**os.environ, "MEMLENS_EMBEDDER": "hashing", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memlens.cli.main", "watch", str(tree.projects), "--db", str(db),
         "--debounce-ms", "30", "--reconcile-seconds", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    out, err_lines = _Lines(proc.stdout), _Lines(proc.stderr)
    try:
        while "watching" not in (line := err_lines.next(30)):
            assert "Traceback" not in line, line
        first = out.next()  # the initial reconcile's creates
        assert " create  " in first and f"{SLUG}/" in first and first.rstrip().endswith("ready")
        for _ in range(3):
            out.next()
        (tree.memdir() / "cli.md").write_text("# CLI\n\nfrom the cli test qqcli\n")
        line = out.next()
        parts = line.split()
        assert parts[1:] == ["create", f"{SLUG}/cli.md", "ready"], line
        assert parts[0][:4].isdigit() and "T" in parts[0]
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(15)
        err = "".join(err_lines.seen + err_lines.rest())
        assert "stopped" in err
        assert rc == 0, err
        assert "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    doc = run_cli("doctor", "--db", str(db), env={"MEMLENS_EMBEDDER": "hashing"})
    assert doc.returncode == 0, doc.stdout + doc.stderr
    s = run_cli("search", "qqcli", "--db", str(db), "--mode", "lexical", "--json",
                env={"MEMLENS_EMBEDDER": "hashing"})
    assert '"cli.md"' in s.stdout


def test_memlens_watch_cli_json_and_usage_errors(tree: MemoryTree, tmp_path: Path) -> None:
    import json

    seed(tree, n=1)
    db = tmp_path / "cli.db"
    env = {**os.environ, "MEMLENS_EMBEDDER": "hashing", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memlens.cli.main", "watch", str(tree.memdir()), "--db", str(db),
         "--json", "--reconcile-seconds", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    out = _Lines(proc.stdout)
    try:
        seen: list[dict[str, Any]] = []
        while not any(e["event"] == "state" and e["message"].startswith("watching")
                      for e in seen):
            seen.append(json.loads(out.next(30)))
        assert {"time", "event", "repository", "path", "change", "result", "message"} <= set(
            seen[0])
        (tree.memdir() / "j.md").write_text("json qqjson\n")
        while True:
            ev = json.loads(out.next())
            if ev["event"] == "change":
                break
        assert ev["change"] == "create" and ev["path"] == "j.md" and ev["repository"] == SLUG
        assert ev["result"] == "ready"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    bad = run_cli("watch", str(tmp_path / "nope"), "--db", str(db))
    assert bad.returncode == 2 and "no such folder" in bad.stderr
    bad = run_cli("watch", str(tree.memdir()), "--db", str(db), "--debounce-ms", "0")
    assert bad.returncode == 2 and "--debounce-ms" in bad.stderr

