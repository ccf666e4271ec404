"""What a projection run reports: one outcome per document (stage 1), the totals of
stage 2, and the totals of a run; ``DISK_FULL`` marks a failure that stops a run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

DISK_FULL = "FullError"
"""How a disk-full failure's recorded error starts (:func:`_describe` of ``apsw.FullError``)."""


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
