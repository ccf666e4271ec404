"""The one door into the core: every user action of the CLI and the TUI.

``MemoryService`` owns settings, the embedder and a connection *per thread*
(SQLite connections must not be shared across threads). Its methods return the
frozen dataclasses of :mod:`memlens.core.types`, so the UI never sees SQL. The UI
(CLI and TUI) imports only this module and ``memlens.core.types``
(``tests/test_architecture.py`` enforces it). The flows live here once: startup
(:meth:`MemoryService.start_up`), projecting the queue in batches
(:meth:`~MemoryService.project_queue`), rechunk then project
(:meth:`~MemoryService.rechunk_and_project`), retry and after-ingest.

The class is assembled from three modules to keep each small: the plumbing
(:mod:`memlens.core.runtime`: settings, embedder, per-thread connections), the
reads (:mod:`memlens.core.reads`) and, here, the writes, search and flows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlens.core.config.settings import load_settings
from memlens.core.ingest.sources import (
    MemoryRoot,
    claude_projects_dir,
    decode_markdown,
    discover_default_roots,
    read_file,
    roots_for_path,
)
from memlens.core.reads import ServiceReads
from memlens.core.search import engine as search_mod
from memlens.core.search import history as search_history
from memlens.core.search import rows as search_rows
from memlens.core.store import db as dbm
from memlens.core.store.db import explain_storage_error
from memlens.core.types import DocumentSummary, FilterIndex, IngestOutcome, PurgeOutcome, RechunkOutcome

if TYPE_CHECKING:
    from memlens.core.chunking.choice import ChunkerChoice
    from memlens.core.chunking.chunker import Chunk, ChunkerConfig, ChunkResult
    from memlens.core.ingest.pipeline import FileChange
    from memlens.core.projection import swap as proj
    from memlens.core.search.lexical_cache import LexicalCache
    from memlens.core.search.preview import QueryEffect
    from memlens.core.search.vector_matrix import VectorMatrixCache
    from memlens.watch.watcher import Watcher, WatchEvent
# The chunker, projection, ingest, redaction, purge and vector code are imported in the
# methods that use them, so a one-shot read (`memlens search --mode lexical`, `docs`)
# loads only the database, config and search modules (tests/test_imports.py,
# benchmarks/cli_startup.py).

from memlens.core.runtime import Clock

__all__ = ["Clock", "DocumentSummary", "FilterIndex", "IngestOutcome", "MemoryService",
           "explain_storage_error",
           "RechunkOutcome", "chunk_file", "load_settings"]


def chunk_file(path: Path, config: ChunkerConfig, *, raw: bool = False) -> tuple[ChunkResult, int]:
    """Chunk one Markdown file without storing anything (``memlens chunks``).

    The text is redacted first, exactly as ingest does, so the chunks are the ones
    that would be stored; ``raw`` skips redaction (to see the original).

    Returns:
        The chunks and the number of secrets redacted (0 with ``raw``).

    Raises:
        SourceError: The file cannot be read or is not valid Markdown text.
    """
    from memlens.core.chunking.chunker import chunk_markdown
    from memlens.core.redact.engine import redact

    data, _ = read_file(path)
    text = decode_markdown(data)
    found = 0
    if not raw:
        red = redact(text)
        text, found = red.text, len(red.findings)
    return chunk_markdown(text, config, path=path.name), found


class MemoryService(ServiceReads):
    """Façade over the memlens core for one database."""

    # (plumbing: memlens.core.runtime; reads: memlens.core.reads)

    # In-RAM copies of the vector spaces (memlens.core.search.vector_matrix), loaded in the
    # background from the second search at an unchanged store on: a one-shot command
    # never pays the load, a long-lived one (TUI, MCP) never waits for it.
    _vector_cache: VectorMatrixCache | None = None

    def vector_cache(self) -> VectorMatrixCache:
        """This service's vector matrix cache (created on first use)."""
        if self._vector_cache is None:
            from memlens.core.search.vector_matrix import VectorMatrixCache

            self._vector_cache = VectorMatrixCache(
                connect=lambda: dbm.connect(self.db_path, create=False))
        return self._vector_cache

    # Phrase postings for common words (memlens.core.search.lexical_cache), built the third
    # time a phrase is searched at an unchanged store: the same rows and scores as FTS5.
    _lexical_cache: LexicalCache | None = None

    def lexical_cache(self) -> LexicalCache | None:
        """This service's phrase postings cache (created on first use); ``None`` when
        ``[search] lexical_cache_mb`` is 0."""
        if self._lexical_cache is None:
            mb = self.settings.search.lexical_cache_mb
            if mb <= 0:
                return None
            from memlens.core.search.lexical_cache import LexicalCache

            self._lexical_cache = LexicalCache(
                weights=search_mod.BM25_WEIGHTS, budget_bytes=mb * 1024 * 1024,
                connect=lambda: dbm.connect(self.db_path, create=False))
        return self._lexical_cache

    def close(self) -> None:
        """Close every connection and drop the in-RAM vectors and postings."""
        if self._vector_cache is not None:
            self._vector_cache.clear()
        if self._lexical_cache is not None:
            self._lexical_cache.clear()
        super().close()

    # -- sources ------------------------------------------------------------
    def resolve_roots(self, paths: Sequence[Path] | None = None,
                      repository: str | None = None) -> list[MemoryRoot]:
        """Memory roots for the given paths, else configured roots, else discovery.

        Raises:
            UsageError: a path does not name memory folders, or ``repository`` names a
                folder already stored under another repository (a folder keeps its name;
                the documents stay where they are).
        """
        if paths:
            out: list[MemoryRoot] = []
            for p in paths:
                out.extend(roots_for_path(Path(p), repository))
            if repository:
                self._check_folder_names(out)
            return out
        if self.settings.roots:
            out = []
            for p in self.settings.roots:
                if p.exists():
                    out.extend(roots_for_path(p, repository or self.settings.repository))
            return out
        return discover_default_roots()

    def _check_folder_names(self, roots: Sequence[MemoryRoot]) -> None:
        from memlens.core.ingest.sources import UsageError
        from memlens.core.store.records import repositories_at

        if not self.db_path.exists():
            return
        for root in roots:
            other = [r for r in repositories_at(self.conn(), str(root.path))
                     if r != root.repository]
            if other:
                raise UsageError(
                    f"{root.path} is stored as repository {other[0]!r}; a folder keeps its name"
                    f" (run without --repository, or with --repository {other[0]})")

    # -- writes -------------------------------------------------------------
    def ingest(self, roots: Sequence[MemoryRoot], *, project: bool = True,
               on_change: Callable[[FileChange], None] | None = None,
               only_paths: dict[Path, set[str]] | None = None) -> IngestOutcome:
        """Ingest memory roots durably, then (unless deferred) project pending work.

        A full disk stops the run (``report.stopped``): what was stored is kept and
        nothing more is attempted, projection included."""
        from memlens.core.ingest.pipeline import IngestReport, ingest_root
        from memlens.core.projection import swap as proj

        conn = self._writable()
        cfg = self.chunker_config()
        key = self.install_key()
        report = IngestReport()
        limit = self.settings.limits.max_file_bytes  # [limits] / MEMLENS_MAX_FILE_BYTES
        for root in roots:
            sel = only_paths.get(root.path) if only_paths is not None else None
            if only_paths is not None and sel is None:
                continue
            part = ingest_root(conn, root, cfg, key, self.clock, only_paths=sel,
                               max_bytes=limit,
                               max_chunks=self.settings.limits.max_chunks_per_file,
                               on_change=on_change)
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
        from memlens.core.store.records import apply_retention

        ret = self.settings.retention
        for d in set(doc_ids):
            apply_retention(self.conn(), d, ret.max_revisions, ret.max_age_days, self.clock())

    def mark_embedder_changes(self) -> int:
        """Queue live documents projected with another embedder; returns how many.

        Their old projection stays searchable (lexically, and by vector only in its
        own space) until the new one swaps in. An embedder that cannot tell its fingerprint
        now (an HTTP endpoint asked for its dimension refuses the connection) queues
        nothing: 0; the projection that follows records the reason on each document.
        """
        from memlens.core.embedders.registry import EmbedderUnavailable, EmbeddingError
        from memlens.core.projection import swap as proj

        try:
            fingerprint = self.embedder.fingerprint()
        except EmbedderUnavailable:
            raise
        except EmbeddingError:
            return 0
        return proj.queue_other_embedder(self._writable(), fingerprint)

    def project(self, document_ids: Sequence[int] | None = None, *, force: bool = False,
                on_progress: Callable[[proj.ProjectionOutcome], None] | None = None,
                vectors: bool = True,
                on_slice: Callable[[proj.VectorReport], None] | None = None,
                stop: Callable[[], bool] | None = None) -> proj.ProjectionReport:
        """Project pending documents (or the given ones; ``force`` ignores back-off):
        stage 1 (nodes and FTS rows: searchable by words at once), then, with
        ``vectors``, stage 2 (the vectors of every waiting document, or of the given ones,
        in short slices, smallest first; ``on_slice`` after each, ``stop`` ends it after
        the current slice; documents queued meanwhile get their stage 1 between slices).

        An embedder that cannot answer (connection refused) does not raise here: each
        claimed document records the reason (failed, or stale while an older projection
        is served) with its back-off.
        """
        from memlens.core.projection import swap as proj

        self.mark_embedder_changes()
        ps = self.settings.projection
        return proj.project_pending(
            self.conn(), self.embedder, self.clock, document_ids=document_ids, force=force,
            retry_base=ps.retry_base_seconds, retry_cap=ps.retry_max_seconds,
            on_progress=on_progress, vectors=vectors, cap=ps.max_vectors_per_document,
            on_slice=on_slice, stop=stop)

    def vectors_waiting(self) -> int:
        """Live documents whose vectors are still being computed (searchable lexically)."""
        from memlens.core.projection import swap as proj

        return proj.vectors_waiting(self.conn())

    def retry(self, doc_id: int) -> proj.ProjectionReport:
        """Retry one document's projection now, ignoring back-off."""
        return self.project([doc_id], force=True)

    def preview_rechunk(self, doc_id: int, config: ChunkerConfig) -> tuple[list[Chunk],
                                                                           list[Chunk]]:
        """(current chunks, chunks the new config would make) — writes nothing."""
        from memlens.core.chunking.chunker import chunk_markdown

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
        (see :mod:`memlens.core.search.preview`)."""
        from memlens.core.search import preview as preview_mod

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
        from memlens.core.chunking.chunker import chunk_markdown
        from memlens.core.store.records import write_rechunk

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

    def search(self, query: str, *, mode: str = "hybrid", k: int = 10,
               repository: str | None = None, doc_type: str | None = None,
               prefer_repository: str | None = None, all_projects: bool = False,
               ) -> search_mod.SearchResult:
        """Search active projections (see :mod:`memlens.core.search.engine`).

        Fusion comes from the ``[search]`` settings. Unless ``all_projects`` is set or
        ``[search] prefer_current_project`` is off, the hits of ``prefer_repository``
        (default: :meth:`current_repository` of the working directory) rank first.
        """
        query = search_rows.valid_text(query)  # argv bytes that are not UTF-8 arrive as lone surrogates
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
                                     prefer_repository=prefer,
                                     matrix=self.vector_cache() if emb is not None else None,
                                     lexical_cache=self.lexical_cache())

    def remember_search(self, query: str, mode: str, source: str) -> bool:
        """Keep a finished search (``source``: ``cli`` or ``tui``) for recall; not
        stored when ``[search] history`` is 0. Returns whether it was stored."""
        return search_history.record(self.conn(), search_rows.valid_text(query), mode, source, self.clock(),
                                     self.settings.search.history)

    def recent_searches(self, limit: int = 50) -> list[str]:
        """The last distinct finished searches, newest first."""
        return search_history.recent(self.conn(), limit)

    @staticmethod
    def match_spans(text: str, query: str) -> list[tuple[int, int]]:
        """Where the words of ``query`` occur in ``text`` (see
        :func:`memlens.core.search.engine.match_spans`), for highlighting an opened hit."""
        return search_mod.match_spans(text, query)

    def current_repository(self, cwd: Path | None = None) -> str | None:
        """The repository of the Claude project the user is in, if memlens holds it.

        Walks from ``cwd`` (default: the working directory) up to ``/`` and returns
        the first Claude slug (:func:`memlens.core.search.rows.claude_slug`) that names a
        repository in the database, so a sub-folder of a project counts as the
        project. None when no ancestor is a known project.
        """
        try:
            start = (cwd or Path.cwd()).resolve()
        except OSError:
            return None
        return search_rows.project_repository(self.conn(), str(start))

    def resolve_repository(self, name: str) -> str:
        """The repository ``name`` means: its full name, or a short one such as
        ``tidewater`` or ``tidewater-api`` for ``-home-dev-projects-tidewater-api``
        when only one repository fits (see :meth:`FilterIndex.match_repository`).

        Raises:
            LookupError: No repository, or several, fit; the message lists them.
        """
        known = [str(r[0]) for r in self.conn().execute(  # covering index: no row reads
            "SELECT DISTINCT repository FROM memory_documents ORDER BY repository")]
        found = FilterIndex.match_repository(name, known)
        if len(found) == 1:
            return found[0]
        if found:
            raise LookupError(f"repository {name!r} is ambiguous: it may be {', '.join(found)}; "
                              "give more of the name")
        raise LookupError(f"no repository {name!r}; known: {', '.join(known) or 'none yet'}")

    def purge(self) -> PurgeOutcome:
        """Redact everything stored again with the current rules, then leave no byte behind.

        Every document's content, every revision's snapshot, diff and summary, and the
        chunks are re-redacted, and paths stored before secret file names were
        redacted get their stored (redacted, tagged) form; documents where something more was found lose their
        projection and the cached vectors of the old text, are re-chunked and
        re-projected. Then the FTS index is merged, the WAL checkpointed and the file
        VACUUMed with ``secure_delete`` on, so a secret caught late is gone from the
        database file and its -wal/-shm files.

        Raises:
            DatabaseReadOnly: The database cannot be written.
        """
        from memlens.core.embedders.registry import EmbedderUnavailable
        from memlens.core.projection import swap as proj
        from memlens.core.redact.engine import redact
        from memlens.core.store.purge import rename_secret_names, reredact_document
        from memlens.core.store.records import document_ids

        conn = self._writable()
        conn.execute("PRAGMA secure_delete=ON")  # updates below zero what they free

        def red(text: str) -> str:
            return redact(text).text

        ids = document_ids(conn)
        changed: list[int] = []
        revisions = chunks = 0
        key = self.install_key()
        for d in ids:
            renamed = rename_secret_names(conn, d, key, self.clock())
            r = reredact_document(conn, d, red, self.clock(), unproject=proj.drop_projection)
            if renamed and not (r.document or r.revisions or r.chunks or r.reprojected):
                changed.append(d)  # queued for new nodes by the rename
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

    def watcher(self, roots: Sequence[MemoryRoot] | None = None, *,
                scan_paths: Sequence[Path] | None = None,
                on_event: Callable[[WatchEvent], None] | None = None,
                debounce_ms: int | None = None, reconcile_seconds: float | None = None,
                repository: str | None = None) -> Watcher:
        """A file watcher on ``roots`` (and new memory folders under ``scan_paths``)."""
        from memlens.watch.watcher import Watcher

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
        from memlens.core.projection import swap as proj

        out = self.ingest(roots, project=False, on_change=on_change)
        if out.report.stopped:
            return out
        reports = self.project_queue(batch=batch, on_batch=on_batch)
        merged = proj.ProjectionReport.merged(reports)
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
            rep = self.project(part, vectors=False)  # stage 1: every batch searchable first
            reports.append(rep)
            if on_batch is not None:
                on_batch(part, rep)
            if rep.stopped:  # a full disk: the rest would fail the same way
                return reports
        rep = self.project()  # stage 2 (and stage 1 of whatever was queued meanwhile)
        reports.append(rep)
        return reports

    def after_ingest(self, changes: Sequence[FileChange]) -> proj.ProjectionReport:
        """What follows an ingest of ``changes``: project the documents they touched."""
        from memlens.core.projection import swap as proj

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
        with it (see :mod:`memlens.core.chunking.choice`).
        """
        from memlens.core.projection import swap as proj

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
            rep = proj.ProjectionReport.merged(reports)
        return RechunkOutcome(config, len(doc_ids), tuple(changed), rep)

    def remember_chunker(self, config: ChunkerConfig, doc_ids: Sequence[int] | None, *,
                         repository: str | None = None) -> str:
        """Record a rechunk's configuration so later writes keep it; returns the scope
        (``repository`` when given, ``all`` when ``doc_ids`` is None, else ``document``
        for each id). A broader choice clears the narrower ones it covers."""
        from memlens.core.chunking import choice

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
        from memlens.core.chunking import choice

        doc = self.detail(doc_id)
        if doc is None:
            raise LookupError(f"no document with id {doc_id}")
        return choice.effective(self.conn(), doc_id, doc.repository, self.chunker_config())

    def reset_chunker(self, doc_id: int | None = None, *, repository: str | None = None,
                      project: bool = True) -> RechunkOutcome:
        """Forget a remembered choice (of one document, of ``repository``, or — both
        None — the all-documents one) and the narrower ones it covers (a repository's
        documents; with neither, every choice), then rechunk the affected documents with
        what applies then."""
        from memlens.core.chunking import choice

        conn = self.conn()
        if doc_id is not None:
            choice.forget(conn, "document", document_id=doc_id)
            ids = [doc_id]
        elif repository is not None:
            ids = [d.id for d in self.list_documents(repository=repository)]
            choice.forget(conn, "repository", repository=repository, document_ids=ids)
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
        from memlens.core.chunking import choice

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
        from memlens.core.chunking.chunker import ChunkerConfig

        d = self.settings.chunker_dict()
        d.update({k: v for k, v in overrides.items() if v is not None})
        cfg = ChunkerConfig.from_dict(d)
        cfg.validate()
        return cfg

