"""The detail values of :mod:`memlens.core.types` (a document in full, its revisions, a
hit's source, status-bar counts) and the finder's normalised keys. Import them from
``memlens.core.types``: it re-exports them on first use, so a lexical search or ``memlens
docs`` never builds these classes (each frozen dataclass costs ~0.6 ms to create;
benchmarks/cli_startup.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DocumentDetail", "HitSource", "NotSearchable", "PendingDocuments", "ProjectionState",
           "Revision", "RevisionChange", "RevisionChunker", "Stats", "StoredChunkerConfig",
           "revision_changes"]


def _text(value: object) -> str | None:
    """A front-matter value as shown (``str``), or None when it is missing or empty."""
    return str(value) if value else None


@dataclass(frozen=True)
class HitSource:
    """Where a search hit comes from: its whole chunk and its place in the file.

    Attributes:
        repository: Repository of the document.
        path: Logical path of the document.
        ordinal: The chunk's position.
        heading_path: Titles of the headings around the chunk.
        text: The whole chunk (as stored: redacted).
        line: 1-based line of the chunk's first character in the revision it belongs to.
        file: The document's file on disk, when it is still there (for an editor).
    """

    repository: str
    path: str
    ordinal: int
    heading_path: tuple[str, ...]
    text: str
    line: int
    file: Path | None


@dataclass(frozen=True)
class ProjectionState:
    """Where a document's projection stands."""

    status: str
    error: str | None
    attempts: int
    started_at: float | None
    updated_at: float | None
    next_attempt_at: float | None
    vectors_done: int = 0  # stage 2 (vectors) of the active projection: nodes with a vector
    vectors_total: int = 0  # nodes that are to have one
    vectors_capped: int = 0  # nodes left without one by the per-document cap
    vectors_updated_at: float | None = None
    vector_error: str | None = None  # the last stage-2 failure, retried after a back-off
    vector_attempts: int = 0
    vector_next_attempt_at: float | None = None

    @property
    def vector_status(self) -> str:
        """``pending`` (vectors still being computed; searchable by words meanwhile),
        ``failed`` (the last attempt failed; retried after ``vector_next_attempt_at``),
        ``capped`` (done, some nodes left out by the cap) or ``ready``."""
        if self.vectors_done < self.vectors_total:
            return "failed" if self.vector_error else "pending"
        return "capped" if self.vectors_capped else "ready"

    def as_dict(self) -> dict[str, Any]:
        """The ``projection`` object of a document's dict form."""
        return {"status": self.status, "error": self.error, "attempts": self.attempts,
                "started_at": self.started_at, "updated_at": self.updated_at,
                "next_attempt_at": self.next_attempt_at,
                "vectors": {"status": self.vector_status, "done": self.vectors_done,
                            "total": self.vectors_total, "capped": self.vectors_capped,
                            "updated_at": self.vectors_updated_at, "error": self.vector_error,
                            "attempts": self.vector_attempts,
                            "next_attempt_at": self.vector_next_attempt_at}}


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

    @property
    def doc_type(self) -> str | None:
        """The front matter's ``type`` (None when missing or empty)."""
        return _text(self.front_matter.get("type"))

    @property
    def name(self) -> str | None:
        """The front matter's ``name`` (None when missing or empty)."""
        return _text(self.front_matter.get("name"))

    @property
    def description(self) -> str | None:
        """The front matter's ``description`` (None when missing or empty)."""
        return _text(self.front_matter.get("description"))

    @property
    def projected_current(self) -> bool:
        """The active (searchable) projection is of the current revision."""
        return self.active_revision_id == self.current_revision_id


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class StoredChunkerConfig:
    """The chunker config a revision was chunked with, as stored with it (the canonical
    JSON of a :class:`~memlens.core.chunking.chunker.ChunkerConfig` of its day).

    The fields a reader shows are typed; one an older record lacks is None. ``stored``
    is the JSON text itself, for the JSON printers (:meth:`as_json`).
    """

    strategy: str | None
    max_tokens: int | None
    overlap_tokens: int | None
    stored: str

    @classmethod
    def from_stored(cls, text: str | None) -> StoredChunkerConfig | None:
        """The config of a revision's ``chunker_config`` column (None when it has none)."""
        if not text:
            return None
        raw = json.loads(text)
        if raw is None:
            return None
        strategy = raw.get("strategy") if isinstance(raw, dict) else None
        return cls(strategy=strategy if isinstance(strategy, str) else None,
                   max_tokens=_int(raw.get("max_tokens")) if isinstance(raw, dict) else None,
                   overlap_tokens=_int(raw.get("overlap_tokens")) if isinstance(raw, dict)
                   else None, stored=text)

    @property
    def label(self) -> str:
        """``adaptive/400/80`` (``-`` for a field the record lacks)."""
        return "/".join("-" if v is None else str(v)
                        for v in (self.strategy, self.max_tokens, self.overlap_tokens))

    @property
    def empty(self) -> bool:
        """The stored record is empty (``{}``)."""
        return not self.as_json()

    def as_json(self) -> Any:
        """The stored JSON, parsed (the ``config`` of ``memlens history --json``)."""
        return json.loads(self.stored)


@dataclass(frozen=True)
class RevisionChunker:
    """The chunker a revision was chunked with."""

    name: str | None
    version: int | None
    config: StoredChunkerConfig | None


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
                        "config": self.chunker.config.as_json()
                        if self.chunker.config is not None else None},
            "chunks": self.chunks, "embedder": self.embedder,
            "embedder_status": self.embedder_status, "summary": self.summary,
            "diff": self.diff, "diff_truncated": self.diff_truncated,
            "has_snapshot": self.has_snapshot, "size": self.size,
        }


@dataclass(frozen=True)
class RevisionChange:
    """The change that produced a revision. memlens stores a superseded revision's
    summary and diff on *that* revision (the step to its successor), so the change that
    made revision N is read from the revision before it (:func:`revision_changes`)."""

    from_revision: int
    """The number of the revision the change started from (N-1 unless pruned)."""
    summary: str | None
    diff: str | None
    diff_truncated: bool

    def as_json(self) -> dict[str, Any]:
        """JSON shape of a revision's ``change`` in ``memlens history --json``."""
        return {"from_revision": self.from_revision, "summary": self.summary,
                "diff": self.diff, "diff_truncated": self.diff_truncated}


def revision_changes(history: Sequence[Revision]) -> list[RevisionChange | None]:
    """Per revision of ``history`` (newest first, as the door's ``revisions`` gives it),
    the change that produced it; None for the oldest one kept (nothing to compare)."""
    return [RevisionChange(prev.number, prev.summary, prev.diff, prev.diff_truncated)
            for prev in history[1:]] + ([None] if history else [])


@dataclass(frozen=True)
class Stats:
    """Counts for a status bar."""

    db: str
    documents: int
    tombstoned: int
    chunks: int
    queue: dict[str, int]
    embedder: str
    vectors_waiting: int = 0  # documents searchable by words whose vectors are not all in

    @property
    def queue_pending(self) -> int:
        """Live documents waiting for their projection or being projected now."""
        return self.queue.get("pending", 0) + self.queue.get("processing", 0)

    @property
    def queue_failed(self) -> int:
        """Live documents whose projection failed (nothing of them is searchable)."""
        return self.queue.get("failed", 0)

    @property
    def queue_stale(self) -> int:
        """Live documents served from an older projection than their current revision."""
        return self.queue.get("stale", 0)

    def as_dict(self) -> dict[str, Any]:
        """The dict form (what ``MemoryService.stats`` used to return)."""
        return {"db": self.db, "documents": self.documents, "tombstoned": self.tombstoned,
                "chunks": self.chunks, "queue": dict(self.queue), "embedder": self.embedder,
                "vectors_waiting": self.vectors_waiting}


@dataclass(frozen=True)
class NotSearchable:
    """A status stub: a document in a search's scope that is not (fully) searchable yet,
    so "no hit" from it means "not yet", not "not there" (issue 42).

    Attributes:
        repository: Repository of the document.
        path: Logical path of the document.
        status: ``pending`` (stage 1 queued or running), ``failed`` (stage 1 failed; it is
            retried), ``vectors_pending`` (words searchable, vectors being embedded) or
            ``vectors_failed`` (words searchable, the embedder failed; retried later).
        searchable: What a search sees of it now: ``nothing``, ``older_revision`` (an
            earlier text) or ``words_only`` (no meaning match yet).
        error: The last failure, if any.
    """

    repository: str
    path: str
    status: str
    searchable: str
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        """``{"repository","path","status","searchable","error"}``."""
        return {"repository": self.repository, "path": self.path, "status": self.status,
                "searchable": self.searchable, "error": self.error}

    def describe(self) -> str:
        """One line, e.g. ``pending: not searchable yet``."""
        what = {"nothing": "not searchable yet",
                "older_revision": "an older revision is searchable",
                "words_only": "searchable by words only"}[self.searchable]
        return f"{self.status.replace('_', ' ')}: {what}"


@dataclass(frozen=True)
class PendingDocuments:
    """The status stubs of a search's scope: ``total`` documents, the first of them."""

    total: int
    documents: tuple[NotSearchable, ...]

    def as_json(self) -> dict[str, Any]:
        """``{"total", "documents": [...]}`` (``documents`` may be fewer than ``total``)."""
        return {"total": self.total, "documents": [d.as_json() for d in self.documents]}


@dataclass(frozen=True)
class _Keys:
    """One candidate's fields for :class:`memlens.core.types.FilterIndex`, normalised once
    (see :func:`memlens.core.types._norm`)."""

    repository: str
    exact: frozenset[str]  # basename, path (with and without .md), repository/path
    base: str
    path: str
    labels: tuple[str, ...]  # front-matter name and every heading (each level)
    label_text: str  # "\n" + labels joined by "\n" (one substring test finds a prefix)
    words: str  # " " + the path's words joined by " " (" conv" in it: a word starts so)
    label_words: str
