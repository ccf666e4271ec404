"""What a proposed rechunk would do to search, before anything is written.

:func:`search_effect` replays queries (the user's recent searches) against the
document's current chunks and against the proposed ones, each time together with the
active nodes of every *other* document, and reports the document's rank for each
query before and after. It ranks lexically (the same FTS5 tokenizer and bm25 column
weights as :func:`memlens.core.search.engine.lexical`) in a TEMP table of the calling
connection, so nothing in the database changes and no embedding is computed; the
vector side of hybrid is not part of the preview, and the notes say so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import apsw

from memlens.core.chunking.chunker import Chunk
from memlens.core.projection.swap import heading_label, node_text
from memlens.core.search.engine import BM25_WEIGHTS, build_fts_query
from memlens.core.store.db import FTS_TOKENIZER, rows

DEPTH = 50  # nodes read per query; ranks beyond the distinct documents in them are None


@dataclass(frozen=True)
class QueryEffect:
    """The document's rank (1 = first document) for one query, before and after.

    ``before``/``after`` are None when the document is not among the documents of the
    best :data:`DEPTH` chunks; ``chunk_before``/``chunk_after`` are the ordinals of its
    best chunk.
    """

    query: str
    before: int | None
    after: int | None
    chunk_before: int | None = None
    chunk_after: int | None = None

    @property
    def change(self) -> str:
        """``better``, ``worse``, ``same``, ``found`` or ``lost``."""
        if self.before == self.after:
            return "same"
        if self.before is None:
            return "found"
        if self.after is None:
            return "lost"
        return "better" if self.after < self.before else "worse"


_TABLE = "temp.memlens_preview_fts"


def search_effect(conn: apsw.Connection, doc_id: int, path: str,
                  current: Sequence[Chunk], proposed: Sequence[Chunk],
                  queries: Sequence[str]) -> list[QueryEffect]:
    """Rank of document ``doc_id`` for each query with ``current`` and with ``proposed``
    chunks (lexical ranking, every other document's active nodes included)."""
    wanted = [(q, fts) for q in queries if (fts := build_fts_query(q, prefix=False))]
    if not wanted:
        return []
    conn.execute(f"DROP TABLE IF EXISTS {_TABLE}")
    conn.execute(f"CREATE VIRTUAL TABLE {_TABLE} USING fts5(heading, text, logical_path,"
                 f" doc UNINDEXED, ordinal UNINDEXED, tokenize='{FTS_TOKENIZER}')")
    try:
        conn.execute(f"INSERT INTO {_TABLE}(heading, text, logical_path, doc, ordinal)"
                     " SELECT heading, text, logical_path, document_id, ordinal"
                     " FROM knowledge_nodes WHERE document_id<>?", (doc_id,))
        before = _ranks(conn, doc_id, path, current, wanted)
        after = _ranks(conn, doc_id, path, proposed, wanted)
    finally:
        conn.execute(f"DROP TABLE IF EXISTS {_TABLE}")
    return [QueryEffect(q, b[0], a[0], b[1], a[1])
            for (q, _), b, a in zip(wanted, before, after, strict=True)]


def _ranks(conn: apsw.Connection, doc_id: int, path: str, chunks: Sequence[Chunk],
           wanted: Sequence[tuple[str, str]]) -> list[tuple[int | None, int | None]]:
    conn.execute(f"DELETE FROM {_TABLE} WHERE doc=?", (doc_id,))
    conn.executemany(
        f"INSERT INTO {_TABLE}(heading, text, logical_path, doc, ordinal) VALUES (?,?,?,?,?)",
        [(heading_label(c.heading_path), node_text(c.heading_path, c.text), path, doc_id,
          c.ordinal) for c in chunks])
    out: list[tuple[int | None, int | None]] = []
    for _, fts in wanted:
        try:
            found = rows(conn, f"SELECT doc, ordinal, bm25(memlens_preview_fts, {BM25_WEIGHTS})"
                         f" AS s FROM {_TABLE} WHERE memlens_preview_fts MATCH ?"
                         " ORDER BY s LIMIT ?", (fts, DEPTH))
        except apsw.SQLError:
            out.append((None, None))
            continue
        docs: list[int] = []
        best: int | None = None
        for r in found:
            d = int(r["doc"])
            if d not in docs:
                docs.append(d)
                if d == doc_id:
                    best = int(r["ordinal"])
        out.append((docs.index(doc_id) + 1 if doc_id in docs else None, best))
    return out
