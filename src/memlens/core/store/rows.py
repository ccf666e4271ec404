"""The light base of :mod:`memlens.core.store.db`: what a one-shot read of the store needs,
with no import beyond ``contextlib``, ``functools``, ``zlib`` and ``apsw``.

:mod:`memlens.core.search.quick` (the one-shot ``memlens search --mode lexical``) opens the
database with these alone, so a search that answers in a few milliseconds does not
first spend ~40 ms importing ``pathlib``, ``typing``, ``dataclasses`` and ``threading``
(``docs/benchmarks.md``, "One-shot lexical search"). :mod:`memlens.core.store.db` and
:mod:`memlens.core.store.schema` re-export every name here: this is where they are defined,
not a second copy.
"""

from __future__ import annotations

import contextlib
import functools
import zlib

import apsw

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

SCHEMA_VERSION = 9
"""The schema this memlens writes and reads (``PRAGMA user_version``)."""

BUSY_TIMEOUT_MS = 15_000
DAMAGE = (apsw.CorruptError, apsw.NotADBError)
"""What SQLite raises when it reads a damaged page: never recorded as one file's or one
document's failure, never degraded to a partial answer; it ends the run (issue 42)."""
_VEC_DAMAGE = ("blob read error", "reading from blob failed", "opening blob failed",
               "could not open vectors blob", "blob size doesn't match",
               "could not open validity blob", "Internal sqlite-vec error")


def raise_if_damage(exc: BaseException) -> None:
    """Raise ``exc`` as damage when it is: a :data:`DAMAGE` error, or sqlite-vec failing
    to read its own storage (a plain ``SQLError`` such as "vectors blob read error" when
    a page of its chunks is damaged) as :class:`apsw.CorruptError`."""
    if isinstance(exc, DAMAGE):
        raise exc
    if isinstance(exc, apsw.SQLError) and any(m in str(exc) for m in _VEC_DAMAGE):
        raise apsw.CorruptError(f"the vector index cannot be read: {exc}") from exc
"""How long a connection waits for another process's lock before SQLITE_BUSY."""

FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
"""The FTS5 tokenizer of ``knowledge_nodes_fts`` (and of the TEMP snippet table)."""

PACK_LEVEL = 6
"""zlib level of stored Markdown (levels 1-9 differ by < 2 % in size on the benchmark)."""


def pack_text(text: str | None) -> bytes | None:
    """How the store keeps Markdown (snapshots, chunks, node text, a tombstoned document's
    content; :data:`PACKED_COLUMNS`): zlib-compressed UTF-8 in the ``*_z`` column; the
    column of the old name (where there is one) reads it back as text."""
    return None if text is None else zlib.compress(text.encode("utf-8"), PACK_LEVEL)


CONFIG_DICTIONARY = (
    b'{"estimator":"chars4","index_names":["MEMORY.md"],"max_tokens":400,"min_tokens":50,'
    b'"name":"memlens-markdown","overlap_tokens":80,"strategy":"adaptive","version":4}')
"""The zlib preset dictionary of stored chunker configs (schema v8). Never change it: the
stored blobs name it by its Adler-32; a new one needs a new name beside it."""
_DICTIONARIES = {zlib.adler32(CONFIG_DICTIONARY): CONFIG_DICTIONARY}


def pack_config(text: str | None) -> bytes | None:
    """How the store keeps a revision's chunker config (canonical JSON, nearly the same in
    every row): zlib against :data:`CONFIG_DICTIONARY`, ~16 bytes instead of ~160."""
    if text is None:
        return None
    z = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY, CONFIG_DICTIONARY)
    return z.compress(text.encode("utf-8")) + z.flush()


def unpack_text(blob: bytes | str | None) -> str | None:
    """The text of a :func:`pack_text` or :func:`pack_config` blob (``memlens_inflate``
    in SQL; a zlib stream that names a preset dictionary is read with it).

    Raises:
        apsw.CorruptError: The blob is not a zlib stream of UTF-8 text.
    """
    if blob is None or isinstance(blob, str):
        return blob
    try:
        if len(blob) > 6 and blob[1] & 0x20:  # FDICT: the dictionary's Adler-32 follows
            return _unpack_with_dictionary(bytes(blob))
        return zlib.decompress(blob).decode("utf-8")
    except (zlib.error, UnicodeDecodeError) as exc:
        # A damaged blob is damage in the database, reported as SQLite reports its own
        # (one line and `memlens doctor`, not a zlib traceback): raised inside the SQL
        # function, it reaches the caller of the statement as this error.
        raise apsw.CorruptError(f"stored text does not inflate: {exc}") from None


@functools.lru_cache(maxsize=1024)
def _unpack_with_dictionary(blob: bytes) -> str:
    """Configs repeat from row to row: each distinct blob is inflated once (a zlib
    dictionary set-up costs ~20 µs, more than the read of a revision row)."""
    zdict = _DICTIONARIES.get(int.from_bytes(blob[2:6], "big"))
    if zdict is None:
        raise ValueError("packed text names an unknown zlib dictionary")
    d = zlib.decompressobj(zdict=zdict)
    return (d.decompress(blob) + d.flush()).decode("utf-8")


_BATCHED: set[int] = set()
"""``id()`` of the connections inside :func:`write_batch` (their ``write_txn`` is a savepoint)."""


@contextlib.contextmanager
def write_batch(conn: apsw.Connection) -> Iterator[apsw.Connection]:
    """One :func:`write_txn` around many writes: each :func:`write_txn` inside it is a
    savepoint of its own, rolled back alone when its block raises, and everything is
    committed together at the end (an ingest's batch of files: one commit, one fsync,
    instead of one per file). If SQLite rolls the whole transaction back by itself (an
    I/O error, a full disk), ``conn.in_transaction`` turns False: the caller must leave
    the block (raise) and write again what the batch held."""
    with write_txn(conn):
        _BATCHED.add(id(conn))
        try:
            yield conn
        finally:
            _BATCHED.discard(id(conn))


@contextlib.contextmanager
def write_txn(conn: apsw.Connection) -> Iterator[apsw.Connection]:
    """Run a block in one ``BEGIN IMMEDIATE`` transaction (inside :func:`write_batch`:
    in a savepoint of the batch's transaction).

    Taking the write lock up front avoids the deadlock of two deferred readers
    upgrading at once (which surfaces as SQLITE_BUSY despite busy_timeout).
    """
    if id(conn) in _BATCHED and conn.in_transaction:
        conn.execute("SAVEPOINT memlens_write")
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:  # else SQLite rolled the whole batch back itself
                conn.execute("ROLLBACK TO memlens_write")
                conn.execute("RELEASE memlens_write")
            raise
        conn.execute("RELEASE memlens_write")
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        else:
            # SQLite already rolled back by itself (I/O error, disk full, ...).
            _reset_fts_after_auto_rollback(conn)
        raise


def _reset_fts_after_auto_rollback(conn: apsw.Connection) -> None:
    """Make FTS5 drop per-connection state left by an automatically rolled-back txn.

    FTS5 (seen with SQLite 3.54.1) keeps cached index totals in the connection when
    SQLite rolls a transaction back on its own after an I/O error; the next write
    transaction of the same connection then stores them, and the index fails
    ``integrity-check`` with rank 1. A no-op FTS write in a transaction that is
    rolled back explicitly makes FTS5 discard that state.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("DELETE FROM knowledge_nodes_fts WHERE rowid=-1")
        finally:
            conn.execute("ROLLBACK")
    except apsw.Error:
        pass  # the next write transaction fails loudly if the disk is still bad


@contextlib.contextmanager
def read_txn(conn: apsw.Connection) -> Iterator[apsw.Connection]:
    """Run a block of reads against one consistent snapshot."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


def rows(conn: apsw.Connection, sql: str, params: Any = ()) -> list[dict[str, Any]]:
    """Execute a query and return rows as dicts keyed by column name."""
    cur = conn.execute(sql, params)
    out: list[dict[str, Any]] = []
    try:
        desc = cur.getdescription()
    except apsw.ExecutionCompleteError:
        return out
    names = [d[0] for d in desc]
    out.extend(dict(zip(names, r, strict=True)) for r in cur)
    return out


def row(conn: apsw.Connection, sql: str, params: Any = ()) -> dict[str, Any] | None:
    """Execute a query and return the first row as a dict, or None."""
    res = rows(conn, sql, params)
    return res[0] if res else None


def scalar(conn: apsw.Connection, sql: str, params: Any = ()) -> Any:
    """Return the first column of the first row, or None."""
    r = conn.execute(sql, params).fetchone()
    return r[0] if r else None
