"""Schema v8 (issue 17, a smaller database): node text is stored compressed, and a
document's content is read from its current revision's snapshot instead of a second copy
in its row (which keeps one only once tombstoned, when no snapshot holds it).

The upgrade is checked on a real schema-7 file made by memlens at schema 7
(tests/data/dbsize_v7_make.py): every document's content, history and chunks and the
hits of every search mode read back exactly as memlens read them at schema 7.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memlens.core.chunking.chunker import ChunkerConfig
from memlens.core.ingest.sources import roots_for_path
from memlens.core.store import db as dbm
from tests.data.dbsize_v7_make import read_back

DATA = Path(__file__).resolve().parent / "data"
ALPHA = "# Alpha\n\nWAL mode and busy_timeout keep readers going.\n\n## Second\n\nMore.\n"


def _v7(tmp_path: Path) -> Path:
    db = tmp_path / "v7.db"
    shutil.copyfile(DATA / "dbsize_v7.db", db)
    return db


def _same(svc: Any) -> dict[str, Any]:
    return json.loads(json.dumps(read_back(svc), ensure_ascii=False))


def _rounded(search: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Hits with scores to 5 places: a vector score's last bits differ between the vec0
    and the in-memory matrix path (seen reading the same v7 file at schema 7 twice)."""
    return {k: [{**h, "score": round(h["score"], 5)} for h in hits]
            for k, hits in search.items()}


def _own_copies(conn: Any) -> dict[str, bool]:
    """logical path -> whether the document row holds a copy of its content."""
    return {str(p): bool(z) for p, z in conn.execute(
        "SELECT logical_path, content_z IS NOT NULL FROM memory_documents")}


def test_upgrade_from_v7_reads_back_the_same(tmp_path: Path, make_service: Any) -> None:
    db = _v7(tmp_path)
    want = json.loads((DATA / "dbsize_v7.json").read_text(encoding="utf-8"))
    conn = dbm.connect(db)
    assert dbm.user_version(conn) == dbm.SCHEMA_VERSION == 9  # v9 (issue 37) follows on
    cols = {str(r[1]): int(r[6]) for r in conn.execute("PRAGMA table_xinfo('knowledge_nodes')")}
    assert cols["text"] == 2 and "text_z" in cols  # text: a VIRTUAL generated column
    assert "content" not in {str(r[1]) for r in conn.execute(
        "PRAGMA table_xinfo('memory_documents')")}
    # only the tombstone keeps its own copy (no revision snapshot holds its last content)
    assert _own_copies(conn) == {"alpha.md": False, "beta.md": False, "empty.md": False,
                                 "gamma.md": True, "sub/moved.md": False}
    assert dbm.scalar(conn, "SELECT typeof(text_z) FROM knowledge_nodes LIMIT 1") == "blob"
    conn.execute("INSERT INTO knowledge_nodes_fts(knowledge_nodes_fts, rank)"
                 " VALUES('integrity-check', 1)")
    conn.close()
    svc = make_service(db=db)
    got = _same(svc)
    assert got["documents"] == want["documents"]
    assert got["nodes"] == want["nodes"]
    assert _rounded(got["search"]) == _rounded(want["search"])
    assert any(want["search"][k] for k in want["search"] if k.startswith("lexical:"))
    assert svc.doctor()[1] == []


def test_upgraded_file_keeps_working(tmp_path: Path, make_service: Any, tree: Any) -> None:
    """Edits, a delete, a revival, a rechunk and a purge on the upgraded file: contents
    and snapshots stay one, the tombstone's copy comes and goes."""
    db = _v7(tmp_path)
    svc = make_service(db=db)
    conn = svc.conn()
    alpha = svc.locate(None, "alpha.md")
    beta = svc.locate(None, "beta.md")
    gamma = svc.locate(None, "gamma.md")
    assert alpha and beta and gamma and gamma.tombstoned and "deleted later" in gamma.content
    svc.rechunk([alpha.id], ChunkerConfig(strategy="headings"))
    svc.project()
    after = svc.detail(alpha.id)
    assert after is not None and after.content == alpha.content
    assert svc.revisions(alpha.id)[0].change_kind == "rechunk"
    assert svc.revisions(alpha.id)[0].snapshot == alpha.content
    out = svc.purge()  # nothing to redact: nothing rewritten, copies unchanged
    assert out is not None
    assert _own_copies(conn)["gamma.md"] and not _own_copies(conn)["alpha.md"]
    assert svc.detail(gamma.id).content == gamma.content  # type: ignore[union-attr]
    assert {h.path for h in svc.search("busy_timeout", mode="lexical").hits} == {"alpha.md"}
    assert svc.doctor()[1] == []


def test_upgrade_keeps_a_copy_that_differs_from_its_snapshot(tmp_path: Path,
                                                             make_service: Any) -> None:
    """The v7 row's copy is dropped only where it equals the current snapshot; one that
    differs is kept and still read."""
    db = _v7(tmp_path)
    raw = dbm.connect(db, migrate=False)
    assert dbm.user_version(raw) == 7
    raw.execute("UPDATE memory_documents SET content_z=memlens_deflate('# Odd\n')"
                " WHERE logical_path='beta.md'")
    raw.close()
    svc = make_service(db=db)
    copies = _own_copies(svc.conn())
    assert copies["beta.md"] and copies["gamma.md"] and not copies["alpha.md"]
    beta = svc.locate(None, "beta.md")
    assert beta is not None and beta.content == "# Odd\n"


def test_live_content_is_the_current_snapshot(make_service: Any, tree: Any) -> None:
    """Create, edit, delete and revive: the row holds a copy only while tombstoned, and
    detail, rechunk and history read the same text."""
    svc = make_service()
    conn = svc.conn()
    tree.write("a.md", ALPHA)
    svc.ingest(roots_for_path(tree.projects))
    doc = svc.locate(None, "a.md")
    assert doc is not None and doc.content == ALPHA and _own_copies(conn) == {"a.md": False}
    edited = ALPHA.replace("More.", "More, edited.")
    tree.write("a.md", edited)
    svc.ingest(roots_for_path(tree.projects))
    doc = svc.detail(doc.id)
    assert doc is not None and doc.content == edited
    revs = svc.revisions(doc.id)
    assert revs[0].snapshot == edited and revs[1].snapshot is None and "edited" in revs[1].diff
    svc.rechunk([doc.id], ChunkerConfig(strategy="windows", max_tokens=8, overlap_tokens=0))
    assert "".join(c.text for c in svc.chunks(doc.id)).replace("\n", "") != ""
    assert svc.detail(doc.id).content == edited  # type: ignore[union-attr]
    tree.remove("a.md")
    svc.ingest(roots_for_path(tree.projects))
    gone = svc.detail(doc.id)
    assert gone is not None and gone.tombstoned and gone.content == edited
    assert _own_copies(conn) == {"a.md": True}
    assert svc.revisions(doc.id)[0].snapshot is None  # the delete revision has none
    tree.write("a.md", ALPHA)
    svc.ingest(roots_for_path(tree.projects))
    back = svc.detail(doc.id)
    assert back is not None and not back.tombstoned and back.content == ALPHA
    assert _own_copies(conn) == {"a.md": False}
    assert svc.doctor()[1] == []


def test_node_text_is_stored_compressed(make_service: Any, tree: Any) -> None:
    """Nodes keep their text in ``text_z``; search, snippets and the FTS index read it
    back, and a node without text is refused as before."""
    svc = make_service()
    tree.write("a.md", ALPHA)
    svc.ingest(roots_for_path(tree.projects))
    conn = svc.conn()
    rows = list(conn.execute("SELECT text, text_z FROM knowledge_nodes"))
    assert rows and all(isinstance(z, bytes) and dbm.unpack_text(z) == t for t, z in rows)
    hit = svc.search("busy_timeout", mode="lexical").hits[0]
    assert "busy" in hit.snippet and hit.highlights
    conn.execute("INSERT INTO knowledge_nodes_fts(knowledge_nodes_fts, rank)"
                 " VALUES('integrity-check', 1)")
    import apsw

    with pytest.raises(apsw.ConstraintError, match="knowledge_nodes.text"):
        conn.execute("INSERT INTO knowledge_nodes(document_id, revision_id, ordinal, repository,"
                     " logical_path, heading, doc_type, vector_space, created_at)"
                     " SELECT document_id, revision_id, 99, repository, logical_path, heading,"
                     " doc_type, vector_space, 0 FROM knowledge_nodes LIMIT 1")


def test_config_blobs_and_chunk_hashes_read_back(make_service: Any, tree: Any) -> None:
    """Chunker configs are ~16-byte blobs against the preset dictionary, chunk hashes 32
    bytes; both read back as the same text, and what is not theirs is refused."""
    for cfg in (ChunkerConfig(), ChunkerConfig(strategy="windows", max_tokens=8,
                                               overlap_tokens=0)):
        blob = dbm.pack_config(cfg.canonical_json())
        assert blob is not None and len(blob) < 40
        assert dbm.unpack_text(blob) == cfg.canonical_json()
    assert dbm.unpack_text(dbm.pack_text("x" * 500)) == "x" * 500  # no dictionary
    forged = bytearray(dbm.pack_config("{}") or b"")
    forged[2:6] = b"\0\0\0\1"
    with pytest.raises(ValueError, match="unknown zlib dictionary"):
        dbm.unpack_text(bytes(forged))
    digest = "ab" * 32
    assert dbm.sha256_bytes(digest).hex() == digest
    for bad in ("AB" * 32, "ab" * 31, "not hex"):
        with pytest.raises(ValueError):
            dbm.sha256_bytes(bad)
    svc = make_service()
    tree.write("a.md", ALPHA)
    svc.ingest(roots_for_path(tree.projects))
    conn = svc.conn()
    for z, cfg in conn.execute("SELECT chunker_config_z, chunker_config FROM memory_revisions"):
        assert len(z) < 40 and json.loads(cfg)["name"] == "memlens-markdown"
    doc = svc.locate(None, "a.md")
    assert doc is not None
    for raw, hexed, text in conn.execute("SELECT chunk_sha256, chunk_hash, text FROM memory_chunks"):
        assert len(raw) == 32 and raw.hex() == hexed
        assert hexed == hashlib.sha256(text.encode()).hexdigest()
    assert [c.hash for c in svc.chunks(doc.id)] == [
        r[0] for r in conn.execute("SELECT chunk_hash FROM memory_chunks ORDER BY ordinal")]


def test_upgrade_refuses_a_hash_it_cannot_keep(tmp_path: Path) -> None:
    """A stored chunk hash that is no SHA-256 stops the upgrade: the file stays at schema 7
    with everything in it, rather than losing the hash."""
    db = _v7(tmp_path)
    raw = dbm.connect(db, migrate=False)
    raw.execute("UPDATE memory_chunks SET chunk_hash='odd' WHERE id=(SELECT MIN(id)"
                " FROM memory_chunks)")
    raw.close()
    with pytest.raises(dbm.DatabaseError, match="changed nothing: not a lowercase SHA-256"):
        dbm.connect(db)
    raw = dbm.connect(db, migrate=False)
    assert dbm.user_version(raw) == 7
    assert dbm.scalar(raw, "SELECT COUNT(*) FROM memory_chunks WHERE chunk_hash='odd'") == 1
    assert dbm.scalar(raw, "SELECT COUNT(*) FROM memory_documents WHERE content IS NOT NULL") == 5


def test_upgrade_does_not_grow_the_file(tmp_path: Path) -> None:
    """Each row shrinks in the same UPDATE that fills its compressed column, so the upgrade
    splits no page: the file is no larger afterwards (3,000 extra v7 nodes of ~900 bytes)."""
    db = _v7(tmp_path)
    raw = dbm.connect(db, migrate=False)
    raw.execute(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)"
        " INSERT INTO knowledge_nodes(document_id, revision_id, ordinal, repository,"
        " logical_path, heading, text, doc_type, vector_space, created_at)"
        " SELECT k.document_id, k.revision_id, 100 + i, k.repository, k.logical_path, k.heading,"
        " printf('%d ', i) || substr(replace(hex(randomblob(450)), '0', ' '), 1, 900), k.doc_type,"
        " NULL, 0 FROM n, (SELECT * FROM knowledge_nodes LIMIT 1) k")
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = dbm.scalar(raw, "PRAGMA page_count")
    texts = [r[0] for r in raw.execute("SELECT text FROM knowledge_nodes ORDER BY id")]
    raw.close()
    conn = dbm.connect(db)
    assert dbm.user_version(conn) == dbm.SCHEMA_VERSION
    assert [r[0] for r in conn.execute("SELECT text FROM knowledge_nodes ORDER BY id")] == texts
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert dbm.scalar(conn, "PRAGMA page_count") <= pages + 1  # + v9's (empty) partial index
    conn.execute("INSERT INTO knowledge_nodes_fts(knowledge_nodes_fts, rank)"
                 " VALUES('integrity-check', 1)")
