"""The one door into the core: every user action of the CLI and the TUI.

``MemoryService`` owns settings, the embedder and a connection *per thread*
(SQLite connections must not be shared across threads). Its methods return the
frozen dataclasses of :mod:`memlens.core.types`, so the UI never sees SQL. The UI
(CLI and TUI) imports only this module and ``memlens.core.types``
(``tests/test_architecture.py`` enforces it). The flows live here once: startup
(:meth:`MemoryService.start_up`), projecting the queue in batches
(:meth:`~MemoryService.project_queue`), rechunk then project
(:meth:`~MemoryService.rechunk_and_project`), retry and after-ingest.

``document()``, ``find()``, ``history()`` and ``stats()`` still return their old dict
forms for callers not yet switched; new code uses ``detail()``, ``locate()``,
``revisions()`` and ``statistics()``.
"""

from __future__ import annotations

import json
import shlex
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from . import chunker_choice as choice
from . import db as dbm
from . import doctor as doctor_mod
from . import preview as preview_mod
from . import projection as proj
from . import search as search_mod
from . import search_history
from .benchrun import bench_embedder_options, render_bench_report, run_benchmark
from .chunker_choice import ChunkerChoice
from .chunking import Chunk, ChunkerConfig, ChunkResult, chunk_markdown
from .config import Settings, load_settings
from .db import explain_storage_error
from .embedding import Embedder, EmbedderUnavailable, make_embedder
from .indexfile import IndexWarning, check_index
from .ingest import FileChange, IngestReport, ingest_root, max_file_bytes
from .installkey import load_install_key
from .preview import QueryEffect
from .redact import redact
from .sources import (
    MemoryRoot,
    claude_projects_dir,
    claude_slug,
    decode_markdown,
    discover_default_roots,
    read_file,
    roots_for_path,
)
from .store import (
    apply_retention,
    document_ids,
    find_document,
    now_clock,
    write_rechunk,
)
from .store_purge import reredact_document
from .types import (
    DocumentDetail,
    DocumentSummary,
    FilterIndex,
    IngestOutcome,
    ProjectionState,
    PurgeOutcome,
    RechunkOutcome,
    Revision,
    RevisionChunker,
    Stats,
)

if TYPE_CHECKING:
    from .watch import Watcher, WatchEvent

Clock = Callable[[], float]

__all__ = ["Clock", "DocumentSummary", "FilterIndex", "IngestOutcome", "MemoryService",
           "explain_storage_error",
           "RechunkOutcome", "bench_embedder_options", "chunk_file", "load_settings",
           "render_bench_report", "run_benchmark"]

_SUMMARY_SQL = (
    "SELECT d.id, d.repository, d.logical_path, d.projection_status, d.tombstoned_at,"
    " d.current_revision_id, d.active_revision_id, d.source_size, d.doc_name, d.doc_type,"
    " d.projection_error,"
    " (SELECT COUNT(*) FROM memory_chunks c WHERE c.revision_id=d.current_revision_id)"
    "   AS nchunks"
    " FROM memory_documents d"
)


def chunk_file(path: Path, config: ChunkerConfig, *, raw: bool = False) -> tuple[ChunkResult, int]:
    """Chunk one Markdown file without storing anything (``memlens chunks``).

    The text is redacted first, exactly as ingest does, so the chunks are the ones
    that would be stored; ``raw`` skips redaction (to see the original).

    Returns:
        The chunks and the number of secrets redacted (0 with ``raw``).

    Raises:
        SourceError: The file cannot be read or is not valid Markdown text.
    """
    data, _ = read_file(path)
    text = decode_markdown(data)
    found = 0
    if not raw:
        red = redact(text)
        text, found = red.text, len(red.findings)
    return chunk_markdown(text, config, path=path.name), found


def _valid_text(text: str) -> str:
    """``text`` with lone surrogates (undecodable argv bytes) replaced by U+FFFD, so it can
    be searched, stored and printed as UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "replace")


class MemoryService:
    """Façade over the memlens core for one database."""

    def __init__(self, settings: Settings | None = None, *, db_path: Path | None = None,
                 clock: Clock | None = None, embedder: Embedder | None = None,
                 install_key: bytes | None = None, create: bool = True) -> None:
        self.settings = settings or load_settings()
        self.create = create  # False: a missing database folder is an error, not created
        self.db_path = Path(db_path) if db_path else self.settings.db_path
        self.clock: Clock = clock or now_clock
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self._local = threading.local()
        self._install_key = install_key
        self._conns: list[apsw.Connection] = []
        self._conns_lock = threading.Lock()

    # -- plumbing ---------------------------------------------------------
    def conn(self) -> apsw.Connection:
        """This thread's connection (opened and migrated on first use)."""
        c = getattr(self._local, "conn", None)
        if c is None:
            c = dbm.connect(self.db_path, create=self.create)
            self._local.conn = c
            with self._conns_lock:
                self._conns.append(c)
        return c

    def open(self) -> None:
        """Open (and migrate) the database now, so a broken or too-new file fails
        before a long-running UI starts; the connection is then released.

        Raises:
            DatabaseError: The file is not a usable SQLite database.
            SchemaTooNew: The file was written by a newer memlens.
        """
        self.conn()
        self.release_thread_connection()

    def release_thread_connection(self) -> None:
        """Close the calling thread's connection (worker threads call this before they end)."""
        c = getattr(self._local, "conn", None)
        if c is None:
            return
        self._local.conn = None
        with self._conns_lock:
            if c in self._conns:
                self._conns.remove(c)
        try:
            c.close()
        except apsw.Error:
            pass

    def close(self) -> None:
        """Close every connection this service opened."""
        with self._conns_lock:
            for c in self._conns:
                try:
                    c.close()
                except apsw.Error:
                    pass
            self._conns.clear()
        self._local = threading.local()

    def _writable(self) -> apsw.Connection:
        """This thread's connection, for a write.

        Raises:
            DatabaseReadOnly: The database file or its folder is not writable.
        """
        c = self.conn()
        if dbm.is_readonly(c):
            raise dbm.DatabaseReadOnly(
                f"{self.db_path} is read-only here: reading works, but this command writes; "
                "it needs write permission on the file and its folder")
        return c

    def chunker_config(self) -> ChunkerConfig:
        """The configured chunker (validated)."""
        cfg = ChunkerConfig.from_dict(self.settings.chunker_dict())
        cfg.validate()
        return cfg

    @property
    def embedder(self) -> Embedder:
        """The configured embedder. ``auto`` (the default) is the shipped int8 ONNX
        all-MiniLM-L6-v2 (``minilm``), else the shipped static model, else hashing —
        the first one this install can run."""
        with self._embedder_lock:
            if self._embedder is None:
                name = self.settings.embedder.name
                opts = dict(self.settings.embedder.options)
                if name == "auto":
                    for candidate, copts in (("minilm", opts), ("static", {})):
                        try:
                            self._embedder = make_embedder(candidate, copts)
                            break
                        except EmbedderUnavailable:
                            continue
                    else:
                        self._embedder = make_embedder("hashing", {})
                else:
                    self._embedder = make_embedder(name, opts)
            assert self._embedder is not None
            return self._embedder

    def install_key(self) -> bytes:
        """The per-install key for keyed source hashes."""
        if self._install_key is None:
            self._install_key = load_install_key()
        return self._install_key

    # -- sources ------------------------------------------------------------
    def resolve_roots(self, paths: Sequence[Path] | None = None,
                      repository: str | None = None) -> list[MemoryRoot]:
        """Memory roots for the given paths, else configured roots, else discovery."""
        if paths:
            out: list[MemoryRoot] = []
            for p in paths:
                out.extend(roots_for_path(Path(p), repository))
            return out
        if self.settings.roots:
            out = []
            for p in self.settings.roots:
                if p.exists():
                    out.extend(roots_for_path(p, repository or self.settings.repository))
            return out
        return discover_default_roots()

    # -- writes -------------------------------------------------------------
    def ingest(self, roots: Sequence[MemoryRoot], *, project: bool = True,
               on_change: Callable[[FileChange], None] | None = None,
               only_paths: dict[Path, set[str]] | None = None) -> IngestOutcome:
        """Ingest memory roots durably, then (unless deferred) project pending work.

        A full disk stops the run (``report.stopped``): what was stored is kept and
        nothing more is attempted, projection included."""
        conn = self._writable()
        cfg = self.chunker_config()
        key = self.install_key()
        report = IngestReport()
        limit = max_file_bytes()
        for root in roots:
            sel = only_paths.get(root.path) if only_paths is not None else None
            if only_paths is not None and sel is None:
                continue
            part = ingest_root(conn, root, cfg, key, self.clock, only_paths=sel,
                               max_bytes=limit, on_change=on_change)
            report.changes.extend(part.changes)
            report.warnings.extend(part.warnings)
            if part.stopped:
                report.stopped = part.stopped
                return IngestOutcome(report, None, proj.pending_count(conn))
        self._retention([c.document_id for c in report.changes
                         if c.document_id is not None and c.kind not in ("unchanged", "failed")])
        pr = self.project() if project else None
        return IngestOutcome(report, pr, proj.pending_count(conn))

    def _retention(self, doc_ids: Sequence[int]) -> None:
        ret = self.settings.retention
        for d in set(doc_ids):
            apply_retention(self.conn(), d, ret.max_revisions, ret.max_age_days, self.clock())

    def mark_embedder_changes(self) -> int:
        """Queue live documents projected with another embedder; returns how many.

        Their old projection stays searchable (lexically, and by vector only in its
        own space) until the new one swaps in.
        """
        return proj.queue_other_embedder(self._writable(), self.embedder.fingerprint())

    def project(self, document_ids: Sequence[int] | None = None, *, force: bool = False,
                on_progress: Callable[[proj.ProjectionOutcome], None] | None = None,
                ) -> proj.ProjectionReport:
        """Project pending documents (or the given ones; ``force`` ignores back-off)."""
        self.mark_embedder_changes()
        return proj.project_pending(
            self.conn(), self.embedder, self.clock, document_ids=document_ids, force=force,
            retry_base=self.settings.projection.retry_base_seconds,
            retry_cap=self.settings.projection.retry_max_seconds,
            on_progress=on_progress)

    def retry(self, doc_id: int) -> proj.ProjectionReport:
        """Retry one document's projection now, ignoring back-off."""
        return self.project([doc_id], force=True)

    def preview_rechunk(self, doc_id: int, config: ChunkerConfig) -> tuple[list[Chunk],
                                                                           list[Chunk]]:
        """(current chunks, chunks the new config would make) — writes nothing."""
        config.validate()
        doc = self.detail(doc_id)
        if doc is None:
            raise LookupError(f"no document with id {doc_id}")
        new = chunk_markdown(doc.content, config, path=doc.path).chunks
        return self.chunks(doc_id), list(new)

    def preview_search_effect(self, doc_id: int, config: ChunkerConfig,
                              queries: Sequence[str] | None = None) -> list[QueryEffect]:
        """How the document would rank for ``queries`` (default: the recent searches)
        with its current chunks and with ``config``'s — lexical ranking, nothing written
        (see :mod:`memlens.core.preview`)."""
        doc = self.detail(doc_id)
        if doc is None:
            raise LookupError(f"no document with id {doc_id}")
        current, proposed = self.preview_rechunk(doc_id, config)
        qs = list(queries) if queries is not None else self.recent_searches(20)
        return preview_mod.search_effect(self.conn(), doc_id, doc.path, current, proposed, qs)

    def rechunk(self, doc_ids: Sequence[int] | None, config: ChunkerConfig) -> list[int]:
        """Write rechunk revisions (all live documents when ``doc_ids`` is None).

        Returns ids of documents that got a new revision. Projection is left to
        the caller (``project``), so a UI can run it in the background.
        """
        config.validate()
        conn = self._writable()
        if doc_ids is None:
            doc_ids = [int(r[0]) for r in conn.execute(
                "SELECT id FROM memory_documents WHERE tombstoned_at IS NULL ORDER BY id")]
        changed = []
        for d in doc_ids:
            doc = self.detail(d)
            if doc is None or doc.tombstoned:
                continue
            chunks = chunk_markdown(doc.content, config, path=doc.path).chunks
            if write_rechunk(conn, d, config, chunks, self.clock()) is not None:
                changed.append(d)
        return changed

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
        when the path is unique).

        Raises:
            LookupError: The path exists in several repositories and none was given.
        """
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
        return self.detail(ids[0]) if ids else None

    def detail(self, doc_id: int) -> DocumentDetail | None:
        """Full detail of one document (content, projection state, front matter)."""
        r = dbm.row(self.conn(), "SELECT * FROM memory_documents WHERE id=?", (doc_id,))
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
                next_attempt_at=r["projection_next_attempt_at"]),
            observed_at=r["observed_at"])

    def chunks(self, doc_id: int, revision_id: int | None = None) -> list[Chunk]:
        """Chunks of a revision (default: current) as :class:`Chunk` objects."""
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

    def chunk_nodes(self, doc_id: int) -> dict[int, int]:
        """ordinal -> knowledge node id for the active projection."""
        return {int(r["ordinal"]): int(r["id"]) for r in dbm.rows(
            self.conn(), "SELECT id, ordinal FROM knowledge_nodes WHERE document_id=?", (doc_id,))}

    @staticmethod
    def _revision(r: dict[str, Any]) -> Revision:
        return Revision(
            id=int(r["id"]), number=int(r["seq"]), change_kind=r["change_kind"],
            content_hash=r["content_hash"], path=r["logical_path"],
            previous_path=r["previous_path"], observed_at=r["observed_at"],
            chunker=RevisionChunker(
                name=r["chunker_name"], version=r["chunker_version"],
                config=json.loads(r["chunker_config"]) if r["chunker_config"] else None),
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

    def search(self, query: str, *, mode: str = "hybrid", k: int = 10,
               repository: str | None = None, doc_type: str | None = None,
               prefer_repository: str | None = None, all_projects: bool = False,
               ) -> search_mod.SearchResult:
        """Search active projections (see :mod:`memlens.core.search`).

        Fusion comes from the ``[search]`` settings. Unless ``all_projects`` is set or
        ``[search] prefer_current_project`` is off, the hits of ``prefer_repository``
        (default: :meth:`current_repository` of the working directory) rank first.
        """
        query = _valid_text(query)  # argv bytes that are not UTF-8 arrive as lone surrogates
        emb = self.embedder if mode != "lexical" else None
        opts = self.settings.search
        prefer = None
        if not all_projects and opts.prefer_current_project and not repository:
            prefer = prefer_repository or self.current_repository()
        conn = self.conn()
        # One read snapshot: a projection swap in another process can't mix generations.
        with dbm.read_txn(conn):
            return search_mod.search(conn, query, mode=mode, embedder=emb, k=k,
                                     repository=repository, doc_type=doc_type,
                                     fusion_options=opts.fusion_options(
                                         emb.name if emb is not None else None),
                                     prefer_repository=prefer)

    def remember_search(self, query: str, mode: str, source: str) -> bool:
        """Keep a finished search (``source``: ``cli`` or ``tui``) for recall; not
        stored when ``[search] history`` is 0. Returns whether it was stored."""
        return search_history.record(self.conn(), _valid_text(query), mode, source, self.clock(),
                                     self.settings.search.history)

    def recent_searches(self, limit: int = 50) -> list[str]:
        """The last distinct finished searches, newest first."""
        return search_history.recent(self.conn(), limit)

    @staticmethod
    def match_spans(text: str, query: str) -> list[tuple[int, int]]:
        """Where the words of ``query`` occur in ``text`` (see
        :func:`memlens.core.search.match_spans`), for highlighting an opened hit."""
        return search_mod.match_spans(text, query)

    def current_repository(self, cwd: Path | None = None) -> str | None:
        """The repository of the Claude project the user is in, if memlens holds it.

        Walks from ``cwd`` (default: the working directory) up to ``/`` and returns
        the first Claude slug (:func:`memlens.core.sources.claude_slug`) that names a
        repository in the database, so a sub-folder of a project counts as the
        project. None when no ancestor is a known project.
        """
        try:
            start = (cwd or Path.cwd()).resolve()
        except OSError:
            return None
        known = {str(r[0]) for r in self.conn().execute(
            "SELECT DISTINCT repository FROM memory_documents WHERE tombstoned_at IS NULL")}
        for folder in (start, *start.parents):
            slug = claude_slug(folder)
            if slug in known:
                return slug
        return None

    def resolve_repository(self, name: str) -> str:
        """The repository ``name`` means: its full name, or a short one such as
        ``tidewater`` or ``tidewater-api`` for ``-home-dev-projects-tidewater-api``
        when only one repository fits (see :meth:`FilterIndex.match_repository`).

        Raises:
            LookupError: No repository, or several, fit; the message lists them.
        """
        known = [str(r[0]) for r in self.conn().execute(
            "SELECT DISTINCT repository FROM memory_documents ORDER BY repository")]
        found = FilterIndex.match_repository(name, known)
        if len(found) == 1:
            return found[0]
        if found:
            raise LookupError(f"repository {name!r} is ambiguous: it may be {', '.join(found)}; "
                              "give more of the name")
        raise LookupError(f"no repository {name!r}; known: {', '.join(known) or 'none yet'}")

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
        return check_index(doc.path, doc.content, live)

    def pending_count(self) -> dict[str, int]:
        """Projection queue: live documents per projection status."""
        return proj.pending_count(self.conn())

    def statistics(self) -> Stats:
        """Counts for a status bar: documents, chunks, queue, embedder."""
        conn = self.conn()
        docs = int(dbm.scalar(conn, "SELECT COUNT(*) FROM memory_documents WHERE tombstoned_at"
                              " IS NULL") or 0)
        tomb = int(dbm.scalar(conn, "SELECT COUNT(*) FROM memory_documents WHERE tombstoned_at"
                              " IS NOT NULL") or 0)
        nodes = int(dbm.scalar(conn, "SELECT COUNT(*) FROM knowledge_nodes") or 0)
        return Stats(db=str(self.db_path), documents=docs, tombstoned=tomb, chunks=nodes,
                     queue=proj.pending_count(conn), embedder=self.embedder_label())

    def embedder_label(self) -> str:
        """Short embedder description, or the reason it is unavailable."""
        try:
            e = self.embedder
        except EmbedderUnavailable as exc:
            return f"unavailable: {exc}"
        return f"{e.name}:{e.model} ({e.dim}d)"

    def doctor(self) -> tuple[list[str], list[doctor_mod.Problem]]:
        """Run the consistency checks; a file SQLite cannot read is reported, with how to
        rebuild it, instead of raised."""
        try:
            checks, problems = doctor_mod.run_checks(self.conn())
        except (dbm.DatabaseCorrupt, apsw.CorruptError, apsw.NotADBError) as exc:
            cause = exc.__cause__ or exc
            checks = ["sqlite_integrity"]
            problems = [doctor_mod.Problem(
                "sqlite_integrity", f"{self.db_path} cannot be read as a memlens database: "
                f"{cause}")]
        if any(p.check == "sqlite_integrity" for p in problems):
            db = shlex.quote(str(self.db_path))
            problems.append(doctor_mod.Problem(
                "rebuild", "the file is damaged and cannot be repaired in place; rebuild it "
                f"from the memory folders: `mv {db} {db}.damaged && memlens ingest --db {db}` "
                "(revision history older than the rebuild stays only in the moved file)"))
        return checks, problems

    def purge(self) -> PurgeOutcome:
        """Redact everything stored again with the current rules, then leave no byte behind.

        Every document's content, every revision's snapshot, diff and summary, and the
        chunks are re-redacted; documents where something more was found lose their
        projection and the cached vectors of the old text, are re-chunked and
        re-projected. Then the FTS index is merged, the WAL checkpointed and the file
        VACUUMed with ``secure_delete`` on, so a secret caught late is gone from the
        database file and its -wal/-shm files.

        Raises:
            DatabaseReadOnly: The database cannot be written.
        """
        conn = self._writable()
        conn.execute("PRAGMA secure_delete=ON")  # updates below zero what they free

        def red(text: str) -> str:
            return redact(text).text

        ids = document_ids(conn)
        changed: list[int] = []
        revisions = chunks = 0
        for d in ids:
            r = reredact_document(conn, d, red, self.clock(), unproject=proj.drop_projection)
            revisions += r.revisions
            chunks += r.chunks
            if r.document or r.revisions or r.chunks or r.reprojected:
                changed.append(d)
        report: proj.ProjectionReport | None = None
        note = None
        if changed:
            try:
                report = self.project(changed)
            except EmbedderUnavailable as exc:
                note = (f"not re-projected ({exc}); they stay queued: run `memlens project`"
                        " (then `memlens purge` again to compact)")
        proj.optimize_fts(conn)
        truncated = dbm.secure_vacuum(conn)
        return PurgeOutcome(len(ids), len(changed), revisions, chunks, report, truncated, note)

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
        return proj.queued_document_ids(self.conn(), self.clock())

    def watcher(self, roots: Sequence[MemoryRoot] | None = None, *,
                scan_paths: Sequence[Path] | None = None,
                on_event: Callable[[WatchEvent], None] | None = None,
                debounce_ms: int | None = None, reconcile_seconds: float | None = None,
                repository: str | None = None) -> Watcher:
        """A file watcher on ``roots`` (and new memory folders under ``scan_paths``)."""
        from .watch import Watcher

        return Watcher(self, roots, scan_paths=scan_paths, on_event=on_event,
                       debounce_ms=debounce_ms, reconcile_seconds=reconcile_seconds,
                       repository=repository)

    # -- flows (one home each; the CLI and the TUI call these) ----------------------
    def watch_scan_paths(self, paths: Sequence[Path] | None = None) -> list[Path]:
        """Folders a watcher should scan: the given ones, else the configured roots or
        ``~/.claude/projects`` (only those that exist)."""
        if paths:
            return [Path(p) for p in paths]
        return [p for p in (self.settings.roots or [claude_projects_dir()]) if p.is_dir()]

    def start_up(self, roots: Sequence[MemoryRoot], *, batch: int = 50,
                 on_change: Callable[[FileChange], None] | None = None,
                 on_batch: Callable[[Sequence[int], proj.ProjectionReport], None] | None = None,
                 ) -> IngestOutcome:
        """Startup: ingest durably, then project the queue in batches of ``batch``
        documents, calling ``on_batch(ids, report)`` after each one."""
        out = self.ingest(roots, project=False, on_change=on_change)
        if out.report.stopped:
            return out
        reports = self.project_queue(batch=batch, on_batch=on_batch)
        merged = proj.ProjectionReport([o for r in reports for o in r.outcomes])
        return IngestOutcome(out.report, merged, self.pending_count())

    def project_queue(self, *, batch: int = 50,
                      on_batch: Callable[[Sequence[int], proj.ProjectionReport], None] | None
                      = None) -> list[proj.ProjectionReport]:
        """Project everything queued now, ``batch`` documents at a time."""
        self.mark_embedder_changes()
        ids = self.queued_document_ids()
        reports = []
        for start in range(0, len(ids), max(1, batch)):
            part = ids[start:start + max(1, batch)]
            rep = self.project(part)
            reports.append(rep)
            if on_batch is not None:
                on_batch(part, rep)
        return reports

    def after_ingest(self, changes: Sequence[FileChange]) -> proj.ProjectionReport:
        """What follows an ingest of ``changes``: project the documents they touched."""
        ids = sorted({c.document_id for c in changes
                      if c.document_id is not None and c.kind not in ("unchanged", "failed")})
        return self.project(ids) if ids else proj.ProjectionReport([])

    def rechunk_and_project(self, doc_ids: Sequence[int] | None, config: ChunkerConfig, *,
                            project: bool = True, repository: str | None = None,
                            remember: bool = True) -> RechunkOutcome:
        """Rechunk one, some, a repository's or all (``None``) live documents, then
        project the changed ones.

        With ``remember`` (the default) the choice sticks: it is recorded per document,
        for ``repository``, or for all documents, and later edits and re-ingests chunk
        with it (see :mod:`memlens.core.chunker_choice`).
        """
        config.validate()
        if remember:
            self.remember_chunker(config, doc_ids, repository=repository)
        if repository is not None:
            doc_ids = [d.id for d in self.list_documents(repository=repository)]
        elif doc_ids is None:
            doc_ids = [d.id for d in self.list_documents()]
        changed = self.rechunk(doc_ids, config)
        rep = None
        if project:
            # The whole queue, not only what changed now: an earlier interrupted rechunk
            # (or ingest) may have left documents pending; this run finishes them too.
            reports = self.project_queue()
            rep = proj.ProjectionReport([o for r in reports for o in r.outcomes])
        return RechunkOutcome(config, len(doc_ids), tuple(changed), rep)

    def remember_chunker(self, config: ChunkerConfig, doc_ids: Sequence[int] | None, *,
                         repository: str | None = None) -> str:
        """Record a rechunk's configuration so later writes keep it; returns the scope
        (``repository`` when given, ``all`` when ``doc_ids`` is None, else ``document``
        for each id). A broader choice clears the narrower ones it covers."""
        config.validate()
        conn, now = self._writable(), self.clock()
        if repository is not None:
            ids = [d.id for d in self.list_documents(repository=repository)]
            choice.remember(conn, "repository", config, now, repository=repository,
                            document_ids=ids)
            return "repository"
        if doc_ids is None:
            choice.remember(conn, "all", config, now)
            return "all"
        for d in doc_ids:
            choice.remember(conn, "document", config, now, document_id=d)
        return "document"

    def effective_chunker(self, doc_id: int) -> ChunkerChoice:
        """The chunker settings a document uses now and where they come from
        (document > repository > all documents > settings)."""
        doc = self.detail(doc_id)
        if doc is None:
            raise LookupError(f"no document with id {doc_id}")
        return choice.effective(self.conn(), doc_id, doc.repository, self.chunker_config())

    def reset_chunker(self, doc_id: int | None = None, *, repository: str | None = None,
                      project: bool = True) -> RechunkOutcome:
        """Forget a remembered choice (of one document, of ``repository``, or — both
        None — the all-documents one) and rechunk the affected documents with what
        applies then."""
        conn = self.conn()
        if doc_id is not None:
            choice.forget(conn, "document", document_id=doc_id)
            ids = [doc_id]
        elif repository is not None:
            choice.forget(conn, "repository", repository=repository)
            ids = [d.id for d in self.list_documents(repository=repository)]
        else:
            choice.forget(conn, "all")
            ids = [d.id for d in self.list_documents()]
        changed: list[int] = []
        for d in ids:
            eff = self.effective_chunker(d)
            changed.extend(self.rechunk([d], eff.config))
        rep = self.project(changed) if (changed and project) else None
        return RechunkOutcome(self.chunker_config(), len(ids), tuple(changed), rep)

    def chunker_choices(self) -> list[tuple[str, str, ChunkerConfig, float]]:
        """Every remembered chunker choice as (scope, target, config, set_at); the target
        is ``repository/path`` for a document, the repository, or ``*`` for all."""
        out = []
        for scope, key, cfg, at in choice.choices(self.conn()):
            if scope == "document":
                d = self.detail(int(key))
                key = f"{d.repository}/{d.path}" if d is not None else f"document {key}"
            out.append((scope, key, cfg, at))
        return out

    def chunker_config_with(self, overrides: Mapping[str, Any]) -> ChunkerConfig:
        """The configured chunker with some fields replaced (validated).

        Raises:
            ChunkerConfigError: An invalid combination (also TypeError/ValueError).
        """
        d = self.settings.chunker_dict()
        d.update({k: v for k, v in overrides.items() if v is not None})
        cfg = ChunkerConfig.from_dict(d)
        cfg.validate()
        return cfg

