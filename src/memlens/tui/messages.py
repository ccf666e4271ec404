"""Typed messages that background workers post back to the UI.

Workers never touch widgets: they read through :class:`MemoryService` in a
thread and post one of these. Handlers on the event loop only update widgets.
Progress-like messages set ``can_replace`` so a burst renders once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message

from memlens.core.chunking import Chunk
from memlens.core.indexfile import IndexWarning
from memlens.core.search import SearchResult
from memlens.core.service import DocumentSummary


class DocumentsLoaded(Message):
    """The document list (or a filtered part of it) was read."""

    def __init__(self, docs: list[DocumentSummary], warnings: dict[int, list[IndexWarning]], *,
                 filter_text: str, show_tombstoned: bool, scores: dict[int, float] | None = None,
                 ) -> None:
        super().__init__()
        self.docs = docs
        self.warnings = warnings
        self.filter_text = filter_text
        self.show_tombstoned = show_tombstoned
        self.scores = scores or {}


class DocumentRowsChanged(Message):
    """Some documents changed (status, chunk count...): refresh their rows."""

    def __init__(self, docs: list[DocumentSummary], *, processing: bool = False) -> None:
        super().__init__()
        self.docs = docs
        self.processing = processing


@dataclass
class DocumentDetail:
    """Everything the detail panes show for one document."""

    doc_id: int
    document: dict[str, Any]
    chunks: list[Chunk]
    nodes: dict[int, int]
    history: list[dict[str, Any]]
    warnings: list[IndexWarning]
    max_tokens: int
    chunker: dict[str, Any] | None
    now: float
    summary: DocumentSummary | None = None
    select_ordinal: int | None = None
    hit_ordinal: int | None = None
    hit_span: tuple[int, int] | None = None


class DetailLoaded(Message):
    """The detail of the selected document was read."""

    def __init__(self, detail: DocumentDetail) -> None:
        super().__init__()
        self.detail = detail


class DetailMissing(Message):
    """The selected document no longer exists."""

    def __init__(self, doc_id: int) -> None:
        super().__init__()
        self.doc_id = doc_id


class StatsLoaded(Message):
    """Fresh counts for the status bar."""

    def __init__(self, stats: dict[str, Any]) -> None:
        super().__init__()
        self.stats = stats

    def can_replace(self, message: Message) -> bool:
        """Only the newest counts matter."""
        return isinstance(message, StatsLoaded)


class Progress(Message):
    """Progress of a long background job (ingest, projection, rechunk)."""

    def __init__(self, job: str, phase: str, done: int, total: int | None, label: str = "",
                 ) -> None:
        super().__init__()
        self.job = job
        self.phase = phase
        self.done = done
        self.total = total
        self.label = label

    def can_replace(self, message: Message) -> bool:
        """A newer progress report of the same job replaces an older one."""
        return isinstance(message, Progress) and message.job == self.job


class JobFinished(Message):
    """A long background job ended (the status bar clears its progress)."""

    def __init__(self, job: str, summary: str, *, ok: bool = True,
                 reload: bool = True) -> None:
        super().__init__()
        self.job = job
        self.summary = summary
        self.ok = ok
        self.reload = reload


@dataclass
class SearchOutcome:
    """Results of one live-search query."""

    query: str
    mode: str
    result: SearchResult | None
    elapsed: float
    error: str | None = None
    notes: list[str] = field(default_factory=list)


class SearchResults(Message):
    """Results of a live search; applied only if the query still matches the input."""

    def __init__(self, outcome: SearchOutcome) -> None:
        super().__init__()
        self.outcome = outcome


class PreviewReady(Message):
    """A rechunk preview (current and proposed chunks) for the dialog."""

    def __init__(self, key: tuple[Any, ...], current: list[Chunk], proposed: list[Chunk],
                 error: str | None = None) -> None:
        super().__init__()
        self.key = key
        self.current = current
        self.proposed = proposed
        self.error = error


class RetryDone(Message):
    """A projection retry finished."""

    def __init__(self, doc_id: int, result: str, error: str | None) -> None:
        super().__init__()
        self.doc_id = doc_id
        self.result = result
        self.error = error


class WatchStatus(Message):
    """The file watcher changed state or reported an event."""

    def __init__(self, state: str, *, last: str | None = None, queue: int | None = None,
                 error: str | None = None, changed: list[int] | None = None) -> None:
        super().__init__()
        self.state = state
        self.last = last
        self.queue = queue
        self.error = error
        self.changed = changed or []
