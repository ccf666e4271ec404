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
import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memlens.core.progress import (
    BatchProjected,
    Cancelled,
    DocumentProjected,
    FileRead,
    IngestDone,
    Progress,
    ProgressEvent,
    Rechunked,
    RowsChanged,
    VectorSlice,
)

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
    from memlens.core.details import NotSearchable as NotSearchable
    from memlens.core.details import PendingDocuments as PendingDocuments
    from memlens.core.details import ProjectionState as ProjectionState
    from memlens.core.details import Revision as Revision
    from memlens.core.details import RevisionChange as RevisionChange
    from memlens.core.details import RevisionChunker as RevisionChunker
    from memlens.core.details import Stats as Stats
    from memlens.core.details import StoredChunkerConfig as StoredChunkerConfig
    from memlens.core.details import _Keys
    from memlens.core.details import revision_changes as revision_changes
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
    from memlens.core.projection.reports import ProjectionOutcome as ProjectionOutcome
    from memlens.core.projection.reports import ProjectionReport as ProjectionReport
    from memlens.core.projection.reports import VectorReport as VectorReport
    from memlens.core.search.engine import MODES as MODES
    from memlens.core.search.engine import NO_WORD_FILTERED_NOTE as NO_WORD_FILTERED_NOTE
    from memlens.core.search.engine import NO_WORD_NOTE as NO_WORD_NOTE
    from memlens.core.search.engine import SearchError as SearchError
    from memlens.core.search.engine import SearchHit as SearchHit
    from memlens.core.search.engine import SearchResult as SearchResult
    from memlens.core.search.explain_values import ExplainError as ExplainError
    from memlens.core.search.explain_values import Explanation as Explanation
    from memlens.core.search.explain_values import Standing as Standing
    from memlens.core.search.explain_values import WhyNot as WhyNot
    from memlens.core.search.preview import QueryEffect as QueryEffect
    from memlens.core.store.db import DAMAGE as DAMAGE
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
    'DAMAGE': 'memlens.core.store.db',
    'Problem': 'memlens.core.doctor',
    'EmbedderUnavailable': 'memlens.core.embedders.registry',
    'EmbeddingError': 'memlens.core.embedders.registry',
    'IndexWarning': 'memlens.core.ingest.indexfile',
    'FileChange': 'memlens.core.ingest.pipeline',
    'IngestReport': 'memlens.core.ingest.pipeline',
    'InstallKeyError': 'memlens.core.ingest.installkey',
    'QueryEffect': 'memlens.core.search.preview',
    'ProjectionOutcome': 'memlens.core.projection.reports',
    'ProjectionReport': 'memlens.core.projection.reports',
    'VectorReport': 'memlens.core.projection.reports',
    'MODES': 'memlens.core.search.engine',
    'ExplainError': 'memlens.core.search.explain_values',
    'Explanation': 'memlens.core.search.explain_values',
    'Standing': 'memlens.core.search.explain_values',
    'WhyNot': 'memlens.core.search.explain_values',
    'NO_WORD_NOTE': 'memlens.core.search.engine',
    'NO_WORD_FILTERED_NOTE': 'memlens.core.search.engine',
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
    'RevisionChange': 'memlens.core.details',
    'NotSearchable': 'memlens.core.details',
    'PendingDocuments': 'memlens.core.details',
    'revision_changes': 'memlens.core.details',
    'RevisionChunker': 'memlens.core.details',
    'Stats': 'memlens.core.details',
    'StoredChunkerConfig': 'memlens.core.details',
}

__all__ = [
    "BatchProjected", "Cancelled", "Chunk", "ChunkResult", "ChunkerChoice", "ChunkerConfig",
    "ChunkerConfigError",
    "ChunkerSettings", "ConfigError", "DAMAGE", "DatabaseError", "DocumentDetail", "DocumentSummary",
    "EMBEDDER_NAMES", "EmbedderSettings",
    "ExplainError", "Explanation", "Standing", "WhyNot",
    "EmbedderUnavailable", "EmbeddingError", "FUSIONS", "FileChange",
    "FileRead", "IngestDone", "DocumentProjected", "Progress", "ProgressEvent", "Rechunked", "RowsChanged",
    "VectorSlice", "claude_projects_dir", "is_ignored_name", "is_markdown_name", "roots_for_path",
    "FilterIndex", "HitSource",
    "IndexWarning", "IngestOutcome", "IngestReport", "InstallKeyError", "MODES", "MemoryRoot",
    "NO_WORD_FILTERED_NOTE", "NO_WORD_NOTE", "NotSearchable", "PendingDocuments",
    "Problem",
    "ProjectionOutcome", "ProjectionReport", "QueryEffect", "ProjectionSettings", "ProjectionState",
    "RechunkOutcome", "RedactionFinding", "RetentionSettings", "Revision", "RevisionChange",
    "RevisionChunker", "STRATEGIES", "revision_changes",
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
class RedactionFinding:
    """One secret :meth:`MemoryService.check_redaction` would redact (``memlens redact
    --check``); the secret itself is never kept, only a masked form."""

    line: int  # 1-based line of its first character
    column: int  # 1-based column of its first character
    kind: str  # the marker kind: ``[REDACTED:<kind>]``
    source: str  # "built-in" or "user" (a ``[[redact.rules]]`` rule of the config file)
    masked: str  # its first characters (at most 4, at most a quarter of it) and "…"
    length: int  # its length in characters

    def as_json(self) -> dict[str, Any]:
        """The ``memlens redact --check --json`` shape of one finding."""
        return {"line": self.line, "column": self.column, "kind": self.kind,
                "source": self.source, "masked": self.masked, "length": self.length}


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


# -- the document filter (the sidebar's fuzzy finder) --------------------------------

_SEPARATORS = re.compile(r"[\s_-]+")
_WORDS = re.compile(r"[a-z0-9]+")


def _norm(text: str) -> str:
    """Lower case, with runs of blanks, ``-`` and ``_`` as one space (``/`` and ``.`` kept)."""
    return _SEPARATORS.sub(" ", text.lower()).strip()


def _keys(d: DocumentSummary) -> _Keys:
    from memlens.core.details import _Keys  # built when the finder first ranks (not at import)

    path = d.path
    stem = path[:-3] if path.lower().endswith(".md") else path
    base = posixpath.basename(path)
    base_stem = posixpath.basename(stem)
    repo = d.repository
    exact = {_norm(x) for x in (base, base_stem, path, stem, f"{repo}/{path}", f"{repo}/{stem}")}
    labels: list[str] = []
    for text in [d.name or "", *d.headings]:
        for part in text.split(" > "):
            n = _norm(part)
            if n and n not in labels:
                labels.append(n)
    return _Keys(repository=repo, exact=frozenset(exact), base=_norm(base), path=_norm(path),
                 labels=tuple(labels), label_text="\n" + "\n".join(labels),
                 words=" " + " ".join(_WORDS.findall(path.lower())),
                 label_words=" " + " ".join(w for lab in labels for w in _WORDS.findall(lab)))


def _words_prefix(query_words: list[str], words: str) -> bool:
    return bool(query_words) and all(f" {q}" in words for q in query_words)


def _cover(query: str, text: str) -> float:
    return len(query) / max(len(text), len(query), 1)


# Score bands (the best band decides; within a band, the closer fit ranks first).
EXACT = 100.0  # the basename or path, with or without ".md" and the repository
EXACT_LABEL = 96.0  # the front-matter name or a heading
PREFIX_BASE = 90.0  # ..93: the basename starts with the query
PREFIX_PATH = 88.0  # ..90: the path ("notes/ret")
PREFIX_LABEL = 84.0  # ..86: the name or a heading
WORDS_PATH = 81.0  # ..82: every query word starts a word of the path ("api conv")
WORDS_LABEL = 80.0  # ..81: every query word starts a word of the name or headings
FUZZY_TOP = 79.0  # fuzzy scores are scaled into 0..79
FUZZY_CUTOFF = 60.0
"""Fuzzy matches below this mix score are left out. On the finder table plus 14
typo queries: 45 keeps 58/59 top-1 but lists 19 documents for "testing" and 12
for "eror handling"; 60 keeps 58/59 and lists 2 for each; 65 drops to 55/59."""

FUZZY_WRATIO_FLOOR = 48.0
"""...and WRatio itself must reach this: partial_ratio alone is lenient with short
queries ("perf" gets 75, WRatio 45, against every lanternfish document). Measured
as for the cutoff: floor 45 lists 14 documents for "perf"; 48 lists 2 and keeps
58/59 top-1; 50 loses "datquality"; 55 keeps only 54/59."""

FUZZY_WRATIO = 0.5
"""Weight of WRatio in the fuzzy mix (the rest is partial_ratio). Measured on the
finder table of ``tests/test_finder.py`` (45 queries) and 14 more typo queries,
top-1: WRatio alone 43/45 and 11/14; 0.75: 45/45, 13/14 (MRR .946); 0.5 and 0.25:
45/45, 13/14 (MRR .952); partial_ratio alone 45/45, 12/14."""


def tier_score(query: str, keys: _Keys, qwords: list[str] | None = None) -> float | None:
    """The exact/prefix score of a normalised ``query`` for one candidate (None: neither).

    ``qwords`` are the words of ``query`` (computed once by the caller).
    """
    if query in keys.exact:
        return EXACT
    if query in keys.labels:
        return EXACT_LABEL
    if keys.base.startswith(query):
        return PREFIX_BASE + 3 * _cover(query, keys.base)
    if keys.path.startswith(query):
        return PREFIX_PATH + 2 * _cover(query, keys.path)
    if "\n" + query in keys.label_text:
        best = max(_cover(query, lab) for lab in keys.labels if lab.startswith(query))
        return PREFIX_LABEL + 2 * best
    if qwords is None:
        qwords = _WORDS.findall(query)
    if _words_prefix(qwords, keys.words):
        return WORDS_PATH + _cover(query, keys.path)
    if _words_prefix(qwords, keys.label_words):
        return WORDS_LABEL + 1 / (1 + len(keys.labels))
    return None


@dataclass
class FilterIndex:
    """A cached candidate list for the fuzzy "go to document" filter.

    :meth:`MemoryService.filter_documents` re-reads every document and every
    heading on each call; a UI filtering as the user types builds this once per
    data change (:meth:`MemoryService.build_filter_index`) and then only ranks;
    it is the only implementation of the filter (the TUI's ``/`` box and
    ``memlens docs --filter``).

    Ranking, best band first (see the constants above): an exact basename or
    path; an exact front-matter name or heading; a prefix of the basename, the
    path, the name or a heading; every query word starting a word of the path,
    name or headings; then fuzzy: a mix of rapidfuzz WRatio and partial_ratio
    over repository, path, name and headings (``choices``), cutoff 60 (and WRatio
    at least 48). A query
    word naming exactly one repository (``tidewater`` for
    ``-home-dev-projects-tidewater-api``, see :meth:`match_repository`), or a
    leading ``repository/`` segment, narrows the search to it. Ties keep
    document order (repository, then path). The scan runs in slices so a thread
    doing it gives the interpreter lock back between slices.
    """

    include_tombstoned: bool
    candidates: list[DocumentSummary] = field(default_factory=list)
    choices: list[str] = field(default_factory=list)
    _keys: list[_Keys] | None = field(default=None, repr=False, compare=False)

    SLICE = 1000

    @staticmethod
    def match_repository(name: str, repositories: Iterable[str]) -> list[str]:
        """Repositories ``name`` may mean, best kind of match only.

        The full name (any case), else those whose name *ends* with ``name`` on a
        ``-`` boundary (``tidewater-api``), else those containing it on ``-``
        boundaries (``tidewater``). A path (``/home/dev/app``) is turned into its
        Claude slug first. Sorted; empty when nothing matches.
        """
        repos = sorted(set(repositories))
        raw = name.strip()
        if not raw:
            return []
        if raw in repos:
            return [raw]
        if raw.startswith(("/", "~")):
            from memlens.core.ingest.sources import claude_slug

            slug = claude_slug(os.path.expanduser(raw).rstrip("/") or "/")
            if slug in repos:
                return [slug]
        key = re.sub(r"[^a-z0-9]+", "-", raw.lower()).strip("-")
        if not key:
            return []
        lowered = [(r, "-" + r.lower().strip("-") + "-") for r in repos]
        same = [r for r, low in lowered if low == f"-{key}-"]
        if same:
            return same
        suffix = [r for r, low in lowered if low.endswith(f"-{key}-")]
        if suffix:
            return suffix
        return [r for r, low in lowered if f"-{key}-" in low]

    def prepare(self) -> FilterIndex:
        """Normalise every candidate's fields now (else the first :meth:`filter` does)."""
        if self._keys is None:
            self._keys = [_keys(c) for c in self.candidates]
        return self

    def _repository_hint(self, text: str) -> tuple[str, str] | None:
        """(repository, the rest of the query) when a word of ``text`` names one repository."""
        repos = {c.repository for c in self.candidates}
        words = text.split()
        for i, word in enumerate(words):
            head, sep, tail = word.partition("/")
            for token, rest in ((word, ""), (head, tail)) if sep else ((word, ""),):
                if len(token.strip("-")) < 3:
                    continue
                found = self.match_repository(token, repos)
                if len(found) == 1:
                    return found[0], " ".join([*words[:i], *([rest] if rest else []),
                                               *words[i + 1:]])
        return None

    def filter(self, text: str, *, limit: int = 200,
               cutoff: float = FUZZY_CUTOFF) -> list[tuple[DocumentSummary, float]]:
        """Documents matching ``text``, best first, with their score (0-100]."""
        if not text.strip():
            return [(c, 100.0) for c in self.candidates[:limit]]
        self.prepare()
        hint = self._repository_hint(text)
        if hint is not None:
            repo, rest = hint
            allowed = [i for i, k in enumerate(self._keys or []) if k.repository == repo]
            if not rest.strip():
                return [(self.candidates[i], 100.0) for i in allowed[:limit]]
            found = self._rank(rest, allowed, limit, cutoff)
            if found:
                return found
        return self._rank(text, None, limit, cutoff)

    def _rank(self, text: str, allowed: list[int] | None, limit: int,
              cutoff: float) -> list[tuple[DocumentSummary, float]]:
        import time

        from rapidfuzz import fuzz, process, utils

        keys = self._keys or []
        query = _norm(text)
        fuzzy_query = utils.default_process(text)
        order = allowed if allowed is not None else list(range(len(keys)))
        qwords = _WORDS.findall(query)
        scored: list[tuple[float, int]] = []
        rest: list[int] = []
        for start in range(0, len(order), self.SLICE):
            part = order[start:start + self.SLICE]
            for i in part:
                s = tier_score(query, keys[i], qwords)
                if s is None:
                    rest.append(i)
                else:
                    scored.append((s, i))
            time.sleep(0)  # let other threads (the event loop) run between slices
        if fuzzy_query:
            # Only what can pass is scored in full: WRatio below its floor is dropped
            # (rapidfuzz returns 0 under score_cutoff and the exact score above it), and
            # partial_ratio is computed for the rest only, from the least that can still
            # reach ``cutoff`` with WRatio at 100. Same scores, same list; at 10,000
            # documents about a third of the time (``tests/test_finder.py``).
            floor_b = max(0.0, (cutoff - FUZZY_WRATIO * 100.0) / (1 - FUZZY_WRATIO))
            for start in range(0, len(rest), self.SLICE):
                part = rest[start:start + self.SLICE]
                w = process.cdist([fuzzy_query], [self.choices[i] for i in part],
                                  scorer=fuzz.WRatio, processor=None, workers=1,
                                  score_cutoff=FUZZY_WRATIO_FLOOR)[0]
                kept = [(i, float(a)) for i, a in zip(part, w, strict=True)
                        if a >= FUZZY_WRATIO_FLOOR]
                if kept:
                    p = process.cdist([fuzzy_query], [self.choices[i] for i, _ in kept],
                                      scorer=fuzz.partial_ratio, processor=None,
                                      workers=1, score_cutoff=floor_b)[0]
                    for (i, a), b in zip(kept, p, strict=True):
                        mix = FUZZY_WRATIO * a + (1 - FUZZY_WRATIO) * float(b)
                        if mix >= cutoff:
                            scored.append((mix * FUZZY_TOP / 100.0, i))
                time.sleep(0)
        # Best score first; ties keep document order.
        scored.sort(key=lambda si: (-si[0], si[1]))
        return [(self.candidates[i], round(score, 3)) for score, i in scored[:limit]]


def __getattr__(name: str) -> Any:
    """Resolve a re-exported name from its owner module on first use (then cached)."""
    owner = _LAZY.get(name)
    if owner is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(owner), name)
    globals()[name] = value
    return value
