"""Store, ingest and projection lifecycle on a real SQLite file.

Covers the seed's six mutation scenarios and the lifecycle rules of SPEC.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlens.core import faults
from memlens.core.embedders.registry import EmbeddingError, make_embedder
from memlens.core.ingest.sources import roots_for_path
from memlens.core.store import db as dbm


def _doc(svc: Any, repository: str | None, path: str) -> dict[str, Any] | None:
    """The document's typed detail, flattened so assertions read its fields by name."""
    d = svc.locate(repository, path)
    return None if d is None else d.as_dict()


def _history(svc: Any, doc_id: int) -> list[dict[str, Any]]:
    """The document's revisions in their ``history --json`` shape."""
    return [r.as_json() for r in svc.revisions(doc_id)]

SLUG = "-home-dev-proj"

ALPHA = "# Alpha\n\nThe pool uses busy_timeout = 5000 and WAL mode.\n"
BETA = "# Beta\n\nDeploys run through the staging gate first.\n"


def _ingest(svc: Any, tree: Any, project: bool = True) -> Any:
    return svc.ingest(roots_for_path(tree.projects), project=project)


def _paths(svc: Any, q: str, mode: str = "lexical") -> list[str]:
    return [h.path for h in svc.search(q, mode=mode).hits]


def _live(svc: Any) -> dict[str, Any]:
    return {d.path: d for d in svc.list_documents()}


def test_duplicate_content_stays_path_distinct(make_service: Any, tree: Any) -> None:
    """Identical content at two paths gives two documents and two search hits."""
    tree.write("a.md", ALPHA)
    tree.write("copy/a.md", ALPHA)
    svc = make_service()
    out = _ingest(svc, tree)
    assert out.as_json()["created"] == 2
    docs = _live(svc)
    assert set(docs) == {"a.md", "copy/a.md"}
    assert docs["a.md"].id != docs["copy/a.md"].id
    assert sorted(_paths(svc, "busy_timeout")) == ["a.md", "copy/a.md"]


def test_update_removes_stale_fts_rows(make_service: Any, tree: Any) -> None:
    """After an update the old words are no longer searchable and the new ones are."""
    tree.write("a.md", ALPHA)
    svc = make_service()
    _ingest(svc, tree)
    assert _paths(svc, "busy_timeout") == ["a.md"]
    tree.write("a.md", "# Alpha\n\nNow we use a connection pool of size 12.\n")
    out = _ingest(svc, tree)
    assert out.as_json()["updated"] == 1
    assert _paths(svc, "busy_timeout") == []
    assert _paths(svc, "connection pool") == ["a.md"]
    checks, problems = svc.doctor()
    assert problems == []


def test_injected_failure_in_swap_keeps_old_results(make_service: Any, tree: Any) -> None:
    """A failure inside the projection transaction leaves search exactly as before."""
    tree.write("a.md", ALPHA)
    tree.write("b.md", BETA)
    svc = make_service()
    _ingest(svc, tree)
    before = [h.as_json() for h in svc.search("busy_timeout staging", mode="lexical").hits]
    tree.write("a.md", "# Alpha\n\nCompletely new words about kites.\n")

    def boom(step: str) -> None:
        if step == "projection.junction":
            raise faults.InjectedFault(step)

    faults.set_hook(boom)
    try:
        _ingest(svc, tree)
    finally:
        faults.set_hook(None)
    after = [h.as_json() for h in svc.search("busy_timeout staging", mode="lexical").hits]
    assert after == before
    doc = _doc(svc, None, "a.md")
    assert doc["projection"]["status"] == "stale"
    assert "InjectedFault" in doc["projection"]["error"]
    assert doc["active_revision_id"] != doc["current_revision_id"]
    assert svc.doctor()[1] == []
    # The retry (forced) swaps the new revision in.
    svc.retry(doc["id"])
    assert _paths(svc, "kites") == ["a.md"]
    assert _paths(svc, "busy_timeout") == []


def test_rename_changes_ids_not_hash(make_service: Any, tree: Any) -> None:
    """A rename keeps the document and content hash; chunk and node ids change."""
    tree.write("a.md", ALPHA)
    svc = make_service()
    _ingest(svc, tree)
    doc = _doc(svc, None, "a.md")
    nodes_before = set(svc.chunk_nodes(doc["id"]).values())
    rev_before = doc["current_revision_id"]
    tree.rename("a.md", "renamed.md")
    out = _ingest(svc, tree)
    assert out.as_json()["renamed"] == 1 and out.as_json()["deleted"] == 0
    doc2 = _doc(svc, None, "renamed.md")
    assert doc2["id"] == doc["id"]
    assert doc2["content_hash"] == doc["content_hash"]
    assert doc2["current_revision_id"] != rev_before
    assert set(svc.chunk_nodes(doc["id"]).values()).isdisjoint(nodes_before)
    assert _paths(svc, "busy_timeout") == ["renamed.md"]
    hist = _history(svc, doc["id"])
    assert [h["change_kind"] for h in hist] == ["rename", "create"]
    assert hist[0]["previous_path"] == "a.md"


def test_delete_removes_from_search_and_revives(make_service: Any, tree: Any) -> None:
    """Delete tombstones at once; a file that comes back revives its document."""
    tree.write("a.md", ALPHA)
    tree.write("b.md", BETA)
    svc = make_service()
    _ingest(svc, tree)
    doc = _doc(svc, None, "a.md")
    tree.remove("a.md")
    out = _ingest(svc, tree)
    assert out.as_json()["deleted"] == 1
    assert _paths(svc, "busy_timeout") == []
    assert "a.md" not in _live(svc)
    assert _doc(svc, None, "a.md")["tombstoned"]
    tree.write("a.md", ALPHA + "\nBack again.\n")
    out = _ingest(svc, tree)
    assert out.as_json()["created"] == 1
    again = _doc(svc, None, "a.md")
    assert again["id"] == doc["id"] and not again["tombstoned"]
    assert _paths(svc, "busy_timeout") == ["a.md"]
    kinds = [h["change_kind"] for h in _history(svc, doc["id"])]
    assert kinds == ["create", "delete", "create"]


def test_deferred_content_durable_not_searchable(make_service: Any, tree: Any) -> None:
    """--defer-projection stores durably; search finds it only after projecting."""
    tree.write("a.md", ALPHA)
    svc = make_service()
    out = _ingest(svc, tree, project=False)
    assert out.as_json()["projection"]["pending"] == 1
    assert _doc(svc, None, "a.md")["content"] == ALPHA
    assert _paths(svc, "busy_timeout") == []
    svc.project()
    assert _paths(svc, "busy_timeout") == ["a.md"]


def test_rename_onto_live_path_is_update_plus_delete(make_service: Any, tree: Any) -> None:
    """Moving a file over a live one never raises UNIQUE; it's update + delete."""
    tree.write("a.md", ALPHA)
    tree.write("b.md", BETA)
    svc = make_service()
    _ingest(svc, tree)
    tree.rename("a.md", "b.md")  # overwrites b.md
    out = _ingest(svc, tree).as_json()
    assert out["updated"] == 1 and out["deleted"] == 1 and out["failed"] == []
    assert _paths(svc, "busy_timeout") == ["b.md"]
    assert _paths(svc, "staging") == []
    # and a second scan is quiet
    out2 = _ingest(svc, tree).as_json()
    assert out2["unchanged"] == 1 and out2["updated"] == 0


def test_ambiguous_rename_becomes_delete_plus_create(make_service: Any, tree: Any) -> None:
    """Two vanished paths with the same hash cannot be told apart."""
    tree.write("a.md", ALPHA)
    tree.write("b.md", ALPHA)
    svc = make_service()
    _ingest(svc, tree)
    tree.remove("a.md")
    tree.rename("b.md", "c.md")
    out = _ingest(svc, tree).as_json()
    assert out["renamed"] == 0
    assert out["deleted"] == 2 and out["created"] == 1


def test_superseded_projection_is_discarded(make_service: Any, tree: Any) -> None:
    """A projection for a revision that is no longer current is thrown away."""
    from memlens.core.projection import swap as proj

    tree.write("a.md", ALPHA)
    svc = make_service()
    _ingest(svc, tree, project=False)
    doc = _doc(svc, None, "a.md")
    old_rev = doc["current_revision_id"]
    tree.write("a.md", BETA)
    _ingest(svc, tree, project=False)
    o = proj.project_one(svc.conn(), doc["id"], old_rev, svc.embedder, svc.clock, "test:1")
    assert o.result == "discarded"
    assert _doc(svc, None, "a.md")["active_revision_id"] is None
    svc.project()
    assert _paths(svc, "staging") == ["a.md"]


class FlakyEmbedder:
    """Wraps the hashing embedder and fails while ``broken`` is set."""

    def __init__(self) -> None:
        self.inner = make_embedder("hashing", {"dim": 64})
        self.name, self.model, self.dim = "hashing", self.inner.model, 64
        self.metric, self.version = "cosine", self.inner.version
        self.broken = False

    def fingerprint(self) -> str:
        return self.inner.fingerprint()

    def embed_documents(self, texts: Any) -> np.ndarray:
        if self.broken:
            raise EmbeddingError("endpoint http://127.0.0.1:9/v1 unreachable")
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def test_status_transitions_and_backoff(make_service: Any, tree: Any, clock: Any) -> None:
    """Two stages (issue 37): a broken embedder does not hold back the words. The nodes
    swap in (ready, searchable lexically); the vector stage fails -> back-off -> ready."""
    emb = FlakyEmbedder()
    svc = make_service(embedder=emb)
    tree.write("a.md", ALPHA)
    _ingest(svc, tree, project=False)
    assert _doc(svc, None, "a.md")["projection"]["status"] == "pending"
    emb.broken = True
    rep = svc.project()
    assert rep.vectors is not None and "unreachable" in (rep.vectors.error or "")
    d = _doc(svc, None, "a.md")
    assert d["projection"]["status"] == "ready"
    v = d["projection"]["vectors"]
    assert v["status"] == "failed" and v["attempts"] == 1 and "unreachable" in v["error"]
    assert v["done"] == 0 and v["total"] >= 1
    assert _paths(svc, "busy_timeout") == ["a.md"]  # by its words, at once
    first_next = v["next_attempt_at"]
    assert first_next > clock.t
    # Not due yet: nothing is attempted.
    rep = svc.project()
    assert rep.outcomes == [] and rep.vectors is not None and rep.vectors.slices == 0
    assert _doc(svc, None, "a.md")["projection"]["vectors"]["attempts"] == 1
    clock.advance(10)
    svc.project()
    v = _doc(svc, None, "a.md")["projection"]["vectors"]
    assert v["attempts"] == 2
    assert v["next_attempt_at"] - clock.t > first_next - (clock.t - 10) - 1
    assert svc.doctor()[1] == []  # waiting for vectors is not a problem
    emb.broken = False
    clock.advance(3600)
    svc.project()
    d = _doc(svc, None, "a.md")
    v = d["projection"]["vectors"]
    assert d["projection"]["status"] == "ready" and v["status"] == "ready"
    assert v["done"] == v["total"] >= 1 and v["error"] is None and v["attempts"] == 0
    # An update whose vectors fail is searchable by its new words at once.
    tree.write("a.md", BETA)
    emb.broken = True
    _ingest(svc, tree)
    d = _doc(svc, None, "a.md")
    assert d["projection"]["status"] == "ready"
    assert d["projection"]["vectors"]["status"] == "failed"
    assert _paths(svc, "staging") == ["a.md"]
    assert _paths(svc, "busy_timeout") == []
    assert svc.doctor()[1] == []


def test_processing_status_visible_during_projection(make_service: Any, tree: Any) -> None:
    """While the embedder runs, the document is `processing`."""
    seen: list[str] = []
    svc = make_service()
    tree.write("a.md", ALPHA)
    _ingest(svc, tree, project=False)

    def hook(step: str) -> None:
        if step == "projection.embed":
            other = svc.__class__(svc.settings, clock=svc.clock, embedder=svc.embedder, install_key=b"k" * 32)
            seen.append(_doc(other, None, "a.md")["projection"]["status"])
            other.close()

    faults.set_hook(hook)
    try:
        svc.project()
    finally:
        faults.set_hook(None)
    assert seen == ["processing"]
    assert _doc(svc, None, "a.md")["projection"]["status"] == "ready"


def test_empty_file_stored_without_nodes(make_service: Any, tree: Any) -> None:
    """An empty file is a document with no chunks and no orphan node."""
    tree.write("empty.md", "")
    svc = make_service()
    _ingest(svc, tree)
    d = _live(svc)["empty.md"]
    assert d.chunk_count == 0 and d.status == "ready"
    assert dbm.scalar(svc.conn(), "SELECT COUNT(*) FROM knowledge_nodes") == 0
    assert svc.doctor()[1] == []


def test_unchanged_rescan_is_noop(make_service: Any, tree: Any) -> None:
    """A second scan creates nothing; touching a file without changing it is no revision."""
    tree.write("a.md", ALPHA)
    svc = make_service()
    _ingest(svc, tree)
    assert _ingest(svc, tree).as_json()["unchanged"] == 1
    tree.write("a.md", ALPHA)  # same content, new mtime
    out = _ingest(svc, tree).as_json()
    assert out["unchanged"] == 1 and out["updated"] == 0
    assert len(_history(svc, _doc(svc, None, "a.md")["id"])) == 1


def test_bad_files_fail_alone(make_service: Any, tree: Any) -> None:
    """Invalid UTF-8 and binary files fail with a clear message; others still ingest."""
    tree.write("good.md", ALPHA)
    tree.write("bad.md", b"# hi\n\xff\xfe broken \xc3")
    tree.write("bin.md", b"\x00\x01\x02binary")
    svc = make_service()
    out = _ingest(svc, tree).as_json()
    assert out["created"] == 1
    errs = {f["path"]: f["error"] for f in out["failed"]}
    assert "not valid UTF-8" in errs["bad.md"]
    assert "binary" in errs["bin.md"]
    # A good file that later turns bad keeps its stored content.
    tree.write("good.md", b"\xff\xff")
    out = _ingest(svc, tree).as_json()
    assert [f["path"] for f in out["failed"]] == ["bad.md", "bin.md", "good.md"]
    assert _doc(svc, None, "good.md")["content"] == ALPHA
    assert _paths(svc, "busy_timeout") == ["good.md"]


def test_history_diff_headers_not_glued(make_service: Any, tree: Any) -> None:
    """Superseded revisions keep a bounded diff with proper line breaks, no snapshot."""
    tree.write("a.md", ALPHA)
    svc = make_service()
    _ingest(svc, tree)
    tree.write("a.md", ALPHA + "\nMore text.\n")
    _ingest(svc, tree)
    hist = _history(svc, _doc(svc, None, "a.md")["id"])
    old = hist[1]
    assert not old["has_snapshot"] and hist[0]["has_snapshot"]
    assert old["diff"].startswith("--- a/a.md\n+++ b/a.md\n@@")
    assert "+More text.\n" in old["diff"]
    assert "+2 -0 lines" in old["summary"]


def test_rechunk_revision(make_service: Any, tree: Any) -> None:
    """Rechunk records a new revision with the new config and re-projects."""
    from memlens.core.chunking.chunker import ChunkerConfig

    body = "# T\n\n" + "\n".join(f"Line {i} about retries and queues." for i in range(200))
    tree.write("big.md", body)
    svc = make_service()
    _ingest(svc, tree)
    doc = _doc(svc, None, "big.md")
    n_before = len(svc.chunks(doc["id"]))
    cfg = ChunkerConfig(strategy="windows", max_tokens=100, overlap_tokens=20)
    assert svc.rechunk([doc["id"]], cfg) == [doc["id"]]
    assert svc.rechunk([doc["id"]], cfg) == []  # same config: no-op
    svc.project()
    after = svc.chunks(doc["id"])
    assert len(after) > n_before
    hist = _history(svc, doc["id"])
    assert hist[0]["change_kind"] == "rechunk"
    assert hist[0]["chunker"]["config"]["strategy"] == "windows"
    assert hist[0]["content_hash"] == hist[1]["content_hash"]
    assert len(svc.chunk_nodes(doc["id"])) == len(after)
    assert svc.doctor()[1] == []


def test_repository_identity_stable(make_service: Any, tree: Any) -> None:
    """Repository = slug, whether or not MEMORY.md exists, and for both path forms."""
    tree.write("topic.md", ALPHA)
    r1 = roots_for_path(tree.projects)
    assert [r.repository for r in r1] == [SLUG]
    tree.write("MEMORY.md", "- [Topic](topic.md)\n")
    assert [r.repository for r in roots_for_path(tree.projects)] == [SLUG]
    assert [r.repository for r in roots_for_path(tree.memdir())] == [SLUG]
    assert [r.repository for r in roots_for_path(tree.projects / SLUG)] == [SLUG]


def test_doctor_catches_drifted_fts_and_orphan_vector(make_service: Any, tree: Any) -> None:
    """Doctor reports an FTS index out of step with its content and an orphan vector."""
    tree.write("a.md", ALPHA)
    svc = make_service()
    _ingest(svc, tree)
    assert svc.doctor()[1] == []
    conn = svc.conn()
    # Drift: change node text behind the trigger's back.
    conn.execute("DROP TRIGGER knowledge_nodes_au")
    conn.execute("UPDATE knowledge_nodes SET text_z=memlens_deflate('something else entirely')")
    problems = svc.doctor()[1]
    assert any(p.check == "fts_integrity" for p in problems)
    # Orphan vector.
    space = dbm.vector_spaces(conn)[0]["name"]
    conn.execute(
        f"INSERT INTO {dbm.vec_table_name(space)}(node_id, embedding, repository,"
        " doc_type) VALUES (999999, ?, 'x', '')",
        (np.ones(64, dtype=np.float32).tobytes(),),
    )
    problems = svc.doctor()[1]
    assert any(p.check == "vectors" and "orphan" in p.message for p in problems)


def test_migration_from_v1_and_refuse_newer(tmp_path: Path) -> None:
    """An old schema is migrated in a transaction; a newer one is refused clearly."""
    import apsw

    p = tmp_path / "old.db"
    c = apsw.Connection(str(p))
    c.execute(dbm.MIGRATIONS[0])
    c.execute("PRAGMA user_version=1")
    c.close()
    conn = dbm.connect(p)
    assert dbm.user_version(conn) == dbm.SCHEMA_VERSION
    assert dbm.scalar(conn, "SELECT COUNT(*) FROM sqlite_master WHERE name='idx_revisions_document'") == 1
    conn.execute(f"PRAGMA user_version={dbm.SCHEMA_VERSION + 5}")
    conn.close()
    with pytest.raises(dbm.SchemaTooNew, match="upgrade memlens"):
        dbm.connect(p)


def test_absolute_path_never_in_search_output(make_service: Any, tree: Any) -> None:
    """The private source path is stored but never in nodes, FTS text or hits."""
    tree.write("a.md", ALPHA)
    svc = make_service()
    _ingest(svc, tree)
    base = str(tree.base)
    conn = svc.conn()
    assert base in dbm.scalar(conn, "SELECT source_path FROM memory_documents")
    for (t,) in conn.execute("SELECT text || heading || logical_path FROM knowledge_nodes"):
        assert base not in t
    for h in svc.search("busy_timeout").hits:
        assert base not in str(h.as_json())


def test_retention_keeps_current_and_active(make_service: Any, tree: Any) -> None:
    """max_revisions prunes old history but never the current or active revision."""
    svc = make_service(**{"retention.max_revisions": 3})
    for i in range(8):
        tree.write("a.md", f"# A\n\nversion {i}\n")
        _ingest(svc, tree)
    doc = _doc(svc, None, "a.md")
    hist = _history(svc, doc["id"])
    assert len(hist) == 3
    assert hist[0]["id"] == doc["current_revision_id"] == doc["active_revision_id"]
    assert [h["number"] for h in hist] == sorted((h["number"] for h in hist), reverse=True)
    assert svc.doctor()[1] == []


def test_projection_runs_in_batches_until_done(make_service: Any, tree: Any) -> None:
    """project_pending keeps claiming until nothing is pending (not just the first batch)."""
    from memlens.core.projection.queue import pending_count
    from memlens.core.projection.run import project_pending

    for i in range(7):
        tree.write(f"n{i}.md", f"# N{i}\n\nnote number {i}\n")
    svc = make_service()
    _ingest(svc, tree, project=False)
    rep = project_pending(svc.conn(), svc.embedder, svc.clock, batch=2)
    assert rep.count("ready") == 7
    assert pending_count(svc.conn())["pending"] == 0


def test_embedding_cache_reused_on_rename(make_service: Any, tree: Any) -> None:
    """A rename re-projects from the cache without calling the embedder again."""
    calls: list[int] = []
    inner = make_embedder("hashing", {"dim": 64})

    class Counting(FlakyEmbedder):
        def embed_documents(self, texts: Any) -> np.ndarray:
            calls.append(len(texts))
            return inner.embed_documents(texts)

    svc = make_service(embedder=Counting())
    tree.write("a.md", ALPHA)
    _ingest(svc, tree)
    assert calls == [1]
    tree.rename("a.md", "b.md")
    _ingest(svc, tree)
    assert calls == [1]


def test_ingest_report_counts_name_each_outcome(make_service: Any, tree: Any) -> None:
    """``IngestReport.counts()`` keys match ``as_json`` and count the real change kinds
    (it once looked up "created" among kinds spelled "create": always 0)."""
    tree.write("a.md", "# A\n\nalpha\n")
    tree.write("b.md", "# B\n\nbeta\n")
    svc = make_service()
    first = svc.ingest(roots_for_path(tree.projects), project=False).report
    assert first.counts() == {"created": 2, "updated": 0, "renamed": 0, "deleted": 0,
                              "unchanged": 0}
    assert {k: first.as_json()[k] for k in first.counts()} == first.counts()
    tree.write("a.md", "# A\n\nalpha, edited\n")
    again = svc.ingest(roots_for_path(tree.projects), project=False).report
    assert again.counts()["updated"] == 1 and again.counts()["unchanged"] == 1
