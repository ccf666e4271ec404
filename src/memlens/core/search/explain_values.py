"""The typed values of an explanation (issue 45): what :mod:`memlens.core.search.explain`
builds and the door hands out (re-exported by :mod:`memlens.core.types`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memlens.core.search.hits import SearchResult

SIDES = ("lexical", "vector")
# status of a chunk on one side
CANDIDATE = "candidate"
NO_WORD = "no query word occurs"
PAST_DEPTH = "past the candidate depth"
BELOW_CUT = "below the vector cut"
SIDE_OFF = "side not used"
FILTERED = "outside the search filter"


class ExplainError(ValueError):
    """A why-not target that names nothing in memory (one line for the user)."""


@dataclass(frozen=True)
class Term:
    """One phrase of the FTS query: its idf and its share of the question's information."""

    phrase: str
    idf: float
    share: float

    def as_json(self) -> dict[str, Any]:
        return {"phrase": plain(self.phrase), "idf": round(self.idf, 4),
                "share": round(self.share, 4)}


@dataclass(frozen=True)
class Side:
    """Where one chunk stands on one side (``kind``: lexical or vector)."""

    kind: str
    status: str
    rank: int | None = None
    """Rank in this side's list (1 = best); past the depth: its rank among all rows."""
    score: float | None = None
    """bm25 (positive: higher is better) or cosine."""
    z: float | None = None
    part: float = 0.0
    """What this side adds to the fused score."""
    words: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"status": self.status, "rank": self.rank,
                "score": None if self.score is None else round(self.score, 6),
                "z": None if self.z is None else round(self.z, 4),
                "part": round(self.part, 8), "words": self.words}


@dataclass(frozen=True)
class Standing:
    """One chunk's explanation: its place, its score in parts, and why."""

    repository: str
    path: str
    ordinal: int
    heading: str
    node_id: int
    document_id: int
    position: int | None
    """1-based place among the hits shown (``None``: not shown)."""
    fused_position: int | None
    """1-based place in the fused order before the per-document limit and the cut."""
    match: str
    score: float | None
    lexical: Side
    vector: Side
    terms: tuple[str, ...] = ()
    """The query phrases this chunk holds."""
    damp: float = 1.0
    moved_below: str | None = None
    credited_from: str | None = None
    """The index chunk whose place this topic chunk took (a link line there matched)."""
    preferred: bool = False
    lines: tuple[str, ...] = ()
    summary: str = ""

    @property
    def label(self) -> str:
        return f"{self.repository}/{self.path} #{self.ordinal}"

    def as_json(self) -> dict[str, Any]:
        return {"repository": self.repository, "path": self.path, "ordinal": self.ordinal,
                "heading": self.heading, "position": self.position,
                "fused_position": self.fused_position, "match": self.match,
                "score": None if self.score is None else round(self.score, 8),
                "lexical": self.lexical.as_json(), "vector": self.vector.as_json(),
                "terms": [plain(t) for t in self.terms], "length_factor": round(self.damp, 6),
                "moved_below": self.moved_below,
                "credited_from": self.credited_from, "preferred": self.preferred,
                "summary": self.summary, "lines": list(self.lines)}


@dataclass(frozen=True)
class WhyNot:
    """Where an expected document or chunk stands, and what it would need."""

    target: str
    standing: Standing
    reason: str
    needs: tuple[str, ...]
    gap: float | None
    """How much its fused score falls short of the first hit (``None``: cannot say)."""
    need_bm25: float | None = None
    """The bm25 with which the fusion, replayed, ranks it first (``None``: none does)."""
    need_cosine: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {"target": self.target, **self.standing.as_json(), "reason": self.reason,
                "needs": list(self.needs),
                "gap": None if self.gap is None else round(self.gap, 8),
                "need": {"bm25": _r6(self.need_bm25), "cosine": _r6(self.need_cosine)}}


@dataclass(frozen=True)
class Explanation:
    """A search result explained (``memlens search --explain`` / ``--why-not``)."""

    query: str
    mode: str
    method: str | None
    lexical_weight: float | None
    vector_weight: float | None
    lexical_share: float | None
    agreement: bool | None
    vector_margin: float | None
    candidates: int
    lexical_candidates: int
    vector_candidates: int
    vector_floor: float | None
    per_document: int
    preferred_repository: str | None
    terms: tuple[Term, ...]
    weights: tuple[str, ...]
    """The fusion's choice of weights for this query, in words."""
    hits: tuple[Standing, ...]
    why_not: WhyNot | None = None
    notes: tuple[str, ...] = field(default=())
    result: SearchResult | None = field(default=None, repr=False, compare=False)
    """The search result explained (its hits, in the same order as :attr:`hits`)."""

    def as_json(self) -> dict[str, Any]:
        r = _r6
        return {"query": self.query, "mode": self.mode, "method": self.method,
                "weights": {"lexical": r(self.lexical_weight), "vector": r(self.vector_weight),
                            "lexical_share": r(self.lexical_share),
                            "agreement": self.agreement, "vector_margin": r(self.vector_margin),
                            "why": list(self.weights)},
                "candidates": {"depth": self.candidates, "lexical": self.lexical_candidates,
                               "vector": self.vector_candidates,
                               "vector_floor": r(self.vector_floor)},
                "per_document": self.per_document,
                "preferred_repository": self.preferred_repository,
                "terms": [t.as_json() for t in self.terms], "notes": list(self.notes),
                "hits": [h.as_json() for h in self.hits],
                "why_not": None if self.why_not is None else self.why_not.as_json()}


def _r6(v: float | None) -> float | None:
    return None if v is None else round(v, 6)


def plain(phrase: str) -> str:
    """An FTS phrase as the words a user typed (no quotes, no prefix star)."""
    return phrase.rstrip("*").strip('"')
