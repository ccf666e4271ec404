"""The one door into the core: every user action of the CLI and the TUI.

``MemoryService`` owns settings, the embedder and a connection *per thread*
(SQLite connections must not be shared across threads). Its methods return the
frozen dataclasses of :mod:`memlens.core.types`, so the UI never sees SQL. The UI
(CLI and TUI) imports only this module and ``memlens.core.types``
(``tests/test_architecture.py`` enforces it). The service imports none of its
clients (the CLI, the TUI, the MCP server, the watcher, the benchmark).

The class is assembled by concept: the plumbing (:mod:`memlens.core.runtime`:
settings, embedder, per-thread connections), the reads (:mod:`memlens.core.reads`),
the writes and the flows, one home each — start-up, rechunk, after-change, retry —
with their progress events and cancellation (:mod:`memlens.core.flows`), and, here,
sources, search, previews and purge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlens.core.config.settings import load_settings
from memlens.core.flows import ServiceFlows
from memlens.core.ingest.sources import (
    MemoryRoot,
    claude_projects_dir,
    decode_markdown,
    discover_default_roots,
    read_file,
    roots_for_path,
)
from memlens.core.search import engine as search_mod
from memlens.core.search import history as search_history
from memlens.core.search import rows as search_rows
from memlens.core.store import db as dbm
from memlens.core.store.db import explain_storage_error
from memlens.core.types import (
    DocumentSummary,
    FilterIndex,
    IngestOutcome,
    PurgeOutcome,
    RechunkOutcome,
    RedactionFinding,
)

if TYPE_CHECKING:
    import apsw

    from memlens.core.chunking.chunker import Chunk, ChunkerConfig, ChunkResult
    from memlens.core.config.settings import Settings
    from memlens.core.projection import reports as proj
    from memlens.core.search.explain_values import Explanation
    from memlens.core.search.lexical_cache import LexicalCache
    from memlens.core.search.preview import QueryEffect
    from memlens.core.search.vector_matrix import VectorMatrixCache
# The chunker, projection, ingest, redaction, purge and vector code are imported in the
# methods that use them, so a one-shot read (`memlens search --mode lexical`, `docs`)
# loads only the database, config and search modules (tests/test_imports.py,
# benchmarks/cli_startup.py).

from memlens.core.runtime import Clock

__all__ = ["Clock", "DocumentSummary", "FilterIndex", "IngestOutcome", "MemoryService",
           "explain_storage_error", "RechunkOutcome", "check_redaction", "chunk_file", "load_settings"]


def check_redaction(text: str, settings: Settings | None = None) -> tuple[RedactionFinding, ...]:
    """What redaction would replace in ``text`` (``memlens redact --check``): the
    built-in rules and the ``[[redact.rules]]`` of ``settings`` (default: the rules the
    service installed), each finding with its line, kind, source and a masked value."""
    from memlens.core.redact import user_rules
    from memlens.core.redact.engine import KINDS, redact

    rules = user_rules.active() if settings is None else settings.redact_rules
    with user_rules.using(rules):
        found = redact(text).findings
    user = {r.name for r in rules}
    out: list[RedactionFinding] = []
    for f in found:
        value = text[f.start:f.end]
        line_start = text.rfind("\n", 0, f.start) + 1
        keep = min(4, len(value) // 4)
        out.append(RedactionFinding(
            line=text.count("\n", 0, f.start) + 1, column=f.start - line_start + 1,
            kind=f.kind, source="user" if f.kind in user and f.kind not in KINDS else "built-in",
            masked=value[:keep] + "…", length=len(value)))
    return tuple(out)


def chunk_file(path: Path, config: ChunkerConfig, *, raw: bool = False,
               settings: Settings | None = None) -> tuple[ChunkResult, int]:
    """Chunk one Markdown file without storing anything (``memlens chunks``).

    The text is redacted first, exactly as ingest does, so the chunks are the ones
    that would be stored (with the ``[[redact.rules]]`` of ``settings``, default the
    installed ones); ``raw`` skips redaction (to see the original).

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
        from memlens.core.redact import user_rules

        rules = user_rules.active() if settings is None else settings.redact_rules
        with user_rules.using(rules):
            red = redact(text)
        text, found = red.text, len(red.findings)
    return chunk_markdown(text, config, path=path.name), found


class MemoryService(ServiceFlows):
    """Façade over the memlens core for one database."""

    # (plumbing: memlens.core.runtime; reads: memlens.core.reads; writes and flows:
    # memlens.core.flows)

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

    def search(self, query: str, *, mode: str = "hybrid", k: int = 10,
               repository: str | None = None, doc_type: str | None = None,
               prefer_repository: str | None = None, all_projects: bool = False,
               per_document: int = 2) -> search_mod.SearchResult:
        """Search active projections (see :mod:`memlens.core.search.engine`).

        ``per_document``: at most this many hits of one document (2: sections, what the
        CLI and the TUI show; 1: documents, what the MCP server gives an agent).

        Fusion comes from the ``[search]`` settings. Unless ``all_projects`` is set or
        ``[search] prefer_current_project`` is off, the hits of ``prefer_repository``
        (default: :meth:`current_repository` of the working directory) rank first.
        """
        query = search_rows.valid_text(query)  # argv bytes that are not UTF-8 arrive as lone surrogates
        conn = self.conn()
        # One read snapshot: a projection swap in another process can't mix generations.
        with dbm.read_txn(conn):
            return self._search(conn, query, mode, k, repository, doc_type, prefer_repository,
                                all_projects, per_document)

    def _search(self, conn: apsw.Connection, query: str, mode: str, k: int,
                repository: str | None, doc_type: str | None, prefer_repository: str | None,
                all_projects: bool, per_document: int = 2, pools: list[Any] | None = None,
                ) -> search_mod.SearchResult:
        """:meth:`search` inside its read snapshot (``pools``: keep the hybrid pool, for
        :meth:`explain`)."""
        emb = self.embedder if mode != "lexical" else None
        opts = self.settings.search
        prefer = None
        if not all_projects and opts.prefer_current_project and not repository:
            prefer = prefer_repository or self.current_repository()
        fusion = opts.fusion_options(emb.name if emb is not None else None)
        if mode == "hybrid":  # the index rule reads the configured index files
            fusion["index_names"] = self.settings.chunker.index_names
        if pools is not None and mode == "hybrid":
            fusion["pools"] = pools
        return search_mod.search(conn, query, mode=mode, embedder=emb, k=k,
                                 repository=repository, doc_type=doc_type,
                                 per_document=per_document,
                                 fusion_options=fusion, prefer_repository=prefer,
                                 matrix=self.vector_cache() if emb is not None else None,
                                 lexical_cache=self.lexical_cache())

    def explain(self, query: str, *, mode: str = "hybrid", k: int = 10,
                repository: str | None = None, doc_type: str | None = None,
                prefer_repository: str | None = None, all_projects: bool = False,
                per_document: int = 2, why_not: str | None = None) -> Explanation:
        """:meth:`search`, explained from the values that ranked it (issue 45; see
        :mod:`memlens.core.search.explain`). ``why_not`` (``PATH[#ordinal]`` or
        ``REPOSITORY/PATH[#ordinal]``): also where that document or chunk stands and what
        it would need to rank first. Raises ``ExplainError`` (one line) when ``why_not``
        names nothing searchable."""
        from memlens.core.search import explain as explain_mod

        query = search_rows.valid_text(query)
        conn = self.conn()
        with dbm.read_txn(conn):
            target = (explain_mod.resolve_target(conn, why_not, repository)
                      if why_not is not None else None)
            pools: list[Any] = []
            res = self._search(conn, query, mode, k, repository, doc_type, prefer_repository,
                               all_projects, per_document, pools)
            emb = self.embedder if mode != "lexical" else None
            depth = max(int(k), int(self.settings.search.candidates))
            return explain_mod.explain(conn, res, pools[0] if pools else None, embedder=emb,
                                       candidates=depth, per_document=per_document,
                                       repository=repository, doc_type=doc_type, target=target)

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

    def check_redaction(self, text: str) -> tuple[RedactionFinding, ...]:
        """What redaction would replace in ``text`` with this service's settings (the
        built-in rules and its ``[[redact.rules]]``); see :func:`check_redaction`."""
        return check_redaction(text, self.settings)

    def purge(self) -> PurgeOutcome:
        """Redact everything stored again with the current rules, then leave no byte behind.

        Every document's content, every revision's snapshot, diff and summary, and the
        chunks are re-redacted, and paths stored before secret file names were
        redacted get their stored (redacted, tagged) form; documents where something more was found lose their
        projection and the cached vectors of the old text, are re-chunked and
        re-projected. Then the FTS index is merged, the WAL checkpointed and the file
        VACUUMed with ``secure_delete`` on, so a secret caught late is gone from the
        database file and its -wal/-shm files. The redaction fingerprint is recorded
        (when it changed, every file is read again by the next ingest, which otherwise
        does this pass itself: :meth:`ServiceFlows._follow_rule_change`).

        Raises:
            DatabaseReadOnly: The database cannot be written.
        """
        from memlens.core.embedders.registry import EmbedderUnavailable
        from memlens.core.projection.changes import redaction_mark, set_redaction_mark
        from memlens.core.projection.swap import optimize_fts
        from memlens.core.redact.fingerprint import current
        from memlens.core.store.purge import mark_for_reread

        conn = self._writable()
        fp = current()
        n_docs, changed, revisions, chunks = self._reredact_stored()
        if redaction_mark(conn) != fp:  # rules changed: the next ingest reads every file
            mark_for_reread(conn)
            set_redaction_mark(conn, fp)
        report: proj.ProjectionReport | None = None
        note = None
        if changed:
            try:
                report = self._project(self._purge_projection(changed))
            except EmbedderUnavailable as exc:
                note = (f"not re-projected ({exc}); they stay queued: run `memlens project`"
                        " (then `memlens purge` again to compact)")
        optimize_fts(conn)
        truncated = dbm.secure_vacuum(conn)
        return PurgeOutcome(n_docs, len(changed), revisions, chunks, report, truncated, note)

    def _purge_projection(self, changed: list[int]) -> list[int]:
        """What purge projects: the documents it changed, and every document that queueing
        the embedder change (:meth:`mark_embedder_changes`, which a projection always
        does first) put back in the queue. Projecting only ``changed`` left those pending
        (an unchanged document of a database built with another embedder lost its
        ``ready``: doctor's projection_lag); documents already waiting before stay
        for ``memlens project``."""
        from memlens.core.projection.queue import queued_document_ids

        conn = self._writable()
        waiting = set(queued_document_ids(conn, self.clock()))
        self.mark_embedder_changes()
        requeued = set(queued_document_ids(conn, self.clock())) - waiting
        return sorted(set(changed) | requeued)

    # -- sources for a watcher ---------------------------------------------------
    def watch_scan_paths(self, paths: Sequence[Path] | None = None) -> list[Path]:
        """Folders a watcher should scan: the given ones, else the configured roots or
        ``~/.claude/projects`` (only those that exist)."""
        if paths:
            return [Path(p) for p in paths]
        return [p for p in (self.settings.roots or [claude_projects_dir()]) if p.is_dir()]

    # -- the registry of running watchers (doctor's watcher_heartbeat) ------------
    def register_process(self, kind: str, label: str, interval: float) -> str | None:
        """Register this process as a running ``kind`` (``watch``) that beats every
        ``interval`` seconds, e.g. ``label`` = ``memlens mcp``; None when the database
        cannot record it (read-only, locked): the registry is best effort."""
        from memlens.core.store import processes

        try:
            return processes.register(self.conn(), kind, label, self.clock(), interval)
        except (dbm.StorageError, dbm.DatabaseError):
            return None

    def heartbeat_process(self, key: str | None) -> None:
        """The registered process ``key`` is alive (best effort)."""
        from memlens.core.store import processes

        if key is not None:
            try:
                processes.heartbeat(self.conn(), key, self.clock())
            except (dbm.StorageError, dbm.DatabaseError):
                pass

    def unregister_process(self, key: str | None) -> None:
        """The registered process ``key`` stops cleanly (best effort)."""
        from memlens.core.store import processes

        if key is not None:
            try:
                processes.unregister(self.conn(), key)
            except (dbm.StorageError, dbm.DatabaseError):
                pass

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

