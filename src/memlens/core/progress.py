"""Progress of the door's flows (:mod:`memlens.core.flows`): the typed events every flow
reports, re-exported by :mod:`memlens.core.types`.

Every flow of the door takes ``progress: Progress | None`` (called on the flow's own
thread with each event below, in order) and ``cancelled: Cancelled | None`` (asked
between steps; True ends the flow after the current step, leaving it resumable).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memlens.core.ingest.pipeline import FileChange, IngestReport
    from memlens.core.projection.reports import ProjectionOutcome, ProjectionReport


@dataclass(frozen=True)
class FileRead:
    """Ingest looked at one file (``change.kind == "failed"``: it could not be read);
    ``done`` files so far in this flow."""

    change: FileChange
    done: int


@dataclass(frozen=True)
class IngestDone:
    """The durable ingest of a flow finished (projection follows)."""

    report: IngestReport


@dataclass(frozen=True)
class RowsChanged:
    """These documents' rows changed; ``processing``: a projection of them starts now."""

    document_ids: tuple[int, ...]
    processing: bool = False


@dataclass(frozen=True)
class DocumentProjected:
    """Stage 1 of one document ended (``done`` of ``total`` in this flow's batches)."""

    outcome: ProjectionOutcome
    done: int
    total: int


@dataclass(frozen=True)
class BatchProjected:
    """A stage-1 batch ended: these documents are searchable by their words."""

    document_ids: tuple[int, ...]
    report: ProjectionReport


@dataclass(frozen=True)
class VectorSlice:
    """A stage-2 slice ended: ``written + cached`` of ``total`` vectors the waiting
    ``document_ids`` needed when the stage began."""

    document_ids: tuple[int, ...]
    written: int
    cached: int
    total: int


@dataclass(frozen=True)
class Rechunked:
    """A rechunk batch was written: ``document_ids`` got a new revision; ``done`` of
    ``total`` documents looked at."""

    document_ids: tuple[int, ...]
    done: int
    total: int


ProgressEvent = (FileRead | IngestDone | RowsChanged | DocumentProjected | BatchProjected
                 | VectorSlice | Rechunked)
Progress = Callable[[ProgressEvent], None]
Cancelled = Callable[[], bool]
