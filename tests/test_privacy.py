"""No planted secret survives anywhere in the database file, its WAL or FTS shadow tables,
and the stored source hash cannot confirm a guessed secret without the install key."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from memlens.core.ingest.sources import roots_for_path
from memlens.core.redact.evaluate import load_labelled
from memlens.core.store import db as dbm
from tests.conftest import REPO

LABELLED = REPO / "tests" / "data" / "secrets" / "labelled.jsonl"


def _raw_bytes(db: Path) -> bytes:
    out = b""
    for suffix in ("", "-wal", "-shm", "-journal"):
        p = Path(str(db) + suffix)
        if p.exists():
            out += p.read_bytes()
    return out


def _packed_texts(conn: Any) -> list[str]:
    """Compressed columns hide their text from a grep of the bytes: read them decompressed."""
    return [dbm.unpack_text(z) or "" for table, col in dbm.PACKED_COLUMNS
            for (z,) in conn.execute(f"SELECT {col}_z FROM {table}")]


def test_planted_secrets_absent_from_db_wal_and_fts(make_service: Any, tree: Any,
                                                    tmp_path: Path) -> None:
    """Every labelled secret, planted in memory files, is absent from the raw database bytes."""
    examples = [e for e in load_labelled(LABELLED) if e.label == "secret"]
    assert len(examples) >= 40
    # Spread secrets over several files, some split into sections so FTS has many rows.
    for i in range(0, len(examples), 10):
        body = "\n\n".join(f"## Note {j}\n\n{e.text}\n" for j, e in enumerate(examples[i:i + 10]))
        tree.write(f"secrets-{i // 10}.md", f"# Credentials notes {i}\n\n{body}")
    db = tmp_path / "memlens.db"
    svc = make_service(db=db)
    out = svc.ingest(roots_for_path(tree.projects)).as_json()
    assert out["failed"] == [] and out["projection"]["ready"] == out["created"]
    conn = svc.conn()
    # FTS shadow tables hold the tokenised text: check them through SQL too.
    shadow = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE name LIKE 'knowledge_nodes_fts%'")]
    assert any(n.endswith("_data") for n in shadow)
    raw_before_checkpoint = _raw_bytes(db)  # WAL still holds the pages
    assert Path(str(db) + "-wal").exists()
    leaks = []
    for e in examples:
        assert e.secret
        needle = e.secret.encode()
        if needle in raw_before_checkpoint:
            leaks.append(e.id)
        # FTS tokens are lowercased parts; the longest alphanumeric run must not be a term.
        parts = sorted("".join(c if c.isalnum() else " " for c in e.secret).split(), key=len)
        longest = parts[-1].lower() if parts else ""
        if len(longest) >= 12:
            hit = dbm.scalar(conn, "SELECT COUNT(*) FROM knowledge_nodes_fts WHERE"
                             " knowledge_nodes_fts MATCH ?", (f'"{longest}"',))
            if hit:
                leaks.append(f"{e.id} (fts term)")
    assert leaks == []
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = _raw_bytes(db)
    assert [e.id for e in examples if e.secret and e.secret.encode() in raw] == []
    packed = _packed_texts(conn)
    assert [e.id for e in examples if e.secret and any(e.secret in t for t in packed)] == []
    # The markers are what got stored.
    assert any("[REDACTED:" in t for t in packed)


def test_source_hash_is_keyed(make_service: Any, tree: Any) -> None:
    """The stored raw-file hash is HMAC with the install key, not a plain sha256."""
    content = "# Login\n\npassword = hunter2-correct-horse\n"
    tree.write("login.md", content)
    svc = make_service()
    svc.ingest(roots_for_path(tree.projects))
    stored = dbm.scalar(svc.conn(), "SELECT source_hash FROM memory_documents")
    plain = hashlib.sha256(content.encode()).hexdigest()
    assert stored and stored != plain
    import hmac

    assert stored == hmac.new(b"k" * 32, content.encode(), hashlib.sha256).hexdigest()
    assert "hunter2" not in svc.locate(None, "login.md").content


def test_planted_new_family_secrets_absent_from_raw_files(make_service: Any, tree: Any,
                                                          tmp_path: Path) -> None:
    """Issue 16's token families (16 kinds x 4 contexts = 64 plantings) leave no byte behind."""
    from tests.test_redact_families import CONTEXTS, FAMILIES

    assert len({k for k, _ in FAMILIES}) >= 14
    for i, (kind, secret) in enumerate(FAMILIES):
        body = "\n\n".join(f"## {ctx}\n\n{t.format(s=secret)}\n" for ctx, t in CONTEXTS.items())
        tree.write(f"fam-{i}-{kind}.md", f"# Deploy notes {i}\n\n{body}")
    db = tmp_path / "memlens.db"
    svc = make_service(db=db)
    out = svc.ingest(roots_for_path(tree.projects)).as_json()
    assert out["failed"] == []
    raw = _raw_bytes(db)
    assert [k for k, s in FAMILIES if s.encode() in raw] == []
    svc.conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = _raw_bytes(db)
    assert [k for k, s in FAMILIES if s.encode() in raw] == []
    packed = _packed_texts(svc.conn())
    assert [k for k, s in FAMILIES if any(s in t for t in packed)] == []
    assert any("[REDACTED:" in t for t in packed)
