"""The typed values of a fusion decision (issue 46), kept apart from the fusion itself so
a search result can carry them (:attr:`memlens.core.search.hits.SearchResult.decision`)
and an explanation can read them (issue 45) without an import cycle."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FusionParams:
    """The settings of one fusion (``[search]`` in the config)."""

    method: str = "evidence"
    lexical_weight: float = 1.0
    vector_weight: float = 0.5
    rrf_k: float = 60.0
    adapt_power: float = 2.0
    adapt_knee: float = 0.6
    agree_top: int = 3
    index_rule: bool = True
    agree_keep: bool = False
    """When the lists agree, the lexical weight is not cut by the share."""
    margin_knee: float = 0.0
    """> 0: the vector weight is scaled by ``min(1, margin / margin_knee)``, ``margin`` being
    the z-gap between the vector side's best two documents (0: off)."""
    length_prior: float = 0.0
    """> 0: a chunk's score is divided by ``chunks_of_its_document ** length_prior``."""


@dataclass(frozen=True)
class Confidence:
    """How much each side is trusted for this query, and why."""

    lexical_share: float
    """Best idf-weighted share of the question held by one of the top lexical candidates."""
    agreement: bool
    """The best document of each side is among the first ``agree_top`` of the other."""
    lexical_weight: float
    vector_weight: float
    vector_margin: float = 0.0
    """z-gap between the cosines of the vector side's best two documents."""

    def as_json(self) -> dict[str, Any]:
        return {"lexical_share": round(self.lexical_share, 4), "agreement": self.agreement,
                "vector_margin": round(self.vector_margin, 4),
                "lexical_weight": round(self.lexical_weight, 4),
                "vector_weight": round(self.vector_weight, 4)}


@dataclass(frozen=True)
class Part:
    """One candidate's fused score in parts: ``score = lexical + vector`` before the
    memory-aware rules; ``moved_below`` names the topic chunk an index chunk was placed
    after (its evidence is that file's link line: the topic file wins)."""

    node_id: int
    lexical: float
    vector: float
    lexical_absent: bool
    vector_absent: bool
    score: float
    moved_below: int | None = None
    lexical_z: float | None = None
    """The z-score the lexical part was made from (``evidence`` and the z-score forms;
    ``None`` when absent from that side or another form): recorded for the explanation."""
    vector_z: float | None = None
    damp: float = 1.0
    """The length prior's factor on both parts (1: none)."""
    credited_from: int | None = None
    """The index chunk whose place this topic chunk took (its link line matched)."""


@dataclass
class FusionDecision:
    """What the fusion decided for one query: method, confidence, every candidate's parts
    and the final order of node ids."""

    method: str
    confidence: Confidence | None
    parts: dict[int, Part] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)
    params: FusionParams | None = None
    """The settings this decision was made with (read by the explanation)."""

    def as_json(self) -> dict[str, Any]:
        """The ``fusion`` object of a hybrid result (method, and its confidence)."""
        out: dict[str, Any] = {"method": self.method}
        if self.confidence is not None:
            out.update(self.confidence.as_json())
        return out
