"""The search projection: knowledge nodes, FTS rows and vectors, swapped atomically.

For each document whose current revision is not yet its active projection:

1. *claim* it (status ``processing``, owner = this process) in a short write;
2. *embed* its chunks outside any write transaction, reusing cached vectors
   keyed by (chunk hash, embedder fingerprint);
3. *swap* in ONE transaction: delete the old nodes (their FTS rows go through
   triggers, their vectors and junction rows explicitly), insert the new nodes,
   vectors and junction rows, set ``active_revision_id`` and status ``ready``.

If anything fails, the transaction rolls back and the previous projection stays
active and searchable: the status becomes ``stale`` (an older projection is still
served) or ``failed`` (nothing was active), with the error text, the attempt
count and the next attempt time (exponential back-off). A projection built for a
revision that is no longer current is discarded.

Status meanings: ``pending`` (queued; an older projection, if any, is still
served), ``processing``, ``ready``, ``failed``, ``stale``.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import apsw

from memlens.core import faults
from memlens.core.projection import cache as ecache
from memlens.core.projection import changes as node_changes
from memlens.core.redact.engine import redact, redact_path
from memlens.core.store.db import (
    ensure_vector_space,
    pack_text,
    read_txn,
    row,
    rows,
    scalar,
    vec_table_name,
    write_txn,
)
from memlens.core.store.records import get_document, prune_unused_chunks

if TYPE_CHECKING:
    from memlens.core.embedders.registry import Embedder

Clock = Callable[[], float]


def process_owner() -> str:
    """An owner tag for claims: host and pid, so a dead claimer can be detected."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _owner_alive(owner: str | None) -> bool:
    if not owner:
        return False
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname():
        return True  # cannot tell; treat as alive
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def backoff_seconds(attempts: int, base: float = 5.0, cap: float = 3600.0) -> float:
    """Delay before the next attempt after ``attempts`` failures (exponential, capped)."""
    return float(min(cap, base * (2 ** max(0, attempts - 1))))


@dataclass
class ProjectionOutcome:
    """What happened to one document's projection."""

    document_id: int
    revision_id: int
    result: str  # ready | failed | stale | discarded
    error: str | None = None
    nodes: int = 0
    embedded: int = 0
    cached: int = 0

    @property
    def disk_full(self) -> bool:
        """The projection failed because the database's disk is full."""
        return bool(self.error and self.error.startswith(DISK_FULL))


@dataclass
class ProjectionReport:
    """Totals of one projection run."""

    outcomes: list[ProjectionOutcome] = field(default_factory=list)
    stopped: str | None = None  # why the run stopped early (disk full), if it did
    vectors: VectorReport | None = None  # stage 2, when the run did it

    def count(self, result: str) -> int:
        """Number of outcomes with the given result."""
        return sum(1 for o in self.outcomes if o.result == result)

    @staticmethod
    def merged(reports: Sequence[ProjectionReport]) -> ProjectionReport:
        """One report of several runs; the first early stop, if any, is kept."""
        vecs = [r.vectors for r in reports if r.vectors is not None]
        return ProjectionReport([o for r in reports for o in r.outcomes],
                                next((r.stopped for r in reports if r.stopped), None),
                                VectorReport.merged(vecs) if vecs else None)


@dataclass
class VectorReport:
    """Totals of one run of stage 2 (:func:`embed_vectors`)."""

    embedded: int = 0  # texts run through the embedder
    cached: int = 0  # vectors found in the embedding cache meanwhile
    written: int = 0  # vectors written
    slices: int = 0  # write transactions
    error: str | None = None  # why stage 2 stopped (the embedder failed), if it did
    waiting: int = 0  # documents still waiting for vectors at the end

    @staticmethod
    def merged(reports: Sequence[VectorReport]) -> VectorReport:
        """One report of several runs (the last ``waiting``, the first error)."""
        return VectorReport(sum(r.embedded for r in reports), sum(r.cached for r in reports),
                            sum(r.written for r in reports), sum(r.slices for r in reports),
                            next((r.error for r in reports if r.error), None),
                            reports[-1].waiting if reports else 0)


DISK_FULL = "FullError"
"""How a disk-full failure's recorded error starts (:func:`_describe` of ``apsw.FullError``)."""


def _release_claims(conn: apsw.Connection, owner: str | None) -> int:
    """Put documents back in the queue (``pending``, no back-off): this process's
    unfinished claims (``owner``), and every document whose last failure was a full disk.

    Returns how many; 0 when even that write fails (the disk is still full): the next
    run takes over claims of a process that is gone and calls this again first."""
    try:
        with write_txn(conn):
            conn.execute("UPDATE memory_documents SET projection_status='pending',"
                         " projection_owner=NULL, projection_next_attempt_at=NULL WHERE"
                         " (projection_owner=? AND projection_status='processing') OR"
                         " (projection_status IN ('failed','stale') AND projection_error LIKE ?)",
                         (owner, DISK_FULL + "%"))
            return int(conn.changes())
    except apsw.Error:
        return 0


def pending_count(conn: apsw.Connection) -> dict[str, int]:
    """Counts of live documents per projection status."""
    out = {"pending": 0, "processing": 0, "ready": 0, "failed": 0, "stale": 0}
    for r in rows(conn, "SELECT projection_status s, COUNT(*) n FROM memory_documents"
                  " WHERE tombstoned_at IS NULL GROUP BY projection_status"):
        out[r["s"]] = int(r["n"])
    return out


# The one statement of "a projection run would pick this document up now"; it takes
# two parameters: force (1 ignores the back-off of failed/stale documents) and now.
_QUEUED = (
    "tombstoned_at IS NULL AND current_revision_id IS NOT NULL AND ("
    " projection_status IN ('pending','processing')"
    " OR (projection_status IN ('failed','stale')"
    "     AND (? OR projection_next_attempt_at IS NULL OR projection_next_attempt_at<=?))"
    " OR (projection_status='ready' AND active_revision_id IS NOT current_revision_id))"
)


def queue_notices(conn: apsw.Connection, now: float) -> list[str]:
    """What a projection run would still do, in words, for ``memlens doctor``: documents
    waiting, failures waiting for their retry, and claims of processes that are gone
    (which the next run takes over)."""
    out: list[str] = []
    waiting = len(queued_document_ids(conn, now))
    if waiting:
        out.append(f"{waiting} document(s) wait for projection; `memlens project` runs them now")
    vec_docs = vectors_waiting(conn)
    if vec_docs:
        left = int(scalar(conn, "SELECT COALESCE(SUM(vector_total - vector_done), 0) FROM"
                          " memory_documents WHERE vector_done < vector_total"
                          " AND tombstoned_at IS NULL") or 0)
        out.append(f"{vec_docs} document(s) wait for {left} vector(s) (searchable by their"
                   " words meanwhile); `memlens project` computes them")
    later = [r for r in rows(conn, "SELECT projection_next_attempt_at AS t FROM memory_documents"
                             " WHERE tombstoned_at IS NULL AND projection_status IN"
                             " ('failed','stale') AND projection_next_attempt_at>?", (now,))]
    if later:
        out.append(f"{len(later)} failed projection(s) wait for their retry; "
                   "`memlens project --force` retries them now")
    dead = [r for r in rows(conn, "SELECT projection_owner AS o FROM memory_documents"
                            " WHERE tombstoned_at IS NULL AND projection_status='processing'")
            if not _owner_alive(r["o"])]
    if dead:
        out.append(f"{len(dead)} document(s) claimed by a process that is gone; "
                   "the next `memlens project` takes them over")
    return out


def queued_document_ids(conn: apsw.Connection, now: float, *, force: bool = False) -> list[int]:
    """Live documents a projection run would claim now (same predicate as :func:`claim`,
    before the owner-liveness check), in id order."""
    return [int(r["id"]) for r in rows(
        conn, f"SELECT id FROM memory_documents WHERE {_QUEUED} ORDER BY id",
        (1 if force else 0, now))]


def _spaces_match(conn: apsw.Connection, fingerprint: str) -> bool:
    """Whether every node lives in a vector space of ``fingerprint`` (then there is
    nothing to queue). Index seeks only: one per distinct space of ``idx_nodes_space``,
    instead of the queueing statement's walk over every document (38 ms at 10k)."""
    if conn.execute("SELECT 1 FROM knowledge_nodes WHERE vector_space IS NULL LIMIT 1").fetchone():
        return False
    fps = {str(n): f for n, f in conn.execute("SELECT name, fingerprint FROM vector_spaces")}
    row = conn.execute("SELECT MIN(vector_space) FROM knowledge_nodes").fetchone()
    while row is not None and row[0] is not None:
        if fps.get(str(row[0])) != fingerprint:
            return False
        row = conn.execute("SELECT MIN(vector_space) FROM knowledge_nodes WHERE vector_space > ?",
                           (row[0],)).fetchone()
    return True


def queue_other_embedder(conn: apsw.Connection, fingerprint: str) -> int:
    """Queue live documents whose nodes were embedded by another embedder than
    ``fingerprint``; returns how many were queued (their old projection stays served).

    Runs before every projection (each watched save), so the common case — every node
    already in a space of ``fingerprint`` — is answered by index seeks in a read
    transaction, without the write lock."""
    if conn.in_transaction:
        match = _spaces_match(conn, fingerprint)
    else:
        with read_txn(conn):  # one snapshot for the seeks
            match = _spaces_match(conn, fingerprint)
    if match:
        return 0
    with write_txn(conn):
        conn.execute(
            "UPDATE memory_documents SET projection_status='pending', projection_attempts=0,"
            " projection_next_attempt_at=NULL, projection_error=NULL"
            " WHERE tombstoned_at IS NULL AND projection_status IN ('ready','failed','stale')"
            " AND EXISTS (SELECT 1 FROM knowledge_nodes k LEFT JOIN vector_spaces s"
            "   ON s.name=k.vector_space WHERE k.document_id=memory_documents.id"
            "   AND (s.fingerprint IS NULL OR s.fingerprint<>?))", (fingerprint,))
        return int(conn.changes())


def claim(conn: apsw.Connection, now: float, owner: str, *, limit: int = 1000,
          document_ids: Sequence[int] | None = None, force: bool = False,
          exclude: set[tuple[int, int]] | None = None) -> list[tuple[int, int]]:
    """Claim documents that need projecting; returns (document_id, revision_id) pairs.

    Claims pending documents, failed/stale ones whose back-off has expired (or all
    of them with ``force``), and ``processing`` ones whose owner process is dead.
    """
    with write_txn(conn):
        cand = rows(
            conn,
            "SELECT id, current_revision_id, projection_status, projection_owner,"
            f" projection_next_attempt_at FROM memory_documents WHERE {_QUEUED} ORDER BY id",
            (1 if force else 0, now),
        )
        wanted = set(document_ids) if document_ids is not None else None
        out: list[tuple[int, int]] = []
        for r in cand:
            if wanted is not None and r["id"] not in wanted:
                continue
            if exclude and (int(r["id"]), int(r["current_revision_id"])) in exclude:
                continue
            if r["projection_status"] == "processing" and _owner_alive(r["projection_owner"]) \
                    and r["projection_owner"] != owner:
                continue
            out.append((int(r["id"]), int(r["current_revision_id"])))
            if len(out) >= limit:
                break
        for doc_id, _ in out:
            conn.execute(
                "UPDATE memory_documents SET projection_status='processing', projection_owner=?,"
                " projection_started_at=?, projection_updated_at=? WHERE id=?",
                (owner, now, now, doc_id))
        faults.checkpoint("projection.claim")
    return out


HEADING_LABEL_MAX_CHARS = 600
# Documents per embed call and write transaction (each in its own SAVEPOINT), and the
# chunks such a batch may hold: a batch ends at whichever limit comes first (a document
# with more chunks than the limit is a batch of its own). 1,024 documents: 10k files
# project in 17% less CPU than with 256 (fewer commits, each flushing FTS segments); the
# chunk limit keeps one embed call's vectors and the write lock bounded on big files.
PROJECT_TXN_DOCS = 1024
PROJECT_TXN_CHUNKS = 8192

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
    conn.execute("UPDATE memory_revisions SET embedder=?, embedder_status=? WHERE id=?",
                 (fingerprint, "ready" if planned == 0 else "pending", rev_id))
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
        return _record_failure(conn, doc_id, rev_id, _describe(exc), now, retry_base,
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
    except Exception as exc:  # every failure is recorded, none escapes
        msg = _describe(exc)
        return _record_failure(conn, doc_id, rev_id, msg, now, retry_base, retry_cap,
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
    except Exception as exc:
        raise _BatchLost(len(results), _describe(exc)) from exc
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
                if not (nested and conn.in_transaction):
                    raise
                conn.execute("ROLLBACK TO projection_doc")
                conn.execute("RELEASE projection_doc")
                results.append(("failed", 0, _describe(exc)))
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
        return [_record_failure(conn, d, r, _describe(exc), now, retry_base, retry_cap,
                                embedder.name) for d, r in claimed]
    try:
        loaded = _load_chunks(conn, [r for _, r in claimed])
        prepared = [(d, r, loaded[r]) for d, r in claimed]
        all_chunks = [c for _, _, cs in prepared for c in cs]
        space = ensure_vector_space(conn, fingerprint, embedder.dim, embedder.metric, now) \
            if all_chunks else None
        faults.checkpoint("projection.embed")
        blobs = _cached_blobs(conn, all_chunks, fingerprint, space, embedder.dim)
    except Exception:  # one document's failure must not fail or mislabel the others
        return one_by_one()
    try:
        results = _swap_batch(conn, prepared, blobs, space, fingerprint, now, cap)
    except _BatchLost as lost:
        # The document being swapped failed as today; the others lost only their turn.
        return [_record_failure(conn, d, r, lost.msg, now, retry_base, retry_cap, fingerprint)
                if i == lost.index else
                project_one(conn, d, r, embedder, now, owner, retry_base, retry_cap, cap)
                for i, (d, r) in enumerate(claimed)]
    outcomes: list[ProjectionOutcome] = []
    for (doc_id, rev_id, chunks), (result, cached, err) in zip(prepared, results, strict=True):
        if err is not None:
            outcomes.append(_record_failure(conn, doc_id, rev_id, err, now, retry_base,
                                            retry_cap, fingerprint))
        elif result == "discarded":
            outcomes.append(ProjectionOutcome(doc_id, rev_id, "discarded"))
        else:
            outcomes.append(ProjectionOutcome(doc_id, rev_id, "ready", nodes=len(chunks),
                                              cached=cached))
    return outcomes


def _describe(exc: BaseException) -> str:
    """The error text stored and printed for a failed document, redacted: an embedder's
    message may echo a request (``https://api.example/embed?key=...``, a header)."""
    text = str(exc).strip() or exc.__class__.__name__
    return redact(f"{exc.__class__.__name__}: {text}"[:2000]).text


def _record_failure(conn: apsw.Connection, doc_id: int, rev_id: int, msg: str, now: Clock,
                    base: float, cap: float, fingerprint: str) -> ProjectionOutcome:
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except apsw.Error:
            pass
    try:
        with write_txn(conn):
            doc = get_document(conn, doc_id)
            if doc is None:
                return ProjectionOutcome(doc_id, rev_id, "discarded", error=msg)
            attempts = int(doc["projection_attempts"] or 0) + 1
            status = "stale" if doc["active_revision_id"] is not None else "failed"
            t = now()
            conn.execute(
                "UPDATE memory_documents SET projection_status=?, projection_error=?,"
                " projection_attempts=?, projection_owner=NULL, projection_updated_at=?,"
                " projection_next_attempt_at=? WHERE id=? AND current_revision_id=?",
                (status, msg, attempts, t, t + backoff_seconds(attempts, base, cap), doc_id, rev_id))
            conn.execute("UPDATE memory_revisions SET embedder=?, embedder_status='failed'"
                         " WHERE id=?", (fingerprint, rev_id))
    except apsw.Error as exc2:  # the database itself is failing; leave the claim to expire
        extra = "" if str(exc2) in msg else f" (recording it failed too: {exc2})"
        return ProjectionOutcome(doc_id, rev_id, "failed", error=f"{msg}{extra}")
    return ProjectionOutcome(doc_id, rev_id, status, error=msg)


def _batches(conn: apsw.Connection, claimed: Sequence[tuple[int, int]],
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


def project_pending(conn: apsw.Connection, embedder: Embedder, now: Clock, *,
                    owner: str | None = None, document_ids: Sequence[int] | None = None,
                    force: bool = False, retry_base: float = 5.0, retry_cap: float = 3600.0,
                    on_progress: Callable[[ProjectionOutcome], None] | None = None,
                    batch: int = PROJECT_TXN_DOCS, vectors: bool = True,
                    cap: int = MAX_VECTORS_PER_DOCUMENT,
                    on_slice: Callable[[VectorReport], None] | None = None,
                    slice_texts: int = VECTOR_SLICE_TEXTS,
                    stop: Callable[[], bool] | None = None) -> ProjectionReport:
    """Project every document that needs it (see :func:`claim`): stage 1 (nodes, FTS
    rows, cached vectors) in batches until none is left, then, with ``vectors``, stage 2
    (:func:`embed_vectors`, of every waiting document, or only of ``document_ids``).
    Before each stage-2 slice, documents queued meanwhile get their stage 1 first.

    A (document, revision) pair is attempted at most once per call, so a document that
    keeps failing cannot loop; it waits for its back-off instead.

    A full disk stops the run (``report.stopped``): the documents not yet projected go
    back to the queue, and what was searchable stays searchable (each swap is atomic).
    """
    owner = owner or process_owner()
    report = ProjectionReport()
    attempted: set[tuple[int, int]] = set()
    if scalar(conn, "SELECT 1 FROM memory_documents WHERE projection_status IN"
              " ('failed','stale') AND projection_error LIKE ? LIMIT 1", (DISK_FULL + "%",)):
        _release_claims(conn, None)  # an earlier run hit a full disk: no back-off for that
    _stage_one(conn, embedder, now, owner, report, attempted, document_ids, force,
               retry_base, retry_cap, on_progress, batch, cap)
    if not vectors or report.stopped is not None:
        return report

    def between() -> None:  # newly queued documents become searchable before more vectors
        if report.stopped is None and claim_would_find(conn, now(), document_ids):
            _stage_one(conn, embedder, now, owner, report, attempted, document_ids, False,
                       retry_base, retry_cap, on_progress, batch, cap)

    report.vectors = embed_vectors(conn, embedder, now, document_ids=document_ids,
                                   force=force, retry_base=retry_base, retry_cap=retry_cap,
                                   slice_texts=slice_texts, between=between,
                                   on_slice=on_slice,
                                   stop=lambda: report.stopped is not None or bool(stop and stop()))
    if report.vectors.error and report.vectors.error.startswith(DISK_FULL):
        _reclaim_wal(conn)
        report.stopped = _stopped(report.vectors.error)
    return report


def claim_would_find(conn: apsw.Connection, now: float,
                     document_ids: Sequence[int] | None = None) -> bool:
    """Whether a stage-1 pass has anything to do now (one indexed read)."""
    ids = queued_document_ids(conn, now)
    if document_ids is not None:
        ids = [i for i in ids if i in set(document_ids)]
    return bool(ids)


def _stage_one(conn: apsw.Connection, embedder: Embedder, now: Clock, owner: str,
               report: ProjectionReport, attempted: set[tuple[int, int]],
               document_ids: Sequence[int] | None, force: bool, retry_base: float,
               retry_cap: float, on_progress: Callable[[ProjectionOutcome], None] | None,
               batch: int, cap: int) -> None:
    while report.stopped is None:
        try:
            claimed = claim(conn, now(), owner, document_ids=document_ids, force=force,
                            limit=batch, exclude=attempted)
        except apsw.FullError as exc:
            report.stopped = _stopped(_describe(exc))
            break
        if not claimed:
            break
        attempted.update(claimed)
        for part in _batches(conn, claimed):
            outcomes = project_batch(conn, part, embedder, now, owner, retry_base, retry_cap,
                                     cap)
            for o in outcomes:
                report.outcomes.append(o)
                if on_progress:
                    on_progress(o)
            full = next((o.error for o in outcomes if o.disk_full and o.error), None)
            if full is not None:
                _reclaim_wal(conn)
                _release_claims(conn, owner)
                report.stopped = _stopped(full)
                break




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
            conn.execute("UPDATE memory_revisions SET embedder_status='ready' WHERE id="
                         "(SELECT active_revision_id FROM memory_documents WHERE id=?"
                         "  AND vector_done>=vector_total)", (doc_id,))
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
        report.error = _describe(exc)
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
        except apsw.Error as exc:
            report.error = _describe(exc)
            break
        except Exception as exc:  # the embedder failed: the rest waits for the next run
            report.error = _describe(exc)
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


def vectors_waiting(conn: apsw.Connection) -> int:
    """Live documents whose vectors are not all written yet."""
    return node_changes.vectors_waiting(conn)


def _reclaim_wal(conn: apsw.Connection) -> None:
    """Give back the disk space a rolled-back batch left in the WAL (its frames are
    garbage), so the run that follows freed space can write; best effort."""
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except apsw.Error:
        pass


def _stopped(error: str) -> str:
    return (f"disk full ({error.split(';')[0].split(' (recording')[0]}): projection stopped; "
            "free space and run `memlens project` again (what was searchable stays searchable)")
