"""The ingest pipeline: scan -> read -> redact -> hash -> chunk -> durable write.

Each file is written in its own transaction, so one bad file never blocks or
undoes another, and nothing already stored is lost when a file cannot be read.
Projection is a separate step (:mod:`memlens.core.projection.swap`).

Change detection per memory root:

* stat fast path: a live document whose stored (mtime_ns, size) and source path
  match is ``unchanged`` without reading the file (with ``verify_content``, as the
  watcher's periodic reconcile asks, the file is read and its keyed hash compared
  too: an edit that kept size and mtime is caught);
* same redacted content hash: ``unchanged`` (stat fields refreshed);
* absence is confirmed before a tombstone: a path missing from the scan is looked
  up again after the scan's writes (at least :data:`ABSENCE_GRACE_SECONDS` later), so
  a file missing for a moment (deleted and written again by an editor) is kept;
* vanished paths (file gone from disk) are matched against new paths by content
  hash: exactly one vanished path and exactly one new path with the same hash in
  the same repository is a ``rename``; anything else is delete + create;
* a path that was tombstoned and appears again is revived by a ``create`` revision;
* a document is found by repository + logical path, not by the absolute folder: a
  folder that was moved or is reached by another path (symlink, another
  ``CLAUDE_CONFIG_DIR``) updates the same documents, and a document whose old file is
  gone, or is now a folder, is deleted from whichever path the folder is read.
"""

from __future__ import annotations

import os
import stat
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from memlens.core import faults
from memlens.core.chunking import choice as chunker_choice
from memlens.core.chunking.choice import ChunkerChoice
from memlens.core.chunking.chunker import ChunkerConfig, chunk_markdown
from memlens.core.ingest.installkey import keyed_hash
from memlens.core.ingest.names import is_tagged, needs_new_name, stored_logical_path
from memlens.core.ingest.sources import (
    DEFAULT_MAX_FILE_BYTES,
    MemoryRoot,
    SourceError,
    SourceFile,
    decode_markdown,
    read_file,
    scan_root,
    stat_file,
)
from memlens.core.projection.swap import delete_nodes
from memlens.core.redact.engine import redact
from memlens.core.store.records import (
    PreparedFile,
    SourceChanged,
    content_hash,
    find_document,
    live_documents_under,
    rename_identity,
    stored_names,
    write_create,
    write_delete,
    write_rename,
    write_update,
)

Clock = Callable[[], float]
RACY_NS = 2_000_000_000
ABSENCE_GRACE_SECONDS = 0.05
"""How long after the scan a missing path is looked up again before its tombstone."""

DEFAULT_MAX_CHUNKS_PER_FILE = 5000
"""The per-file chunk cap when none is passed (``[limits] max_chunks_per_file``, where
``MEMLENS_MAX_CHUNKS_PER_FILE`` overrides, is the one the service passes): a heading-dense
file could otherwise turn into hundreds of thousands of rows."""


@dataclass(frozen=True)
class FileChange:
    """One change applied by ingest (for progress lines and the watcher)."""

    kind: str  # create | update | rename | delete | unchanged | failed
    repository: str
    path: str
    document_id: int | None = None
    previous_path: str | None = None
    error: str | None = None


@dataclass
class IngestReport:
    """What an ingest run did; ``as_json`` is the stable ``--json`` shape."""

    changes: list[FileChange] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stopped: str | None = None  # why the run stopped early (disk full), if it did

    def _n(self, kind: str) -> int:
        return sum(1 for c in self.changes if c.kind == kind)

    @property
    def failed(self) -> list[FileChange]:
        """Per-file failures."""
        return [c for c in self.changes if c.kind == "failed"]

    def counts(self) -> dict[str, int]:
        """Files per outcome, keyed as in :meth:`as_json` (``created`` counts the
        ``create`` changes, and so on)."""
        return {"created": self._n("create"), "updated": self._n("update"),
                "renamed": self._n("rename"), "deleted": self._n("delete"),
                "unchanged": self._n("unchanged")}

    def as_json(self) -> dict[str, object]:
        """``{"created","updated","renamed","deleted","unchanged","failed":[{"path","error"}]}``
        plus ``"warnings": [str]`` when there are warnings and ``"stopped": str`` when the
        run stopped early."""
        out: dict[str, object] = {
            "created": self._n("create"),
            "updated": self._n("update"),
            "renamed": self._n("rename"),
            "deleted": self._n("delete"),
            "unchanged": self._n("unchanged"),
            "failed": [
                {"repository": c.repository, "path": c.path, "error": c.error}
                for c in self.failed
            ],
        }
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.stopped:
            out["stopped"] = self.stopped
        return out


def prepare_file(sf: SourceFile, config: ChunkerConfig, key: bytes,
                 max_bytes: int = DEFAULT_MAX_FILE_BYTES,
                 max_chunks: int = DEFAULT_MAX_CHUNKS_PER_FILE) -> PreparedFile:
    """Read, decode, redact, hash and chunk one file (no database access); a file over
    ``max_bytes`` or splitting into more than ``max_chunks`` chunks is refused (the
    caller passes ``[limits]`` from the settings, where ``MEMLENS_MAX_*`` overrides).

    Raises:
        SourceError: the file cannot be used; the message says why.
    """
    data, st = read_file(sf.abs_path, max_bytes)
    text = decode_markdown(data)
    red = redact(text).text
    try:
        result = chunk_markdown(red, config, path=sf.logical_path)
    except RecursionError:
        raise SourceError("Markdown is nested too deeply to parse") from None
    limit = max_chunks
    if len(result.chunks) > limit:
        raise SourceError(
            f"splits into {len(result.chunks):,} chunks, over the limit of {limit:,} per file "
            "([limits] max_chunks_per_file or MEMLENS_MAX_CHUNKS_PER_FILE); raise the limit or "
            "max_tokens, or split the file")
    return PreparedFile(
        repository=sf.root.repository,
        logical_path=sf.logical_path,
        source_path=source_path_of(sf),
        source_root=str(sf.root.path),
        text=red,
        content_hash=content_hash(red),
        # keyed: a database alone cannot confirm a guessed secret offline
        source_hash=keyed_hash(data, key),
        # A file modified within the filesystem's timestamp granularity could change again
        # without its (mtime, size) changing; store -1 so the next scan re-reads it (as git does).
        mtime_ns=st.mtime_ns if time.time_ns() - st.mtime_ns > RACY_NS else -1,
        size=st.size,
        chunks=result.chunks,
        front_matter=dict(result.front_matter),
        chunker=config,
        read_path=str(sf.abs_path),
    )


def source_path_of(sf: SourceFile) -> str:
    """The source path stored for a file: its absolute path, or, for a file whose name
    holds a secret, its folder joined with the stored (redacted, tagged) logical path."""
    return str(sf.root.path / sf.logical_path) if is_tagged(sf.logical_path) \
        else str(sf.abs_path)


TaggedLookup = Callable[[str], set[str]]


def _vanished(doc: dict[str, object], tagged: TaggedLookup | None = None) -> bool:
    """True when the document's last source file is gone, or was replaced by a folder.

    A document whose name held a secret stores no real path: ``tagged(source_root)``
    gives the stored paths of the files now in that folder. Any other failure to look
    (permissions, I/O) keeps the document: a delete needs evidence, not an error."""
    sp = doc.get("source_path")
    lp = doc.get("logical_path")
    if isinstance(lp, str) and is_tagged(lp) and tagged is not None:
        root = doc.get("source_root")
        return not isinstance(root, str) or lp not in tagged(root)
    if not isinstance(sp, str) or not sp:
        return True
    try:
        st = os.lstat(sp)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode)


Emit = Callable[[FileChange], None]


Trust = Callable[[SourceFile], bool]


def _unchanged_under(live: dict[str, dict[str, Any]]) -> Trust:
    """Files whose name need not be checked again: stored under that very name, from
    that very path, and unchanged on disk since (the stat fast path's test). Names are
    checked when a file is read, as its content is; ``memlens purge`` re-checks what is
    stored. This keeps a no-change scan from running the redaction rules on every name."""
    def trusted(sf: SourceFile) -> bool:
        doc = live.get(sf.logical_path)
        if doc is None or doc["source_path"] != str(sf.abs_path):
            return False
        try:
            st = stat_file(sf.abs_path)
        except SourceError:
            return False
        return bool(st.mtime_ns == doc["source_mtime_ns"] and st.size == doc["source_size"])
    return trusted


def scan_stored(root: MemoryRoot, key: bytes, warnings: list[str] | None = None,
                trusted: Trust | None = None) -> tuple[list[SourceFile], list[tuple[str, str]]]:
    """:func:`memlens.core.ingest.sources.scan_root` with every logical path in its stored
    form (:func:`memlens.core.ingest.names.stored_logical_path`); ``abs_path`` stays the real
    file. A file ``trusted`` accepts keeps the name it was stored under.

    Raises:
        SourceError: the folder itself cannot be read.
    """
    files, errors = scan_root(root, warnings)
    out = [f if (trusted is not None and trusted(f))
           or (lp := stored_logical_path(f.logical_path, key)) == f.logical_path
           else SourceFile(root=f.root, logical_path=lp, abs_path=f.abs_path) for f in files]
    return out, [(stored_logical_path(rel, key), err) for rel, err in errors]


def _scan(root: MemoryRoot, wanted: set[str] | None, emit: Emit, warnings: list[str],
          key: bytes, trusted: Trust | None = None
          ) -> tuple[list[SourceFile], set[str]] | None:
    """Scan ``root`` (limited to ``wanted``, stored logical paths); emit scan errors.

    Returns:
        The files and the logical paths that failed, or None when the root itself
        cannot be scanned (already reported).
    """
    try:
        files, scan_errors = scan_stored(root, key, warnings, trusted)
    except SourceError as exc:
        emit(FileChange("failed", root.repository, ".", error=str(exc)))
        return None
    if wanted is not None:
        files = [f for f in files if f.logical_path in wanted]
        scan_errors = [e for e in scan_errors if e[0] in wanted]
    errored: set[str] = set()
    for rel, err in scan_errors:
        errored.add(rel)
        emit(FileChange("failed", root.repository, rel, error=err))
    return files, errored


def _same_bytes(sf: SourceFile, doc: dict[str, Any], key: bytes, max_bytes: int) -> bool:
    """Whether the file still holds the bytes stored (its keyed hash); read errors are
    raised (:class:`SourceError`) like any read's."""
    stored = doc.get("source_hash")
    if not stored:
        return False  # stored before the hash was kept: read it fully once
    data, _ = read_file(sf.abs_path, max_bytes)
    return bool(keyed_hash(data, key) == stored)


def _prepare_changed(files: Sequence[SourceFile], live: dict[str, dict[str, Any]],
                     root: MemoryRoot, configs: dict[int | None, ChunkerChoice], key: bytes,
                     max_bytes: int, emit: Emit, errored: set[str],
                     max_chunks: int = DEFAULT_MAX_CHUNKS_PER_FILE,
                     verify_content: bool = False) -> list[PreparedFile]:
    """Prepare every file not caught by the stat fast path; failures go to ``errored``.
    With ``verify_content`` the fast path also compares the file's keyed hash.

    ``configs`` maps a document id to its remembered chunker choice (None: the
    choice for documents without one of their own)."""
    prepared: list[PreparedFile] = []
    for sf in files:
        doc = live.get(sf.logical_path)
        config = configs.get(int(doc["id"]) if doc is not None else None, configs[None]).config
        try:
            if doc is not None and doc["source_path"] == source_path_of(sf):
                st = stat_file(sf.abs_path)
                if st.mtime_ns == doc["source_mtime_ns"] and st.size == doc["source_size"] \
                        and (not verify_content or _same_bytes(sf, doc, key, max_bytes)):
                    emit(FileChange("unchanged", root.repository, sf.logical_path, doc["id"]))
                    continue
            prepared.append(prepare_file(sf, config, key, max_bytes, max_chunks))
        except SourceError as exc:
            errored.add(sf.logical_path)
            emit(FileChange("failed", root.repository, sf.logical_path, error=str(exc)))
        except Exception as exc:  # noqa: BLE001 - one file's bug must not stop the others
            errored.add(sf.logical_path)
            emit(FileChange("failed", root.repository, sf.logical_path,
                            error=f"internal error while reading ({exc.__class__.__name__}: "
                            f"{exc}); please report it"))
    return prepared


def _infer_renames(vanished: Sequence[dict[str, Any]], new_files: Sequence[PreparedFile]
                   ) -> dict[str, int]:
    """Rename inference: unique hash on both sides, same repository, new path not occupied.

    Returns:
        ``{new logical path: document id}``.
    """
    by_hash_gone: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for d in vanished:
        by_hash_gone[str(d["content_hash"])].append(d)
    by_hash_new: dict[str, list[PreparedFile]] = defaultdict(list)
    for pf in new_files:
        by_hash_new[pf.content_hash].append(pf)
    renames: dict[str, int] = {}  # new logical path -> doc id
    for h, gone in by_hash_gone.items():
        news = by_hash_new.get(h, [])
        if len(gone) == 1 and len(news) == 1:
            renames[news[0].logical_path] = int(str(gone[0]["id"]))
    return renames


class _DiskFull(Exception):
    """The database's disk is full: the run stops, what is stored stays."""


def _write_prepared(conn: apsw.Connection, pf: PreparedFile, renames: dict[str, int],
                    vanished: Sequence[dict[str, Any]], existing: dict[str, Any] | None,
                    now: Clock, emit: Emit) -> None:
    """Write one prepared file as a rename, create or update revision.

    Raises:
        _DiskFull: The write failed because the disk is full (rolled back).
    """
    try:
        if pf.logical_path in renames:
            doc_id = renames[pf.logical_path]
            old = next(str(d["logical_path"]) for d in vanished if d["id"] == doc_id)
            write_rename(conn, doc_id, pf, now())
            emit(FileChange("rename", pf.repository, pf.logical_path, doc_id, previous_path=old))
            return
        if existing is None or existing["tombstoned_at"] is not None:
            doc_id = write_create(conn, pf, now())
            emit(FileChange("create", pf.repository, pf.logical_path, doc_id))
        else:
            kind = write_update(conn, int(existing["id"]), pf, now())
            emit(FileChange("update" if kind == "updated" else "unchanged", pf.repository,
                            pf.logical_path, int(existing["id"])))
    except SourceChanged as exc:
        emit(FileChange("failed", pf.repository, pf.logical_path, error=str(exc)))
    except apsw.FullError as exc:
        raise _DiskFull(str(exc)) from exc
    except apsw.Error as exc:
        emit(FileChange("failed", pf.repository, pf.logical_path,
                        error=f"database error: {exc}"))


def ingest_root(
    conn: apsw.Connection,
    root: MemoryRoot,
    config: ChunkerConfig,
    key: bytes,
    now: Clock,
    *,
    only_paths: Iterable[str] | None = None,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_chunks: int = DEFAULT_MAX_CHUNKS_PER_FILE,
    on_change: Callable[[FileChange], None] | None = None,
    verify_content: bool = False,
) -> IngestReport:
    """Ingest one memory root (or only some logical paths of it).

    Args:
        conn: Database connection.
        root: The memory folder and its repository.
        config: Chunker configuration for new revisions, unless a rechunk remembered
            another one for the document, its repository or all documents
            (:mod:`memlens.core.chunking.choice`).
        key: Per-install key for the keyed source hash.
        now: Clock.
        only_paths: Limit the work to these logical paths (watcher batches); a
            listed path that no longer exists is treated as vanished.
        max_bytes: Files larger than this are refused with a per-file error.
        max_chunks: Files splitting into more chunks are refused the same way
            (the caller passes ``[limits] max_chunks_per_file``).
        on_change: Called after each applied change.
        verify_content: Read files whose size and mtime match too, and compare their
            keyed hash (the watcher's periodic reconcile).
    """
    report = IngestReport()

    def emit(ch: FileChange) -> None:
        report.changes.append(ch)
        if on_change:
            on_change(ch)

    wanted = {stored_logical_path(p, key) for p in only_paths} \
        if only_paths is not None else None
    # Documents of this folder, and of its repository read from another path (a moved
    # or symlinked folder): those are deleted only when their old file is gone too.
    live = {d["logical_path"]: d
            for d in live_documents_under(conn, str(root.path), root.repository)}
    scanned = _scan(root, wanted, emit, report.warnings, key, _unchanged_under(live))
    if scanned is None:
        return report
    files, errored = scanned
    seen: set[str] = {f.logical_path for f in files}

    _rename_old_names(conn, root, live, seen, key, now)
    # this scan already lists the folder (every path a vanished candidate can have)
    tagged_cache: dict[str, set[str]] = {str(root.path): seen}

    def tagged(source_root: str) -> set[str]:
        if source_root not in tagged_cache:
            try:
                there = scan_stored(MemoryRoot(root.repository, Path(source_root)), key)[0]
            except (SourceError, OSError):
                there = []
            tagged_cache[source_root] = {f.logical_path for f in there}
        return tagged_cache[source_root]
    configs = chunker_choice.resolver(conn, root.repository, config)
    prepared = _prepare_changed(files, live, root, configs, key, max_bytes, emit, errored,
                                max_chunks, verify_content)

    vanished = [
        d for p, d in live.items()
        if p not in seen and p not in errored and (wanted is None or p in wanted)
        and _vanished(d, tagged)
    ]
    looked = time.monotonic()
    existing_docs = {pf.logical_path: find_document(conn, pf.repository, pf.logical_path)
                     for pf in prepared}
    renames = _infer_renames(vanished, [pf for pf in prepared
                                        if existing_docs[pf.logical_path] is None])
    renamed_ids = set(renames.values())

    for i, pf in enumerate(prepared):
        try:
            _write_prepared(conn, pf, renames, vanished, existing_docs[pf.logical_path], now, emit)
        except _DiskFull as exc:
            left = len(prepared) - i
            report.stopped = (f"disk full ({exc}): ingest stopped, {left} changed file(s) not "
                              "stored; free space and run it again (what was stored is kept)")
            emit(FileChange("failed", pf.repository, pf.logical_path, error=report.stopped))
            return report
    for d in _confirmed_absent(vanished, renamed_ids, looked, tagged_cache, tagged):
        try:
            write_delete(conn, int(str(d["id"])), now(), unproject=delete_nodes)
        except apsw.FullError as exc:
            report.stopped = (f"disk full ({exc}): ingest stopped before recording every "
                              "deleted file; free space and run it again (what was stored is "
                              "kept)")
            emit(FileChange("failed", root.repository, str(d["logical_path"]),
                            error=report.stopped))
            return report
        emit(FileChange("delete", root.repository, str(d["logical_path"]), int(str(d["id"]))))
    return report


def _confirmed_absent(vanished: Sequence[dict[str, Any]], renamed: set[Any], looked: float,
                      tagged_cache: dict[str, set[str]], tagged: TaggedLookup
                      ) -> list[dict[str, Any]]:
    """The vanished documents (not renamed) whose file is still missing when looked up
    again, at least :data:`ABSENCE_GRACE_SECONDS` after the first look: one look during
    a save that deletes and writes the file again must not tombstone it (issue 42)."""
    gone = [d for d in vanished if d["id"] not in renamed]
    if not gone:
        return []
    faults.checkpoint("ingest.confirm_absence")
    wait = ABSENCE_GRACE_SECONDS - (time.monotonic() - looked)
    if wait > 0:
        time.sleep(wait)
    tagged_cache.clear()  # the folder is listed again for names that held a secret
    return [d for d in gone if _vanished(d, tagged)]


def _rename_old_names(conn: apsw.Connection, root: MemoryRoot, live: dict[str, dict[str, Any]],
                      seen: set[str], key: bytes, now: Clock) -> None:
    """Documents stored before secret file names were redacted, whose file this scan
    found under its stored name: renamed in place (no revision), so they keep their
    history instead of being deleted and created again."""
    for old, d in list(live.items()):
        if old in seen:
            continue
        new = needs_new_name(old, key)
        if new is None or new not in seen or new in live:
            continue
        names = {p: n for p in stored_names(conn, int(d["id"]))
                 if (n := needs_new_name(p, key)) is not None}
        names[old] = new
        src = str(root.path / new)
        if rename_identity(conn, int(d["id"]), names, src, now()):
            live[new] = {**live.pop(old), "logical_path": new, "source_path": src}


__all__ = ["DEFAULT_MAX_CHUNKS_PER_FILE", "FileChange", "IngestReport", "ingest_root", "prepare_file", "Path"]
