"""Typed messages that background workers post back to the UI.

Workers never touch widgets: they read through :class:`MemoryService` in a
thread and post one of these. Handlers on the event loop only update widgets.
Every message is a ``@dataclass`` (Textual's :class:`Message` initialises itself
in ``__post_init__``). Progress-like messages set ``can_replace`` so a burst
renders once.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:  # annotations only: each name loads its core module when resolved
    # (``QueryEffect`` alone pulls in the projection and the redaction rules, ~50 ms of
    # the UI's start-up before its first frame).
    from textual.widgets.option_list import Option

    from memlens.core.types import (
        Chunk,
        ChunkerConfig,
        DocumentDetail,
        DocumentSummary,
        HitSource,
        IndexWarning,
        QueryEffect,
        Revision,
        SearchResult,
        Stats,
    )


@dataclass
class DocumentsLoaded(Message):
    """The document list (or a filtered part of it) was read."""

    docs: list[DocumentSummary]
    warnings: dict[int, list[IndexWarning]]
    _: KW_ONLY
    filter_text: str
    show_tombstoned: bool
    scores: dict[int, float] = field(default_factory=dict)


@dataclass
class IndexWarningsLoaded(Message):
    """The index warnings of the whole listing, read after it was shown.

    Checking every ``MEMORY.md`` reads each one in full (~0.25 s for 300 indexes at
    10,000 documents), so the listing goes on screen first and the ⚠ marks follow.
    """

    warnings: dict[int, list[IndexWarning]]
    _: KW_ONLY
    show_tombstoned: bool


@dataclass
class DocumentRowsChanged(Message):
    """Some documents changed (status, chunk count...): refresh their rows."""

    docs: list[DocumentSummary]
    _: KW_ONLY
    processing: bool = False


@dataclass
class DetailView:
    """Everything the detail panes show for one document (read by a worker)."""

    doc_id: int
    document: DocumentDetail
    chunks: list[Chunk]
    nodes: dict[int, int]
    history: list[Revision]
    warnings: list[IndexWarning]
    max_tokens: int
    now: float
    summary: DocumentSummary | None = None
    select_ordinal: int | None = None
    hit_ordinal: int | None = None
    hit_span: tuple[int, int] | None = None


@dataclass
class DetailLoaded(Message):
    """The detail of the selected document was read."""

    detail: DetailView


@dataclass
class DetailMissing(Message):
    """The selected document no longer exists."""

    doc_id: int


@dataclass
class StatsLoaded(Message):
    """Fresh counts for the status bar."""

    stats: Stats

    def can_replace(self, message: Message) -> bool:
        """Only the newest counts matter."""
        return isinstance(message, StatsLoaded)


@dataclass
class Progress(Message):
    """Progress of a long background job (ingest, projection, rechunk)."""

    job: str
    phase: str
    done: int
    total: int | None
    label: str = ""

    def can_replace(self, message: Message) -> bool:
        """A newer progress report of the same job replaces an older one."""
        return isinstance(message, Progress) and message.job == self.job


@dataclass
class JobFinished(Message):
    """A long background job ended (the status bar clears its progress)."""

    job: str
    summary: str
    _: KW_ONLY
    ok: bool = True
    reload: bool = True


@dataclass
class SearchOutcome:
    """Results of one live-search query."""

    query: str
    mode: str
    result: SearchResult | None
    elapsed: float
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    scope: tuple[str | None, str | None] = (None, None)  # the (repository, type) filters
    # The result list's options and, per hit, its option's index, built by the worker
    # (None: the handler builds them).
    options: tuple[list[Option], list[int]] | None = None


@dataclass
class SearchResults(Message):
    """Results of a live search; applied only if the query still matches the input."""

    outcome: SearchOutcome


@dataclass
class PreviewReady(Message):
    """A rechunk preview (current and proposed chunks) for the dialog."""

    key: tuple[Any, ...]
    current: list[Chunk]
    proposed: list[Chunk]
    error: str | None = None
    effects: list[QueryEffect] = field(default_factory=list)  # recent searches replayed


@dataclass
class RechunkChoiceLoaded(Message):
    """A document's effective chunker settings and where they come from, read for the
    rechunk dialog (``all_documents``: open it with "all documents" on)."""

    doc_id: int
    label: str
    base: ChunkerConfig
    origin: str
    live_count: int
    all_documents: bool = False


@dataclass
class RetryDone(Message):
    """A projection retry finished."""

    doc_id: int
    result: str
    error: str | None


@dataclass
class WatchStatus(Message):
    """The file watcher changed state or reported an event."""

    state: str
    _: KW_ONLY
    last: str | None = None
    queue: int | None = None
    error: str | None = None
    changed: list[int] = field(default_factory=list)
    #: The file a change event was about, as (repository, path, reason): reason is why it
    #: could not be read, or None when it was read (or deleted) fine.
    file: tuple[str, str, str | None] | None = None
    #: What ``error`` is about, when it lasts until fixed: ``("file" | "projection",
    #: repository, path)``; the events pane logs it once and counts it while it lasts.
    problem_key: tuple[str, str, str] | None = None
    #: Problems this event shows are fixed (the file was read, the projection is ready).
    fixed: tuple[tuple[str, str, str], ...] = ()
    #: A file the watcher saw and will read (repository, path): listed at once (``⟳``).
    seen: tuple[str, str] | None = None


@dataclass
class FilesUnreadable(Message):
    """Files an ingest could not read: (repository, path, reason) each; the tree marks
    them ``✗`` (a row of its own for a file that was never stored)."""

    files: list[tuple[str, str, str]]


@dataclass
class HitSourceLoaded(Message):
    """The whole chunk of a search hit was read, for ``purpose``: the preview, the
    editor (``edit``) or the clipboard (``copy``)."""

    key: tuple[int, int | None, int]
    source: HitSource | None
    purpose: str
