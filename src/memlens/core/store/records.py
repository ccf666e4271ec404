"""Durable source records: documents, immutable revisions and their chunks.

Everything here is the *source* side of memlens. Each public write function runs
one ``BEGIN IMMEDIATE`` transaction, so a file's document, revision and chunks
land together or not at all. The search projection is built afterwards by
:mod:`memlens.core.projection` (its run: :mod:`memlens.core.projection.run`).

Retention: the current revision keeps its full redacted snapshot, which is also the
document's content (schema v8: the document row keeps a copy only once tombstoned, as
the delete revision has no snapshot; see :data:`memlens.core.store.schema.DOC_CONTENT_SQL`). When a
revision is superseded it keeps a bounded summary (``SUMMARY_MAX_CHARS``) and a
bounded unified diff to its successor (``DIFF_MAX_LINES`` lines and
``DIFF_MAX_BYTES`` bytes, whichever is hit first; ``diff_truncated`` is set when
it was cut). The bounds were chosen from ``benchmarks/retention.py``; see
``docs/benchmarks.md``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from memlens.core import faults
from memlens.core.chunking.choice import config_label
from memlens.core.chunking.chunker import CHUNKER_NAME, CHUNKER_VERSION, Chunk, ChunkerConfig
from memlens.core.store.db import pack_config, pack_text, rows, scalar, sha256_bytes, write_txn
from memlens.core.store.schema import DOC_CONTENT_SQL

SOURCE_KIND = "claude-auto-memory"
SUMMARY_MAX_CHARS = 600
DIFF_MAX_LINES = 400
DIFF_MAX_BYTES = 32 * 1024

Clock = Callable[[], float]


def content_hash(text: str) -> str:
    """sha256 hex of redacted content: the revision identity."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SourceChanged(Exception):
    """The file changed on disk after it was read; the write was skipped."""


def _verify_unchanged(pf: PreparedFile) -> None:
    """Inside the write lock: refuse to store content that is no longer on disk.

    Without this, a slow process could overwrite a newer revision stored by another
    process with the older text it read earlier.
    """
    path = pf.read_path or pf.source_path
    if not path:
        return
    try:
        st = os.stat(path)
    except OSError:
        raise SourceChanged("file vanished while being ingested; it will be read again") from None
    if st.st_size != pf.size or (pf.mtime_ns >= 0 and st.st_mtime_ns != pf.mtime_ns):
        raise SourceChanged("file changed while being ingested; it will be read again")


@dataclass(frozen=True)
class PreparedFile:
    """A file read, redacted and chunked, ready to be written."""

    repository: str
    logical_path: str
    source_path: str
    source_root: str
    text: str
    content_hash: str
    source_hash: str
    mtime_ns: int
    size: int
    chunks: Sequence[Chunk]
    front_matter: dict[str, str]
    chunker: ChunkerConfig
    read_path: str = ""  # the file on disk, when source_path is a stored (redacted) name


def unified_diff(old: str, new: str, old_name: str, new_name: str) -> tuple[str, bool]:
    """A bounded unified diff; returns (diff text, truncated?).

    Lines keep their own endings and a missing final newline is made explicit,
    so headers never run together (``--- a+++ b`` is a known bug of diffs made
    with ``lineterm=""``).
    """
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    out: list[str] = []
    size = 0
    truncated = False
    for line in difflib.unified_diff(a, b, fromfile=old_name, tofile=new_name, n=2):
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        if len(out) >= DIFF_MAX_LINES or size + len(line.encode()) > DIFF_MAX_BYTES:
            truncated = True
            break
        out.append(line)
        size += len(line.encode())
    return "".join(out), truncated


def change_summary(old: str, new: str) -> str:
    """A short human summary of a change (bounded to SUMMARY_MAX_CHARS)."""
    a = old.splitlines()
    b = new.splitlines()
    sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    added = removed = 0
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    heads_a = {ln.strip() for ln in a if ln.lstrip().startswith("#")}
    heads_b = {ln.strip() for ln in b if ln.lstrip().startswith("#")}
    parts = [
        f"+{added} -{removed} lines; {len(old.encode()):,} -> {len(new.encode()):,} bytes"
    ]
    new_heads = sorted(heads_b - heads_a)
    gone_heads = sorted(heads_a - heads_b)
    if new_heads:
        parts.append("new headings: " + ", ".join(new_heads))
    if gone_heads:
        parts.append("removed headings: " + ", ".join(gone_heads))
    s = "; ".join(parts)
    return s if len(s) <= SUMMARY_MAX_CHARS else s[: SUMMARY_MAX_CHARS - 1] + "…"


def find_document(conn: apsw.Connection, repository: str, logical_path: str) -> dict[str, Any] | None:
    """The document row at (repository, logical_path), live or tombstoned."""
    r = rows(
        conn,
        "SELECT * FROM memory_documents WHERE source_kind=? AND repository=? AND logical_path=?",
        (SOURCE_KIND, repository, logical_path),
    )
    return r[0] if r else None


_DOC_COLUMNS = (
    "id, source_kind, repository, logical_path, source_path, source_root, content_hash,"
    " source_hash, source_mtime_ns, source_size, observed_at, front_matter, doc_type, doc_name,"
    " current_revision_id, active_revision_id, projection_status, projection_error,"
    " projection_attempts, projection_owner, projection_started_at, projection_updated_at,"
    " projection_next_attempt_at, tombstoned_at")


def get_document(conn: apsw.Connection, doc_id: int, *,
                 content: bool = False) -> dict[str, Any] | None:
    """The document row by id; its ``content`` only when asked for (the current revision's
    snapshot, or a tombstoned document's last content; it is decompressed)."""
    cols = _DOC_COLUMNS + (f", {DOC_CONTENT_SQL} AS content" if content else "")
    r = rows(conn, f"SELECT {cols} FROM memory_documents d WHERE d.id=?", (doc_id,))
    return r[0] if r else None


def _next_seq(conn: apsw.Connection, doc_id: int) -> int:
    v = scalar(conn, "SELECT COALESCE(MAX(seq), 0) FROM memory_revisions WHERE document_id=?",
               (doc_id,))
    return int(v) + 1


def _insert_revision(
    conn: apsw.Connection,
    doc_id: int,
    kind: str,
    pf: PreparedFile | None,
    *,
    content_hash_: str,
    logical_path: str,
    snapshot: str | None,
    now: float,
    previous_path: str | None = None,
    chunker: ChunkerConfig | None = None,
    summary: str | None = None,
) -> int:
    cfg = chunker or (pf.chunker if pf else None)
    text = pf.text if pf else (snapshot or "")
    conn.execute(
        "INSERT INTO memory_revisions(document_id, seq, change_kind, content_hash, logical_path,"
        " previous_path, snapshot_z, summary, size_bytes, line_count, source_mtime_ns, observed_at,"
        " chunker_name, chunker_version, chunker_config_z, chunk_count, embedder_status)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            doc_id,
            _next_seq(conn, doc_id),
            kind,
            content_hash_,
            logical_path,
            previous_path,
            pack_text(snapshot),
            summary,
            len(text.encode("utf-8")),
            text.count("\n") + (1 if text and not text.endswith("\n") else 0),
            pf.mtime_ns if pf else None,
            now,
            CHUNKER_NAME if cfg else None,
            CHUNKER_VERSION if cfg else None,
            pack_config(cfg.canonical_json()) if cfg else None,
            len(pf.chunks) if pf else 0,
            "pending" if kind != "delete" else None,
        ),
    )
    rev_id = int(conn.last_insert_rowid())
    faults.checkpoint("store.revision")
    return rev_id


def insert_chunks(conn: apsw.Connection, rev_id: int, chunks: Sequence[Chunk]) -> None:
    """Write the chunks of a revision."""
    conn.executemany(
        "INSERT INTO memory_chunks(revision_id, ordinal, heading_path, start_char, end_char,"
        " start_byte, end_byte, overlap_chars, text_z, chunk_sha256, tokens, reason)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        [
            (
                rev_id,
                c.ordinal,
                json.dumps(list(c.heading_path), ensure_ascii=False),
                c.start_char,
                c.end_char,
                c.start_byte,
                c.end_byte,
                c.overlap_chars,
                pack_text(c.text),
                sha256_bytes(c.hash),
                c.tokens,
                c.reason,
            )
            for c in chunks
        ],
    )
    faults.checkpoint("store.chunks")


def _supersede(conn: apsw.Connection, rev_id: int | None, new_text: str, old_path: str,
               new_path: str, summary_override: str | None = None) -> None:
    """Turn the current revision into history: drop snapshot, keep summary + diff."""
    if rev_id is None:
        return
    old = scalar(conn, "SELECT snapshot FROM memory_revisions WHERE id=?", (rev_id,))
    if old is None:
        return
    diff, truncated = unified_diff(old, new_text, f"a/{old_path}", f"b/{new_path}")
    summary = summary_override or change_summary(old, new_text)
    conn.execute(
        "UPDATE memory_revisions SET snapshot_z=NULL, diff=?, diff_truncated=?,"
        " summary=COALESCE(?, summary) WHERE id=?",
        (diff, int(truncated), summary, rev_id),
    )
    faults.checkpoint("store.supersede")


def prune_unused_chunks(conn: apsw.Connection, doc_id: int) -> None:
    """Drop chunks of revisions that are neither current nor active (history keeps diffs)."""
    conn.execute(
        "DELETE FROM memory_chunks WHERE revision_id IN ("
        " SELECT r.id FROM memory_revisions r JOIN memory_documents d ON d.id=r.document_id"
        " WHERE r.document_id=? AND r.id IS NOT d.current_revision_id"
        " AND r.id IS NOT d.active_revision_id)"
        " AND id NOT IN (SELECT chunk_id FROM knowledge_node_memory_chunks)",
        (doc_id,),
    )


def set_revision_embedder(conn: apsw.Connection, rev_id: int, fingerprint: str,
                          status: str) -> None:
    """Record which embedder projected a revision and how far (``ready``, ``pending``
    while stage 2 still owes vectors, ``failed``); inside the caller's transaction."""
    conn.execute("UPDATE memory_revisions SET embedder=?, embedder_status=? WHERE id=?",
                 (fingerprint, status, rev_id))


def mark_revision_vectors_ready(conn: apsw.Connection, doc_id: int) -> None:
    """The document's active revision has every vector it planned: its embedder status
    becomes ``ready``; inside the caller's transaction."""
    conn.execute("UPDATE memory_revisions SET embedder_status='ready' WHERE id="
                 "(SELECT active_revision_id FROM memory_documents WHERE id=?"
                 "  AND vector_done>=vector_total)", (doc_id,))


def _doc_fields(pf: PreparedFile, now: float) -> dict[str, Any]:
    return {
        "source_path": pf.source_path,
        "source_root": pf.source_root,
        "content_z": None,  # a live document's content is its current snapshot
        "content_hash": pf.content_hash,
        "source_hash": pf.source_hash,
        "source_mtime_ns": pf.mtime_ns,
        "source_size": pf.size,
        "observed_at": now,
        "front_matter": json.dumps(pf.front_matter, ensure_ascii=False, sort_keys=True),
        "doc_type": pf.front_matter.get("type"),
        "doc_name": pf.front_matter.get("name"),
    }


def _queue_projection(conn: apsw.Connection, doc_id: int, now: float) -> None:
    conn.execute(
        "UPDATE memory_documents SET projection_status='pending', projection_error=NULL,"
        " projection_attempts=0, projection_owner=NULL, projection_next_attempt_at=NULL,"
        " projection_updated_at=? WHERE id=?",
        (now, doc_id),
    )


def write_create(conn: apsw.Connection, pf: PreparedFile, now: float) -> int:
    """Create a document (or revive a tombstoned one) with a `create` revision."""
    with write_txn(conn):
        _verify_unchanged(pf)
        existing = find_document(conn, pf.repository, pf.logical_path)
        fields = _doc_fields(pf, now)
        if existing is None:
            cols = ", ".join(["source_kind", "repository", "logical_path", *fields])
            conn.execute(
                f"INSERT INTO memory_documents({cols}) VALUES ({', '.join('?' * (len(fields) + 3))})",
                (SOURCE_KIND, pf.repository, pf.logical_path, *fields.values()),
            )
            doc_id = int(conn.last_insert_rowid())
        else:
            doc_id = int(existing["id"])
            _set_fields(conn, doc_id, {**fields, "tombstoned_at": None})
        faults.checkpoint("store.document")
        _record_revision(conn, doc_id, "create", pf, now)
    return doc_id


def _record_revision(conn: apsw.Connection, doc_id: int, kind: str, pf: PreparedFile, now: float,
                     previous_path: str | None = None) -> int:
    """The shared tail of every content-bearing write: new current revision + chunks,
    projection queued, unreferenced old chunks dropped. Returns the revision id."""
    rev = _insert_revision(conn, doc_id, kind, pf, content_hash_=pf.content_hash,
                           logical_path=pf.logical_path, snapshot=pf.text, now=now,
                           previous_path=previous_path)
    insert_chunks(conn, rev, pf.chunks)
    conn.execute("UPDATE memory_documents SET current_revision_id=? WHERE id=?", (rev, doc_id))
    _queue_projection(conn, doc_id, now)
    prune_unused_chunks(conn, doc_id)
    faults.checkpoint("store.commit")
    return rev


def _set_fields(conn: apsw.Connection, doc_id: int, fields: dict[str, Any]) -> None:
    sets = ", ".join(f"{k}=?" for k in fields)
    conn.execute(f"UPDATE memory_documents SET {sets} WHERE id=?", (*fields.values(), doc_id))


def write_update(conn: apsw.Connection, doc_id: int, pf: PreparedFile, now: float) -> str:
    """Record new content for a live document.

    Returns ``"updated"``, or ``"unchanged"`` when the redacted content hash is
    the same (only the stat fields are refreshed then).
    """
    with write_txn(conn):
        _verify_unchanged(pf)
        doc = get_document(conn, doc_id)
        if doc is None:
            raise LookupError(f"document {doc_id} vanished")
        if doc["content_hash"] == pf.content_hash and doc["tombstoned_at"] is None:
            _set_fields(conn, doc_id, {
                "source_mtime_ns": pf.mtime_ns, "source_size": pf.size,
                "source_hash": pf.source_hash, "source_path": pf.source_path,
                "source_root": pf.source_root, "observed_at": now,
            })
            return "unchanged"
        _supersede(conn, doc["current_revision_id"], pf.text, doc["logical_path"], pf.logical_path)
        _set_fields(conn, doc_id, _doc_fields(pf, now))
        faults.checkpoint("store.document")
        _record_revision(conn, doc_id, "update", pf, now)
    return "updated"


def write_rename(conn: apsw.Connection, doc_id: int, pf: PreparedFile, now: float) -> None:
    """Move a live document to a new logical path (same content) with a `rename` revision.

    Chunk and node ids change (new revision); the content hash does not.
    """
    with write_txn(conn):
        _verify_unchanged(pf)
        doc = get_document(conn, doc_id)
        if doc is None:
            raise LookupError(f"document {doc_id} vanished")
        old_path = doc["logical_path"]
        _supersede(conn, doc["current_revision_id"], pf.text, old_path, pf.logical_path,
                   summary_override=f"renamed {old_path} -> {pf.logical_path}")
        _set_fields(conn, doc_id, {**_doc_fields(pf, now), "logical_path": pf.logical_path})
        faults.checkpoint("store.document")
        # Node rows carry the path; they are rebuilt by the projection swap.
        _record_revision(conn, doc_id, "rename", pf, now, previous_path=old_path)


def rename_identity(conn: apsw.Connection, doc_id: int, names: dict[str, str],
                    new_source_path: str | None, now: float) -> bool:
    """Rewrite paths stored before secret file names were redacted
    (:mod:`memlens.core.ingest.names`), in place and without a revision.

    Each ``old: new`` pair in ``names`` is replaced in the document's row (when it is
    the document's path; ``new_source_path`` then replaces the source path) and in
    every revision's path, previous path, diff and summary; a live document is queued
    so its search nodes are rebuilt with the new path. Returns False (nothing changed)
    when another document of the repository already has the new path."""
    with write_txn(conn):
        doc = get_document(conn, doc_id)
        if doc is None:
            return False
        old = str(doc["logical_path"])
        new_path = names.get(old)
        if new_path is not None and new_path != old:
            if find_document(conn, doc["repository"], new_path) is not None:
                return False
            conn.execute("UPDATE memory_documents SET logical_path=?, source_path=? WHERE id=?",
                         (new_path, new_source_path, doc_id))
        for before, after in names.items():
            conn.execute(
                "UPDATE memory_revisions SET logical_path=replace(logical_path, ?1, ?2),"
                " previous_path=replace(previous_path, ?1, ?2), diff=replace(diff, ?1, ?2),"
                " summary=replace(summary, ?1, ?2) WHERE document_id=?3",
                (before, after, doc_id))
        if doc["tombstoned_at"] is None:
            _queue_projection(conn, doc_id, now)
    return True


def stored_names(conn: apsw.Connection, doc_id: int) -> set[str]:
    """Every path one document's rows name: its own and its revisions' (previous) paths."""
    out = {str(r[0]) for r in conn.execute(
        "SELECT logical_path FROM memory_documents WHERE id=?1 UNION"
        " SELECT logical_path FROM memory_revisions WHERE document_id=?1 UNION"
        " SELECT previous_path FROM memory_revisions WHERE document_id=?1"
        " AND previous_path IS NOT NULL", (doc_id,))}
    return out


def write_delete(conn: apsw.Connection, doc_id: int, now: float,
                 *, unproject: Callable[[apsw.Connection, int], object]) -> None:
    """Tombstone a document: a `delete` revision, and out of search at once.

    ``unproject`` removes the document from the search projection inside the same
    transaction; it is :func:`memlens.core.projection.swap.delete_nodes` (the projection
    module owns the node, FTS, vector and junction tables, so the store does not
    write them itself).
    """
    with write_txn(conn):
        doc = get_document(conn, doc_id)
        if doc is None or doc["tombstoned_at"] is not None:
            return
        old_text = scalar(conn, "SELECT snapshot FROM memory_revisions WHERE id=?",
                          (doc["current_revision_id"],)) or ""
        # the snapshot is dropped below: the document row keeps the last content
        conn.execute("UPDATE memory_documents SET content_z=COALESCE(content_z, (SELECT"
                     " snapshot_z FROM memory_revisions WHERE id=?)) WHERE id=?",
                     (doc["current_revision_id"], doc_id))
        _supersede(conn, doc["current_revision_id"], "", doc["logical_path"], doc["logical_path"],
                   summary_override=f"deleted ({len(old_text.encode()):,} bytes)")
        rev = _insert_revision(conn, doc_id, "delete", None,
                               content_hash_=doc["content_hash"] or content_hash(""),
                               logical_path=doc["logical_path"], snapshot=None, now=now,
                               summary="file deleted")
        unproject(conn, doc_id)
        _set_fields(conn, doc_id, {
            "tombstoned_at": now, "current_revision_id": rev, "active_revision_id": None,
            "projection_status": "ready", "projection_error": None, "projection_attempts": 0,
            "projection_owner": None, "projection_next_attempt_at": None,
            "projection_updated_at": now, "observed_at": now,
        })
        prune_unused_chunks(conn, doc_id)
        faults.checkpoint("store.commit")


def _cfg_label(stored: str | None) -> str:
    """``adaptive/400/80`` for a stored canonical chunker config (``-`` if none)."""
    if not stored:
        return "-"
    try:
        return config_label(ChunkerConfig.from_json(stored))
    except (ValueError, TypeError):
        return stored


def write_rechunk(conn: apsw.Connection, doc_id: int, config: ChunkerConfig,
                  chunks: Sequence[Chunk], now: float) -> int | None:
    """Record a `rechunk` revision (same content, new chunker config).

    Returns the new revision id, or None when the document already uses this config
    or is tombstoned.
    """
    with write_txn(conn):
        doc = get_document(conn, doc_id, content=True)
        if doc is None or doc["tombstoned_at"] is not None:
            return None
        cur = rows(conn, "SELECT * FROM memory_revisions WHERE id=?", (doc["current_revision_id"],))
        if cur and cur[0]["chunker_config"] == config.canonical_json():
            return None
        text = doc["content"] or ""
        old_cfg = cur[0]["chunker_config"] if cur else None
        _supersede(conn, doc["current_revision_id"], text, doc["logical_path"],
                   doc["logical_path"], summary_override=f"rechunked: {_cfg_label(old_cfg)}"
                   f" → {config_label(config)}")
        pf = PreparedFile(
            repository=doc["repository"], logical_path=doc["logical_path"],
            source_path=doc["source_path"] or "", source_root=doc["source_root"] or "",
            text=text, content_hash=doc["content_hash"], source_hash=doc["source_hash"] or "",
            mtime_ns=doc["source_mtime_ns"] or 0, size=doc["source_size"] or 0, chunks=chunks,
            front_matter=json.loads(doc["front_matter"] or "{}"), chunker=config)
        rev = _record_revision(conn, doc_id, "rechunk", pf, now)
    return rev


def repositories_at(conn: apsw.Connection, source_root: str) -> list[str]:
    """The repositories of the live documents read from the memory folder ``source_root``."""
    return [str(r[0]) for r in conn.execute(
        "SELECT DISTINCT repository FROM memory_documents WHERE tombstoned_at IS NULL"
        " AND source_root=? ORDER BY repository", (source_root,))]


def live_documents_under(conn: apsw.Connection, source_root: str,
                         repository: str | None = None) -> list[dict[str, Any]]:
    """Live documents whose memory folder is ``source_root``, and, with ``repository``,
    every live document of that repository wherever it was last read from.

    A document's identity is its repository and logical path, not the absolute folder:
    a memory folder that was moved, or is reached through a symlink or another
    ``CLAUDE_CONFIG_DIR``, still finds (and can delete) the documents stored from the
    old path.
    """
    sql = ("SELECT id, repository, logical_path, content_hash, source_path, source_root,"
           " source_mtime_ns, source_size, source_hash FROM memory_documents"
           " WHERE tombstoned_at IS NULL"
           " AND (source_root=?")
    params: tuple[str, ...] = (source_root,)
    if repository is not None:
        sql += " OR repository=?"
        params = (source_root, repository)
    return rows(conn, sql + ")", params)


def apply_retention(conn: apsw.Connection, doc_id: int, max_revisions: int,
                    max_age_days: int, now: float) -> int:
    """Prune old revisions of one document; returns how many were removed.

    The current and the active revision are never pruned; the remaining ones keep
    their sequence numbers, so the timeline's order is unchanged.
    """
    if max_revisions <= 0 and max_age_days <= 0:
        return 0
    with write_txn(conn):
        doc = get_document(conn, doc_id)
        if doc is None:
            return 0
        keep = {doc["current_revision_id"], doc["active_revision_id"]}
        revs = rows(conn, "SELECT id, seq, observed_at FROM memory_revisions WHERE document_id=?"
                    " ORDER BY seq DESC", (doc_id,))
        doomed: list[int] = []
        for i, r in enumerate(revs):
            if r["id"] in keep:
                continue
            too_many = max_revisions > 0 and i >= max_revisions
            too_old = max_age_days > 0 and now - r["observed_at"] > max_age_days * 86400
            if too_many or too_old:
                doomed.append(int(r["id"]))
        for rid in doomed:
            conn.execute("DELETE FROM memory_chunks WHERE revision_id=? AND id NOT IN"
                         " (SELECT chunk_id FROM knowledge_node_memory_chunks)", (rid,))
            conn.execute("DELETE FROM memory_revisions WHERE id=?", (rid,))
    return len(doomed)


def document_ids(conn: apsw.Connection) -> list[int]:
    """Every document id, live and tombstoned, in id order."""
    return [int(r[0]) for r in conn.execute("SELECT id FROM memory_documents ORDER BY id")]


def now_clock() -> float:
    """Default clock (seconds since the epoch)."""
    return time.time()
