"""Stage 2 of the projection: vectors for the nodes stage 1 left without one, embedded
slice by slice (smallest waiting document first), each slice in its own short write.
Nothing is claimed: two processes may embed the same slice, and the second one's write
skips the vectors that exist."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import apsw

from memlens.core import faults
from memlens.core.projection import cache as ecache
from memlens.core.projection.changes import vectors_waiting
from memlens.core.projection.queue import backoff_seconds, describe_error
from memlens.core.projection.reports import VectorReport
from memlens.core.store.db import DAMAGE, raise_if_damage, read_txn, rows, scalar, vec_table_name, write_txn
from memlens.core.store.records import mark_revision_vectors_ready

if TYPE_CHECKING:
    from memlens.core.embedders.registry import Embedder

Clock = Callable[[], float]

MAX_VECTORS_PER_DOCUMENT = 256
"""Default cap on the texts stage 2 embeds afresh per document revision (``[projection]
max_vectors_per_document``; 0 = no cap). Each text is one chunk (up to ~400 estimated
tokens: one or two 256-wordpiece model windows). The nodes past the cap stay searchable
by their words only; the document says how many were capped (``docs --json``, the
Projection tab, doctor). A 3 MB line or a 10k-heading file otherwise holds the embedder
for minutes."""

VECTOR_SLICE_TEXTS = 32
"""Texts per stage-2 slice (one embed call, one short write transaction). A huge document
is embedded slice by slice and the next slice is chosen again each time (smallest waiting
document first), so a small or new document waits at most for one slice (~1 s with the
default embedder on 2 cores), and a document made searchable lexically meanwhile is never
held back by another's vectors."""


def _vector_docs(conn: apsw.Connection, space: str, limit: int,
                 document_ids: Sequence[int] | None, now: float,
                 force: bool) -> list[dict[str, Any]]:
    """Documents whose vectors wait, in stage 2's order: fewest waiting first (small and
    newly changed documents), then the most recently projected, then id. A document
    whose last vector attempt failed waits for its back-off (unless ``force``)."""
    extra, args = "", [space, 1 if force else 0, now]
    if document_ids is not None:
        extra = " AND d.id IN (SELECT value FROM json_each(?))"
        args.append(json.dumps(list(document_ids)))
    return rows(conn, "SELECT d.id, d.vector_total - d.vector_done AS todo FROM memory_documents d"
                " WHERE d.vector_done < d.vector_total AND d.tombstoned_at IS NULL"
                " AND EXISTS (SELECT 1 FROM knowledge_nodes k WHERE k.document_id=d.id"
                "   AND +k.vector_space=?) AND (? OR d.vector_next_attempt_at IS NULL"
                "   OR d.vector_next_attempt_at<=?)" + extra +
                " ORDER BY d.vector_total - d.vector_done, d.projection_updated_at DESC, d.id"
                " LIMIT ?", (*args, limit))


def _vector_slice(conn: apsw.Connection, space: str, limit: int,
                  document_ids: Sequence[int] | None, now: float, force: bool,
                  ) -> tuple[list[dict[str, Any]], dict[int, bool]]:
    """The next slice of stage 2: up to ``limit`` nodes without a vector, taken from
    :func:`_vector_docs` in order, each document's in ordinal order, at most its
    ``vector_total - vector_done``. Also, per document touched, whether this slice takes
    all it still lacks (then its count is checked when the slice is written)."""
    vt = vec_table_name(space)
    picked: list[dict[str, Any]] = []
    exhausted: dict[int, bool] = {}
    for d in _vector_docs(conn, space, limit, document_ids, now, force):
        want = min(int(d["todo"]), limit - len(picked))
        got = rows(conn, "SELECT k.id, k.document_id, k.repository, k.doc_type, k.text"
                   " FROM knowledge_nodes k WHERE k.document_id=? AND +k.vector_space=?"
                   f" AND NOT EXISTS (SELECT 1 FROM {vt} v WHERE v.node_id=k.id)"
                   " ORDER BY k.ordinal LIMIT ?", (d["id"], space, want))
        picked.extend(got)
        exhausted[int(d["id"])] = len(got) < want or want == int(d["todo"])
        if len(picked) >= limit:
            break
    return picked, exhausted


def _bump_vector_generation(conn: apsw.Connection) -> None:
    """Vectors were added to existing nodes: move :func:`node_changes.vector_fingerprint`."""
    conn.execute("INSERT INTO meta(key, value) VALUES ('vector_generation', '1')"
                 " ON CONFLICT(key) DO UPDATE SET value=CAST(value AS INTEGER)+1")


def _write_slice(conn: apsw.Connection, space: str, fingerprint: str,
                 nodes: list[dict[str, Any]], blobs: Sequence[bytes],
                 exhausted: dict[int, bool], now: Clock) -> int:
    """Write one slice's vectors in ONE short transaction; returns how many were written.

    A node deleted meanwhile (its document re-projected) is skipped, and so is one that
    got its vector from another process; each touched document's ``vector_done`` is
    recounted from the vectors that exist, so concurrent runs cannot miscount."""
    vt = vec_table_name(space)
    written = 0
    t = now()
    with write_txn(conn):
        made: list[tuple[str, int]] = []
        for n, blob in zip(nodes, blobs, strict=True):
            nid = int(n["id"])
            if scalar(conn, "SELECT 1 FROM knowledge_nodes WHERE id=?", (nid,)) is None:
                continue
            if scalar(conn, f"SELECT 1 FROM {vt} WHERE node_id=?", (nid,)) is not None:
                continue
            conn.execute(f"INSERT INTO {vt}(node_id, embedding, repository, doc_type)"
                         " VALUES (?,?,?,?)", (nid, blob, n["repository"], n["doc_type"] or ""))
            made.append((n["embed_key"], nid))
            written += 1
            faults.checkpoint("projection.vector")
        ecache.remember(conn, fingerprint, made, t)
        for doc_id in sorted({int(n["document_id"]) for n in nodes}):
            have = int(scalar(conn, "SELECT COUNT(*) FROM knowledge_nodes k WHERE"
                              f" k.document_id=? AND EXISTS (SELECT 1 FROM {vt} v"
                              " WHERE v.node_id=k.id)", (doc_id,)) or 0)
            # a document whose missing nodes all came in this slice is complete, whatever
            # its planned total said (a node deleted meanwhile, a concurrent run)
            conn.execute("UPDATE memory_documents SET vector_done=?,"
                         " vector_total=CASE WHEN ? THEN ? ELSE MAX(vector_total, ?) END,"
                         " vector_updated_at=?, vector_error=NULL, vector_attempts=0,"
                         " vector_next_attempt_at=NULL WHERE id=?",
                         (have, 1 if exhausted.get(doc_id) else 0, have, have, t, doc_id))
            mark_revision_vectors_ready(conn, doc_id)
        if written:
            _bump_vector_generation(conn)
        faults.checkpoint("projection.slice")
    return written


def embed_vectors(conn: apsw.Connection, embedder: Embedder, now: Clock, *,
                  document_ids: Sequence[int] | None = None, force: bool = False,
                  retry_base: float = 5.0, retry_cap: float = 3600.0,
                  slice_texts: int = VECTOR_SLICE_TEXTS,
                  between: Callable[[], None] | None = None,
                  on_slice: Callable[[VectorReport], None] | None = None,
                  stop: Callable[[], bool] | None = None) -> VectorReport:
    """Stage 2: embed the active nodes that lack a vector, slice by slice (see
    :data:`VECTOR_SLICE_TEXTS`), each slice committed in its own short transaction.

    ``between`` runs before every slice (the projection runs stage 1 of newly queued
    documents there, so they never wait for these vectors); ``on_slice`` after each
    (with the totals so far); ``stop`` ends the run early. A failing embedder ends the
    run with ``error`` set and records the (redacted) error on the slice's documents
    with a back-off (``force`` ignores it): their nodes stay lexically searchable and a
    later run resumes. Nothing here is claimed: two processes may embed the same slice, and the
    second one's write skips the vectors that exist."""
    report = VectorReport()
    try:
        fingerprint = embedder.fingerprint()
    except Exception as exc:
        report.error = describe_error(exc)
        report.waiting = vectors_waiting(conn)
        return report
    space = scalar(conn, "SELECT name FROM vector_spaces WHERE fingerprint=?", (fingerprint,))
    while space is not None:
        if stop is not None and stop():
            break
        if between is not None:
            between()
        with read_txn(conn):
            nodes, exhausted = _vector_slice(conn, str(space), max(1, slice_texts),
                                             document_ids, now(), force)
        if not nodes:
            break
        for n in nodes:
            n["embed_key"] = hashlib.sha256(str(n["text"]).encode()).hexdigest()
        try:
            blobs, fresh, cached = _embed_texts(conn, nodes, embedder, fingerprint, str(space))
            report.embedded += fresh
            report.cached += cached
            faults.checkpoint("projection.slice_embedded")
            report.written += _write_slice(conn, str(space), fingerprint, nodes, blobs,
                                           exhausted, now)
        except DAMAGE:  # not a slice's failure: the run ends with one line
            raise
        except apsw.Error as exc:
            raise_if_damage(exc)
            report.error = describe_error(exc)
            break
        except Exception as exc:  # the embedder failed: the rest waits for the next run
            report.error = describe_error(exc)
            _record_vector_failure(conn, sorted({int(n["document_id"]) for n in nodes}),
                                   report.error, now, retry_base, retry_cap)
            break
        report.slices += 1
        if on_slice is not None:
            on_slice(report)
    report.waiting = vectors_waiting(conn)
    return report


def _record_vector_failure(conn: apsw.Connection, doc_ids: Sequence[int], msg: str,
                           now: Clock, base: float, cap: float) -> None:
    """Stage 2 failed for these documents: keep the error, count the attempt, back off."""
    t = now()
    try:
        with write_txn(conn):
            for d in doc_ids:
                attempts = int(scalar(conn, "SELECT vector_attempts FROM memory_documents"
                                      " WHERE id=?", (d,)) or 0) + 1
                conn.execute("UPDATE memory_documents SET vector_error=?, vector_attempts=?,"
                             " vector_next_attempt_at=?, vector_updated_at=? WHERE id=?",
                             (msg, attempts, t + backoff_seconds(attempts, base, cap), t, d))
    except apsw.Error:  # the database is failing too; the next run tries again
        pass


def _embed_texts(conn: apsw.Connection, nodes: list[dict[str, Any]], embedder: Embedder,
                 fingerprint: str, space: str) -> tuple[list[bytes], int, int]:
    """Vectors (float32 bytes) of a slice's nodes: from the cache where another document
    holds the same text, the rest in one embed call (each distinct text once)."""
    import numpy as np

    found = ecache.cached_vectors(conn, sorted({n["embed_key"] for n in nodes}),
                                  fingerprint, space)
    found = {k: b for k, b in found.items() if len(b) == 4 * embedder.dim}
    todo: dict[str, str] = {}
    for n in nodes:
        if n["embed_key"] not in found:
            todo.setdefault(n["embed_key"], str(n["text"]))
    if todo:
        arr = np.asarray(embedder.embed_documents(list(todo.values())), dtype=np.float32)
        if arr.shape != (len(todo), embedder.dim):
            raise ValueError(f"embedder {embedder.name} returned shape {arr.shape}, expected "
                             f"({len(todo)}, {embedder.dim})")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"embedder {embedder.name} returned non-finite values")
        for key, vec in zip(todo, arr, strict=True):
            found[key] = vec.tobytes()
    return [found[n["embed_key"]] for n in nodes], len(todo), len(nodes) - len(todo)
