"""Plain values that cross the door (:mod:`memlens.core.service`).

The UI (CLI and TUI) imports names only from :mod:`memlens.core.service` and
this module. Everything here is a frozen dataclass or an exception; some are
defined here, the others are re-exported from the core module that owns them. The
flows' progress events (:class:`FileRead` … :class:`Rechunked`) and the protocol
types ``Progress`` and ``Cancelled`` are defined here (:mod:`memlens.core.flows`).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memlens.core.chunking.choice import ChunkerChoice as ChunkerChoice
    from memlens.core.chunking.chunker import STRATEGIES as STRATEGIES
    from memlens.core.chunking.chunker import Chunk as Chunk
    from memlens.core.chunking.chunker import ChunkerConfig as ChunkerConfig
    from memlens.core.chunking.chunker import ChunkerConfigError as ChunkerConfigError
    from memlens.core.chunking.chunker import ChunkResult as ChunkResult
    from memlens.core.config.settings import FUSIONS as FUSIONS
    from memlens.core.config.settings import ChunkerSettings as ChunkerSettings
    from memlens.core.config.settings import ConfigError as ConfigError
    from memlens.core.config.settings import EmbedderSettings as EmbedderSettings
    from memlens.core.config.settings import ProjectionSettings as ProjectionSettings
    from memlens.core.config.settings import RetentionSettings as RetentionSettings
    from memlens.core.config.settings import SearchSettings as SearchSettings
    from memlens.core.config.settings import Settings as Settings
    from memlens.core.config.settings import WatchSettings as WatchSettings
    from memlens.core.details import DocumentDetail as DocumentDetail
    from memlens.core.details import HitSource as HitSource
    from memlens.core.details import ProjectionState as ProjectionState
    from memlens.core.details import Revision as Revision
    from memlens.core.details import RevisionChunker as RevisionChunker
    from memlens.core.details import Stats as Stats
    from memlens.core.details import StoredChunkerConfig as StoredChunkerConfig
    from memlens.core.doctor import Problem as Problem
    from memlens.core.embedders.names import EMBEDDER_NAMES as EMBEDDER_NAMES
    from memlens.core.embedders.registry import EmbedderUnavailable as EmbedderUnavailable
    from memlens.core.embedders.registry import EmbeddingError as EmbeddingError
    from memlens.core.ingest.indexfile import IndexWarning as IndexWarning
    from memlens.core.ingest.installkey import InstallKeyError as InstallKeyError
    from memlens.core.ingest.pipeline import FileChange as FileChange
    from memlens.core.ingest.pipeline import IngestReport as IngestReport
    from memlens.core.ingest.sources import MemoryRoot as MemoryRoot
    from memlens.core.ingest.sources import SourceError as SourceError
    from memlens.core.ingest.sources import UsageError as UsageError
    from memlens.core.ingest.sources import claude_projects_dir as claude_projects_dir
    from memlens.core.ingest.sources import claude_slug as claude_slug
    from memlens.core.ingest.sources import is_ignored_name as is_ignored_name
    from memlens.core.ingest.sources import is_markdown_name as is_markdown_name
    from memlens.core.ingest.sources import roots_for_path as roots_for_path
    from memlens.core.projection.swap import ProjectionOutcome as ProjectionOutcome
    from memlens.core.projection.swap import ProjectionReport as ProjectionReport
    from memlens.core.projection.swap import VectorReport as VectorReport
    from memlens.core.search.engine import MODES as MODES
    from memlens.core.search.engine import NO_WORD_NOTE as NO_WORD_NOTE
    from memlens.core.search.engine import SearchError as SearchError
    from memlens.core.search.engine import SearchHit as SearchHit
    from memlens.core.search.engine import SearchResult as SearchResult
    from memlens.core.search.filter import FilterIndex as FilterIndex
    from memlens.core.search.preview import QueryEffect as QueryEffect
    from memlens.core.store.db import DatabaseError as DatabaseError
    from memlens.core.store.db import StorageError as StorageError

# Re-exported names, imported on first use (PEP 562) so a short command such as a
# lexical search does not import the chunker, projection, ingest and redaction code.
_LAZY: dict[str, str] = {
    'ChunkerChoice': 'memlens.core.chunking.choice',
    'STRATEGIES': 'memlens.core.chunking.chunker',
    'Chunk': 'memlens.core.chunking.chunker',
    'ChunkerConfig': 'memlens.core.chunking.chunker',
    'ChunkerConfigError': 'memlens.core.chunking.chunker',
    'ChunkResult': 'memlens.core.chunking.chunker',
    'FUSIONS': 'memlens.core.config.settings',
    'EMBEDDER_NAMES': 'memlens.core.embedders.names',
    'ChunkerSettings': 'memlens.core.config.settings',
    'ConfigError': 'memlens.core.config.settings',
    'EmbedderSettings': 'memlens.core.config.settings',
    'ProjectionSettings': 'memlens.core.config.settings',
    'RetentionSettings': 'memlens.core.config.settings',
    'SearchSettings': 'memlens.core.config.settings',
    'Settings': 'memlens.core.config.settings',
    'WatchSettings': 'memlens.core.config.settings',
    'DatabaseError': 'memlens.core.store.db',
    'StorageError': 'memlens.core.store.db',
    'Problem': 'memlens.core.doctor',
    'EmbedderUnavailable': 'memlens.core.embedders.registry',
    'EmbeddingError': 'memlens.core.embedders.registry',
    'IndexWarning': 'memlens.core.ingest.indexfile',
    'FileChange': 'memlens.core.ingest.pipeline',
    'IngestReport': 'memlens.core.ingest.pipeline',
    'InstallKeyError': 'memlens.core.ingest.installkey',
    'QueryEffect': 'memlens.core.search.preview',
    'ProjectionOutcome': 'memlens.core.projection.swap',
    'ProjectionReport': 'memlens.core.projection.swap',
    'VectorReport': 'memlens.core.projection.swap',
    'MODES': 'memlens.core.search.engine',
    'NO_WORD_NOTE': 'memlens.core.search.engine',
    'SearchError': 'memlens.core.search.engine',
    'SearchHit': 'memlens.core.search.engine',
    'SearchResult': 'memlens.core.search.engine',
    'MemoryRoot': 'memlens.core.ingest.sources',
    'SourceError': 'memlens.core.ingest.sources',
    'UsageError': 'memlens.core.ingest.sources',
    'claude_slug': 'memlens.core.ingest.sources',
    'claude_projects_dir': 'memlens.core.ingest.sources',
    'is_ignored_name': 'memlens.core.ingest.sources',
    'is_markdown_name': 'memlens.core.ingest.sources',
    'roots_for_path': 'memlens.core.ingest.sources',
    # this module's own detail values, defined apart so a short read does not build them
    'DocumentDetail': 'memlens.core.details',
    'HitSource': 'memlens.core.details',
    'ProjectionState': 'memlens.core.details',
    'Revision': 'memlens.core.details',
    'RevisionChunker': 'memlens.core.details',
    'Stats': 'memlens.core.details',
    'StoredChunkerConfig': 'memlens.core.details',
    'FilterIndex': 'memlens.core.search.filter',
}

__all__ = [
    "BatchProjected", "Cancelled", "Chunk", "ChunkResult", "ChunkerChoice", "ChunkerConfig",
    "ChunkerConfigError",
    "ChunkerSettings", "ConfigError", "DatabaseError", "DocumentDetail", "DocumentSummary",
    "EMBEDDER_NAMES", "EmbedderSettings", "EmbedderUnavailable", "EmbeddingError", "FUSIONS", "FileChange",
    "FileRead", "IngestDone", "DocumentProjected", "Progress", "ProgressEvent", "Rechunked", "RowsChanged",
    "VectorSlice", "claude_projects_dir", "is_ignored_name", "is_markdown_name", "roots_for_path",
    "FilterIndex", "HitSource",
    "IndexWarning", "IngestOutcome", "IngestReport", "InstallKeyError", "MODES", "MemoryRoot",
    "NO_WORD_NOTE",
    "Problem",
    "ProjectionOutcome", "ProjectionReport", "QueryEffect", "ProjectionSettings", "ProjectionState",
    "RechunkOutcome", "RetentionSettings", "Revision", "RevisionChunker", "STRATEGIES",
    "SearchError", "SearchHit", "SearchResult", "SearchSettings", "Settings", "SourceError", "Stats",
    "StoredChunkerConfig",
    "UsageError", "VectorReport", "WatchSettings",
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
    vectors_done: int = 0  # stage 2: active nodes with a vector
    vectors_total: int = 0  # ... of those that are to have one (the rest were capped)
    vectors_capped: int = 0  # nodes left without a vector by [projection] max_vectors_per_document
    vector_error: str | None = None  # the last stage-2 failure (the embedder), if it failed

    @property
    def vector_status(self) -> str:
        """``pending`` while stage 2 still owes this document vectors (it is searchable
        by its words meanwhile), ``failed`` when its last attempt failed (it is retried
        after a back-off), ``capped`` when done but some nodes were left out by the
        cap, else ``ready``."""
        if self.vectors_done < self.vectors_total:
            return "failed" if self.vector_error else "pending"
        return "capped" if self.vectors_capped else "ready"

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
            error=r["projection_error"], headings=headings or [],
            vectors_done=int(r.get("vector_done") or 0),
            vectors_total=int(r.get("vector_total") or 0),
            vectors_capped=int(r.get("vector_capped") or 0),
            vector_error=r.get("vector_error"))

    def as_json(self) -> dict[str, Any]:
        """JSON shape of ``memlens docs --json`` entries."""
        return {
            "id": self.id, "repository": self.repository, "path": self.path,
            "state": "tombstoned" if self.tombstoned else "live",
            "status": self.status, "projection_status": self.projection_status,
            "current_revision_id": self.current_revision_id,
            "active_revision_id": self.active_revision_id, "chunks": self.chunk_count,
            "size": self.size, "name": self.name, "type": self.doc_type, "error": self.error,
            "vectors": {"status": self.vector_status, "done": self.vectors_done,
                        "total": self.vectors_total, "capped": self.vectors_capped,
                        "error": self.vector_error},
        }


@dataclass(frozen=True)
class RechunkOutcome:
    """What :meth:`MemoryService.rechunk_and_project` did."""

    config: ChunkerConfig
    considered: int
    changed: tuple[int, ...]
    projection: ProjectionReport | None

    def as_json(self) -> dict[str, Any]:
        """The stable ``memlens rechunk --json`` shape (``"stopped"`` only when a full disk
        stopped the projection)."""
        rep = self.projection
        return {"config": json.loads(self.config.canonical_json()),
                "rechunked": len(self.changed), "unchanged": self.considered - len(self.changed),
                "projection": {"ready": rep.count("ready") if rep else 0,
                               "failed": (rep.count("failed") + rep.count("stale")) if rep
                               else 0},
                **({"stopped": rep.stopped} if rep and rep.stopped else {})}


@dataclass(frozen=True)
class IngestOutcome:
    """Ingest + projection results."""

    report: IngestReport
    projection: ProjectionReport | None
    queue: dict[str, int]

    def as_json(self) -> dict[str, Any]:
        """The stable ``memlens ingest --json`` shape (``"stopped"`` only when a full disk
        stopped the ingest or its projection)."""
        out: dict[str, Any] = dict(self.report.as_json())
        q = self.queue
        out["projection"] = {"ready": q.get("ready", 0), "pending": q.get("pending", 0)
                             + q.get("processing", 0), "failed": q.get("failed", 0),
                             "stale": q.get("stale", 0)}
        if "stopped" not in out and self.projection and self.projection.stopped:
            out["stopped"] = self.projection.stopped
        vec = self.projection.vectors if self.projection else None
        if vec is not None:  # stage 2 (issue 37) ran in this ingest
            out["vectors"] = {"embedded": vec.embedded, "written": vec.written,
                              "waiting": vec.waiting, "error": vec.error}
        return out


@dataclass(frozen=True)
class PurgeOutcome:
    """What :meth:`MemoryService.purge` did (``memlens purge --json``)."""

    documents: int  # documents looked at (live and deleted)
    changed: int  # documents in which the current rules found something more
    revisions: int  # revision rows whose snapshot, diff or summary was rewritten
    chunks: int  # chunk rows replaced or dropped
    projection: ProjectionReport | None  # the re-projection of changed documents
    wal_truncated: bool  # False: another process still reads; run purge again later
    note: str | None = None  # e.g. why re-projection could not run now

    @property
    def complete(self) -> bool:
        """Nothing was left behind: the WAL is empty and every re-projection succeeded."""
        rep = self.projection
        return self.wal_truncated and self.note is None and not (
            rep and (rep.count("failed") or rep.count("stale")))

    def as_json(self) -> dict[str, Any]:
        """The stable ``memlens purge --json`` shape."""
        rep = self.projection
        return {"documents": self.documents, "changed": self.changed,
                "revisions": self.revisions, "chunks": self.chunks,
                "projection": {"ready": rep.count("ready") if rep else 0,
                               "failed": (rep.count("failed") + rep.count("stale")) if rep
                               else 0},
                "wal_truncated": self.wal_truncated, "complete": self.complete,
                "note": self.note}


# -- progress of the flows (:mod:`memlens.core.flows`) ---------------------------------
# Every flow of the door takes ``progress: Progress | None`` (called on the flow's own
# thread with each event below, in order) and ``cancelled: Cancelled | None`` (asked
# between steps; True ends the flow after the current step, leaving it resumable).


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


def __getattr__(name: str) -> Any:
    """Resolve a re-exported name from its owner module on first use (then cached)."""
    owner = _LAZY.get(name)
    if owner is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(owner), name)
    globals()[name] = value
    return value
