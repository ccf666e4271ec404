"""Search hits and results, and building them from node rows (owner of the node
metadata read of :mod:`memlens.core.search.engine`).

A search first ranks bare candidates: node id, document and repository, score
(:func:`light`, :func:`stubs`); only the hits that survive fusion, the per-document
cap and the cut are completed with heading path, offsets and a lead snippet
(:func:`complete`), so a query reads node text for 10 nodes instead of ~100.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import apsw

from memlens.core.search.decision import FusionDecision
from memlens.core.search.rows import HL_END as HL_END
from memlens.core.search.rows import HL_START as HL_START
from memlens.core.search.rows import lead_snippet as _lead_snippet
from memlens.core.search.rows import light as light
from memlens.core.search.rows import node_rows as node_meta
from memlens.core.search.rows import split_snippet as split_snippet


@dataclass
class SearchHit:
    """One result; ``as_json`` gives the stable JSON shape."""

    repository: str
    path: str
    heading_path: list[str]
    ordinal: int
    start_char: int
    end_char: int
    score: float
    snippet: str
    highlights: list[tuple[int, int]] = field(default_factory=list)
    ranks: dict[str, int | None] = field(default_factory=dict)
    document_id: int = 0
    node_id: int = 0
    chunk_id: int | None = None
    doc_type: str | None = None
    lexical_match: bool = False
    # "lexical": shares a query term; "semantic": no shared term, but close by meaning
    # while other hits do match words; "closest": nothing in memory shares a word with
    # the query (or the query is only code identifiers and this one holds none of them),
    # so this is only the nearest by meaning and not presented as a match.
    match: str = "lexical"

    @property
    def is_match(self) -> bool:
        """Whether the hit is presented as a match (not merely "closest by meaning")."""
        return self.match != "closest"

    def as_json(self) -> dict[str, Any]:
        """The hit as a JSON-ready dict (no private paths)."""
        d = asdict(self)
        d["highlights"] = [list(h) for h in self.highlights]
        return d


@dataclass
class SearchResult:
    """Hits for a query in one mode."""

    query: str
    mode: str
    hits: list[SearchHit]
    fts_query: str | None = None
    embedder: str | None = None
    notes: list[str] = field(default_factory=list)
    preferred_repository: str | None = None
    fusion: dict[str, Any] | None = None
    decision: FusionDecision | None = field(default=None, repr=False, compare=False)
    """Hybrid only: every candidate's fused score in parts (not in :meth:`as_json`)."""

    @property
    def matches(self) -> int:
        """How many hits are presented as matches (``match`` is not ``"closest"``)."""
        return sum(1 for h in self.hits if h.is_match)

    def as_json(self) -> dict[str, Any]:
        """``{"query","mode","hits":[...]}`` plus ``embedder``, ``notes``, ``matches``
        (hits that are matches, not merely closest by meaning),
        ``preferred_repository`` (the project ranked first, if any) and ``fusion``
        (hybrid only: ``method``, and for ``adaptive`` the query's ``lexical_share``
        and the ``lexical_weight`` it gave; ``null`` otherwise)."""
        return {"query": self.query, "mode": self.mode, "embedder": self.embedder,
                "notes": self.notes, "matches": self.matches,
                "preferred_repository": self.preferred_repository,
                "fusion": self.fusion,
                "hits": [h.as_json() for h in self.hits]}


def _hit(r: dict[str, Any], score: float, snippet: str, spans: list[tuple[int, int]]) -> SearchHit:
    return SearchHit(
        repository=r["repository"], path=r["logical_path"],
        heading_path=list(json.loads(r["heading_path"])), ordinal=int(r["ordinal"]),
        start_char=int(r["start_char"]), end_char=int(r["end_char"]), score=float(score),
        snippet=snippet, highlights=spans, document_id=int(r["document_id"]),
        node_id=int(r["node_id"]), chunk_id=int(r["chunk_id"]), doc_type=r["doc_type"])


def lexical_hits(top: Sequence[tuple[int, float]],
                  meta: dict[int, dict[str, Any]]) -> list[SearchHit]:
    hits = []
    for nid, score in top:
        m = meta.get(nid)
        if m is None:  # node swapped out between the two reads of this snapshot-less query
            continue
        # bm25 is "lower is better" and negative; expose a positive score.
        hits.append(_hit(m, -score, _lead_snippet(m["text"]), []))
    for i, h in enumerate(hits, 1):
        h.ranks = {"lexical": i, "vector": None}
        h.lexical_match, h.match = True, "lexical"
    return hits


def vector_hits(knn: Sequence[tuple[int, float]],
                 meta: dict[int, dict[str, Any]]) -> list[SearchHit]:
    hits = []
    for nid, dist in knn:
        r = meta.get(nid)
        if r is None:  # vector without a node (should not happen; doctor reports it)
            continue
        hits.append(_hit(r, 1.0 - dist, _lead_snippet(r["text"]), []))
    for i, h in enumerate(hits, 1):
        h.ranks = {"lexical": None, "vector": i}
        h.lexical_match, h.match = False, "semantic"
    return hits


def stubs(top: Sequence[tuple[int, float]], known: dict[int, tuple[int, str]],
          kind: str) -> list[SearchHit]:
    """Bare ranked hits of ``top`` (``kind`` "lexical": ``(id, bm25)``; "vector":
    ``(id, distance)``), ranks and match flags set, nodes not ``known`` dropped."""
    hits = []
    for nid, raw in top:
        got = known.get(nid)
        if got is None:  # node swapped out, or a vector without a node (doctor reports it)
            continue
        # bm25 is "lower is better" and negative; expose a positive score; cosine = 1 - d.
        score = -raw if kind == "lexical" else 1.0 - raw
        hits.append(SearchHit(repository=got[1], path="", heading_path=[], ordinal=0,
                              start_char=0, end_char=0, score=float(score), snippet="",
                              document_id=got[0], node_id=nid))
    lexical = kind == "lexical"
    for i, h in enumerate(hits, 1):
        h.ranks = {"lexical": i, "vector": None} if lexical else {"lexical": None, "vector": i}
        h.lexical_match, h.match = lexical, "lexical" if lexical else "semantic"
    return hits


def complete(conn: apsw.Connection, hits: Sequence[SearchHit]) -> list[SearchHit]:
    """Fill bare hits with their node and chunk columns and a lead snippet (one read);
    score, ranks and match flags are kept."""
    todo = [h.node_id for h in hits if h.chunk_id is None]
    meta = node_meta(conn, todo)
    out = []
    for h in hits:
        if h.chunk_id is not None:
            out.append(h)
            continue
        r = meta.get(h.node_id)
        if r is None:
            continue
        full = _hit(r, h.score, _lead_snippet(r["text"]), [])
        full.ranks, full.lexical_match, full.match = h.ranks, h.lexical_match, h.match
        out.append(full)
    return out
