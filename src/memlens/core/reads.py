"""The read side of :class:`memlens.core.service.MemoryService`: documents, chunks,
revisions, statistics and checks, as frozen values. Core-internal (the UI imports
only ``memlens.core.service``); split out to keep modules small.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from memlens.core.runtime import ServiceBase
from memlens.core.store import db as dbm
from memlens.core.store.schema import DOC_CONTENT_SQL
from memlens.core.types import DocumentSummary, FilterIndex

if TYPE_CHECKING:
    from memlens.core import doctor as doctor_mod
    from memlens.core.chunking.chunker import Chunk
    from memlens.core.details import DocumentDetail, HitSource, PendingDocuments, Revision, Stats
    from memlens.core.ingest.indexfile import IndexWarning
# projection, doctor, the chunker, the embedders and the store are imported where a
# method needs them: a lexical search or `memlens docs` never loads them.

_SUMMARY_SQL = (
    "SELECT d.id, d.repository, d.logical_path, d.projection_status, d.tombstoned_at,"
    " d.current_revision_id, d.active_revision_id, d.source_size, d.doc_name, d.doc_type,"
    " d.projection_error, d.vector_done, d.vector_total, d.vector_capped, d.vector_error,"
    " (SELECT COUNT(*) FROM memory_chunks c WHERE c.revision_id=d.current_revision_id)"
    "   AS nchunks"
    " FROM memory_documents d"
)

# the content is the current revision's snapshot (a tombstoned document's: its last content)
_DETAIL_SQL = (
    "SELECT d.id, d.repository, d.logical_path, d.content_hash, d.source_size, d.front_matter,"
    " d.tombstoned_at, d.current_revision_id, d.active_revision_id, d.projection_status,"
    " d.projection_error, d.projection_attempts, d.projection_started_at,"
    " d.projection_updated_at, d.projection_next_attempt_at, d.observed_at,"
    " d.vector_done, d.vector_total, d.vector_capped, d.vector_updated_at, d.vector_error,"
    " d.vector_attempts, d.vector_next_attempt_at,"
    f" {DOC_CONTENT_SQL} AS content FROM memory_documents d WHERE d.id=?")


class ServiceReads(ServiceBase):
    """Reads over one database (see :class:`memlens.core.service.MemoryService`)."""

    # -- reads --------------------------------------------------------------
    def list_documents(self, *, include_tombstoned: bool = False, repository: str | None = None,
                       with_headings: bool = False) -> list[DocumentSummary]:
        """All documents, grouped by repository then path."""
        sql = _SUMMARY_SQL + " WHERE 1=1"
        params: list[Any] = []
        if not include_tombstoned:
            sql += " AND d.tombstoned_at IS NULL"
        if repository:
            sql += " AND d.repository=?"
            params.append(repository)
        sql += " ORDER BY d.repository, d.logical_path"
        heads: dict[int, list[str]] = {}
        if with_headings:
            for r in dbm.rows(self.conn(), "SELECT document_id, heading FROM knowledge_nodes"
                              " WHERE heading<>'' ORDER BY document_id, ordinal"):
                lst = heads.setdefault(int(r["document_id"]), [])
                if r["heading"] not in lst:
                    lst.append(r["heading"])
        return [DocumentSummary.from_row(r, heads.get(int(r["id"])))
                for r in dbm.rows(self.conn(), sql, params)]

    def filter_documents(self, text: str, *, include_tombstoned: bool = False,
                         limit: int = 200) -> list[tuple[DocumentSummary, float]]:
        """Fuzzy "go to document" over repository, path, headings and front-matter name."""
        return self.build_filter_index(include_tombstoned=include_tombstoned).filter(
            text, limit=limit)

    def locate(self, repository: str | None, path: str) -> DocumentDetail | None:
        """Document detail by repository and logical path (repository may be omitted
        when the path is unique). Without a repository, ``path`` may also be written
        ``repository/path`` as ``memlens docs`` prints it.

        Raises:
            LookupError: The path exists in several repositories and none was given.
        """
        from memlens.core.store.records import find_document

        conn = self.conn()
        if repository:
            d = find_document(conn, repository, path)
            return self.detail(int(d["id"])) if d else None
        ids = [int(r[0]) for r in conn.execute(
            "SELECT id FROM memory_documents WHERE logical_path=? ORDER BY tombstoned_at IS NOT NULL,"
            " id", (path,))]
        if len(ids) > 1:
            repos = [r[0] for r in conn.execute(
                "SELECT repository FROM memory_documents WHERE logical_path=?", (path,))]
            raise LookupError(f"{path} exists in several repositories ({', '.join(repos)}); "
                              "pass --repository")
        if ids:
            return self.detail(ids[0])
        for i, ch in enumerate(path):  # `repository/path`, as `memlens docs` lists them
            if ch == "/" and (d := find_document(conn, path[:i], path[i + 1:])):
                return self.detail(int(d["id"]))
        return None

    def detail(self, doc_id: int) -> DocumentDetail | None:
        """Full detail of one document (content, projection state, front matter)."""
        from memlens.core.details import DocumentDetail, ProjectionState

        r = dbm.row(self.conn(), _DETAIL_SQL, (doc_id,))
        if r is None:
            return None
        return DocumentDetail(
            id=int(r["id"]), repository=r["repository"], path=r["logical_path"],
            content=r["content"] or "", content_hash=r["content_hash"], size=r["source_size"],
            front_matter=json.loads(r["front_matter"] or "{}"),
            tombstoned=r["tombstoned_at"] is not None, tombstoned_at=r["tombstoned_at"],
            current_revision_id=r["current_revision_id"],
            active_revision_id=r["active_revision_id"],
            projection=ProjectionState(
                status=r["projection_status"], error=r["projection_error"],
                attempts=int(r["projection_attempts"] or 0),
                started_at=r["projection_started_at"], updated_at=r["projection_updated_at"],
                next_attempt_at=r["projection_next_attempt_at"],
                vectors_done=int(r["vector_done"] or 0),
                vectors_total=int(r["vector_total"] or 0),
                vectors_capped=int(r["vector_capped"] or 0),
                vectors_updated_at=r["vector_updated_at"], vector_error=r["vector_error"],
                vector_attempts=int(r["vector_attempts"] or 0),
                vector_next_attempt_at=r["vector_next_attempt_at"]),
            observed_at=r["observed_at"])

    def chunks(self, doc_id: int, revision_id: int | None = None) -> list[Chunk]:
        """Chunks of a revision (default: current) as :class:`Chunk` objects."""
        from memlens.core.chunking.chunker import Chunk

        conn = self.conn()
        if revision_id is None:
            revision_id = dbm.scalar(conn, "SELECT current_revision_id FROM memory_documents"
                                     " WHERE id=?", (doc_id,))
        out = []
        for r in dbm.rows(conn, "SELECT * FROM memory_chunks WHERE revision_id=? ORDER BY ordinal",
                          (revision_id,)):
            out.append(Chunk(ordinal=r["ordinal"], heading_path=tuple(json.loads(r["heading_path"])),
                             start_char=r["start_char"], end_char=r["end_char"],
                             start_byte=r["start_byte"], end_byte=r["end_byte"], text=r["text"],
                             hash=r["chunk_hash"], tokens=r["tokens"],
                             overlap_chars=r["overlap_chars"], reason=r["reason"] or ""))
        return out

    def hit_source(self, document_id: int, chunk_id: int | None,
                   ordinal: int = 0) -> HitSource | None:
        """The whole chunk of a search hit, its line in the file and the file on disk.

        ``chunk_id`` is the hit's chunk (``SearchHit.chunk_id``); without one, the
        chunk ``ordinal`` of the document's current revision is used. None when the
        document or the chunk is gone."""
        from memlens.core.details import HitSource

        conn = self.conn()
        doc = dbm.rows(conn, "SELECT repository, logical_path, source_path, source_root,"
                       " current_revision_id FROM memory_documents WHERE id=?", (document_id,))
        if not doc:
            return None
        if chunk_id is not None:
            found = dbm.rows(conn, "SELECT * FROM memory_chunks WHERE id=?", (chunk_id,))
        else:
            found = dbm.rows(conn, "SELECT * FROM memory_chunks WHERE revision_id=? AND"
                             " ordinal=?", (doc[0]["current_revision_id"], ordinal))
        if not found:
            return None
        c = found[0]
        snap = dbm.scalar(conn, "SELECT snapshot FROM memory_revisions WHERE id=?",
                          (c["revision_id"],))
        line = str(snap or "")[: int(c["start_char"])].count("\n") + 1
        src = doc[0]["source_path"]
        file = Path(src) if src and Path(src).is_file() else None
        if file is None and doc[0]["source_root"]:
            file = self._tagged_file(doc[0]["repository"], doc[0]["source_root"],
                                     doc[0]["logical_path"])
        return HitSource(repository=doc[0]["repository"], path=doc[0]["logical_path"],
                         ordinal=int(c["ordinal"]),
                         heading_path=tuple(json.loads(c["heading_path"] or "[]")),
                         text=c["text"], line=line, file=file)

    def _tagged_file(self, repository: str, source_root: str, logical_path: str) -> Path | None:
        """The file on disk of a document whose name held a secret (stored redacted and
        tagged, :mod:`memlens.core.ingest.names`): found by scanning its folder again."""
        from memlens.core.ingest.installkey import InstallKeyError
        from memlens.core.ingest.names import is_tagged
        from memlens.core.ingest.pipeline import scan_stored
        from memlens.core.ingest.sources import MemoryRoot, SourceError

        if not is_tagged(logical_path):
            return None
        try:
            files = scan_stored(MemoryRoot(repository, Path(source_root)), self.install_key())[0]
        except (SourceError, OSError, InstallKeyError):
            return None
        return next((f.abs_path for f in files if f.logical_path == logical_path), None)

    def search_facets(self) -> tuple[list[str], list[str]]:
        """Repositories and document types (front matter ``type``) of live documents,
        sorted: the choices of the search screen's filters."""
        conn = self.conn()
        repos = [str(r[0]) for r in conn.execute(
            "SELECT DISTINCT repository FROM memory_documents WHERE tombstoned_at IS NULL"
            " ORDER BY repository")]
        types = [str(r[0]) for r in conn.execute(
            "SELECT DISTINCT doc_type FROM memory_documents WHERE tombstoned_at IS NULL"
            " AND doc_type IS NOT NULL AND doc_type != '' ORDER BY doc_type")]
        return repos, types

    def chunk_nodes(self, doc_id: int) -> dict[int, int]:
        """ordinal -> knowledge node id for the active projection."""
        return {int(r["ordinal"]): int(r["id"]) for r in dbm.rows(
            self.conn(), "SELECT id, ordinal FROM knowledge_nodes WHERE document_id=?", (doc_id,))}

    @staticmethod
    def _revision(r: dict[str, Any]) -> Revision:
        from memlens.core.details import Revision, RevisionChunker, StoredChunkerConfig

        return Revision(
            id=int(r["id"]), number=int(r["seq"]), change_kind=r["change_kind"],
            content_hash=r["content_hash"], path=r["logical_path"],
            previous_path=r["previous_path"], observed_at=r["observed_at"],
            chunker=RevisionChunker(
                name=r["chunker_name"], version=r["chunker_version"],
                config=StoredChunkerConfig.from_stored(r["chunker_config"])),
            chunks=r["chunk_count"], embedder=r["embedder"],
            embedder_status=r["embedder_status"], summary=r["summary"], diff=r["diff"],
            diff_truncated=bool(r["diff_truncated"]), has_snapshot=r["snapshot"] is not None,
            size=r["size_bytes"], snapshot=r["snapshot"])

    def revision(self, revision_id: int) -> Revision | None:
        """One revision record (with its snapshot, when it still has one)."""
        r = dbm.row(self.conn(), "SELECT * FROM memory_revisions WHERE id=?", (revision_id,))
        return self._revision(r) if r is not None else None

    def revisions(self, doc_id: int) -> list[Revision]:
        """Revisions newest first (bounded summaries and diffs; snapshot only on current)."""
        return [self._revision(r) for r in dbm.rows(
            self.conn(), "SELECT * FROM memory_revisions WHERE document_id=? ORDER BY seq DESC",
            (doc_id,))]

    def index_warnings(self, doc_id: int) -> list[IndexWarning]:
        """MEMORY.md warnings (limits, broken links, unlinked topics) for an index document."""
        doc = self.detail(doc_id)
        if doc is None:
            return []
        names = set(self.chunker_config().index_names)
        if Path(doc.path).name not in names:
            return []
        live = [r[0] for r in self.conn().execute(
            "SELECT logical_path FROM memory_documents WHERE repository=? AND tombstoned_at IS NULL",
            (doc.repository,))]
        from memlens.core.ingest.indexfile import check_index

        return check_index(doc.path, doc.content, live)

    def pending_count(self) -> dict[str, int]:
        """Projection queue: live documents per projection status."""
        from memlens.core.projection import queue as proj

        return proj.pending_count(self.conn())

    def not_searchable(self, *, mode: str = "hybrid", repository: str | None = None,
                       doc_type: str | None = None, limit: int = 20) -> PendingDocuments:
        """Status stubs: live documents in a search's scope (``repository``, ``doc_type``)
        that are not searchable yet, or only in part: stage 1 pending or failed, and
        (unless ``mode`` is lexical) vectors still waiting or failed. The first ``limit``
        by repository and path, with the total."""
        from memlens.core.details import NotSearchable, PendingDocuments

        where = " WHERE d.tombstoned_at IS NULL AND (d.projection_status <> 'ready'"
        where += " OR d.vector_done < d.vector_total)" if mode != "lexical" else ")"
        params: list[Any] = []
        for col, value in (("repository", repository), ("doc_type", doc_type)):
            if value:
                where += f" AND d.{col}=?"
                params.append(value)
        conn = self.conn()
        with dbm.read_txn(conn):
            total = int(dbm.scalar(conn, "SELECT COUNT(*) FROM memory_documents d" + where,
                                   params) or 0)
            found = dbm.rows(conn, "SELECT d.repository, d.logical_path, d.projection_status,"
                             " d.active_revision_id, d.current_revision_id, d.projection_error,"
                             " d.vector_done, d.vector_total, d.vector_error"
                             " FROM memory_documents d" + where
                             + " ORDER BY d.repository, d.logical_path LIMIT ?",
                             [*params, max(0, limit)])
        stubs = []
        for r in found:
            if r["projection_status"] != "ready":
                status = "failed" if r["projection_status"] in ("failed", "stale") else "pending"
                searchable = "nothing" if r["active_revision_id"] is None else "older_revision"
                error = r["projection_error"]
            else:
                status = "vectors_failed" if r["vector_error"] else "vectors_pending"
                searchable, error = "words_only", r["vector_error"]
            stubs.append(NotSearchable(r["repository"], r["logical_path"], status, searchable,
                                       error))
        return PendingDocuments(total, tuple(stubs))

    def statistics(self) -> Stats:
        """Counts for a status bar: documents, chunks, queue, embedder."""
        from memlens.core.details import Stats
        from memlens.core.projection import queue as proj
        from memlens.core.projection.changes import vectors_waiting

        conn = self.conn()
        docs = int(dbm.scalar(conn, "SELECT COUNT(*) FROM memory_documents WHERE tombstoned_at"
                              " IS NULL") or 0)
        tomb = int(dbm.scalar(conn, "SELECT COUNT(*) FROM memory_documents WHERE tombstoned_at"
                              " IS NOT NULL") or 0)
        nodes = int(dbm.scalar(conn, "SELECT COUNT(*) FROM knowledge_nodes") or 0)
        return Stats(db=str(self.db_path), documents=docs, tombstoned=tomb, chunks=nodes,
                     queue=proj.pending_count(conn), embedder=self.embedder_label(),
                     vectors_waiting=vectors_waiting(conn))

    def embedder_label(self) -> str:
        """Short embedder description, or the reason it is unavailable."""
        from memlens.core.embedders.registry import EmbedderUnavailable, EmbeddingError

        try:
            e = self.embedder
        except EmbedderUnavailable as exc:
            return f"unavailable: {exc}"
        try:
            dim = e.dim  # an HTTP embedder without a configured dim asks its endpoint once
        except EmbeddingError as exc:
            return f"{e.name}:{e.model} (unreachable: {exc})"
        return f"{e.name}:{e.model} ({dim}d)"

    def check_writable(self) -> None:
        """Prove that this database takes a write: opens it for writing and takes (then
        releases) the write lock, writing nothing (``memlens doctor --probe``).

        Raises:
            DatabaseReadOnly: The file or its folder is read-only here.
            StorageError: SQLite refused the write lock (locked, read-only, damaged).
        """
        c = self._writable()
        c.execute("BEGIN IMMEDIATE")
        c.execute("ROLLBACK")

    def check_before_writing(self) -> bool:
        """Before a writing run: SQLite's ``quick_check`` when the database is small
        enough for it to cost little (:data:`memlens.core.doctor.QUICK_CHECK_MAX_BYTES`);
        a damaged database raises :class:`apsw.CorruptError` (one line, exit 1, in the
        CLI) before anything is written. Returns whether the check ran."""
        from memlens.core import doctor as doctor_mod

        return doctor_mod.quick_check(self.conn(), str(self.db_path))

    def invariants(self, *, lag_minutes: float | None = None,
                   ) -> tuple[list[str], list[doctor_mod.Problem]]:
        """The invariants by name (:mod:`memlens.core.invariants`: watcher heartbeat,
        repeated failures, projection lag over ``lag_minutes``, schema skew), each
        finding with its fix; run by ``memlens doctor`` after :meth:`doctor`, whose
        consistency checks hold after any crash, while these say how the running system
        does (a projection interrupted a while ago lags)."""
        from memlens.core import invariants

        lag = invariants.LAG_MINUTES if lag_minutes is None else lag_minutes
        return (list(invariants.NAMES),
                invariants.check_invariants(self.conn(), self.clock(), lag_minutes=lag))

    def doctor(self) -> tuple[list[str], list[doctor_mod.Problem]]:
        """Run the consistency checks; a file SQLite cannot read is reported, with how to
        rebuild it, instead of raised."""
        from memlens.core import doctor as doctor_mod

        try:
            checks, problems = doctor_mod.run_checks(self.conn())
        except (dbm.DatabaseCorrupt, apsw.CorruptError, apsw.NotADBError) as exc:
            cause = exc.__cause__ or exc
            checks = ["sqlite_integrity"]
            problems = [doctor_mod.Problem(
                "sqlite_integrity", f"{self.db_path} cannot be read as a memlens database: "
                f"{cause}")]
        if any(p.check == "sqlite_integrity" for p in problems):
            import shlex

            db = shlex.quote(str(self.db_path))
            problems.append(doctor_mod.Problem(
                "rebuild", "the file is damaged and cannot be repaired in place; rebuild it "
                f"from the memory folders: `mv {db} {db}.damaged && memlens ingest --db {db}` "
                "(revision history older than the rebuild stays only in the moved file)"))
        return checks, problems

    def doctor_notices(self) -> list[str]:
        """Not problems but unfinished work: the projection queue, failures waiting for
        their retry, claims of processes that are gone."""
        from memlens.core.projection import queue as proj

        return proj.queue_notices(self.conn(), self.clock())

    # -- for the TUI (issue 12, TUI side): reads the browser needs -----------------
    # Added by the TUI refactor; the core may fold these into its own blocks.
    def document_summaries(self, ids: Sequence[int]) -> list[DocumentSummary]:
        """List rows for the given document ids (live or tombstoned), in id order."""
        out: list[DocumentSummary] = []
        wanted = sorted({int(i) for i in ids})
        conn = self.conn()
        for start in range(0, len(wanted), 500):  # below SQLite's host-parameter limit
            part = wanted[start:start + 500]
            ph = ",".join("?" * len(part))
            out.extend(DocumentSummary.from_row(r) for r in dbm.rows(
                conn, f"{_SUMMARY_SQL} WHERE d.id IN ({ph}) ORDER BY d.id", part))
        return out

    def build_filter_index(self, *, include_tombstoned: bool = False) -> FilterIndex:
        """Read documents and their headings once, for repeated fuzzy filtering."""
        from rapidfuzz import utils

        docs = self.list_documents(include_tombstoned=include_tombstoned, with_headings=True)
        choices = [utils.default_process(" ".join([d.repository, d.path, d.name or "",
                                                   " ".join(d.headings)])) for d in docs]
        return FilterIndex(include_tombstoned, list(docs), choices)

    def queued_document_ids(self) -> list[int]:
        """Live documents a projection run would pick up now, in id order."""
        from memlens.core.projection import queue as proj

        return proj.queued_document_ids(self.conn(), self.clock())

    # -- for a watcher: what is stored under a memory folder --------------------------
    def live_count_under(self, root: Path) -> int:
        """Live documents stored from the memory folder ``root``."""
        return int(dbm.scalar(self.conn(), "SELECT COUNT(*) FROM memory_documents"
                              " WHERE source_root=? AND tombstoned_at IS NULL",
                              (str(root),)) or 0)

    def has_documents_under(self, root: Path, folder: str) -> bool:
        """Whether a live document of ``root`` lies under the logical ``folder`` (given
        as on disk; a folder named by a secret is looked up by its stored, redacted
        name)."""
        from memlens.core.ingest.names import stored_folder

        rel = stored_folder(folder)
        lo = rel + "/"
        hi = rel + "0"  # '0' sorts right after '/'
        return dbm.scalar(self.conn(), "SELECT 1 FROM memory_documents WHERE"
                          " source_root=? AND tombstoned_at IS NULL AND logical_path>=?"
                          " AND logical_path<? LIMIT 1", (str(root), lo, hi)) is not None
