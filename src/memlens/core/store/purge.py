"""``memlens purge`` for the store's tables: re-redact a document's content, front
matter, every revision's snapshot, diff and summary, and its chunks, with the current
rules. Part of the store (the owner of ``memory_documents``, ``memory_revisions`` and
``memory_chunks``); split out of :mod:`memlens.core.store.records` to keep modules small.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import apsw

from memlens.core import faults
from memlens.core.chunking.chunker import Chunk, ChunkerConfig
from memlens.core.ingest.names import name_tag, needs_new_name
from memlens.core.redact.engine import redact_path
from memlens.core.store.db import pack_text, rows, scalar, write_txn
from memlens.core.store.records import (
    _queue_projection,
    _set_fields,
    content_hash,
    get_document,
    insert_chunks,
    prune_unused_chunks,
    rename_identity,
    stored_names,
)


def rename_secret_names(conn: apsw.Connection, doc_id: int, key: bytes, now: float) -> bool:
    """Give a document stored before secret file names were redacted its stored names
    (:func:`memlens.core.ingest.names.stored_logical_path`) in its row and every revision's
    path, previous path, diff and summary; returns whether anything was renamed.

    When a later ingest already created a document under the new name, this one keeps
    its own history under a tag of its own (the raw name goes either way)."""
    names = {p: n for p in stored_names(conn, doc_id) if (n := needs_new_name(p, key))}
    if not names:
        return False
    doc = get_document(conn, doc_id)
    if doc is None:
        return False
    lp = str(doc["logical_path"])
    root = doc["source_root"]

    def source(path: str) -> str | None:
        return f"{str(root).rstrip('/')}/{path}" if root else None

    new = names.get(lp)
    if rename_identity(conn, doc_id, names, source(new) if new else doc["source_path"], now):
        return True
    assert new is not None  # only the document's own path can be taken
    alt = new.replace(name_tag(lp, key), name_tag(f"{lp}#{doc_id}", key))
    return rename_identity(conn, doc_id, {**names, lp: alt}, source(alt), now)


def mark_for_reread(conn: apsw.Connection) -> int:
    """Make the next ingest read every live document's file again instead of trusting its
    unchanged (mtime, size): the stat fast path's mtime is set to -1, as for a file
    changed within the timestamp granularity. Used when the redaction rules changed
    (:mod:`memlens.core.redact.fingerprint`): a file stored under older rules is redacted
    again from its source. Returns how many documents were marked."""
    with write_txn(conn):
        conn.execute("UPDATE memory_documents SET source_mtime_ns=-1"
                     " WHERE tombstoned_at IS NULL AND source_mtime_ns IS NOT -1")
        return int(conn.changes())


@dataclass(frozen=True)
class Reredacted:
    """What :func:`reredact_document` rewrote in one document."""

    document: bool  # the document row (content, front matter) changed
    revisions: int  # revision rows whose snapshot, diff or summary changed
    chunks: int  # chunk rows replaced by chunks of the re-redacted text
    reprojected: bool  # its search projection was dropped and queued again


def _redact_heading_path(stored: str, red: Callable[[str], str]) -> str:
    try:
        heads = json.loads(stored)
    except ValueError:
        return red(stored)
    if not isinstance(heads, list):
        return red(stored)
    return json.dumps([red(h) if isinstance(h, str) else h for h in heads], ensure_ascii=False)


def _rechunk_redacted(text: str, stored_config: str | None, logical_path: str,
                      red: Callable[[str], str]) -> tuple[list[Chunk], dict[str, str]] | None:
    """Chunks (and front matter) of re-redacted ``text`` with the revision's own chunker;
    None when that config cannot be used (the caller then redacts chunks in place)."""
    from memlens.core.chunking.chunker import chunk_markdown

    if not stored_config:
        return None
    try:
        res = chunk_markdown(text, ChunkerConfig.from_json(stored_config), path=logical_path)
    except (ValueError, TypeError, RecursionError):
        return None
    chunks = []
    for c in res.chunks:
        t = red(c.text)  # a rule that only fires on the chunk alone still wins
        if t != c.text:
            c = dataclasses.replace(c, text=t, hash=hashlib.sha256(t.encode()).hexdigest())
        chunks.append(c)
    return chunks, dict(res.front_matter)


def reredact_document(conn: apsw.Connection, doc_id: int, red: Callable[[str], str],
                      now: float, *, unproject: Callable[[apsw.Connection, int], object]
                      ) -> Reredacted:
    """Apply ``red`` (the current redaction rules) again to everything one document stored.

    Rewrites, in one transaction: the document's content and front matter, every
    revision's snapshot, diff and summary, and the chunks. When anything changed,
    ``unproject`` (:func:`memlens.core.projection.swap.drop_projection`) drops the search
    projection and the cached vectors of the old text inside the same transaction; the
    current revision is re-chunked from its re-redacted snapshot with its own chunker
    config, other revisions' chunks are dropped, and the document is queued for
    projection. Content hashes follow the new text, so the next ingest of an unchanged
    file finds it unchanged.
    """
    with write_txn(conn):
        doc = get_document(conn, doc_id, content=True)
        if doc is None:
            return Reredacted(False, 0, 0, False)
        revs = rows(conn, "SELECT id, snapshot, diff, summary, chunker_config, logical_path"
                    " FROM memory_revisions WHERE document_id=? ORDER BY seq", (doc_id,))
        n_revs = 0
        cur_text: str | None = None
        cur_config: str | None = None
        for r in revs:
            new = {k: red(r[k]) if r[k] else r[k] for k in ("snapshot", "diff", "summary")}
            if r["id"] == doc["current_revision_id"]:
                cur_text, cur_config = new["snapshot"], r["chunker_config"]
            if all(new[k] == r[k] for k in new):
                continue
            n_revs += 1
            if new["snapshot"] != r["snapshot"] and new["snapshot"] is not None:
                snap = new["snapshot"]
                conn.execute(
                    "UPDATE memory_revisions SET snapshot_z=?, diff=?, summary=?, content_hash=?,"
                    " size_bytes=? WHERE id=?",
                    (pack_text(snap), new["diff"], new["summary"], content_hash(snap),
                     len(snap.encode("utf-8")), r["id"]))
            else:
                conn.execute("UPDATE memory_revisions SET diff=?, summary=? WHERE id=?",
                             (new["diff"], new["summary"], r["id"]))
        chunk_rows = rows(
            conn, "SELECT c.id, c.revision_id, c.text, c.heading_path FROM memory_chunks c"
            " JOIN memory_revisions r ON r.id=c.revision_id WHERE r.document_id=?", (doc_id,))
        chunks_dirty = any(red(c["text"]) != c["text"]
                           or _redact_heading_path(c["heading_path"], red) != c["heading_path"]
                           for c in chunk_rows)
        content = doc["content"]
        new_content = red(content) if content else content
        # a live document's content is its current snapshot (redacted above); only a
        # tombstoned document's row holds a copy of its own (schema v8)
        own_copy = scalar(conn, "SELECT content_z IS NOT NULL FROM memory_documents WHERE id=?",
                          (doc_id,))
        fm = json.loads(doc["front_matter"] or "{}")
        new_fm = {k: red(v) if isinstance(v, str) else v for k, v in fm.items()}
        # A secret in the file name: the path stays (it finds the file), the search
        # projection is rebuilt so its nodes carry the redacted path.
        doc_dirty = new_content != content or new_fm != fm \
            or redact_path(doc["logical_path"]) != doc["logical_path"]
        if not (doc_dirty or chunks_dirty or n_revs):
            return Reredacted(False, 0, 0, False)
        n_chunks = 0
        reproject = doc_dirty or chunks_dirty
        if reproject:
            unproject(conn, doc_id)
            live = doc["tombstoned_at"] is None and doc["current_revision_id"] is not None
            text = cur_text if cur_text is not None else (new_content or "")
            made = _rechunk_redacted(text, cur_config, doc["logical_path"], red) if live \
                else None
            if made is not None:
                new_chunks, parsed_fm = made
                new_fm = parsed_fm
                n_chunks += int(scalar(conn, "SELECT COUNT(*) FROM memory_chunks WHERE"
                                       " revision_id=?", (doc["current_revision_id"],)) or 0)
                conn.execute("DELETE FROM memory_chunks WHERE revision_id=?",
                             (doc["current_revision_id"],))
                insert_chunks(conn, doc["current_revision_id"], new_chunks)
                conn.execute("UPDATE memory_revisions SET chunk_count=?, embedder_status="
                             "'pending' WHERE id=?",
                             (len(new_chunks), doc["current_revision_id"]))
            else:  # no usable chunker config: redact the stored chunks where they are
                for c in chunk_rows:
                    t = red(c["text"])
                    hp = _redact_heading_path(c["heading_path"], red)
                    if t != c["text"] or hp != c["heading_path"]:
                        n_chunks += 1
                        conn.execute("UPDATE memory_chunks SET text_z=?, heading_path=?,"
                                     " chunk_sha256=? WHERE id=?",
                                     (pack_text(t), hp, hashlib.sha256(t.encode()).digest(),
                                      c["id"]))
            fields: dict[str, Any] = {"active_revision_id": None}
            if live:
                _queue_projection(conn, doc_id, now)
            before = int(scalar(conn, "SELECT COUNT(*) FROM memory_chunks c JOIN"
                                " memory_revisions r ON r.id=c.revision_id WHERE"
                                " r.document_id=?", (doc_id,)) or 0)
            _set_fields(conn, doc_id, fields)
            prune_unused_chunks(conn, doc_id)
            n_chunks += before - int(scalar(
                conn, "SELECT COUNT(*) FROM memory_chunks c JOIN memory_revisions r"
                " ON r.id=c.revision_id WHERE r.document_id=?", (doc_id,)) or 0)
        _set_fields(conn, doc_id, {
            "content_z": pack_text(new_content) if own_copy else None,
            "content_hash": content_hash(new_content) if new_content is not None
            else doc["content_hash"],
            "front_matter": json.dumps(new_fm, ensure_ascii=False, sort_keys=True),
            "doc_type": new_fm.get("type"), "doc_name": new_fm.get("name"),
        })
        faults.checkpoint("store.reredact")
    return Reredacted(doc_dirty, n_revs, n_chunks, reproject)
