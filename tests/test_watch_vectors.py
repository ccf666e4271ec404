"""The watcher computes vectors on a thread of its own (issue 43).

Stage 1 of a change (searchable by words) runs in the watcher's loop; stage 2 runs on the
vector worker between batches and yields to new changes. These tests use ordering, not
time: an embedder that blocks until the test lets it go shows that a file written while
another file's vectors are being computed is searchable before that embedding returns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from memlens.core.embedders.registry import make_embedder
from memlens.core.service import MemoryService
from memlens.watch.watcher import Watcher, WatchEvent
from tests.conftest import MemoryTree
from tests.test_watch import lexical_hits, wait_until

GATE_TIMEOUT = 20.0
"""How long a test waits for something (the gate itself waits three times as long, so a
watcher stuck behind it fails the test instead of carrying on after the gate gave up)."""


class GatedEmbedder:
    """The hashing embedder whose ``embed_documents`` waits for :attr:`gate` while it is
    closed; :attr:`entered` is set when a call is waiting there."""

    def __init__(self) -> None:
        self.inner = make_embedder("hashing", {"dim": 64})
        self.name, self.model, self.dim = self.inner.name, self.inner.model, self.inner.dim
        self.metric, self.version = self.inner.metric, self.inner.version
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.calls = 0
        self.returned = 0
        self.threads: set[str] = set()

    def fingerprint(self) -> str:
        return self.inner.fingerprint()

    def embed_documents(self, texts: Sequence[str]) -> Any:
        self.calls += 1
        self.threads.add(threading.current_thread().name)
        self.entered.set()
        assert self.gate.wait(3 * GATE_TIMEOUT), "the test never opened the gate"
        out = self.inner.embed_documents(texts)
        self.returned += 1
        return out

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)

    def info(self) -> dict[str, object]:
        return self.inner.info()


@pytest.fixture
def running(make_service: Callable[..., MemoryService], tree: MemoryTree
            ) -> Iterator[tuple[Watcher, MemoryService, GatedEmbedder, list[WatchEvent]]]:
    tree.write("a.md", "# Alpha\n\nthe first note qqalpha\n")
    emb = GatedEmbedder()
    svc = make_service(embedder=emb)
    events: list[WatchEvent] = []
    w = Watcher(svc, scan_paths=[tree.projects], reconcile_seconds=0, on_event=events.append)
    stop = threading.Event()
    th = threading.Thread(target=w.run, args=(stop,), daemon=True)
    th.start()
    try:
        yield w, svc, emb, events
    finally:
        emb.gate.set()
        stop.set()
        th.join(15)
        assert not th.is_alive(), "watcher did not stop"


def test_a_save_is_searchable_while_another_is_being_embedded(
        tree: MemoryTree, running: tuple[Watcher, MemoryService, GatedEmbedder, list[WatchEvent]]
        ) -> None:
    w, svc, emb, events = running
    # The start-up reconcile made a.md searchable by its words; its vectors now wait at
    # the gate, on the vector worker.
    assert emb.entered.wait(GATE_TIMEOUT), "stage 2 never started"
    assert lexical_hits(svc, "qqalpha") == ["a.md"]
    tree.write("b.md", "# Bravo\n\nwritten while a.md is embedded qqbravo\n")
    wait_until(lambda: lexical_hits(svc, "qqbravo") == ["b.md"], timeout=GATE_TIMEOUT,
               what="b.md searchable by its words while a.md's embedding waits")
    assert emb.returned == 0  # the embedding of a.md has not returned yet
    assert emb.threads == {"memlens-watch-vectors"}
    emb.gate.set()
    wait_until(lambda: svc.vectors_waiting() == 0, timeout=GATE_TIMEOUT,
               what="the vectors of both files")
    assert [h.path for h in svc.search("qqbravo written", mode="vector", k=5).hits][:2]
    wait_until(lambda: any(e.kind == "projection" and e.message.startswith("vectors:")
                           for e in list(events)), what="the vector worker's event")
    assert not [e for e in list(events) if e.kind == "error"]


def test_after_change_without_vectors_leaves_them_to_the_vector_flow(
        tree: MemoryTree, make_service: Callable[..., MemoryService]) -> None:
    tree.write("d.md", "# Delta\n\nstage one only qqdelta\n")
    svc = make_service()
    roots = svc.resolve_roots([tree.projects])
    out = svc.ingest(roots, project=False)
    rep = svc.after_change(out.report.changes, vectors=False)
    assert rep is not None and rep.vectors is None
    assert lexical_hits(svc, "qqdelta") == ["d.md"]
    assert svc.vectors_waiting() == 1
    assert svc.vectors_between_changes(cancelled=lambda: True).vectors is not None
    assert svc.vectors_waiting() == 1  # cancelled before its first slice
    done = svc.vectors_between_changes()
    assert done.vectors is not None and done.vectors.written >= 1
    assert svc.vectors_waiting() == 0


class FailingEmbedder(GatedEmbedder):
    """Answers its fingerprint, fails every embedding (an endpoint that went away)."""

    def embed_documents(self, texts: Sequence[str]) -> Any:
        self.calls += 1
        raise ConnectionError("embedding endpoint refused the connection")


def test_a_failing_embedder_is_reported_once_and_words_stay_searchable(
        tree: MemoryTree, make_service: Callable[..., MemoryService]) -> None:
    tree.write("e.md", "# Echo\n\nfirst note qqecho\n")
    emb = FailingEmbedder()
    svc = make_service(embedder=emb)
    events: list[WatchEvent] = []
    w = Watcher(svc, scan_paths=[tree.projects], reconcile_seconds=0, on_event=events.append)
    stop = threading.Event()
    th = threading.Thread(target=w.run, args=(stop,), daemon=True)
    th.start()
    try:
        wait_until(lambda: emb.calls >= 1, timeout=GATE_TIMEOUT, what="the first embedding")
        for i in range(2):  # two more saves, each searchable, each a vector run that fails
            tree.write(f"f{i}.md", f"# Foxtrot {i}\n\nanother note qqfox{i}\n")
            wait_until(lambda i=i: lexical_hits(svc, f"qqfox{i}") == [f"f{i}.md"],
                       timeout=GATE_TIMEOUT, what=f"f{i}.md by its words")
            wait_until(lambda i=i: emb.calls >= 2 + i, timeout=GATE_TIMEOUT,
                       what="the vector run after the save")
        wait_until(lambda: any(e.kind == "error" for e in list(events)), what="the error")
    finally:
        stop.set()
        th.join(15)
    failures = [e for e in events if e.kind == "error" and "vectors failed" in e.message]
    assert len(failures) == 1, [e.message for e in failures]
    assert "refused the connection" in failures[0].message
