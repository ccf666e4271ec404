"""Plain values that cross the door (:mod:`memlens.core.service`).

The UI (CLI and TUI) imports names only from :mod:`memlens.core.service` and
this module. Everything here is a frozen dataclass or an exception; some are
defined here, the others are re-exported from the core module that owns them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .bench import BenchError
from .chunker_choice import ChunkerChoice
from .chunking import STRATEGIES, Chunk, ChunkerConfig, ChunkerConfigError, ChunkResult
from .config import (
    FUSIONS,
    ChunkerSettings,
    ConfigError,
    EmbedderSettings,
    ProjectionSettings,
    RetentionSettings,
    SearchSettings,
    Settings,
    WatchSettings,
)
from .db import DatabaseError
from .doctor import Problem
from .embedding import EmbedderUnavailable, EmbeddingError
from .indexfile import IndexWarning
from .ingest import FileChange, IngestReport
from .preview import QueryEffect
from .projection import ProjectionOutcome, ProjectionReport
from .search import MODES, NO_WORD_NOTE, SearchError, SearchHit, SearchResult
from .sources import MemoryRoot, SourceError, UsageError

if TYPE_CHECKING:
    from .watch import WatchEvent

__all__ = [
    "BenchError", "Chunk", "ChunkResult", "ChunkerChoice", "ChunkerConfig", "ChunkerConfigError",
    "ChunkerSettings", "ConfigError", "DatabaseError", "DocumentDetail", "DocumentSummary",
    "EmbedderSettings", "EmbedderUnavailable", "EmbeddingError", "FUSIONS", "FileChange",
    "FilterIndex",
    "IndexWarning", "IngestOutcome", "IngestReport", "MODES", "MemoryRoot", "NO_WORD_NOTE",
    "Problem",
    "ProjectionOutcome", "ProjectionReport", "QueryEffect", "ProjectionSettings", "ProjectionState",
    "RechunkOutcome", "RetentionSettings", "Revision", "RevisionChunker", "STRATEGIES",
    "SearchError", "SearchHit", "SearchResult", "SearchSettings", "Settings", "SourceError", "Stats",
    "UsageError", "WatchEvent", "WatchSettings",
]


@dataclass(frozen=True)
class DocumentSummary:
    """A row of the document list (no private paths)."""

    id: int
    repository: str
    path: str
    status: str  # pending | processing | ready | failed | stale | tombstoned
    projection_status: str
    tombstoned: bool
    current_revision_id: int | None
    active_revision_id: int | None
    chunk_count: int
    size: int
    name: str | None
    doc_type: str | None
    error: str | None
    headings: list[str] = field(default_factory=list)

    @classmethod
    def from_row(cls, r: dict[str, Any], headings: list[str] | None = None) -> DocumentSummary:
        """Build from a ``memory_documents`` row joined with its chunk count (``nchunks``)."""
        tomb = r["tombstoned_at"] is not None
        return cls(
            id=int(r["id"]), repository=r["repository"], path=r["logical_path"],
            status="tombstoned" if tomb else r["projection_status"],
            projection_status=r["projection_status"], tombstoned=tomb,
            current_revision_id=r["current_revision_id"],
            active_revision_id=r["active_revision_id"], chunk_count=int(r["nchunks"] or 0),
            size=int(r["source_size"] or 0), name=r["doc_name"], doc_type=r["doc_type"],
            error=r["projection_error"], headings=headings or [])

    def as_json(self) -> dict[str, Any]:
        """JSON shape of ``memlens docs --json`` entries."""
        return {
            "id": self.id, "repository": self.repository, "path": self.path,
            "state": "tombstoned" if self.tombstoned else "live",
            "status": self.status, "projection_status": self.projection_status,
            "current_revision_id": self.current_revision_id,
            "active_revision_id": self.active_revision_id, "chunks": self.chunk_count,
            "size": self.size, "name": self.name, "type": self.doc_type, "error": self.error,
        }


@dataclass(frozen=True)
class ProjectionState:
    """Where a document's projection stands."""

    status: str
    error: str | None
    attempts: int
    started_at: float | None
    updated_at: float | None
    next_attempt_at: float | None

    def as_dict(self) -> dict[str, Any]:
        """The ``projection`` object of a document's dict form."""
        return {"status": self.status, "error": self.error, "attempts": self.attempts,
                "started_at": self.started_at, "updated_at": self.updated_at,
                "next_attempt_at": self.next_attempt_at}


@dataclass(frozen=True)
class DocumentDetail:
    """One document in full: content, front matter and projection state."""

    id: int
    repository: str
    path: str
    content: str
    content_hash: str | None
    size: int | None
    front_matter: dict[str, Any]
    tombstoned: bool
    tombstoned_at: float | None
    current_revision_id: int | None
    active_revision_id: int | None
    projection: ProjectionState
    observed_at: float | None

    def as_dict(self) -> dict[str, Any]:
        """The nested dict form (what ``MemoryService.document`` used to return)."""
        return {
            "id": self.id, "repository": self.repository, "path": self.path,
            "content": self.content, "content_hash": self.content_hash, "size": self.size,
            "front_matter": dict(self.front_matter), "tombstoned": self.tombstoned,
            "tombstoned_at": self.tombstoned_at,
            "current_revision_id": self.current_revision_id,
            "active_revision_id": self.active_revision_id,
            "projection": self.projection.as_dict(), "observed_at": self.observed_at,
        }


@dataclass(frozen=True)
class RevisionChunker:
    """The chunker a revision was chunked with."""

    name: str | None
    version: int | None
    config: dict[str, Any] | None


@dataclass(frozen=True)
class Revision:
    """One entry of a document's revision timeline."""

    id: int
    number: int
    change_kind: str
    content_hash: str
    path: str
    previous_path: str | None
    observed_at: float | None
    chunker: RevisionChunker
    chunks: int | None
    embedder: str | None
    embedder_status: str | None
    summary: str | None
    diff: str | None
    diff_truncated: bool
    has_snapshot: bool
    size: int | None
    snapshot: str | None = None

    def as_json(self) -> dict[str, Any]:
        """JSON shape of one ``memlens history --json`` revision."""
        return {
            "id": self.id, "number": self.number, "change_kind": self.change_kind,
            "content_hash": self.content_hash, "path": self.path,
            "previous_path": self.previous_path, "observed_at": self.observed_at,
            "chunker": {"name": self.chunker.name, "version": self.chunker.version,
                        "config": self.chunker.config},
            "chunks": self.chunks, "embedder": self.embedder,
            "embedder_status": self.embedder_status, "summary": self.summary,
            "diff": self.diff, "diff_truncated": self.diff_truncated,
            "has_snapshot": self.has_snapshot, "size": self.size,
        }


@dataclass(frozen=True)
class Stats:
    """Counts for a status bar."""

    db: str
    documents: int
    tombstoned: int
    chunks: int
    queue: dict[str, int]
    embedder: str

    def as_dict(self) -> dict[str, Any]:
        """The dict form (what ``MemoryService.stats`` used to return)."""
        return {"db": self.db, "documents": self.documents, "tombstoned": self.tombstoned,
                "chunks": self.chunks, "queue": dict(self.queue), "embedder": self.embedder}



@dataclass(frozen=True)
class RechunkOutcome:
    """What :meth:`MemoryService.rechunk_and_project` did."""

    config: ChunkerConfig
    considered: int
    changed: tuple[int, ...]
    projection: ProjectionReport | None

    def as_json(self) -> dict[str, Any]:
        """The stable ``memlens rechunk --json`` shape."""
        rep = self.projection
        return {"config": json.loads(self.config.canonical_json()),
                "rechunked": len(self.changed), "unchanged": self.considered - len(self.changed),
                "projection": {"ready": rep.count("ready") if rep else 0,
                               "failed": (rep.count("failed") + rep.count("stale")) if rep
                               else 0}}


@dataclass(frozen=True)
class IngestOutcome:
    """Ingest + projection results."""

    report: IngestReport
    projection: ProjectionReport | None
    queue: dict[str, int]

    def as_json(self) -> dict[str, Any]:
        """The stable ``memlens ingest --json`` shape."""
        out: dict[str, Any] = dict(self.report.as_json())
        q = self.queue
        out["projection"] = {"ready": q.get("ready", 0), "pending": q.get("pending", 0)
                             + q.get("processing", 0), "failed": q.get("failed", 0),
                             "stale": q.get("stale", 0)}
        return out



@dataclass
class FilterIndex:
    """A cached candidate list for the fuzzy "go to document" filter.

    :meth:`MemoryService.filter_documents` re-reads every document and every
    heading on each call; a UI filtering as the user types builds this once per
    data change (:meth:`MemoryService.build_filter_index`) and then only runs
    rapidfuzz; it is the only implementation of the filter. The ranking is
    (WRatio over repository, path, front-matter name and headings, default
    processing, cutoff 45); the scan runs in slices so a thread doing it gives
    the interpreter lock back between slices.
    """

    include_tombstoned: bool
    candidates: list[DocumentSummary] = field(default_factory=list)
    choices: list[str] = field(default_factory=list)

    SLICE = 1000

    def filter(self, text: str, *, limit: int = 200,
               cutoff: float = 45.0) -> list[tuple[DocumentSummary, float]]:
        """Documents matching ``text``, best first, with their rapidfuzz score."""
        from rapidfuzz import fuzz, process, utils

        if not text.strip():
            return [(c, 100.0) for c in self.candidates[:limit]]
        query = utils.default_process(text)
        found: list[tuple[float, int]] = []
        for start in range(0, len(self.choices), self.SLICE):
            part = self.choices[start:start + self.SLICE]
            for _, score, i in process.extract(query, part, scorer=fuzz.WRatio, processor=None,
                                               limit=limit, score_cutoff=cutoff):
                found.append((float(score), start + int(i)))
        # Best score first; ties keep document order (as a single extract would).
        found.sort(key=lambda si: (-si[0], si[1]))
        return [(self.candidates[i], score) for score, i in found[:limit]]


def __getattr__(name: str) -> Any:
    # ``watch`` imports the service, which imports this module: resolve lazily.
    if name == "WatchEvent":
        from .watch import WatchEvent

        return WatchEvent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
