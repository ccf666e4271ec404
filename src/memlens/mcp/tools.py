"""What the MCP tools do, without the SDK: plain functions over :class:`MemoryService`.

Each function returns a :class:`ToolOutput` (the compact text a model reads plus the
structured content) or raises :class:`ToolInputError` with a sentence the model can
act on (close matches for an unknown repository or path, the allowed range of ``k``).
Nothing returned here carries an absolute path: documents are named by repository
and logical path only, and error text passes through :func:`scrub`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from rapidfuzz import fuzz, process

from memlens.core.service import MemoryService
from memlens.core.types import (
    MODES,
    DocumentDetail,
    EmbedderUnavailable,
    EmbeddingError,
    NotSearchable,
    SearchError,
    SearchResult,
    revision_changes,
)

K_MIN, K_MAX = 1, 50
HISTORY_MAX = 100
ECHO_MAX = 80
"""The most characters of a caller's value echoed back (a query, a name, a bad argument)."""
MESSAGE_MAX = 1_000
"""The most characters of one error sentence."""
URI_SCHEME = "memory://"
# Hit fields that are internal ids or ranking detail, not for a model.
_HIT_DROP = ("document_id", "node_id", "chunk_id", "ranks", "highlights")
_ABS_PATH = re.compile(r"(?<![\w.~-])(?:[A-Za-z]:)?[/\\](?:[^\s'\"`:;,()<>\[\]{}]+)")


class ToolInputError(Exception):
    """A request the model should correct (reported as a tool error, not a crash)."""


@dataclass(frozen=True)
class ToolOutput:
    """A tool result: text for the model and structured content for programs."""

    text: str
    data: dict[str, Any] = field(default_factory=dict)


def scrub(message: str) -> str:
    """Remove absolute filesystem paths (and the home folder) from a message."""
    home = os.path.expanduser("~")
    if home not in ("", "/", "~"):
        message = message.replace(home, "~")
    return _ABS_PATH.sub("<path>", message)


def clip(text: str, limit: int = ECHO_MAX) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was when cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} chars)"


def echo(value: object, limit: int = ECHO_MAX) -> str:
    """A caller's value quoted for a message, cut to ``limit`` characters."""
    if isinstance(value, str):
        return repr(clip(value, limit)) if len(value) > limit else repr(value)
    return clip(repr(value), limit)


def uri(repository: str, path: str) -> str:
    """The ``memory://`` resource URI of a document."""
    return f"{URI_SCHEME}{repository}/{path}"


def _iso(t: float | None) -> str | None:
    if not t:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def _close(word: str, choices: list[str], limit: int = 5) -> list[str]:
    """Close matches of ``word`` among ``choices`` (best first)."""
    found = process.extract(word, choices, scorer=fuzz.WRatio, limit=limit, score_cutoff=50)
    return [str(c) for c, _score, _i in found]


def _suggest(kind: str, word: str, choices: list[str], where: str = "") -> str:
    close = _close(word, choices)
    if close:
        return f"Unknown {kind} {echo(word)}{where}. Did you mean: {', '.join(close)}?"
    if not choices:
        return f"Unknown {kind} {echo(word)}{where}: there are none."
    shown = ", ".join(choices[:10]) + (" …" if len(choices) > 10 else "")
    return f"Unknown {kind} {echo(word)}{where}. Known: {shown}."


def repositories(svc: MemoryService) -> list[str]:
    """Repositories with live documents, sorted."""
    return sorted({d.repository for d in svc.list_documents()})


def check_repository(svc: MemoryService, repository: str,
                     hint: str = " (call list_memories for every repository and path)") -> str:
    """``repository`` when memlens holds it, else a :class:`ToolInputError` with close
    matches and ``hint`` (what to call instead)."""
    repo = repository.strip()
    if not repo:
        raise ToolInputError("repository is empty; call list_memories to see the repositories.")
    known = repositories(svc)
    if repo not in known:
        raise ToolInputError(_suggest("repository", repo, known) + hint)
    return repo


def find_document(svc: MemoryService, repository: str, path: str) -> DocumentDetail:
    """The document at ``repository``/``path`` (live or deleted), or a helpful error."""
    repo = check_repository(svc, repository)
    logical = path.strip().lstrip("/")
    if not logical:
        raise ToolInputError("path is empty; give a logical path such as 'MEMORY.md'.")
    doc = svc.locate(repo, logical)
    if doc is None:
        paths = [d.path for d in svc.list_documents(repository=repo)]
        raise ToolInputError(_suggest("path", logical, paths, f" in {repo}"))
    return doc


# -- search_memory ---------------------------------------------------------------------

PER_DOCUMENT = 1
"""An agent reads documents: one hit per document, so ``k`` hits are ``k`` files (on
LoCoMo recall@5 0.840 -> 0.857 against two per document; issue 46, docs/benchmarks.md)."""


def _run_search(svc: MemoryService, query: str, mode: str, k: int, repository: str | None,
                all_projects: bool) -> tuple[SearchResult, list[str]]:
    extra: list[str] = []
    try:
        res = svc.search(query, mode=mode, k=k, repository=repository, all_projects=all_projects,
                         per_document=PER_DOCUMENT)
    except (EmbedderUnavailable, EmbeddingError) as exc:
        if mode == "lexical":
            raise
        extra.append(f"embedder unavailable ({scrub(str(exc))}); showing lexical results only")
        res = svc.search(query, mode="lexical", k=k, repository=repository,
                         all_projects=all_projects, per_document=PER_DOCUMENT)
    return res, extra


def _hit_line(h: dict[str, Any]) -> str:
    head = " › ".join(h["heading_path"]) or "(top)"
    return (f"{h['repository']}/{h['path']}#{h['ordinal']} › {head} "
            f"[chars {h['start_char']}-{h['end_char']}] ({h['match']})")


PENDING_SHOWN = 20
"""The most status stubs a search returns (with their total)."""


def _run_explain(svc: MemoryService, query: str, mode: str, k: int, repository: str | None,
                 all_projects: bool) -> tuple[SearchResult, list[str], dict[tuple[str, str, int], str]]:
    """The search with one compact line per hit saying why it ranks there (issue 45): the
    same ranking, explained from its own values; a plain search if the embedder fails."""
    try:
        e = svc.explain(query, mode=mode, k=k, repository=repository, all_projects=all_projects,
                        per_document=PER_DOCUMENT)
    except (EmbedderUnavailable, EmbeddingError):
        res, extra = _run_search(svc, query, mode, k, repository, all_projects)
        return res, extra, {}
    assert e.result is not None
    return e.result, [], {(h.repository, h.path, h.ordinal): h.summary for h in e.hits}


def search_memory(svc: MemoryService, query: str, mode: str = "hybrid", k: int = 8,
                  repository: str | None = None, all_projects: bool = False,
                  include_pending: bool = True, explain: bool = False) -> ToolOutput:
    """Search active memory; the current project's hits first unless ``all_projects``.
    With ``include_pending``, status stubs name the documents in scope that are not
    searchable yet (``pending``), so no hit is not mistaken for no such note;
    ``explain`` adds a ``why`` line per hit."""
    if not query or not query.strip():
        raise ToolInputError("query is empty; give a few words or a question to search for.")
    if mode not in MODES:
        raise ToolInputError(f"mode {echo(mode)} is not one of {', '.join(MODES)}.")
    if isinstance(k, bool) or not isinstance(k, int) or not K_MIN <= k <= K_MAX:
        raise ToolInputError(f"k must be a whole number from {K_MIN} to {K_MAX}; got {echo(k)}.")
    repo = check_repository(svc, repository) if repository else None
    try:
        why: dict[tuple[str, str, int], str] = {}
        if explain:
            res, extra, why = _run_explain(svc, query.strip(), mode, k, repo, all_projects)
        else:
            res, extra = _run_search(svc, query.strip(), mode, k, repo, all_projects)
    except SearchError as exc:
        raise ToolInputError(scrub(str(exc))) from None
    data = res.as_json()
    hits = [{key: v for key, v in h.items() if key not in _HIT_DROP} for h in data["hits"]]
    for h in hits:
        h["uri"] = uri(h["repository"], h["path"])
        if explain:
            h["why"] = scrub(why.get((h["repository"], h["path"], h["ordinal"]), ""))
    notes = [scrub(n) for n in [*data["notes"], *extra]]
    shown = echo(query.strip())
    out = {"query": clip(data["query"]), "mode": data["mode"], "embedder": data["embedder"],
           "matches": data["matches"], "preferred_repository": data["preferred_repository"],
           "notes": notes, "hits": hits}
    lines: list[str] = []
    if not hits:
        lines.append(f"No results for {shown}.")
    elif not data["matches"]:
        where = "in the documents this filter keeps" if repo else "in memory"
        lines.append(f"No matches for {shown}: no word of the query occurs {where}; "
                     "the hits below are the closest by meaning only.")
    else:
        lines.append(f"{data['matches']} match(es) for {shown} ({data['mode']}):")
    if data["preferred_repository"]:
        lines.append(f"(current project ranked first: {data['preferred_repository']})")
    divided = False
    for h in hits:
        if h["match"] == "closest" and data["matches"] and not divided:
            lines.append("--- closest by meaning only (no word of the query occurs in them) ---")
            divided = True
        lines.append(_hit_line(h))
        snippet = " ".join(str(h["snippet"]).split())
        lines.append(f"    {snippet}")
        if h.get("why"):
            lines.append(f"    why: {h['why']}")
    lines.extend(f"note: {n}" for n in notes)
    if include_pending:
        pending = svc.not_searchable(mode=mode, repository=repo, limit=PENDING_SHOWN)
        out["pending"] = pending.as_json()
        for d in out["pending"]["documents"]:
            d["error"] = scrub(d["error"]) if d["error"] else None
        lines.extend(_pending_lines(pending.total, out["pending"]["documents"],
                                    pending.documents, repo))
    return ToolOutput("\n".join(lines), out)


def _pending_lines(total: int, shown: list[dict[str, Any]], stubs: Sequence[NotSearchable],
                   repo: str | None) -> list[str]:
    if not total:
        return []
    where = f"in {repo}" if repo else "in memory"
    lines = [f"Not searchable yet {where}: {total} document(s); a missing hit may be there "
             "once they are (call again later):"]
    for d, stub in zip(shown, stubs, strict=True):
        error = f" ({clip(d['error'], 120)})" if d["error"] else ""
        lines.append(f"  {d['repository']}/{d['path']} — {stub.describe()}{error}")
    if total > len(shown):
        lines.append(f"  … and {total - len(shown)} more")
    return lines


# -- read_memory -----------------------------------------------------------------------


def read_memory(svc: MemoryService, repository: str, path: str) -> ToolOutput:
    """The current redacted text of one document, with its chunk spans."""
    doc = find_document(svc, repository, path)
    chunks: list[dict[str, Any]] = [{"ordinal": c.ordinal, "heading_path": list(c.heading_path),
               "start_char": c.start_char, "end_char": c.end_char, "tokens": c.tokens}
              for c in svc.chunks(doc.id)]
    state = "deleted" if doc.tombstoned else "live"
    # A deleted document has no projection: it is out of search, whatever the last
    # projection run left in its status column (issue 42).
    status = "deleted" if doc.tombstoned else doc.projection.status
    data = {"repository": doc.repository, "path": doc.path, "uri": uri(doc.repository, doc.path),
            "state": state, "projection_status": status,
            "deleted_at": _iso(doc.tombstoned_at) if doc.tombstoned else None,
            "front_matter": doc.front_matter, "chars": len(doc.content),
            "observed_at": _iso(doc.observed_at), "chunks": chunks, "text": doc.content}
    if doc.tombstoned:
        lines = [f"{doc.repository}/{doc.path} — deleted at {_iso(doc.tombstoned_at)}, not "
                 f"searchable; its last known text ({len(doc.content)} chars, "
                 f"{len(chunks)} chunk(s)) is below"]
    else:
        lines = [f"{doc.repository}/{doc.path} — live, {len(doc.content)} chars, "
                 f"projection {status}, {len(chunks)} chunk(s)"]
    lines.append("Chunks:")
    for c in chunks:
        head = " › ".join(c["heading_path"]) or "(top)"
        lines.append(f"  #{c['ordinal']} › {head} [chars {c['start_char']}-{c['end_char']}]")
    lines.append("Text:")
    lines.append(doc.content)
    return ToolOutput("\n".join(lines), data)


# -- memory_history --------------------------------------------------------------------


def memory_history(svc: MemoryService, repository: str, path: str, limit: int = 10) -> ToolOutput:
    """Revisions of one document, newest first, with their bounded diffs."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= HISTORY_MAX:
        raise ToolInputError(
            f"limit must be a whole number from 1 to {HISTORY_MAX}; got {echo(limit)}.")
    doc = find_document(svc, repository, path)
    revs = svc.revisions(doc.id)
    shown = revs[:limit]
    # The change that made each revision is stored on the one before it (issue 42).
    changes = revision_changes(revs)[:limit]
    items = [{"number": r.number, "change_kind": r.change_kind, "observed_at": _iso(r.observed_at),
              "path": r.path, "previous_path": r.previous_path, "summary": r.summary,
              "chunks": r.chunks, "embedder": r.embedder, "content_hash": r.content_hash,
              "diff": r.diff, "diff_truncated": r.diff_truncated,
              "change": c.as_json() if c else None} for r, c in zip(shown, changes, strict=True)]
    data = {"repository": doc.repository, "path": doc.path, "total": len(revs),
            "revisions": items}
    lines = [f"{doc.repository}/{doc.path}: {len(revs)} revision(s), newest first"
             + (f" (showing {len(shown)})" if len(shown) < len(revs) else "")]
    for r, c in zip(shown, changes, strict=True):
        moved = f" (from {r.previous_path})" if r.previous_path else ""
        if c is None:
            what = "first revision" if r.number == 1 else "oldest revision kept"
        else:
            what = f"change from #{c.from_revision}: {c.summary or 'no summary'}"
        lines.append(f"#{r.number} {r.change_kind} {_iso(r.observed_at) or '-'}{moved} — {what}")
        if c is not None and c.diff:
            lines.extend(f"    {ln}" for ln in c.diff.splitlines())
            if c.diff_truncated:
                lines.append("    … (diff truncated)")
    return ToolOutput("\n".join(lines), data)


# -- list_memories / memory_status -----------------------------------------------------


def list_memories(svc: MemoryService, repository: str | None = None) -> ToolOutput:
    """Live documents with projection status, and MEMORY.md index warnings."""
    repo = check_repository(svc, repository, " (leave repository out to list every one)") \
        if repository else None
    docs = svc.list_documents(repository=repo)
    current = svc.current_repository()
    items: list[dict[str, Any]] = []
    lines = [f"{len(docs)} document(s)" + (f" in {repo}" if repo else "")
             + (f"; current project: {current}" if current else "")]
    last_repo = None
    index_names = set(svc.chunker_config().index_names)
    for d in docs:
        found = svc.index_warnings(d.id) if d.path.rsplit("/", 1)[-1] in index_names else []
        warnings = [{"kind": w.kind, "message": scrub(w.message), "line": w.line,
                     "target": w.target} for w in found]
        items.append({"repository": d.repository, "path": d.path, "uri": uri(d.repository, d.path),
                      "status": d.status, "chunks": d.chunk_count, "size": d.size,
                      "name": d.name, "type": d.doc_type,
                      "error": scrub(d.error) if d.error else None, "index_warnings": warnings})
        if d.repository != last_repo:
            lines.append(f"{d.repository}:")
            last_repo = d.repository
        extra = f" type={d.doc_type}" if d.doc_type else ""
        word = "chunk" if d.chunk_count == 1 else "chunks"
        lines.append(f"  {d.path}  [{d.status}, {d.chunk_count} {word}, {d.size} B{extra}]")
        if d.error:
            lines.append(f"    error: {scrub(d.error)}")
        for w in warnings:
            at = f" (line {w['line']})" if w["line"] else ""
            lines.append(f"    warning {w['kind']}{at}: {w['message']}")
    data = {"current_repository": current, "count": len(items), "documents": items}
    return ToolOutput("\n".join(lines), data)


def memory_status(svc: MemoryService, watch: dict[str, Any] | None = None) -> ToolOutput:
    """Projection queue counts, failed documents and the embedder."""
    st = svc.statistics()
    failed = [{"repository": d.repository, "path": d.path, "status": d.status,
               "error": scrub(d.error) if d.error else None}
              for d in svc.list_documents() if d.status in ("failed", "stale")]
    embedder = scrub(st.embedder)
    data: dict[str, Any] = {"documents": st.documents, "deleted": st.tombstoned,
                            "chunks": st.chunks, "queue": dict(st.queue), "failed": failed,
                            "embedder": embedder, "current_repository": svc.current_repository(),
                            "watch": watch}
    q = ", ".join(f"{k} {v}" for k, v in sorted(st.queue.items())) or "empty"
    lines = [f"{st.documents} live document(s), {st.tombstoned} deleted, {st.chunks} chunk(s)",
             f"projection queue: {q}", f"embedder: {embedder}"]
    if data["current_repository"]:
        lines.append(f"current project: {data['current_repository']}")
    if watch is not None:
        lines.append(f"watcher: {watch.get('state', '-')}"
                     + (f", last event: {watch['last']}" if watch.get("last") else ""))
    lines.append(f"{len(failed)} failed document(s)" + (":" if failed else ""))
    lines.extend(f"  {f['repository']}/{f['path']} [{f['status']}]: {f['error'] or '-'}"
                 for f in failed)
    return ToolOutput("\n".join(lines), data)


def read_resource(svc: MemoryService, repository: str, path: str) -> str:
    """The redacted text behind ``memory://{repository}/{path}``."""
    return find_document(svc, repository, path).content
