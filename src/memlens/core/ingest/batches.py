"""How an ingest writes the files it prepared: one :class:`FileChange` per file, the files
of a walk in batches — one write transaction per batch, a savepoint per file (see
:class:`_Batches`). Part of :mod:`memlens.core.ingest.pipeline`, which re-exports
:class:`FileChange`."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from memlens.core.store.db import DAMAGE, write_batch
from memlens.core.store.records import (
    PreparedFile,
    SourceChanged,
    write_create,
    write_rename,
    write_update,
)

Clock = Callable[[], float]


@dataclass(frozen=True)
class FileChange:
    """One change applied by ingest (for progress lines and the watcher)."""

    kind: str  # create | update | rename | delete | unchanged | failed
    repository: str
    path: str
    document_id: int | None = None
    previous_path: str | None = None
    error: str | None = None


Emit = Callable[[FileChange], None]


class _DiskFull(Exception):
    """The database's disk is full: the run stops, what is stored stays."""


class _BatchLost(Exception):
    """SQLite rolled the whole batch transaction back by itself (an I/O error)."""


class _Batches:
    """The files of an ingest, stored in batches (see the module docstring).

    A batch's transaction opens with its first file and each file is written (in a
    savepoint) as soon as it is read, so the time between reading a file and checking
    under the write lock that it has not changed since stays as short as with one
    transaction per file; the batch commits when it is due (:meth:`due`) and a file's
    change is reported (``emit``) once its batch is committed. When SQLite rolls a whole
    batch back by itself (an I/O error in one file's write), that file is reported failed
    and the batch's other files are written again one transaction each, so a failing
    file still loses nothing else; a batch whose commit fails (an I/O error) is written
    again the same way, and so is a batch that does not fit on the disk: what fits is
    stored, and the first file that does not stops the run (:class:`_DiskFull`; it and
    the rest are left in ``pending``: not stored).
    """

    def __init__(self, conn: apsw.Connection, now: Clock, emit: Emit,
                 vanished: Sequence[dict[str, Any]], on_stored: Callable[[], None] | None,
                 files: int, seconds: float) -> None:
        self.conn, self.now, self.emit, self.vanished = conn, now, emit, vanished
        self.on_stored, self.files, self.seconds = on_stored, max(1, files), seconds
        # the files written in the open batch, and the changes to report at its commit
        self.pending: list[tuple[PreparedFile, dict[str, Any] | None, dict[str, int]]] = []
        self.done: list[FileChange] = []
        self.txn: contextlib.AbstractContextManager[apsw.Connection] | None = None
        self.started = time.monotonic()

    def _one(self, item: tuple[PreparedFile, dict[str, Any] | None, dict[str, int]],
             emit: Emit) -> None:
        pf, existing, renames = item
        _write_prepared(self.conn, pf, renames, self.vanished, existing, self.now, emit)

    def _singly(self, items: Sequence[tuple[PreparedFile, dict[str, Any] | None,
                                            dict[str, int]]]) -> None:
        """Write files one transaction each, reporting each at once."""
        for i, item in enumerate(items):
            try:
                self._one(item, self.emit)
            except _DiskFull:
                self.pending = list(items[i:])
                raise

    def add(self, pf: PreparedFile, existing: dict[str, Any] | None,
            renames: dict[str, int] | None = None) -> None:
        """Write one file into the open batch (opening one first), then :meth:`due`."""
        item = (pf, existing, renames or {})
        if self.txn is None:
            txn = write_batch(self.conn)
            try:
                txn.__enter__()
            except apsw.FullError as exc:
                self.pending = [item]
                raise _DiskFull(str(exc)) from exc
            except DAMAGE:
                raise
            except apsw.Error:  # cannot begin (an I/O error): this file on its own
                self._singly([item])
                return
            self.txn, self.started = txn, time.monotonic()
        self.pending.append(item)
        try:
            self._one(item, self.done.append)
        except _DiskFull as exc:
            # the batch does not fit: store what fits, one file per transaction, as an
            # unbatched run would (raises _DiskFull at the first file that does not)
            items = self.pending
            self._abort(exc)
            self.pending, self.done = [], []
            self._singly(items)
            return
        except BaseException as exc:  # an error that ends the run
            self._abort(exc)
            raise
        if not self.conn.in_transaction:  # SQLite rolled the whole batch back
            lost = self.done[-1]
            self._abort(_BatchLost())
            earlier, self.pending, self.done = self.pending[:-1], [], []
            self.emit(lost)  # that file's failure, as in a batch of one
            self._singly(earlier)
            return
        self.due()

    def _abort(self, exc: BaseException) -> None:
        """Roll the open batch back (nothing of it is stored; ``pending`` keeps it)."""
        txn, self.txn = self.txn, None
        if txn is not None:
            with contextlib.suppress(BaseException):
                txn.__exit__(type(exc), exc, exc.__traceback__)

    def close(self) -> None:
        """Roll back a batch left open by an error (a no-op after :meth:`flush`)."""
        if self.txn is not None:
            self._abort(_BatchLost())

    def due(self) -> None:
        """Commit the batch when it is full or its first file waited long enough; then
        ``on_stored``."""
        if len(self.pending) >= self.files or (
                self.pending and time.monotonic() - self.started >= self.seconds):
            self.flush(stored=True)

    def flush(self, *, stored: bool = False) -> None:
        """Commit the open batch and report its files (raises :class:`_DiskFull`); with
        ``stored``, call ``on_stored`` afterwards."""
        txn, self.txn = self.txn, None
        items, done = self.pending, self.done
        self.pending, self.done = [], []
        if txn is None:
            return
        try:
            txn.__exit__(None, None, None)  # COMMIT
        except apsw.Error:  # the commit failed (a full disk, an I/O error): nothing of it
            if self.conn.in_transaction:  # is stored; what fits goes in file by file
                with contextlib.suppress(apsw.Error):
                    self.conn.execute("ROLLBACK")
            self._singly(items)
        else:
            for ch in done:
                self.emit(ch)
        if stored and self.on_stored is not None:
            self.on_stored()


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
    except DAMAGE:  # the database is damaged, not this file: the run ends with one line
        raise
    except apsw.Error as exc:
        emit(FileChange("failed", pf.repository, pf.logical_path,
                        error=f"database error: {exc}"))


__all__ = ["Emit", "FileChange"]
