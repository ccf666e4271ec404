"""Two-stage projection (issue 37): a document's nodes and FTS rows swap in as soon as it
is chunked (stage 1, with the vectors the embedding cache already holds); its other
vectors follow in short slices (stage 2), smallest waiting document first, each slice its
own transaction; a per-document cap bounds what one pathological file may cost.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from memlens.core.embedders.registry import make_embedder
from memlens.core.ingest.sources import roots_for_path
from memlens.core.projection.queue import queue_notices
from memlens.core.projection.run import project_pending
from memlens.core.projection.vectors import embed_vectors, vectors_waiting
from memlens.core.store import db as dbm
from memlens.core.store.schema import MIGRATIONS

DATA = Path(__file__).resolve().parent / "data"
REPO = Path(__file__).resolve().parent.parent


class Recording:
    """The hashing embedder, recording the texts of every embed call."""

    def __init__(self) -> None:
        self.inner = make_embedder("hashing", {"dim": 64})
        self.name, self.model, self.dim = "hashing", self.inner.model, 64
        self.metric, self.version = "cosine", self.inner.version
        self.calls: list[list[str]] = []
        self.after_call: Any = None

    def fingerprint(self) -> str:
        return self.inner.fingerprint()

    def embed_documents(self, texts: Any) -> np.ndarray:
        self.calls.append(list(texts))
        out = self.inner.embed_documents(texts)
        if self.after_call is not None:
            self.after_call()
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def _docs(svc: Any) -> dict[str, dict[str, Any]]:
    return {d.path: d.as_json() for d in svc.list_documents()}


def _big(sections: int, word: str = "bulk") -> str:
    return "# Big\n\n" + "".join(f"## Part {i}\n\n{word} section {i} " + "filler " * 60 + "\n\n"
                                for i in range(sections))


def test_words_are_searchable_before_the_vectors(make_service: Any, tree: Any) -> None:
    tree.write("a.md", "# Alpha\n\nThe walrus keeps its tusks polished.\n")
    tree.write("b.md", "# Beta\n\nDeploys go through the staging gate.\n")
    svc = make_service()
    svc.ingest(roots_for_path(tree.projects), project=False)
    rep = svc.project(vectors=False)
    assert rep.count("ready") == 2 and rep.vectors is None
    assert [h.path for h in svc.search("walrus", mode="lexical").hits] == ["a.md"]
    docs = _docs(svc)
    assert docs["a.md"]["vectors"] == {"status": "pending", "done": 0, "total": 1,
                                       "capped": 0, "error": None}
    hy = svc.search("walrus tusks")
    assert [h.path for h in hy.hits][:1] == ["a.md"]  # ranked by its words meanwhile
    assert any(n.startswith("2 document(s) still wait for their vectors") for n in hy.notes)
    assert svc.search("walrus", mode="vector").hits == []
    assert svc.doctor()[1] == []  # pending vectors are normal
    rep = svc.project()
    assert rep.vectors is not None and rep.vectors.written == 2 and rep.vectors.waiting == 0
    docs = _docs(svc)
    assert docs["a.md"]["vectors"]["status"] == "ready"
    assert docs["a.md"]["vectors"]["done"] == docs["a.md"]["vectors"]["total"] == 1
    assert not any("wait for their vectors" in n for n in svc.search("walrus tusks").notes)
    assert [h.path for h in svc.search("walrus tusks", mode="vector").hits][:1] == ["a.md"]
    detail = svc.detail(svc.locate(None, "a.md").id)
    assert detail is not None and detail.projection.as_dict()["vectors"]["status"] == "ready"
    assert svc.doctor()[1] == []


def test_unchanged_chunks_keep_their_vector_in_stage_one(make_service: Any, tree: Any) -> None:
    text = "# Doc\n\n## One\n\n" + "alpha words " * 80 + "\n\n## Two\n\n" + "beta words " * 80
    tree.write("d.md", text + "\n")
    svc = make_service(**{"chunker.max_tokens": 200, "chunker.min_tokens": 10})
    svc.ingest(roots_for_path(tree.projects))
    v = _docs(svc)["d.md"]["vectors"]
    assert v["status"] == "ready" and v["total"] >= 2
    tree.write("d.md", text.replace("beta words", "gamma words") + "\n")
    svc.ingest(roots_for_path(tree.projects), project=False)
    svc.project(vectors=False)
    v2 = _docs(svc)["d.md"]["vectors"]
    # the first section's text is unchanged: its vector came from the cache in stage 1
    assert v2["status"] == "pending" and 0 < v2["done"] < v2["total"]
    assert svc.doctor()[1] == []
    svc.project()
    assert _docs(svc)["d.md"]["vectors"]["status"] == "ready"


def test_small_documents_first_and_a_big_one_in_slices(make_service: Any, tree: Any) -> None:
    """Slices of at most N texts; the small documents' vectors come first; a document
    that appears while a big one is embedded becomes searchable between two slices and
    gets its vector before the big one's rest."""
    tree.write("big.md", _big(40))
    for i in range(3):
        tree.write(f"s{i}.md", f"# Small {i}\n\nsmall note {i}\n")
    emb = Recording()
    svc = make_service(embedder=emb, **{"chunker.max_tokens": 100, "chunker.min_tokens": 10})
    svc.ingest(roots_for_path(tree.projects), project=False)
    svc.project(vectors=False)
    big_total = _docs(svc)["big.md"]["vectors"]["total"]
    assert big_total >= 30
    seen: list[str] = []

    def late_file() -> None:
        if len(emb.calls) == 2:  # while the big document is half done
            tree.write("late.md", "# Late\n\nthe late lemur note\n")
            svc.ingest(roots_for_path(tree.projects), project=False)
            seen.append("ingested")

    emb.after_call = late_file
    rep = project_pending(svc.conn(), emb, svc.clock, slice_texts=8)
    assert rep.vectors is not None and rep.vectors.waiting == 0
    assert all(len(c) <= 8 for c in emb.calls)
    assert all(any(f"small note {i}" in t for t in emb.calls[0]) for i in range(3))
    late_at = next(i for i, c in enumerate(emb.calls) if any("late lemur" in t for t in c))
    assert seen == ["ingested"] and late_at == 2  # the very next slice
    assert any("Part 39" in t for c in emb.calls[late_at + 1:] for t in c)  # big one after
    assert [o.result for o in rep.outcomes] == ["ready"]  # late.md's stage 1, in between
    assert rep.vectors.slices == len(emb.calls)
    assert svc.doctor()[1] == []


def test_vectors_per_document_are_capped_with_a_note(make_service: Any, tree: Any) -> None:
    tree.write("huge.md", _big(30))
    tree.write("small.md", "# Small\n\nthe small one\n")
    emb = Recording()
    svc = make_service(embedder=emb, **{"chunker.max_tokens": 100, "chunker.min_tokens": 10,
                                        "projection.max_vectors_per_document": 5})
    svc.ingest(roots_for_path(tree.projects))
    docs = _docs(svc)
    v = docs["huge.md"]["vectors"]
    nodes = int(dbm.scalar(svc.conn(), "SELECT COUNT(*) FROM knowledge_nodes k JOIN"
                           " memory_documents d ON d.id=k.document_id"
                           " WHERE d.logical_path='huge.md'"))
    assert v == {"status": "capped", "done": 5, "total": 5, "capped": nodes - 5, "error": None}
    assert docs["small.md"]["vectors"]["status"] == "ready"
    assert sum(len(c) for c in emb.calls) == 6
    # the capped part is still found by its words
    assert [h.path for h in svc.search("section 29", mode="lexical").hits][:1] == ["huge.md"]
    assert svc.doctor()[1] == []


def test_doctor_tells_pending_from_broken(make_service: Any, tree: Any) -> None:
    tree.write("a.md", "# A\n\nalpha text here\n")
    tree.write("b.md", "# B\n\nbeta text here\n")
    svc = make_service()
    svc.ingest(roots_for_path(tree.projects))
    conn = svc.conn()
    assert svc.doctor()[1] == []
    space = str(dbm.scalar(conn, "SELECT name FROM vector_spaces"))
    vt = dbm.vec_table_name(space)
    nid = int(dbm.scalar(conn, "SELECT k.id FROM knowledge_nodes k JOIN memory_documents d"
                         " ON d.id=k.document_id WHERE d.logical_path='a.md'"))
    # a vector stage that claims done while a vector is missing
    conn.execute(f"DELETE FROM {vt} WHERE node_id=?", (nid,))
    msgs = [p.message for p in svc.doctor()[1]]
    assert any("a.md" in m and "records 1 vectors, has 0" in m for m in msgs), msgs
    # the same node, pending: normal, and a notice says what waits
    conn.execute("UPDATE memory_documents SET vector_done=0 WHERE logical_path='a.md'")
    assert svc.doctor()[1] == []
    assert any("wait for 1 vector" in n for n in queue_notices(conn, svc.clock()))
    svc.project()
    assert svc.doctor()[1] == []
    # a vector without a node
    conn.execute(f"INSERT INTO {vt}(node_id, embedding, repository, doc_type) VALUES"
                 " (999999, ?, 'x', '')", (np.ones(64, dtype=np.float32).tobytes(),))
    assert any("orphan vector" in p.message for p in svc.doctor()[1])


def test_a_vector_slice_moves_the_matrix_fingerprint(make_service: Any, tree: Any) -> None:
    """Stage 2 adds vectors to existing nodes: the in-RAM matrix must see them."""
    from memlens.core.projection.changes import fingerprint, vector_fingerprint

    tree.write("a.md", "# A\n\nthe walrus note\n")
    svc = make_service()
    svc.ingest(roots_for_path(tree.projects), project=False)
    svc.project(vectors=False)
    conn = svc.conn()
    space = "s"
    before_v, before_n = vector_fingerprint(conn, space), fingerprint(conn, space)
    svc.project()
    assert vector_fingerprint(conn, space) != before_v
    assert fingerprint(conn, space) == before_n  # the lexical cache stays valid
    # a long-lived service that searched by vector before sees the new vector
    assert [h.path for h in svc.search("walrus note", mode="vector").hits] == ["a.md"]


def test_vector_matrix_cache_sees_stage_two(make_service: Any, tree: Any) -> None:
    tree.write("a.md", "# A\n\nthe walrus note\n")
    tree.write("b.md", "# B\n\nthe heron note\n")
    svc = make_service()
    svc.ingest(roots_for_path(tree.projects), project=False)
    svc.project(vectors=False, document_ids=[svc.locate(None, "a.md").id])
    embed_vectors(svc.conn(), svc.embedder, svc.clock,
                       document_ids=[svc.locate(None, "a.md").id])
    for _ in range(3):  # the matrix is loaded after a few searches at one fingerprint
        assert [h.path for h in svc.search("heron", mode="vector").hits] == ["a.md"]
    svc.project()
    assert {h.path for h in svc.search("heron", mode="vector", k=5).hits} == {"a.md", "b.md"}


def test_upgrade_from_v8(tmp_path: Path, make_service: Any) -> None:
    """A schema-8 file (the v7 fixture upgraded by the v8 script alone) upgrades to v9:
    every document's vectors are complete (before v9 every node had its vector)."""
    db = tmp_path / "v8.db"
    shutil.copyfile(DATA / "dbsize_v7.db", db)
    raw = dbm.connect(db, migrate=False)
    assert dbm.user_version(raw) == 7
    with dbm.write_txn(raw):
        raw.execute(MIGRATIONS[7])
        raw.execute("PRAGMA user_version=8")
    assert "vector_total" not in {str(r[1]) for r in raw.execute(
        "PRAGMA table_xinfo('memory_documents')")}
    raw.close()
    svc = make_service(db=db)
    conn = svc.conn()
    assert dbm.user_version(conn) == dbm.SCHEMA_VERSION == 9
    per_doc = {str(p): (int(n), int(t), int(d)) for p, n, t, d in conn.execute(
        "SELECT d.logical_path, (SELECT COUNT(*) FROM knowledge_nodes k WHERE"
        " k.document_id=d.id), d.vector_total, d.vector_done FROM memory_documents d")}
    assert any(n for n, _, _ in per_doc.values())
    assert all(n == t == d for n, t, d in per_doc.values()), per_doc
    assert vectors_waiting(conn) == 0
    assert svc.doctor()[1] == []
    assert all(d.as_json()["vectors"]["status"] == "ready" for d in svc.list_documents())


def test_cli_small_file_is_searchable_while_a_big_ones_vectors_wait(tmp_path: Path) -> None:
    """End to end through the real CLI and the default embedder: while `memlens ingest`
    is still computing a big file's vectors, a small file of the same folder is found by
    its words, `docs --json` shows the big one pending, and a hybrid search says how many
    documents wait."""
    mem = tmp_path / "projects" / "-home-dev-x" / "memory"
    mem.mkdir(parents=True)
    (mem / "big.md").write_text(
        "# Big\n\n" + "".join(f"## Topic {i}\n\n" + " ".join(
            f"word{(i * 31 + k) % 997} detail" for k in range(150)) + "\n\n"
            for i in range(60)), encoding="utf-8")
    (mem / "good.md").write_text("# Good\n\nThe quokka fact lives here.\n", encoding="utf-8")
    db = tmp_path / "m.db"
    env = {**os.environ, "MEMLENS_DB": str(db)}
    env.pop("MEMLENS_EMBEDDER", None)
    cmd = [sys.executable, "-m", "memlens.launch"]
    ingest = subprocess.Popen([*cmd, "ingest", str(mem)], env=env, cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: dict[str, Any] = {}
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and ingest.poll() is None:
            time.sleep(0.1)
            if not db.exists():
                continue
            r = subprocess.run([*cmd, "search", "quokka", "--mode", "lexical", "--json"],
                               env=env, cwd=REPO, capture_output=True, text=True)
            if r.returncode != 0 or not json.loads(r.stdout)["hits"]:
                continue
            docs = subprocess.run([*cmd, "docs", "--json"], env=env, cwd=REPO,
                                  capture_output=True, text=True)
            by = {d["path"]: d for d in json.loads(docs.stdout)["documents"]}
            if by.get("big.md", {}).get("vectors", {}).get("status") != "pending":
                continue
            hy = subprocess.run([*cmd, "search", "quokka fact", "--json"], env=env, cwd=REPO,
                                capture_output=True, text=True)
            seen = {"lexical": json.loads(r.stdout), "docs": by, "hybrid": json.loads(hy.stdout)}
            break
        out, err = ingest.communicate(timeout=300)
    finally:
        if ingest.poll() is None:
            ingest.kill()
            ingest.communicate()
    assert ingest.returncode == 0, err
    assert "Traceback" not in err
    assert seen, "never saw the small file searchable while the big one's vectors waited"
    assert [h["path"] for h in seen["lexical"]["hits"]] == ["good.md"]
    big = seen["docs"]["big.md"]["vectors"]
    assert big["done"] < big["total"]
    assert any("still wait for their vectors" in n for n in seen["hybrid"]["notes"])
    assert seen["hybrid"]["hits"][0]["path"] == "good.md"
    final = subprocess.run([*cmd, "docs", "--json"], env=env, cwd=REPO, capture_output=True,
                           text=True)
    assert all(d["vectors"]["status"] in ("ready", "capped")
               for d in json.loads(final.stdout)["documents"])
    doctor = subprocess.run([*cmd, "doctor"], env=env, cwd=REPO, capture_output=True, text=True)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
