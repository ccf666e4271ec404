"""Extra read queries for the terminal UI (and anything else that needs them).

The TUI holds no SQL of its own; what it needs beyond :class:`MemoryService`
lives here. Everything is read-only except :func:`release_thread_connection`,
which only closes the calling thread's connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import db as dbm

if TYPE_CHECKING:
    from .service import DocumentSummary, MemoryService

_SUMMARY_SQL = (
    "SELECT d.id, d.repository, d.logical_path, d.projection_status, d.tombstoned_at,"
    " d.current_revision_id, d.active_revision_id, d.source_size, d.doc_name, d.doc_type,"
    " d.projection_error,"
    " (SELECT COUNT(*) FROM memory_chunks c WHERE c.revision_id=d.current_revision_id)"
    "   AS nchunks"
    " FROM memory_documents d"
)


def _summary(r: dict[str, Any]) -> DocumentSummary:
    from .service import DocumentSummary

    return DocumentSummary.from_row(r)


def document_summaries(service: MemoryService, ids: Sequence[int]) -> list[DocumentSummary]:
    """List rows for the given document ids (live or tombstoned), in id order.

    Used to refresh single rows of a document list after a projection or a
    rechunk without re-reading every document.
    """
    out: list[DocumentSummary] = []
    wanted = sorted({int(i) for i in ids})
    conn = service.conn()
    # Stay well below SQLite's host-parameter limit.
    for start in range(0, len(wanted), 500):
        part = wanted[start:start + 500]
        ph = ",".join("?" * len(part))
        out.extend(_summary(r) for r in dbm.rows(
            conn, f"{_SUMMARY_SQL} WHERE d.id IN ({ph}) ORDER BY d.id", part))
    return out


@dataclass
class FilterIndex:
    """A cached candidate list for the fuzzy "go to document" filter.

    :meth:`MemoryService.filter_documents` re-reads every document and every
    heading on each call; a UI filtering as the user types builds this once per
    data change and then only runs rapidfuzz. The ranking is the one of
    :func:`memlens.core.search.fuzzy_documents` (WRatio over repository, path,
    front-matter name and headings, default processing, cutoff 45); the choice
    strings are processed once here, and the scan runs in slices so a thread
    doing it gives the interpreter lock back between slices.
    """

    include_tombstoned: bool
    candidates: list[dict[str, Any]] = field(default_factory=list)
    choices: list[str] = field(default_factory=list)

    SLICE = 1000

    def filter(self, text: str, *, limit: int = 200,
               cutoff: float = 45.0) -> list[tuple[DocumentSummary, float]]:
        """Documents matching ``text``, best first, with their rapidfuzz score."""
        from rapidfuzz import fuzz, process, utils

        if not text.strip():
            return [(c["_doc"], 100.0) for c in self.candidates[:limit]]
        query = utils.default_process(text)
        found: list[tuple[float, int]] = []
        for start in range(0, len(self.choices), self.SLICE):
            part = self.choices[start:start + self.SLICE]
            for _, score, i in process.extract(query, part, scorer=fuzz.WRatio, processor=None,
                                               limit=limit, score_cutoff=cutoff):
                found.append((float(score), start + int(i)))
        # Best score first; ties keep document order (as a single extract would).
        found.sort(key=lambda si: (-si[0], si[1]))
        return [(self.candidates[i]["_doc"], score) for score, i in found[:limit]]


def build_filter_index(service: MemoryService, *, include_tombstoned: bool = False) -> FilterIndex:
    """Read documents and their headings once for repeated fuzzy filtering."""
    from rapidfuzz import utils

    docs = service.list_documents(include_tombstoned=include_tombstoned, with_headings=True)
    candidates = [{"repository": d.repository, "path": d.path, "name": d.name,
                   "headings": d.headings, "_doc": d} for d in docs]
    choices = [utils.default_process(" ".join([d.repository, d.path, d.name or "",
                                               " ".join(d.headings)])) for d in docs]
    return FilterIndex(include_tombstoned, candidates, choices)


def release_thread_connection(service: MemoryService) -> None:
    """Close the calling thread's connection of ``service``, if it opened one.

    ``MemoryService`` keeps one connection per thread. A UI that runs every query
    in a short-lived worker thread calls this when the worker ends, so
    connections do not pile up for threads that no longer exist.
    """
    release = getattr(service, "release_thread_connection", None)
    if callable(release):  # the façade grew its own method: prefer it
        release()
        return
    local = service._local  # noqa: SLF001 - fallback until the façade has the method
    conn = getattr(local, "conn", None)
    if conn is None:
        return
    with service._conns_lock:  # noqa: SLF001
        if conn in service._conns:  # noqa: SLF001
            service._conns.remove(conn)  # noqa: SLF001
    local.conn = None
    try:
        conn.close()
    except Exception:  # noqa: BLE001 - closing a broken connection must not raise
        pass


def queued_document_ids(service: MemoryService, now: float | None = None) -> list[int]:
    """Live documents a projection run would pick up now, in id order.

    Pending and processing ones, ready ones whose active revision is behind, and
    failed or stale ones whose back-off has expired at ``now`` (default: the
    service clock).
    """
    t = service.clock() if now is None else now
    return [int(r["id"]) for r in dbm.rows(
        service.conn(),
        "SELECT id FROM memory_documents WHERE tombstoned_at IS NULL"
        " AND current_revision_id IS NOT NULL AND ("
        "  projection_status IN ('pending','processing')"
        "  OR (projection_status='ready' AND active_revision_id IS NOT current_revision_id)"
        "  OR (projection_status IN ('failed','stale')"
        "      AND (projection_next_attempt_at IS NULL OR projection_next_attempt_at<=?)))"
        " ORDER BY id", (t,))]
