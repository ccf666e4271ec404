"""Issue 42: absence is confirmed before a tombstone, and a reconcile checks content even
when size and mtime match. Real files, a real database."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memlens.core import faults
from memlens.core.ingest.sources import roots_for_path

ALPHA = "# Alpha\n\nThe pool uses busy_timeout = 5000 and WAL mode.\n"
OMEGA = "# Alpha\n\nThe pool uses busy_timeout = 9000 and WAL mode.\n"  # same size


def _live(svc: Any) -> dict[str, Any]:
    return {d.path: d for d in svc.list_documents()}


def test_a_file_missing_for_a_moment_is_not_tombstoned(make_service: Any, tree: Any) -> None:
    """The scan misses ``a.md`` (deleted during an editor's save); it is back when the
    absence is looked up again: kept, no delete revision. Missing at both looks: deleted."""
    a = tree.write("a.md", ALPHA)
    svc = make_service()
    roots = roots_for_path(tree.projects)
    svc.ingest(roots)
    tree.remove("a.md")
    restored: list[str] = []

    def back(step: str) -> None:  # between the scan and the second look
        if step == "ingest.confirm_absence" and not restored:
            a.write_text(ALPHA, encoding="utf-8")
            restored.append(step)

    faults.set_hook(back)
    try:
        out = svc.ingest(roots)
    finally:
        faults.set_hook(None)
    assert restored, "the absence was looked up again before the tombstone"
    assert [c.kind for c in out.report.changes if c.kind == "delete"] == []
    assert "a.md" in _live(svc)
    kinds = [r.change_kind for r in svc.revisions(_live(svc)["a.md"].id)]
    assert kinds == ["create"]
    tree.remove("a.md")  # gone for good: tombstoned
    out = svc.ingest(roots)
    assert [c.path for c in out.report.changes if c.kind == "delete"] == ["a.md"]
    assert "a.md" not in _live(svc)


def test_reconcile_reads_a_file_whose_size_and_mtime_did_not_change(
        make_service: Any, tree: Any) -> None:
    """An edit that keeps size and mtime (``touch -r``, a restore that keeps times) is
    missed by the stat fast path; the reconcile's content check catches it."""
    a = tree.write("a.md", ALPHA)
    old = a.stat()
    when = (old.st_atime_ns, old.st_mtime_ns - 10_000_000_000)  # not "racy": trusted
    os.utime(a, ns=when)
    svc = make_service()
    roots = roots_for_path(tree.projects)
    svc.ingest(roots)
    a.write_text(OMEGA, encoding="utf-8")
    os.utime(a, ns=when)
    assert a.stat().st_size == old.st_size
    quick = svc.ingest(roots)  # a plain ingest trusts size and mtime
    assert [c.kind for c in quick.report.changes] == ["unchanged"]
    checked = svc.ingest(roots, verify_content=True)
    assert [(c.kind, c.path) for c in checked.report.changes] == [("update", "a.md")]
    assert [h.path for h in svc.search("9000", mode="lexical").hits] == ["a.md"]
    again = svc.ingest(roots, verify_content=True)  # nothing changed since: unchanged
    assert [c.kind for c in again.report.changes] == ["unchanged"]


def test_the_watchers_periodic_reconcile_checks_content(
        make_service: Any, tree: Any, tmp_path: Path) -> None:
    """End to end: a same-size, same-mtime edit reaches search through the watcher's
    periodic reconcile (the watcher here loses every file event, so only the reconcile
    can see the edit)."""
    import threading

    from memlens.watch.events import WatchEvent
    from tests.test_watch import _DeafWatcher, wait_until

    a = tree.write("a.md", ALPHA)
    old = a.stat()
    when = (old.st_atime_ns, old.st_mtime_ns - 10_000_000_000)
    os.utime(a, ns=when)
    svc = make_service()
    events: list[WatchEvent] = []
    w = _DeafWatcher(svc, scan_paths=[tree.projects], reconcile_seconds=0.3,
                on_event=events.append)
    stop = threading.Event()
    th = threading.Thread(target=w.run, args=(stop,), daemon=True)
    th.start()
    try:
        wait_until(lambda: "a.md" in _live(svc), what="first ingest")
        a.write_text(OMEGA, encoding="utf-8")
        os.utime(a, ns=when)
        wait_until(lambda: [h.path for h in svc.search("9000", mode="lexical").hits]
                   == ["a.md"], what="the reconcile's content check")
    finally:
        stop.set()
        th.join(15)
