"""Connection factory, pragmas, schema and forward migrations.

memlens keeps everything in one SQLite file opened through APSW, because the
stdlib ``sqlite3`` of many Python builds cannot load extensions (sqlite-vec) and
because APSW bundles a current SQLite (>= 3.51.3, which fixes a WAL corruption
bug with several writers).

Every thread must open its own connection with :func:`connect`. Connections run
in WAL mode with a ``busy_timeout`` so several processes (TUI, watcher, CLI) can
share one database: readers never block, writers queue.

FTS5 tokenizer choice: ``porter unicode61 remove_diacritics 2``. ``unicode61``
splits identifiers such as ``SQLITE_BUSY``, ``busy_timeout`` and ``foo.bar()``
into their parts; the query builder (:mod:`memlens.core.search.engine`) turns such an
identifier back into a *phrase* (``"sqlite busy"``), which matches the identifier
exactly where it occurs and also the same words written as prose. ``porter``
lets English prose match across inflections (``migrations`` ~ ``migration``).
A ``tokenchars '_'`` tokenizer would keep ``busy_timeout`` whole but then a
search for ``timeout`` would miss it, which is worse for memory notes.
"""

from __future__ import annotations

import os
import stat
import threading
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw

from memlens.core import faults
from memlens.core.store.rows import BUSY_TIMEOUT_MS as BUSY_TIMEOUT_MS
from memlens.core.store.rows import CONFIG_DICTIONARY as CONFIG_DICTIONARY
from memlens.core.store.rows import DAMAGE as DAMAGE
from memlens.core.store.rows import FTS_TOKENIZER as FTS_TOKENIZER
from memlens.core.store.rows import PACK_LEVEL as PACK_LEVEL
from memlens.core.store.rows import SCHEMA_VERSION as SCHEMA_VERSION
from memlens.core.store.rows import _reset_fts_after_auto_rollback as _reset_fts_after_auto_rollback
from memlens.core.store.rows import pack_config as pack_config
from memlens.core.store.rows import pack_text as pack_text
from memlens.core.store.rows import raise_if_damage as raise_if_damage
from memlens.core.store.rows import read_txn as read_txn
from memlens.core.store.rows import row as row
from memlens.core.store.rows import rows as rows
from memlens.core.store.rows import scalar as scalar
from memlens.core.store.rows import unpack_text as unpack_text
from memlens.core.store.rows import write_batch as write_batch
from memlens.core.store.rows import write_txn as write_txn
from memlens.core.store.schema import MIGRATIONS
from memlens.core.store.schema import PACKED_COLUMNS as PACKED_COLUMNS

CHECKPOINT_WAIT_MS = 3_000



class DatabaseError(Exception):
    """A database problem a person can act on (message says what to do)."""


class SchemaTooNew(DatabaseError):
    """The database was written by a newer memlens."""


class DatabaseCorrupt(DatabaseError):
    """The file is not a SQLite database, or its structure is damaged."""


class DatabaseReadOnly(DatabaseError):
    """A write was asked of a database memlens may only read."""


StorageError = apsw.Error
"""What SQLite raises at run time (disk full, I/O error, damage found mid-way, ...)."""


def explain_storage_error(exc: BaseException, path: str | os.PathLike[str] | None = None
                          ) -> str:
    """One line a person can act on for an SQLite error that reached the user."""
    where = f"database {path}" if path else "the database"
    detail = " ".join(str(exc).split()) or exc.__class__.__name__  # one line
    if isinstance(exc, apsw.FullError):
        return (f"{where}: disk full ({detail}); free space and run the command again "
                "(what was stored before is kept)")
    if isinstance(exc, apsw.ReadOnlyError):
        return (f"{where} is read-only ({detail}); writing needs write permission on the file "
                "and its folder")
    if isinstance(exc, (apsw.CorruptError, apsw.NotADBError)):
        return f"{where} is damaged ({detail}); run `memlens doctor` for what to do"
    if isinstance(exc, apsw.BusyError):
        return f"{where} is locked by another process ({detail}); try again"
    if isinstance(exc, (apsw.IOError, apsw.CantOpenError)):
        return f"{where}: I/O error ({detail}); check the disk and the file's permissions"
    return f"{where}: {exc.__class__.__name__}: {detail}"


_vec_path: str | None = None
_vec_lock = threading.Lock()
_VEC_SUFFIXES = ("", ".so", ".dylib", ".dll")


def _sqlite_vec_path() -> str:
    """The sqlite-vec loadable library, found without importing the ``sqlite_vec``
    package (whose ``__init__`` imports numpy): its folder holds ``vec0.<suffix>``.
    Returns the suffix-less path, as ``sqlite_vec.loadable_path()`` does; SQLite
    adds the platform suffix when it loads it."""
    global _vec_path
    with _vec_lock:
        if _vec_path is None:
            import importlib.util

            spec = importlib.util.find_spec("sqlite_vec")
            folders = list(spec.submodule_search_locations or []) if spec else []
            for folder in folders:
                base = os.path.normpath(os.path.join(folder, "vec0"))
                if any(os.path.isfile(base + sfx) for sfx in _VEC_SUFFIXES):
                    _vec_path = base
                    break
            else:
                where = f" (looked in {', '.join(folders)})" if folders else ""
                raise DatabaseError(
                    "the sqlite-vec extension is not installed: no vec0 library from the "
                    f"sqlite-vec package{where}; reinstall memlens (pip install sqlite-vec)"
                )
        return _vec_path


def connect(
    path: str | os.PathLike[str],
    *,
    readonly: bool = False,
    migrate: bool = True,
    create: bool = True,
) -> apsw.Connection:
    """Open a memlens database with sqlite-vec loaded and the pragmas set.

    A database memlens creates is private: the file (and with it its ``-wal`` and
    ``-shm`` files, which SQLite creates with the database file's mode) is ``0600``
    and a folder created for it ``0700``; an existing one this user owns is made private
    on open too (an older memlens left ``0644``). An existing file whose file or folder is not
    writable is opened read-only, without touching its journal mode: reads work and
    writes fail with :class:`DatabaseReadOnly` (see :func:`is_readonly`).

    Args:
        path: Database file; its parent folder is created if needed.
        readonly: Open read-only (the file must exist).
        migrate: Apply forward migrations (in one transaction) if the schema is old.
        create: Create the file (and its folder) when missing; with False a missing
            file is an error instead (read commands never create a database).

    Returns:
        An APSW connection for use by the calling thread only.

    Raises:
        SchemaTooNew: The file was written by a newer memlens.
        DatabaseError: The file is not a usable SQLite database, or is missing
            where it cannot be created.
    """
    if str(path) == ":memory:" or str(path).startswith("file:"):
        return _open_special(str(path), readonly=readonly, migrate=migrate)
    p = Path(path)
    exists = p.exists()
    if not exists and not p.parent.is_dir() and (readonly or not create):
        raise DatabaseError(f"no database at {p}: folder {p.parent} does not exist; check --db,"
                            f" or create it with `memlens ingest --db {p}`")
    if exists and p.is_dir():
        raise DatabaseError(f"{p} is a folder, not a database file; pass another --db")
    if exists and not p.is_file():  # /dev/null, a pipe, a socket: SQLite says "disk I/O error"
        raise DatabaseError(f"{p} is not a regular file, so it cannot be a database; "
                            "pass another --db")
    if not exists and readonly:
        raise DatabaseError(f"no database at {p}; check --db")
    if not exists and not create:  # a read command on a typo'd --db: not an empty memory
        raise DatabaseError(f"no database at {p}: nothing was ingested there; check --db, or"
                            f" create it with `memlens ingest --db {p}`")
    if exists:
        _tighten(p)
    fallback = False
    if not readonly and exists and not _writable(p):
        readonly = fallback = True  # a read-only file or folder: reads still work
    if not readonly and not exists:
        _create_private(p)
    flags = apsw.SQLITE_OPEN_READONLY if readonly else (
        apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    )
    flags |= apsw.SQLITE_OPEN_URI
    name = str(p)
    if readonly and (fallback or not os.access(p.parent, os.W_OK | os.X_OK)) \
            and not Path(f"{p}-wal").exists():
        # A WAL reader needs -wal/-shm files: SQLite cannot create them in a read-only
        # folder, and next to a read-only file it would leave them read-only too (so the
        # owner could not write again after a chmod). With no -wal file everything is in
        # the main file and no writer is active, so it is read as immutable instead.
        name = "file:" + urllib.parse.quote(str(p.absolute())) + "?mode=ro&immutable=1"
    try:
        conn = apsw.Connection(name, flags=flags, vfs=faults.vfs_name())
    except apsw.CantOpenError as exc:
        raise DatabaseError(f"cannot open database {p}: {exc}") from exc
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    try:
        _load_vec(conn)
        if not readonly:
            _enable_wal(conn)
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA temp_store=MEMORY")
        if migrate and not readonly:
            migrate_schema(conn, p)
        else:
            v = check_version(conn, p)
            if fallback and v < SCHEMA_VERSION:
                raise DatabaseReadOnly(
                    f"{p} is read-only and has schema version {v}; this memlens needs "
                    f"{SCHEMA_VERSION}: make the file and its folder writable once so it can "
                    "be upgraded")
    except (apsw.NotADBError, apsw.CorruptError) as exc:
        conn.close()
        raise DatabaseCorrupt(f"{p} is not a usable SQLite database ({exc}); run `memlens "
                              f"doctor --db {p}`, or pass another --db") from exc
    except (apsw.CantOpenError, apsw.ReadOnlyError) as exc:
        conn.close()
        raise DatabaseError(f"cannot open database {p}: {exc}; check the permissions of the "
                            "file and its folder") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _tighten(p: Path) -> None:
    """Make an existing database this user owns private (``0600``-like: the group and
    others lose every bit), with its ``-wal`` and ``-shm`` files: a file an older memlens
    created (or a copy) may be ``0644``, readable by every user of the machine. A file of
    another owner, or one whose mode cannot be changed, is left as it is."""
    for f in (p, Path(f"{p}-wal"), Path(f"{p}-shm")):
        try:
            st = f.stat()
            if st.st_uid == os.getuid() and st.st_mode & 0o077:
                os.chmod(f, stat.S_IMODE(st.st_mode) & 0o700)
        except (OSError, AttributeError):  # missing, or no os.getuid (Windows)
            continue


def _writable(p: Path) -> bool:
    """Whether memlens may write ``p``: the file and its folder (for -wal/-shm)."""
    return os.access(p, os.W_OK) and os.access(p.parent, os.W_OK | os.X_OK)


def _load_vec(conn: apsw.Connection) -> None:
    """Load sqlite-vec into ``conn`` (extension loading is switched off again after), and
    register the functions the schema's generated columns call."""
    conn.enable_load_extension(True)
    conn.load_extension(_sqlite_vec_path())
    conn.enable_load_extension(False)
    for name, fn in _SQL_FUNCTIONS.items():
        conn.create_scalar_function(name, _sql(fn), 1, deterministic=True)


def _sql(fn: Callable[[Any], Any]) -> Callable[..., Any]:
    """``fn`` as an SQL function of one argument."""
    def call(*args: Any) -> Any:
        return fn(args[0])
    return call


def sha256_bytes(hex_digest: str) -> bytes:
    """A SHA-256 hex digest as its 32 bytes (how chunk hashes are stored, schema v8);
    ``memlens_unhex`` in SQL. Anything else is refused rather than stored wrong."""
    try:
        b = bytes.fromhex(hex_digest)
    except (ValueError, TypeError):
        b = b""
    if len(b) != 32 or b.hex() != hex_digest:
        raise ValueError(f"not a lowercase SHA-256 hex digest: {str(hex_digest)[:80]!r}")
    return b


def _sha256_hex(text: str | None) -> str | None:
    import hashlib

    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


# SQL functions of the schema (its generated columns and migrations): every
# connection gets them, or reading a compressed column fails with "unknown function".
_SQL_FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "memlens_inflate": unpack_text, "memlens_deflate": pack_text, "memlens_sha256": _sha256_hex,
    "memlens_deflate_config": pack_config, "memlens_unhex": sha256_bytes}


def _open_special(name: str, *, readonly: bool, migrate: bool) -> apsw.Connection:
    """``:memory:`` or a ``file:`` URI: handed to SQLite as is (no file is made here)."""
    flags = (apsw.SQLITE_OPEN_READONLY if readonly else
             apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE) | apsw.SQLITE_OPEN_URI
    conn = apsw.Connection(name, flags=flags)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    _load_vec(conn)
    conn.execute("PRAGMA foreign_keys=ON")
    if migrate and not readonly:
        migrate_schema(conn, Path(name))
    return conn


def _create_private(p: Path) -> None:
    """Create missing folders ``0700`` and the empty database file ``0600``.

    SQLite gives the -wal and -shm files the mode of the database file, so they
    are private too. An existing file (another process won the race) is kept as is.
    """
    missing: list[Path] = []
    d = p.parent
    while not d.exists():
        missing.append(d)
        d = d.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(folder, 0o700)  # mkdir's mode is filtered by the umask
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                     0o600)
    except FileExistsError:
        return
    except OSError as exc:
        raise DatabaseError(f"cannot create database {p}: {exc.strerror or exc}; check --db "
                            "and the folder's permissions") from exc
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def is_readonly(conn: apsw.Connection) -> bool:
    """Whether the connection can only read (a read-only file or folder)."""
    return bool(conn.readonly("main"))


def secure_vacuum(conn: apsw.Connection) -> bool:
    """Leave no deleted byte behind: zero freed content, checkpoint, VACUUM, truncate the WAL.

    ``secure_delete`` stays on for the rest of the connection. Returns whether the
    WAL could be checkpointed completely and truncated (False while another
    connection still reads an old snapshot; run it again later).
    """
    conn.execute("PRAGMA secure_delete=ON")
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")  # keeps the WAL from growing twice over
    conn.execute("VACUUM")
    conn.set_busy_timeout(CHECKPOINT_WAIT_MS)  # a reader that stays does not block us long
    try:
        res = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    return res is not None and int(res[0]) == 0


def _enable_wal(conn: apsw.Connection) -> None:
    """Switch to WAL, retrying while another process holds the lock.

    Changing the journal mode needs an exclusive lock, and SQLite returns
    ``SQLITE_BUSY`` for it without always calling the busy handler (seen when
    several processes create the same file at once), so retry here within the
    same budget as the busy timeout.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    delay = 0.005
    while True:
        try:
            row = conn.execute("PRAGMA journal_mode").fetchone()
            if row and str(row[0]).lower() == "wal":
                return
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except apsw.BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)


def user_version(conn: apsw.Connection) -> int:
    """Return ``PRAGMA user_version``."""
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0]) if row else 0


def check_version(conn: apsw.Connection, path: Path) -> int:
    """Refuse a database written by a newer memlens."""
    v = user_version(conn)
    if v > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"{path} has schema version {v}, but this memlens understands up to "
            f"{SCHEMA_VERSION}; upgrade memlens or use another --db"
        )
    return v


def migrate_schema(conn: apsw.Connection, path: Path) -> int:
    """Apply pending forward migrations in one immediate transaction."""
    v = check_version(conn, path)
    if v == SCHEMA_VERSION:
        return v
    try:
        with write_txn(conn):
            v = check_version(conn, path)  # another process may have migrated meanwhile
            for target in range(v + 1, SCHEMA_VERSION + 1):
                conn.execute(MIGRATIONS[target - 1])
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    except ValueError as exc:  # a schema SQL function refused a stored value
        raise DatabaseError(f"{path}: the upgrade to schema version {SCHEMA_VERSION} stopped "
                            f"and changed nothing: {exc}") from exc
    return SCHEMA_VERSION


def vec_table_name(space: str) -> str:
    """Name of the vec0 table of a vector space."""
    return f"vec_nodes_{space}"


def vector_spaces(conn: apsw.Connection) -> list[dict[str, Any]]:
    """All vector spaces known to the database."""
    return rows(conn, "SELECT name, fingerprint, dim, metric FROM vector_spaces ORDER BY name")
