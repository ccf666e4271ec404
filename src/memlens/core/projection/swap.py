"""Stage 1 of the projection: knowledge nodes, FTS rows and cached vectors, swapped atomically.

For each document whose current revision is not yet its active projection:

1. *claim* it (status ``processing``, owner = this process) in a short write
   (:mod:`memlens.core.projection.queue`);
2. load its chunks and their cached vectors, keyed by (text hash, embedder fingerprint),
   outside any write transaction;
3. *swap* in ONE transaction: delete the old nodes (their FTS rows go through
   triggers, their vectors and junction rows explicitly), insert the new nodes,
   cached vectors and junction rows, set ``active_revision_id`` and status ``ready``.
   The vectors not in the cache are stage 2's (:mod:`memlens.core.projection.vectors`).

If anything fails, the transaction rolls back and the previous projection stays
active and searchable: the status becomes ``stale`` (an older projection is still
served) or ``failed`` (nothing was active), with the error text, the attempt
count and the next attempt time (exponential back-off). A projection built for a
revision that is no longer current is discarded. A batch of documents shares one
transaction, each document in its own SAVEPOINT.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import apsw

from memlens.core import faults
from memlens.core.projection import cache as ecache
from memlens.core.projection.queue import describe_error, record_failure
from memlens.core.projection.reports import ProjectionOutcome
from memlens.core.projection.spaces import ensure_vector_space
from memlens.core.redact.engine import redact_path
from memlens.core.store.db import DAMAGE, pack_text, raise_if_damage, row, rows, vec_table_name, write_txn
from memlens.core.store.records import get_document, prune_unused_chunks, set_revision_embedder

if TYPE_CHECKING:
    from memlens.core.embedders.registry import Embedder

Clock = Callable[[], float]


HEADING_LABEL_MAX_CHARS = 600
# Documents per embed call and write transaction (each in its own SAVEPOINT), and the
# chunks such a batch may hold: a batch ends at whichever limit comes first (a document
# with more chunks than the limit is a batch of its own). 1,024 documents: 10k files
# project in 17% less CPU than with 256 (fewer commits, each flushing FTS segments); the
# chunk limit keeps one embed call's vectors and the write lock bounded on big files.
PROJECT_TXN_DOCS = 1024
PROJECT_TXN_CHUNKS = 8192


def heading_label(heading_path: Sequence[str]) -> str:
    """The heading path as one line, bounded (it is repeated in every node of a section)."""
    head = " > ".join(h for h in heading_path if h)
    if len(head) > HEADING_LABEL_MAX_CHARS:
        head = head[: HEADING_LABEL_MAX_CHARS - 1] + "\u2026"
    return head


def node_text(heading_path: Sequence[str], text: str) -> str:
    """The searchable text of a node: heading path, blank line, chunk text."""
    head = heading_label(heading_path)
    return f"{head}\n\n{text}" if head else text


def delete_nodes(conn: apsw.Connection, doc_id: int, keep: Iterable[str] = ()) -> int:
    """Remove a document's nodes, their vectors, FTS rows (trigger) and junction rows.

    Cached vectors held by these nodes move into the cache first (except texts in
    ``keep``: the swap's new nodes of those texts take the cache reference over)."""
    spaces: dict[str, list[int]] = {}
    found = rows(conn, "SELECT id, vector_space FROM knowledge_nodes WHERE document_id=?",
                 (doc_id,))
    if not found:  # a first projection: nothing to delete
        faults.checkpoint("projection.delete_vectors")
        faults.checkpoint("projection.delete_nodes")
        return 0
    for r in found:
        if r["vector_space"]:
            spaces.setdefault(r["vector_space"], []).append(int(r["id"]))
    for space, ids in spaces.items():
        ecache.release(conn, space, ids, keep)
        conn.executemany(f"DELETE FROM {vec_table_name(space)} WHERE node_id=?",
                         [(i,) for i in ids])
    faults.checkpoint("projection.delete_vectors")
    conn.execute(
        "DELETE FROM knowledge_node_memory_chunks WHERE node_id IN"
        " (SELECT id FROM knowledge_nodes WHERE document_id=?)", (doc_id,))
    n = conn.changes()
    conn.execute("DELETE FROM knowledge_nodes WHERE document_id=?", (doc_id,))
    conn.execute("UPDATE memory_documents SET vector_total=0, vector_done=0, vector_capped=0"
                 " WHERE id=?", (doc_id,))
    faults.checkpoint("projection.delete_nodes")
    return int(n)


def drop_projection(conn: apsw.Connection, doc_id: int) -> int:
    """Purge: remove a document's nodes, vectors, FTS rows and junction rows, and the
    cached vectors of their text (any embedder), so text redacted later leaves nothing
    behind. Runs inside the caller's transaction; returns the cache rows removed."""
    texts = [str(r["text"]) for r in rows(
        conn, "SELECT text FROM knowledge_nodes WHERE document_id=?", (doc_id,))]
    for c in rows(conn, "SELECT c.heading_path, c.text FROM memory_chunks c JOIN"
                  " memory_documents d ON d.current_revision_id=c.revision_id WHERE d.id=?",
                  (doc_id,)):
        texts.append(node_text(json.loads(c["heading_path"]), c["text"]))
    removed = ecache.forget(conn, (hashlib.sha256(t.encode()).hexdigest() for t in texts))
    delete_nodes(conn, doc_id)
    return removed


def optimize_fts(conn: apsw.Connection) -> None:
    """Merge the FTS index into one segment: deleted rows' terms are dropped for good
    (until then FTS5 keeps them in older segments, masked by delete markers)."""
    with write_txn(conn):
        conn.execute("INSERT INTO knowledge_nodes_fts(knowledge_nodes_fts) VALUES('optimize')")


def _load_chunks(conn: apsw.Connection, rev_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
    """Revisions' chunks (one statement) with their node text, heading label and cache key."""
    out: dict[int, list[dict[str, Any]]] = {int(r): [] for r in rev_ids}
    for c in rows(conn, "SELECT id, revision_id, ordinal, heading_path, text, chunk_hash"
                  " FROM memory_chunks WHERE revision_id IN (SELECT value FROM json_each(?))"
                  " ORDER BY revision_id, ordinal", (json.dumps(list(out)),)):
        hp = json.loads(c["heading_path"])
        c["heading"] = heading_label(hp)
        c["node_text"] = node_text(hp, c["text"])
        # The cache key covers what is embedded (heading path + text), not just the text.
        c["embed_key"] = hashlib.sha256(c["node_text"].encode()).hexdigest()
        c["node_z"] = pack_text(c["node_text"])  # compressed before the write lock is taken
        out[int(c["revision_id"])].append(c)
    return out


def _swap(conn: apsw.Connection, doc_id: int, rev_id: int, chunks: list[dict[str, Any]],
          blobs: Sequence[bytes | None], space: str | None, fingerprint: str, now: Clock,
          cap: int = 0) -> bool:
    """Stage 1: replace a document's nodes (and FTS rows) inside the caller's transaction;
    False if it is discarded.

    ``blobs`` holds, per chunk, its cached vector (written in this same swap, so an
    unchanged chunk never loses its vector) or ``None``: stage 2 (:func:`embed_vectors`)
    embeds those later, at most ``cap`` of them (0: no cap); the rest stay lexical only
    and the document records how many were capped."""
    # prunable: the document has another revision (a first projection has none)
    doc = row(conn, "SELECT repository, logical_path, doc_type, tombstoned_at,"
              " current_revision_id, EXISTS (SELECT 1 FROM memory_revisions r WHERE"
              " r.document_id=d.id AND r.id<>?) AS prunable FROM memory_documents d WHERE id=?",
              (rev_id, doc_id))
    if doc is None or doc["tombstoned_at"] is not None or doc["current_revision_id"] != rev_id:
        return False
    delete_nodes(conn, doc_id, keep={c["embed_key"] for c, b in zip(chunks, blobs, strict=True)
                                     if b is not None})
    t = now()
    made: list[tuple[str, int]] = []
    path = redact_path(doc["logical_path"])  # a token used as a file name is not indexed
    done = 0
    for c, blob in zip(chunks, blobs, strict=True):
        conn.execute(
            "INSERT INTO knowledge_nodes(document_id, revision_id, ordinal, repository,"
            " logical_path, heading, text_z, doc_type, vector_space, created_at)"
            " VALUES (?,?,?,?,?,?,?,?,?,?)",
            (doc_id, rev_id, c["ordinal"], doc["repository"], path,
             c["heading"], c["node_z"], doc["doc_type"], space, t))
        node_id = conn.last_insert_rowid()
        faults.checkpoint("projection.node")
        if blob is not None:
            conn.execute(
                f"INSERT INTO {vec_table_name(space or '')}(node_id, embedding, repository,"
                " doc_type) VALUES (?,?,?,?)",
                (node_id, blob, doc["repository"], doc["doc_type"] or ""))
            made.append((c["embed_key"], node_id))
            done += 1
            faults.checkpoint("projection.vector")
        conn.execute("INSERT INTO knowledge_node_memory_chunks(node_id, chunk_id)"
                     " VALUES (?,?)", (node_id, c["id"]))
        faults.checkpoint("projection.junction")
    ecache.remember(conn, fingerprint, made, t)
    missing = len(chunks) - done
    planned = min(missing, cap) if cap > 0 else missing
    conn.execute(
        "UPDATE memory_documents SET active_revision_id=?, projection_status='ready',"
        " projection_error=NULL, projection_attempts=0, projection_owner=NULL,"
        " projection_next_attempt_at=NULL, projection_updated_at=?,"
        " vector_total=?, vector_done=?, vector_capped=?, vector_updated_at=?,"
        " vector_error=NULL, vector_attempts=0, vector_next_attempt_at=NULL WHERE id=?",
        (rev_id, t, done + planned, done, missing - planned, t, doc_id))
    set_revision_embedder(conn, rev_id, fingerprint, "ready" if planned == 0 else "pending")
    if doc["prunable"]:
        prune_unused_chunks(conn, doc_id)
    faults.checkpoint("projection.swap")
    return True


def _cached_blobs(conn: apsw.Connection, chunks: list[dict[str, Any]], fingerprint: str,
                  space: str | None, dim: int) -> list[bytes | None]:
    """Per chunk, its vector from the embedding cache (or the live node that holds it),
    else ``None``: what stage 1 writes with the nodes."""
    found = ecache.cached_vectors(conn, sorted({c["embed_key"] for c in chunks}),
                                  fingerprint, space)
    out: list[bytes | None] = []
    for c in chunks:
        blob = found.get(c["embed_key"])
        out.append(blob if blob is not None and len(blob) == 4 * dim else None)
    return out


def project_one(conn: apsw.Connection, doc_id: int, rev_id: int, embedder: Embedder,
                now: Clock, owner: str, retry_base: float = 5.0,
                retry_cap: float = 3600.0, cap: int = 0) -> ProjectionOutcome:
    """Stage 1 of one claimed document (nodes, FTS rows, cached vectors); never raises
    for embedder or write errors."""
    try:  # an HTTP embedder may have to ask its endpoint for the dimension first
        fingerprint = embedder.fingerprint()
    except Exception as exc:  # recorded on the document (failed/stale, back-off), not raised
        return record_failure(conn, doc_id, rev_id, describe_error(exc), now, retry_base,
                               retry_cap, embedder.name)
    try:
        doc = get_document(conn, doc_id)
        if doc is None or doc["tombstoned_at"] is not None or doc["current_revision_id"] != rev_id:
            return ProjectionOutcome(doc_id, rev_id, "discarded")
        chunks = _load_chunks(conn, [rev_id])[rev_id]
        space = ensure_vector_space(conn, fingerprint, embedder.dim, embedder.metric, now) \
            if chunks else None
        faults.checkpoint("projection.embed")
        blobs = _cached_blobs(conn, chunks, fingerprint, space, embedder.dim)
        with write_txn(conn):
            if not _swap(conn, doc_id, rev_id, chunks, blobs, space, fingerprint, now, cap):
                return ProjectionOutcome(doc_id, rev_id, "discarded")
        cached = sum(b is not None for b in blobs)
        return ProjectionOutcome(doc_id, rev_id, "ready", nodes=len(chunks),
                                 cached=cached)
    except DAMAGE:  # a damaged database is not this document's failure: the run ends
        raise
    except Exception as exc:  # every failure is recorded, none escapes
        raise_if_damage(exc)
        msg = describe_error(exc)
        return record_failure(conn, doc_id, rev_id, msg, now, retry_base, retry_cap,
                               fingerprint)


def _swap_batch(conn: apsw.Connection, prepared: list[tuple[int, int, list[dict[str, Any]]]],
                blobs: Sequence[bytes | None], space: str | None,
                fingerprint: str, now: Clock, cap: int) -> list[tuple[str, int, str | None]]:
    """All swaps in ONE transaction, each document inside its own SAVEPOINT.

    Returns per document (result, new cache rows, error). A failing document rolls back
    only its savepoint; an error that ends the whole transaction propagates."""
    results: list[tuple[str, int, str | None]] = []
    try:
        _swap_all(conn, prepared, blobs, space, fingerprint, now, cap, results)
    except DAMAGE:
        raise
    except Exception as exc:
        raise_if_damage(exc)
        raise _BatchLost(len(results), describe_error(exc)) from exc
    return results


class _BatchLost(Exception):
    """The batch transaction ended as a whole while swapping document ``index``."""

    def __init__(self, index: int, msg: str) -> None:
        super().__init__(msg)
        self.index = index
        self.msg = msg


def _swap_all(conn: apsw.Connection, prepared: list[tuple[int, int, list[dict[str, Any]]]],
              blobs: Sequence[bytes | None], space: str | None, fingerprint: str,
              now: Clock, cap: int, results: list[tuple[str, int, str | None]]) -> None:
    with write_txn(conn):
        off = 0
        for doc_id, rev_id, chunks in prepared:
            n = len(chunks)
            mine = sum(b is not None for b in blobs[off:off + n])
            # Only inside the batch transaction: outside one a SAVEPOINT would open a
            # transaction of its own and hide a write_txn that is not atomic.
            nested = conn.in_transaction
            if nested:
                conn.execute("SAVEPOINT projection_doc")
            try:
                ok = _swap(conn, doc_id, rev_id, chunks, blobs[off:off + n], space,
                           fingerprint, now, cap)
                if nested:
                    conn.execute("RELEASE projection_doc")
                results.append(("ready" if ok else "discarded", mine, None))
            except Exception as exc:
                raise_if_damage(exc)
                if not (nested and conn.in_transaction):
                    raise
                conn.execute("ROLLBACK TO projection_doc")
                conn.execute("RELEASE projection_doc")
                results.append(("failed", 0, describe_error(exc)))
            off += n


def project_batch(conn: apsw.Connection, claimed: Sequence[tuple[int, int]], embedder: Embedder,
                  now: Clock, owner: str, retry_base: float = 5.0,
                  retry_cap: float = 3600.0, cap: int = 0) -> list[ProjectionOutcome]:
    """Stage 1 of claimed documents (nodes, FTS rows, cached vectors) in one write
    transaction; their other vectors wait for :func:`embed_vectors`.

    Each document stays all-or-nothing (a SAVEPOINT each); a failing document is recorded
    exactly as :func:`project_one` records it. If the embed call fails or the transaction
    is lost as a whole, every document of the batch is projected on its own instead, so a
    failure is still attributed to the document that caused it."""
    def one_by_one() -> list[ProjectionOutcome]:
        return [project_one(conn, d, r, embedder, now, owner, retry_base, retry_cap, cap)
                for d, r in claimed]

    if len(claimed) <= 1:
        return one_by_one()
    try:  # asked once per batch (an HTTP embedder may probe its endpoint for the dimension)
        fingerprint = embedder.fingerprint()
    except Exception as exc:  # the same reason on every document, without asking again
        return [record_failure(conn, d, r, describe_error(exc), now, retry_base, retry_cap,
                                embedder.name) for d, r in claimed]
    try:
        loaded = _load_chunks(conn, [r for _, r in claimed])
        prepared = [(d, r, loaded[r]) for d, r in claimed]
        all_chunks = [c for _, _, cs in prepared for c in cs]
        space = ensure_vector_space(conn, fingerprint, embedder.dim, embedder.metric, now) \
            if all_chunks else None
        faults.checkpoint("projection.embed")
        blobs = _cached_blobs(conn, all_chunks, fingerprint, space, embedder.dim)
    except DAMAGE:
        raise
    except Exception:  # one document's failure must not fail or mislabel the others
        return one_by_one()
    try:
        results = _swap_batch(conn, prepared, blobs, space, fingerprint, now, cap)
    except _BatchLost as lost:
        # The document being swapped failed as today; the others lost only their turn.
        return [record_failure(conn, d, r, lost.msg, now, retry_base, retry_cap, fingerprint)
                if i == lost.index else
                project_one(conn, d, r, embedder, now, owner, retry_base, retry_cap, cap)
                for i, (d, r) in enumerate(claimed)]
    outcomes: list[ProjectionOutcome] = []
    for (doc_id, rev_id, chunks), (result, cached, err) in zip(prepared, results, strict=True):
        if err is not None:
            outcomes.append(record_failure(conn, doc_id, rev_id, err, now, retry_base,
                                            retry_cap, fingerprint))
        elif result == "discarded":
            outcomes.append(ProjectionOutcome(doc_id, rev_id, "discarded"))
        else:
            outcomes.append(ProjectionOutcome(doc_id, rev_id, "ready", nodes=len(chunks),
                                              cached=cached))
    return outcomes


def batches(conn: apsw.Connection, claimed: Sequence[tuple[int, int]],
             max_docs: int | None = None,
             max_chunks: int | None = None) -> list[list[tuple[int, int]]]:
    """Claimed (document, revision) pairs split into batches of at most ``max_docs``
    documents and ``max_chunks`` chunks (their revisions' ``chunk_count``)."""
    max_docs = max_docs or PROJECT_TXN_DOCS
    max_chunks = max_chunks or PROJECT_TXN_CHUNKS
    counts = {int(r[0]): int(r[1] or 0) for r in conn.execute(
        "SELECT id, chunk_count FROM memory_revisions WHERE id IN"
        " (SELECT value FROM json_each(?))", (json.dumps([r for _, r in claimed]),))}
    out: list[list[tuple[int, int]]] = []
    part: list[tuple[int, int]] = []
    chunks = 0
    for pair in claimed:
        n = counts.get(pair[1], 0)
        if part and (len(part) >= max_docs or chunks + n > max_chunks):
            out.append(part)
            part, chunks = [], 0
        part.append(pair)
        chunks += n
    if part:
        out.append(part)
    return out
