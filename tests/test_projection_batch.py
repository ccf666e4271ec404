"""Batched projection: one embed call and one transaction per batch, each document
all-or-nothing inside its SAVEPOINT, no prune on a first projection."""

from __future__ import annotations

from typing import Any

import pytest

from memlens.core import faults
from memlens.core.ingest.sources import roots_for_path
from memlens.core.projection import swap as proj
from memlens.core.projection.queue import queue_other_embedder


def _write(tree: Any, n: int, word: str = "alpha") -> None:
    for i in range(n):
        tree.write(f"t{i}.md", f"# Topic {i}\n\nThe {word} note number {i} about gateways.\n\n"
                   f"## Part\n\nMore {word} text {i}.\n")


def _status(svc: Any) -> dict[int, tuple[str, Any, Any]]:
    return {int(r[0]): (str(r[1]), r[2], r[3]) for r in svc.conn().execute(
        "SELECT id, projection_status, active_revision_id, current_revision_id"
        " FROM memory_documents")}


def test_one_embed_call_per_batch(make_service: Any, tree: Any) -> None:
    _write(tree, 6)
    svc = make_service()
    svc.ingest(roots_for_path(tree.projects), project=False)
    calls: list[int] = []
    real = svc.embedder.embed_documents

    def counting(texts: list[str]) -> Any:
        calls.append(len(texts))
        return real(texts)

    svc.embedder.embed_documents = counting
    rep = svc.project()
    assert rep.count("ready") == 6
    nodes = svc.conn().execute("SELECT COUNT(*) FROM knowledge_nodes").fetchone()[0]
    assert nodes >= 6 and calls == [nodes]  # every chunk of the batch in one call
    assert svc.doctor()[1] == []


def test_failing_document_rolls_back_only_itself(make_service: Any, tree: Any) -> None:
    _write(tree, 4)
    svc = make_service()
    svc.ingest(roots_for_path(tree.projects))
    before = _status(svc)
    _write(tree, 4, word="kites")
    fired: list[str] = []

    def boom(step: str) -> None:
        if step == "projection.junction" and not fired:
            fired.append(step)
            raise faults.InjectedFault(step)

    faults.set_hook(boom)
    try:
        svc.ingest(roots_for_path(tree.projects))
    finally:
        faults.set_hook(None)
    after = _status(svc)
    stale = [d for d, (st, _, _) in after.items() if st == "stale"]
    assert len(stale) == 1
    d = stale[0]
    # the failed re-index keeps the last good projection visible
    assert after[d][1] == before[d][1] != after[d][2]
    assert all(st == "ready" and act == cur for k, (st, act, cur) in after.items() if k != d)
    row = svc.conn().execute("SELECT projection_error, projection_attempts FROM memory_documents"
                             " WHERE id=?", (d,)).fetchone()
    assert "InjectedFault" in row[0] and row[1] == 1
    assert len(svc.search("kites", mode="lexical", k=20).hits) == 3
    assert svc.doctor()[1] == []


def test_no_prune_on_first_projection(make_service: Any, tree: Any,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    pruned: list[int] = []
    real = proj.prune_unused_chunks

    def spy(conn: Any, doc_id: int) -> None:
        pruned.append(doc_id)
        real(conn, doc_id)

    monkeypatch.setattr(proj, "prune_unused_chunks", spy)
    _write(tree, 3)
    svc = make_service()
    svc.ingest(roots_for_path(tree.projects))
    assert pruned == []
    tree.write("t0.md", "# Topic 0\n\nReplaced entirely.\n")
    svc.ingest(roots_for_path(tree.projects))
    assert len(pruned) == 1
    old = svc.conn().execute(
        "SELECT COUNT(*) FROM memory_chunks c JOIN memory_revisions r ON r.id=c.revision_id"
        " JOIN memory_documents d ON d.id=r.document_id WHERE d.id=? AND r.id<>d.current_revision_id",
        (pruned[0],)).fetchone()[0]
    assert old == 0
    assert svc.doctor()[1] == []


def test_embedder_error_is_stored_and_reported_redacted(make_service: Any, tree: Any) -> None:
    """An embedder's message may echo its request (a URL with a key, a header): the error
    kept in the database and returned to the caller is redacted like every stored text."""
    token = "ghp_" + "Zq8vL2mX9rT4wB7nC1kD5fH3jP6sY0aE2gQ4"
    _write(tree, 2)
    svc = make_service()
    svc.ingest(roots_for_path(tree.projects), project=False)

    def failing(texts: list[str]) -> Any:
        raise RuntimeError(f"401 from https://embed.example/v1?key={token} (Authorization: Bearer {token})")

    svc.embedder.embed_documents = failing
    rep = svc.project()
    # stage 1 needs no embedding (issue 37): the words are searchable; stage 2 failed
    assert rep.count("ready") == 2
    err = rep.vectors.error if rep.vectors else None
    assert err and token not in err and "[REDACTED:" in err
    stored = [r[0] for r in svc.conn().execute("SELECT vector_error FROM memory_documents")]
    assert stored and all(e and token not in e and "RuntimeError: 401" in e for e in stored)


def test_batches_end_at_the_document_or_the_chunk_limit(make_service: Any, tree: Any) -> None:
    """A batch ends at whichever limit comes first; a document bigger than the chunk limit
    is a batch of its own; every claimed pair is in exactly one batch, in order."""
    _write(tree, 7)
    tree.write("big.md", "# Big\n\n" + "".join(f"## S{i}\n\n" + "word " * 300 + "\n\n"
                                              for i in range(12)))
    svc = make_service()
    svc.ingest(roots_for_path(tree.projects), project=False)
    conn = svc.conn()
    pairs = [(int(r[0]), int(r[1])) for r in conn.execute(
        "SELECT id, current_revision_id FROM memory_documents ORDER BY id")]
    counts = {int(r[0]): int(r[1]) for r in conn.execute(
        "SELECT id, chunk_count FROM memory_revisions")}
    big = max(counts[r] for _, r in pairs)
    assert big > 4 and sum(1 for _, r in pairs if counts[r] == big) == 1
    for max_docs, max_chunks in [(3, 10_000), (100, 4), (2, 3), (1024, 8192)]:
        parts = proj.batches(conn, pairs, max_docs, max_chunks)
        assert [p for part in parts for p in part] == pairs
        for part in parts:
            n = sum(counts[r] for _, r in part)
            assert len(part) <= max_docs
            assert n <= max_chunks or len(part) == 1
    assert len(proj.batches(conn, pairs, 1024, 8192)) == 1
    rep = svc.project()
    assert rep.count("ready") == len(pairs) and svc.doctor()[1] == []


def test_queue_other_embedder_without_the_write_lock_when_nothing_changed(
        make_service: Any, tree: Any) -> None:
    """Every projection asks which documents another embedder projected. When every node
    is in a space of the current fingerprint the answer comes from index seeks: no write
    lock (it returns while another connection holds one), nothing queued. Another
    fingerprint, or a node without a space, still queues the documents."""
    from memlens.core.store import db as dbm

    _write(tree, 5)
    svc = make_service()
    svc.ingest(roots_for_path(tree.projects))
    fp = svc.embedder.fingerprint()
    conn = svc.conn()
    other = dbm.connect(svc.db_path, create=False)
    other.setbusytimeout(0)
    conn.setbusytimeout(0)
    other.execute("BEGIN IMMEDIATE")  # a writer elsewhere holds the lock
    try:
        assert queue_other_embedder(conn, fp) == 0
        assert svc.queued_document_ids() == []
    finally:
        other.execute("ROLLBACK")
    assert queue_other_embedder(conn, fp + ":other") == 5
    assert len(svc.queued_document_ids()) == 5
    assert svc.project().count("ready") == 5
    assert queue_other_embedder(conn, fp) == 0
    first = int(conn.execute("SELECT MIN(id) FROM knowledge_nodes").fetchone()[0])
    doc = int(conn.execute("SELECT document_id FROM knowledge_nodes WHERE id = ?",
                           (first,)).fetchone()[0])
    conn.execute("UPDATE knowledge_nodes SET vector_space = NULL WHERE id = ?", (first,))
    assert queue_other_embedder(conn, fp) == 1
    assert svc.queued_document_ids() == [doc]
    other.close()
