"""The projection's embedding cache: a vector per (embed key, embedder fingerprint), so
unchanged text is not embedded again (after a rechunk, a rename, an edit elsewhere in
the file, or an embedder switch and back).

Owner of the ``embedding_cache`` table (the projection, :mod:`memlens.core.projection.swap`,
calls it inside its swap transaction). A row does not copy the vector of a live node:
``node_id`` names the node whose vec0 row holds it, and ``vector`` is empty. Before a
node is deleted its vector is moved into the rows that refer to it (unless a node of the
same text replaces it in the same swap), so the cache never loses a vector; a row whose
node vanished some other way (a cascade) is a miss, embedded again and repaired.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import apsw

from memlens.core.store.db import vec_table_name

if TYPE_CHECKING:
    import numpy as np

    from memlens.core.embedders.registry import Embedder

EMBED_SLICE = 2048
"""Texts per embed call: one call over all 41k chunks of an 8 MiB heading-dense file held
~274 MiB of intermediate results (peak RSS 429 MB); slices of 2,048 keep it at 278 MB."""

_LOOKUP_SLICE = 5000


def cached_vectors(conn: apsw.Connection, keys: Sequence[str], fingerprint: str,
                   space: str | None) -> dict[str, bytes]:
    """Cached float32 vectors by embed key (one statement per slice of keys)."""
    if space is None:
        return {}
    vt = vec_table_name(space)
    found: dict[str, bytes] = {}
    for k in range(0, len(keys), _LOOKUP_SLICE):
        for key, blob in conn.execute(
                "SELECT e.chunk_hash, CASE WHEN e.vector IS NOT NULL THEN e.vector ELSE"
                f" (SELECT v.embedding FROM {vt} v WHERE v.node_id=e.node_id) END"
                " FROM embedding_cache e WHERE e.fingerprint=? AND e.chunk_hash IN"
                " (SELECT value FROM json_each(?))",
                (fingerprint, json.dumps(list(keys[k:k + _LOOKUP_SLICE])))):
            if blob is not None:
                found[str(key)] = bytes(blob)
    return found


def embed_chunks(conn: apsw.Connection, chunks: list[dict[str, Any]], embedder: Embedder,
                 fingerprint: str, space: str | None) -> tuple[np.ndarray, set[str], int]:
    """Vectors for chunks (their ``embed_key`` and ``node_text``), from the cache where
    possible; returns (vectors, keys embedded now, chunks served from the cache)."""
    import numpy as np

    n = len(chunks)
    vecs = np.zeros((n, embedder.dim), dtype=np.float32)
    missing: list[int] = []
    cached = 0
    found = cached_vectors(conn, sorted({c["embed_key"] for c in chunks}), fingerprint, space)
    for i, c in enumerate(chunks):
        blob = found.get(c["embed_key"])
        if blob is not None and len(blob) == 4 * embedder.dim:
            vecs[i] = np.frombuffer(blob, dtype=np.float32)
            cached += 1
        else:
            missing.append(i)
    fresh: set[str] = set()
    for start in range(0, len(missing), EMBED_SLICE):  # bounded memory on huge documents
        part = missing[start:start + EMBED_SLICE]
        out = embedder.embed_documents([chunks[i]["node_text"] for i in part])
        arr = np.asarray(out, dtype=np.float32)
        del out
        if arr.shape != (len(part), embedder.dim):
            raise ValueError(
                f"embedder {embedder.name} returned shape {arr.shape}, expected "
                f"({len(part)}, {embedder.dim})")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"embedder {embedder.name} returned non-finite values")
        for j, i in enumerate(part):
            vecs[i] = arr[j]
            fresh.add(chunks[i]["embed_key"])
    return vecs, fresh, cached


def remember(conn: apsw.Connection, fingerprint: str,
             nodes: Iterable[tuple[str, int]], now: float) -> None:
    """After new nodes were written: each ``(embed key, node id)`` becomes the cache's
    reference for its text, unless the row already refers to another live node."""
    conn.executemany(
        "INSERT INTO embedding_cache(chunk_hash, fingerprint, node_id, vector, created_at)"
        " VALUES (?,?,?,NULL,?) ON CONFLICT(chunk_hash, fingerprint) DO UPDATE SET"
        " node_id=excluded.node_id, vector=NULL WHERE embedding_cache.vector IS NOT NULL"
        " OR NOT EXISTS (SELECT 1 FROM knowledge_nodes k WHERE k.id=embedding_cache.node_id)",
        [(k, fingerprint, node_id, now) for k, node_id in nodes])


def release(conn: apsw.Connection, space: str, node_ids: Sequence[int],
            keep: Iterable[str] = ()) -> None:
    """Before nodes of ``space`` are deleted: copy their vectors into the cache rows that
    refer to them, except rows of a text in ``keep`` (a new node of that text takes the
    reference over in the same transaction)."""
    if not node_ids:
        return
    ids, kept = json.dumps(list(node_ids)), json.dumps(sorted(set(keep)))
    vt = vec_table_name(space)
    conn.execute(
        f"UPDATE embedding_cache SET vector=(SELECT v.embedding FROM {vt} v"
        " WHERE v.node_id=embedding_cache.node_id), node_id=NULL"
        " WHERE node_id IN (SELECT value FROM json_each(?))"
        " AND chunk_hash NOT IN (SELECT value FROM json_each(?))"
        f" AND EXISTS (SELECT 1 FROM {vt} v WHERE v.node_id=embedding_cache.node_id)",
        (ids, kept))
    # a reference whose vector is already gone holds nothing: drop it (a miss later)
    conn.execute(
        "DELETE FROM embedding_cache WHERE vector IS NULL"
        " AND node_id IN (SELECT value FROM json_each(?))"
        " AND chunk_hash NOT IN (SELECT value FROM json_each(?))", (ids, kept))


def forget(conn: apsw.Connection, keys: Iterable[str]) -> int:
    """Purge: remove the cached vectors of these texts (any embedder); returns how many."""
    removed = 0
    for k in sorted(set(keys)):
        conn.execute("DELETE FROM embedding_cache WHERE chunk_hash=?", (k,))
        removed += conn.changes()
    return removed
