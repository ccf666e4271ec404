"""The watcher's consumer side: memory roots, settling, batch ingest and reconcile.

Part of :mod:`memlens.watch.watcher`. Runs on the thread that calls
:meth:`memlens.watch.watcher.Watcher.run`: it re-resolves the memory roots in scope
(a vanished folder is reported, never tombstoned wholesale), waits for changed
files to settle, ingests batches with ``only_paths``, hands them to the door's
after-change flow (:meth:`memlens.core.service.MemoryService.after_change`: stage 1,
then the vectors), and runs the full reconcile that catches missed events.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from watchfiles import Change

from memlens.core.types import (
    FileChange,
    MemoryRoot,
    ProjectionReport,
    UsageError,
    claude_projects_dir,
    is_ignored_name,
    is_markdown_name,
    roots_for_path,
)
from memlens.watch.events import MAX_SETTLE_SECONDS, Interrupted, Scope, WatcherBase, is_under, sig


class WatchConsumer(WatcherBase):
    """The consumer half of :class:`memlens.watch.watcher.Watcher`."""

    # -- roots ---------------------------------------------------------------------
    def _resolve_scope(self, sc: Scope) -> list[MemoryRoot]:
        p = sc.path
        if not p.is_dir():
            return []
        if sc.kind is None:
            if p == claude_projects_dir().expanduser().absolute():
                sc.kind = "projects"
            else:
                found = roots_for_path(p, self._repository)
                if len(found) == 1 and found[0].path == p / "memory":
                    sc.kind, sc.root = "project", found[0]
                elif len(found) == 1 and found[0].path == p:
                    sc.kind, sc.root = "memory", found[0]
                else:
                    sc.kind = "projects"
        if sc.kind == "projects":
            out = []
            try:
                children = sorted(p.iterdir())
            except OSError:
                return []
            for child in children:
                mem = child / "memory"
                if not is_ignored_name(child.name) and mem.is_dir():
                    out.append(MemoryRoot(repository=child.name, path=mem))
            return out
        assert sc.root is not None
        return [sc.root] if sc.root.path.is_dir() else []

    def _refresh_roots(self) -> list[MemoryRoot]:
        """Re-resolve the roots in scope; report vanished ones; return new ones."""
        now: dict[Path, MemoryRoot] = {}
        for sc in self._scopes:
            try:
                for r in self._resolve_scope(sc):
                    now.setdefault(r.path, r)
            except (UsageError, OSError) as exc:
                self._emit(self._event("error", f"{sc.path}: {exc}"))
        for r in self._explicit:
            if r.path.is_dir():
                now.setdefault(r.path, r)
        expected = set(self._roots) | {r.path for r in self._explicit}
        for p in sorted(expected - set(now)):
            if p in self._missing_reported:
                continue
            self._missing_reported.add(p)
            old = self._roots.get(p) or next(r for r in self._explicit if r.path == p)
            n = self._live_count(old)
            self._emit(self._event(
                "error", f"memory folder {p} is missing; its {n} document(s) are kept (not "
                "deleted); watching for the folder to come back", repository=old.repository))
        appeared = [r for p, r in now.items() if p not in self._roots]
        for r in appeared:
            self._missing_reported.discard(r.path)
        self._roots = now
        return appeared

    def _live_count(self, root: MemoryRoot) -> int:
        try:
            return self._service.live_count_under(root.path)
        except Exception:  # counting is cosmetic
            return 0

    def _root_of(self, p: Path) -> MemoryRoot | None:
        best: MemoryRoot | None = None
        for rp, r in self._roots.items():
            if is_under(p, rp) and (best is None or len(rp.parts) > len(best.path.parts)):
                best = r
        return best

    def _has_docs_under(self, root: MemoryRoot, rel: str) -> bool:
        try:
            return self._service.has_documents_under(root.path, rel)
        except Exception:
            return True  # when in doubt, rescan the root

    # -- consumer --------------------------------------------------------------------
    def _take(self, wait: float = 0.0) -> dict[str, Change]:
        with self._cond:
            if not self._pending and wait > 0:
                self._cond.wait(wait)
            out, self._pending = self._pending, {}
        return out

    def _requeue(self, batch: dict[str, Change]) -> None:
        with self._cond:
            for p, ch in batch.items():
                self._pending.setdefault(p, ch)

    def _wait_stable(self, paths: Sequence[Path], deadline: float,
                     stop: threading.Event) -> None:
        """Wait until every path kept its (size, mtime) — or stayed missing — for stable_ms."""
        if self._stable_s <= 0:
            return
        now = time.time()
        quiet: dict[Path, tuple[tuple[int, int] | None, float]] = {}
        for p in paths:
            sg = sig(p)
            since = now if sg is None else min(now, sg[1] / 1e9 if sg[1] > 0 else now)
            quiet[p] = (sg, since)
        while quiet and not stop.is_set():
            now = time.time()
            for p in list(quiet):
                sg = sig(p)
                old, since = quiet[p]
                if sg != old:
                    quiet[p] = (sg, now)
                elif now - since >= self._stable_s:
                    del quiet[p]
            if not quiet or time.monotonic() >= deadline:
                return
            nxt = min(since for _, since in quiet.values()) + self._stable_s - now
            stop.wait(max(0.005, min(nxt, deadline - time.monotonic(), 0.05)))

    def _announce(self, batch: dict[str, Change]) -> None:
        """A ``seen`` event for each Markdown file of the batch still on disk, before it
        settles and is read (only with ``announce=True``)."""
        if not self._announce_seen:
            return
        for raw, change in batch.items():
            p = Path(raw)
            root = self._root_of(p)
            if change == Change.deleted or root is None or p == root.path or \
                    not is_markdown_name(p.name):
                continue
            parts = p.relative_to(root.path).parts
            if not any(is_ignored_name(part) for part in parts) and p.is_file():
                rel = "/".join(parts)
                self._emit(self._event("seen", f"{root.repository}/{rel}",
                                       repository=root.repository, path=rel))

    def _settle(self, batch: dict[str, Change], stop: threading.Event) -> None:
        """Wait for the batch's files to settle, adding paths that change meanwhile."""
        deadline = time.monotonic() + MAX_SETTLE_SECONDS
        todo = dict(batch)
        self._announce(batch)
        while True:
            self._wait_stable([Path(p) for p in todo if is_markdown_name(os.path.basename(p))],
                              deadline, stop)
            more = self._take()
            if not more:
                break
            if time.monotonic() >= deadline:
                self._requeue(more)
                break
            batch.update(more)
            self._announce(more)
            todo = more

    def _classify(self, batch: dict[str, Change], full: dict[Path, MemoryRoot]
                  ) -> dict[Path, set[str]]:
        """Sort changed paths: roots to rescan go into ``full``; returns per-root paths."""
        partial: dict[Path, set[str]] = {}
        for raw in batch:
            p = Path(raw)
            root = self._root_of(p)
            if root is None or p == root.path:
                continue  # outside every memory folder, or the folder itself (handled above)
            rel_parts = p.relative_to(root.path).parts
            if any(is_ignored_name(part) for part in rel_parts):
                continue
            rel = "/".join(rel_parts)
            if is_markdown_name(p.name) and not p.is_dir():
                partial.setdefault(root.path, set()).add(rel)
            elif p.is_dir() or (not p.exists() and self._has_docs_under(root, rel)):
                full[root.path] = root  # a folder appeared, vanished or moved: rescan the root
        return partial

    def _process(self, batch: dict[str, Change], stop: threading.Event) -> bool:
        """Settle, classify and ingest one batch; False when it must be retried."""
        self._settle(batch, stop)
        appeared = self._refresh_roots()
        full: dict[Path, MemoryRoot] = {r.path: r for r in appeared}
        partial = self._classify(batch, full)
        for rp in full:
            partial.pop(rp, None)
        # a root that vanished while we waited is skipped (never tombstoned wholesale)
        full = {rp: r for rp, r in full.items() if rp.is_dir()}
        partial = {rp: s for rp, s in partial.items() if rp.is_dir()}
        for r in appeared:
            if r.path in full:
                self._emit(self._event("reconcile", f"new memory folder {r.path}; ingesting it",
                                       repository=r.repository))
        if not full and not partial:
            return True
        self.batches += 1
        ok, _ = self._ingest(list(full.values()),
                             {self._roots[rp]: s for rp, s in partial.items()}, stop)
        if not ok:
            self._requeue(batch)
        return ok

    def _ingest(self, full: list[MemoryRoot], partial: dict[MemoryRoot, set[str]],
                stop: threading.Event, *, always_project: bool = False
                ) -> tuple[bool, list[FileChange]]:
        """Ingest, then the door's after-change flow (project the queue), and emit events.

        Returns:
            (ok, changes): ``ok`` is False when ingest raised and the batch should
            be retried; ``changes`` are the file changes applied (also on failure).
        """
        changes: list[FileChange] = []

        def collect(ch: FileChange) -> None:
            changes.append(ch)
            if stop.is_set():
                raise Interrupted

        ok = True
        interrupted = False
        try:
            if full:  # a reconcile also reads files whose size and mtime match
                self._service.ingest(full, project=False, on_change=collect,
                                     verify_content=always_project)
            if partial:
                self._service.ingest(list(partial), project=False, on_change=collect,
                                     only_paths={r.path: s for r, s in partial.items()})
        except Interrupted:
            interrupted = True
        except Exception as exc:
            ok = False
            self._emit(self._event("error", f"ingest failed: {type(exc).__name__}: {exc}; "
                                   "will retry"))
        report: ProjectionReport | None = None
        if not interrupted:
            try:
                report = self._service.after_change(changes, reconcile=always_project,
                                                    cancelled=stop.is_set)
            except Exception as exc:
                self._emit(self._event("error", f"projection failed: {type(exc).__name__}: "
                                       f"{exc}; documents stay queued"))
        self._emit_changes(changes, report)
        return ok, changes

    def _emit_changes(self, changes: Sequence[FileChange], report: ProjectionReport | None
                      ) -> None:
        results = {o.document_id: o for o in report.outcomes} if report else {}
        where: dict[int, tuple[str | None, str | None]] = {}
        for ch in changes:
            if ch.kind == "unchanged":
                continue
            if ch.document_id is not None:
                where[ch.document_id] = (ch.repository, ch.path)
            o = results.get(ch.document_id) if ch.document_id is not None else None
            if ch.kind == "failed":
                msg = f"{ch.repository}/{ch.path}: {ch.error}"
            elif ch.kind == "rename":
                msg = f"{ch.repository}/{ch.previous_path} -> {ch.path}"
            else:
                msg = f"{ch.repository}/{ch.path}"
            self._emit(self._event("change", msg, repository=ch.repository, path=ch.path,
                                   change_kind=ch.kind, result=o.result if o else None,
                                   error=ch.error if ch.kind == "failed" else None))
        for o in (report.outcomes if report else []):
            repo_path = where.get(o.document_id)
            if repo_path is None:
                doc = self._service.detail(o.document_id)
                repo_path = (doc.repository, doc.path) if doc else (None, None)
            repo, path = repo_path
            msg = (f"{o.result}: {o.nodes} chunk(s)" if o.error is None
                   else f"{o.result}: {o.error}")
            self._emit(self._event("projection", msg, repository=repo, path=path,
                                   result=o.result))

    def _reconcile(self, reason: str, stop: threading.Event) -> None:
        """Full ingest of every present root (catches missed events)."""
        t0 = time.monotonic()
        self._refresh_roots()
        roots = list(self._roots.values())
        self.reconciles += 1
        ok, changes = self._ingest(roots, {}, stop, always_project=True)
        counts: dict[str, int] = {}
        for ch in changes:
            counts[ch.kind] = counts.get(ch.kind, 0) + 1
        ms = (time.monotonic() - t0) * 1000
        parts = [f"{counts.get(k, 0)} {k}" for k in ("create", "update", "rename", "delete",
                                                         "failed")]
        self._emit(self._event(
            "reconcile", f"reconcile ({reason}): {len(roots)} folder(s), "
            + ", ".join(parts) + f", {counts.get('unchanged', 0)} unchanged in {ms:.0f} ms"
            + ("" if ok else " (incomplete)")))


__all__ = ["WatchConsumer"]
