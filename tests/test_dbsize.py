"""Schema v7 (issue 17, a smaller database): compressed Markdown columns and an embedding
cache that refers to the vec0 row of a live node instead of holding a second copy.

The upgrade is checked on a real schema-6 file made by memlens at schema 6
(tests/data/dbsize_v6_make.py): nothing stored is lost, and search, history, doctor and
the cache keep working on the upgraded file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from memlens.core.chunking.chunker import ChunkerConfig
from memlens.core.embedders.registry import make_embedder
from memlens.core.ingest.sources import roots_for_path
from memlens.core.projection import cache as ecache
from memlens.core.store import db as dbm
from memlens.core.store.schema import DOC_CONTENT_SQL

DATA = Path(__file__).resolve().parent / "data"
ALPHA = ("# Alpha\n\nWAL mode and busy_timeout keep readers going.\n\n"
         "## Second\n\nCheckpoints run in the background.\n")
HEADINGS = {"chunker.strategy": "headings"}  # one chunk per section


class Counting:
    """The hashing embedder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        self.inner = make_embedder("hashing", {"dim": 64})
        self.name, self.model, self.dim = "hashing", self.inner.model, 64
        self.metric, self.version = "cosine", self.inner.version
        self.texts: list[str] = []

    def fingerprint(self) -> str:
        return self.inner.fingerprint()

    def embed_documents(self, texts: Any) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def _cache(conn: Any) -> list[dict[str, Any]]:
    return dbm.rows(conn, "SELECT chunk_hash, fingerprint, node_id, vector FROM embedding_cache")


def _space(conn: Any) -> str:
    return str(dbm.scalar(conn, "SELECT name FROM vector_spaces"))


def test_upgrade_from_v6_loses_nothing(tmp_path: Path, make_service: Any) -> None:
    """Every text and cached vector of a real v6 file reads back the same after the upgrade;
    cached vectors of live nodes are no longer stored twice."""
    db = tmp_path / "v6.db"
    shutil.copyfile(DATA / "dbsize_v6.db", db)
    want = json.loads((DATA / "dbsize_v6.json").read_text(encoding="utf-8"))
    conn = dbm.connect(db)
    assert dbm.user_version(conn) == dbm.SCHEMA_VERSION == 9  # v9 (issue 37) follows on

    def q(sql: str) -> list[list[object]]:
        return [list(r) for r in conn.execute(sql)]

    assert q(f"SELECT id, {DOC_CONTENT_SQL} FROM memory_documents d ORDER BY id") \
        == want["documents"]
    assert q("SELECT id, snapshot, diff, summary FROM memory_revisions ORDER BY id") \
        == want["revisions"]
    assert q("SELECT id, text FROM memory_chunks ORDER BY id") == want["chunks"]
    assert q("SELECT id, text FROM knowledge_nodes ORDER BY id") == want["nodes"]
    # the text now lives compressed; the old column names read it back
    assert dbm.scalar(conn, "SELECT typeof(MAX(snapshot_z)) FROM memory_revisions") == "blob"
    assert dbm.scalar(conn, "SELECT COUNT(*) FROM pragma_table_xinfo('memory_chunks')"
                      " WHERE name='text' AND hidden=2") == 1  # a VIRTUAL generated column
    # every cached vector is still there, byte for byte; live ones only in vec0
    space = _space(conn)
    for fp in {r[1] for r in want["cache"]}:
        keys = [r[0] for r in want["cache"] if r[1] == fp]
        got = ecache.cached_vectors(conn, keys, fp, space)
        assert {k: v.hex().upper() for k, v in got.items()} == \
            {r[0]: r[2] for r in want["cache"] if r[1] == fp}
    live = {r["chunk_hash"] for r in _cache(conn) if r["vector"] is None}
    assert live and all(r["node_id"] is not None for r in _cache(conn) if r["vector"] is None)
    conn.execute("INSERT INTO knowledge_nodes_fts(knowledge_nodes_fts, rank)"
                 " VALUES('integrity-check', 1)")
    conn.close()
    emb = Counting()
    svc = make_service(db=db, embedder=emb)
    assert {h.path for h in svc.search("busy_timeout", mode="lexical").hits} == {"alpha.md"}
    assert svc.doctor()[1] == []
    alpha = svc.locate(None, "alpha.md")
    assert alpha is not None and "Added" in alpha.content
    revs = svc.revisions(alpha.id)
    assert revs[0].snapshot == alpha.content and revs[-1].diff
    # a rename re-projects from the upgraded cache: nothing is embedded again
    beta = svc.locate(None, "beta.md")
    assert beta is not None
    svc.rechunk([alpha.id, beta.id], ChunkerConfig())
    svc.project()
    before = [r[1] for r in want["nodes"]]
    assert [t for t in emb.texts if t in before] == []


def test_cache_does_not_copy_live_vectors(make_service: Any, tree: Any) -> None:
    """After a projection each cached vector is the vec0 row of a live node, not a copy."""
    tree.write("a.md", ALPHA)
    svc = make_service(**HEADINGS)
    svc.ingest(roots_for_path(tree.projects))
    conn = svc.conn()
    rows = _cache(conn)
    nodes = {int(r[0]) for r in conn.execute("SELECT id FROM knowledge_nodes")}
    assert len(rows) == len(nodes) == 2
    assert all(r["vector"] is None and r["node_id"] in nodes for r in rows)
    got = ecache.cached_vectors(conn, [r["chunk_hash"] for r in rows],
                                svc.embedder.fingerprint(), _space(conn))
    vt = dbm.vec_table_name(_space(conn))
    for r in rows:
        assert got[r["chunk_hash"]] == dbm.scalar(
            conn, f"SELECT embedding FROM {vt} WHERE node_id=?", (r["node_id"],))


def test_cache_keeps_vectors_of_deleted_nodes(make_service: Any, tree: Any) -> None:
    """An edit, a delete and a revert: vectors of deleted nodes move into the cache, so
    text seen before is never embedded again."""
    emb = Counting()
    svc = make_service(embedder=emb, **HEADINGS)
    tree.write("a.md", ALPHA)
    svc.ingest(roots_for_path(tree.projects))
    conn = svc.conn()
    first = {r["chunk_hash"]: r["node_id"] for r in _cache(conn)}
    vt = dbm.vec_table_name(_space(conn))
    vecs = {k: dbm.scalar(conn, f"SELECT embedding FROM {vt} WHERE node_id=?", (n,))
            for k, n in first.items()}
    tree.write("a.md", ALPHA.replace("Checkpoints run", "Checkpoints now run"))
    svc.ingest(roots_for_path(tree.projects))
    n_embedded = len(emb.texts)
    assert n_embedded == 3  # two first, then only the changed section
    stored = {r["chunk_hash"]: r for r in _cache(conn)}
    moved = [k for k in first if stored[k]["vector"] is not None]
    assert len(moved) == 1 and stored[moved[0]]["node_id"] is None
    assert stored[moved[0]]["vector"] == vecs[moved[0]]
    tree.write("a.md", ALPHA)  # back to the first text: both vectors come from the cache
    svc.ingest(roots_for_path(tree.projects))
    assert len(emb.texts) == n_embedded
    tree.remove("a.md")
    svc.ingest(roots_for_path(tree.projects))
    assert dbm.scalar(conn, "SELECT COUNT(*) FROM knowledge_nodes") == 0
    assert all(r["vector"] is not None and r["node_id"] is None for r in _cache(conn))
    tree.write("a.md", ALPHA)
    svc.ingest(roots_for_path(tree.projects))
    assert len(emb.texts) == n_embedded
    assert {h.path for h in svc.search("busy_timeout").hits} == {"a.md"}
    assert svc.doctor()[1] == []


def test_dangling_cache_reference_is_a_miss_and_is_repaired(make_service: Any,
                                                             tree: Any) -> None:
    """A cache row whose node vanished without the projection (a cascade) is embedded
    again, not served empty, and then refers to the new node."""
    emb = Counting()
    svc = make_service(embedder=emb, **HEADINGS)
    tree.write("a.md", ALPHA)
    svc.ingest(roots_for_path(tree.projects))
    conn = svc.conn()
    vt = dbm.vec_table_name(_space(conn))
    conn.execute(f"DELETE FROM {vt}")  # the vectors vanish behind the projection's back
    tree.rename("a.md", "b.md")  # same chunk texts: served from the cache, were it whole
    svc.ingest(roots_for_path(tree.projects))
    assert len(emb.texts) == 4  # the two vectors were gone: embedded again
    rows = _cache(conn)
    assert len(rows) == 2
    nodes = {int(r[0]) for r in conn.execute(f"SELECT node_id FROM {vt}")}
    assert all(r["vector"] is None and r["node_id"] in nodes for r in rows)
    assert {h.path for h in svc.search("checkpoints", mode="vector").hits} == {"b.md"}


def test_markdown_is_stored_once_compressed_and_redacted(make_service: Any, tree: Any,
                                                         tmp_path: Path) -> None:
    """Compressed columns hide text from a grep of the file, so the redaction is checked
    on their text: the secret is in no column, the marker is."""
    secret = "ghp_" + "Zq7Xk2Lm9Pw4Rt6Yv8Bn3Cd5Fg1Hj0KsQeWa"
    tree.write("a.md", f"# Deploy\n\nUse token {secret} for the registry.\n")
    db = tmp_path / "m.db"
    svc = make_service(db=db)
    svc.ingest(roots_for_path(tree.projects))
    conn = svc.conn()
    # a live document's content is its current snapshot: the row keeps no copy
    assert dbm.scalar(conn, "SELECT COUNT(*) FROM memory_documents WHERE content_z IS NULL") == 1
    for table, col in dbm.PACKED_COLUMNS[1:]:
        texts = [dbm.unpack_text(r[0]) or "" for r in conn.execute(f"SELECT {col}_z FROM {table}")]
        assert texts and all(secret not in t for t in texts), table
        assert any("[REDACTED:github-token]" in t for t in texts), table
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert secret.encode() not in db.read_bytes()
