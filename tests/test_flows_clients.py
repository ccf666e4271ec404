"""The clients run the door's flows (issue 41): the watcher hands every ingested batch
to ``after_change``, the TUI's start-up, rechunk and retry jobs run ``start_up``,
``rechunk_and_project`` and ``retry`` with a progress callback — observed on a real
service (a subclass that notes each flow call, then runs it) over a real SQLite file."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memlens.core.config.settings import load_settings
from memlens.core.embedders.registry import make_embedder
from memlens.core.service import MemoryService
from memlens.core.types import FileChange, MemoryRoot
from memlens.tui.app import MemlensApp
from memlens.tui.messages import DocumentRowsChanged, JobFinished, Progress
from memlens.tui.screens.rechunk import RechunkRequest
from memlens.watch.events import WatchEvent
from memlens.watch.watcher import Watcher
from tests.conftest import Clock, MemoryTree
from tests.test_tui import SIZE, async_test, copy_corpus, settle
from tests.test_watch import wait_until


class FlowLog(MemoryService):
    """A real service that notes which door flow ran, and with what."""

    log: list[tuple[Any, ...]]

    def start_up(self, roots: Sequence[MemoryRoot], **kw: Any) -> Any:
        self.log.append(("start_up", kw.get("progress") is not None))
        return super().start_up(roots, **kw)

    def after_change(self, changes: Sequence[FileChange], **kw: Any) -> Any:
        kinds = tuple(sorted(c.kind for c in changes if c.kind != "unchanged"))
        self.log.append(("after_change", kinds, bool(kw.get("reconcile"))))
        return super().after_change(changes, **kw)

    def rechunk_and_project(self, doc_ids: Sequence[int] | None, config: Any, **kw: Any) -> Any:
        self.log.append(("rechunk_and_project", kw.get("progress") is not None))
        return super().rechunk_and_project(doc_ids, config, **kw)

    def retry(self, doc_id: int, **kw: Any) -> Any:
        self.log.append(("retry", kw.get("progress") is not None))
        return super().retry(doc_id, **kw)


def _flow_log(tmp_path: Path, clock: Clock) -> FlowLog:
    settings = load_settings(tmp_path / "none.toml", env={},
                             overrides={"db": str(tmp_path / "memlens.db")})
    svc = FlowLog(settings, clock=clock, embedder=make_embedder("hashing", {"dim": 64}),
                  install_key=b"k" * 32)
    svc.log = []
    return svc


def test_the_watcher_hands_its_batches_to_after_change(tmp_path: Path, clock: Clock,
                                                       tree: MemoryTree) -> None:
    tree.write("a.md", "# Alpha\n\nfirst note\n")
    svc = _flow_log(tmp_path, clock)
    events: list[WatchEvent] = []
    watcher = Watcher(svc, scan_paths=[tree.projects], debounce_ms=20, reconcile_seconds=0,
                      on_event=events.append)
    stop = threading.Event()
    th = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    th.start()
    try:
        wait_until(lambda: any(e.kind == "projection" and e.path == "a.md" for e in events),
                   what="the start reconcile's projection")
        tree.write("b.md", "# Beta\n\nsecond note\n")
        wait_until(lambda: any(e.kind == "projection" and e.path == "b.md" for e in events),
                   what="the batch's projection")
    finally:
        stop.set()
        th.join(timeout=15)
        svc.close()
    # the reconcile at start, then the batch of the new file, each through after_change
    assert svc.log[:2] == [("after_change", ("create",), True),
                           ("after_change", ("create",), False)]
    b = next(e for e in events if e.kind == "change" and e.path == "b.md")
    assert b.change_kind == "create" and b.result == "ready"  # after_change's report


@async_test
async def test_the_tui_jobs_run_the_door_flows(tmp_path: Path, clock: Clock) -> None:
    projects = copy_corpus(tmp_path / "projects")
    svc = _flow_log(tmp_path, clock)
    roots = svc.resolve_roots([projects])
    app = MemlensApp(svc, clock=clock, roots=roots, watch=False)
    seen: list[Any] = []
    post = app.post_message

    def spy(message: Any) -> bool:
        if isinstance(message, (Progress, JobFinished, DocumentRowsChanged)):
            seen.append(message)
        return post(message)

    app.post_message = spy  # type: ignore[method-assign]
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert svc.log == [("start_up", True)]
            assert app.stats is not None and app.stats.queue["ready"] == 35 and app.status_bar.job == ""
            jobs = [m.job for m in seen if isinstance(m, JobFinished)]
            assert jobs[:2] == ["ingest", "startup"]
            startup = next(m for m in seen if isinstance(m, JobFinished) and m.job == "startup")
            assert startup.summary == "projected 35 ready, 0 failed"
            assert any(isinstance(m, Progress) and m.phase == "projecting" and m.done == 35
                       for m in seen)
            doc = app.current_doc_id
            assert doc is not None
            cfg = svc.chunker_config_with({"strategy": "whole"})
            seen.clear()
            app.run_rechunk(RechunkRequest(cfg, all_documents=False, doc_id=doc))
            await settle(pilot)
            app.run_retry(doc)
            await settle(pilot)
            done = next(m for m in seen if isinstance(m, JobFinished) and m.job == "rechunk")
            assert done.summary.startswith("rechunked 1: 1 ready, 0 failed")
            assert [m.processing for m in seen if isinstance(m, DocumentRowsChanged)
                    and [d.id for d in m.docs] == [doc]][:3] == [False, True, False]
    finally:
        svc.close()
    assert svc.log == [("start_up", True), ("rechunk_and_project", True), ("retry", True)]
