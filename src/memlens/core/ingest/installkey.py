"""The per-install secret key behind memlens's keyed hashes.

memlens stores a hash of each raw source file so it can tell when a file
changed. A plain SHA-256 of the raw bytes would let anyone holding only the
database confirm a guessed secret offline (hash the file with the guess, compare).
So the raw hash is an HMAC-SHA256 under a random key that lives *outside* the
database: a stolen database alone confirms nothing.

Key file:

* Location: ``$MEMLENS_INSTALL_KEY_FILE`` if set, else
  ``platformdirs.user_config_path("memlens") / "install.key"`` (for example
  ``~/.config/memlens/install.key`` on Linux). Never inside the database.
* Content: exactly 32 random bytes (`secrets.token_bytes`), nothing else.
* Creation: on first use, race-safe. The key is written and fsynced to a private
  temporary file opened with ``O_CREAT | O_EXCL`` and mode 0600, then published
  with ``link()``, which fails if the key already exists. Two processes starting
  at once therefore agree on one key, and no reader ever sees a half-written
  file. (On file systems without hard links, the key file itself is created with
  ``O_CREAT | O_EXCL`` and readers wait briefly for its 32 bytes.)
* Permissions (POSIX): created 0600 in a directory created 0700. An existing key
  file that group or others can read is *fixed*, not refused: memlens resets it
  to 0600 and emits an `InstallKeyPermissionWarning`. Refusing would stop the
  watcher and the TUI over a benign backup restore, and tightening the mode is
  always safe. A key file owned by another user, a file that is not a regular
  file, or one whose size is not 32 bytes is refused with `InstallKeyError`,
  whose message says what to do.

Deleting the key file makes memlens create a new key; keyed hashes stored under
the old key then no longer compare equal to new ones.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import os
import secrets
import stat
import time
import warnings
from pathlib import Path

import platformdirs

__all__ = [
    "ENV_VAR",
    "KEY_SIZE",
    "InstallKeyError",
    "InstallKeyPermissionWarning",
    "default_key_path",
    "keyed_hash",
    "load_install_key",
]

#: Size of the install key, in bytes.
KEY_SIZE = 32
#: Environment variable that overrides the key file location.
ENV_VAR = "MEMLENS_INSTALL_KEY_FILE"

_POSIX = os.name == "posix"
# How long a reader waits for a concurrent creator (no-hard-link fallback only).
_SHORT_FILE_WAIT_S = 2.0


class InstallKeyError(RuntimeError):
    """The install key file exists but cannot be used; the message says why."""


class InstallKeyPermissionWarning(UserWarning):
    """The install key file was readable by others and has been reset to 0600."""


def default_key_path() -> Path:
    """Where the install key lives unless a path is passed explicitly.

    Returns:
        ``$MEMLENS_INSTALL_KEY_FILE`` if set (``~`` expanded), else
        ``<user config dir>/memlens/install.key``.
    """
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    return platformdirs.user_config_path("memlens") / "install.key"


def load_install_key(path: Path | None = None) -> bytes:
    """Return the install key, creating it on first use.

    Args:
        path: Key file to use; default `default_key_path`.

    Returns:
        The 32-byte key.

    Raises:
        InstallKeyError: The key file is unusable (wrong size, not a regular
            file, owned by another user, unreadable) or cannot be created.
    """
    p = Path(path).expanduser() if path is not None else default_key_path()
    for _ in range(5):
        key = _read_key(p)
        if key is not None:
            return key
        key = _create_key(p)
        if key is not None:
            return key
        # Lost a creation race: the winner's key is in place now; read it.
    raise InstallKeyError(f"could not create or read the install key {p}")


def keyed_hash(data: bytes, key: bytes) -> str:
    """HMAC-SHA256 of ``data`` under ``key``.

    Args:
        data: The bytes to hash (for example a raw source file).
        key: The install key from `load_install_key`.

    Returns:
        64 lowercase hex digits.

    Raises:
        ValueError: ``key`` is empty.
    """
    if not key:
        raise ValueError("keyed_hash needs a non-empty key")
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def _read_key(p: Path) -> bytes | None:
    """Read and validate an existing key file; ``None`` if there is none."""
    deadline = time.monotonic() + _SHORT_FILE_WAIT_S
    while True:
        try:
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            if p.is_symlink():
                raise InstallKeyError(
                    f"install key {p} is a symbolic link to a missing file; "
                    f"remove the link or point {ENV_VAR} at a real file"
                ) from None
            return None
        except OSError as exc:
            raise InstallKeyError(
                f"cannot read the install key {p}: {exc.strerror}; check its permissions"
            ) from exc
        try:
            st = os.fstat(fd)
            _check_file(p, st, fd)
            data = os.read(fd, KEY_SIZE + 1)
        finally:
            os.close(fd)
        if len(data) == KEY_SIZE:
            return data
        if len(data) < KEY_SIZE and time.monotonic() < deadline and _is_fresh(st):
            time.sleep(0.02)  # a creator without hard links may still be writing
            continue
        raise InstallKeyError(
            f"install key {p} has {st.st_size} bytes, expected {KEY_SIZE}: it is damaged or "
            f"not a memlens key. Move it aside and memlens will create a new key "
            f"(source hashes stored under the old key will no longer match)."
        )


def _is_fresh(st: os.stat_result) -> bool:
    return abs(time.time() - st.st_mtime) < 10


def _check_file(p: Path, st: os.stat_result, fd: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise InstallKeyError(f"install key {p} is not a regular file; remove it or set {ENV_VAR}")
    if not _POSIX:
        return
    if st.st_uid != os.geteuid():
        raise InstallKeyError(
            f"install key {p} belongs to user id {st.st_uid}, not to you ({os.geteuid()}); "
            f"memlens will not use a key another user controls. Remove it or set {ENV_VAR}."
        )
    loose = stat.S_IMODE(st.st_mode) & 0o077
    if loose:
        try:
            os.fchmod(fd, 0o600)
        except OSError as exc:
            raise InstallKeyError(
                f"install key {p} is readable by other users (mode "
                f"{stat.S_IMODE(st.st_mode):04o}) and could not be fixed: {exc.strerror}; "
                f"run: chmod 600 '{p}'"
            ) from exc
        warnings.warn(
            f"install key {p} was accessible to other users (mode "
            f"{stat.S_IMODE(st.st_mode):04o}); reset to 0600. If others could read it, "
            f"delete it to rotate the key.",
            InstallKeyPermissionWarning,
            stacklevel=4,
        )


def _create_key(p: Path) -> bytes | None:
    """Create the key file; ``None`` if another process created it first."""
    try:
        p.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise InstallKeyError(
            f"cannot create the folder for the install key {p.parent}: {exc.strerror}"
        ) from exc
    key = secrets.token_bytes(KEY_SIZE)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    try:
        _write_new(tmp, key)
    except OSError as exc:
        raise InstallKeyError(f"cannot write the install key in {p.parent}: {exc.strerror}") from exc
    try:
        os.link(tmp, p)
    except FileExistsError:
        return None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK,
                             errno.ENOSYS, errno.EACCES):
            raise InstallKeyError(f"cannot create the install key {p}: {exc.strerror}") from exc
        return _create_without_link(p, key)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    _fsync_dir(p.parent)
    return key


def _create_without_link(p: Path, key: bytes) -> bytes | None:
    """Fallback for file systems without hard links: O_EXCL on the key itself."""
    try:
        _write_new(p, key)
    except FileExistsError:
        return None
    except OSError as exc:
        raise InstallKeyError(f"cannot create the install key {p}: {exc.strerror}") from exc
    _fsync_dir(p.parent)
    return key


def _write_new(p: Path, data: bytes) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(p, flags, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(p)
        except OSError:
            pass
        raise
    os.close(fd)


def _fsync_dir(d: Path) -> None:
    if not _POSIX:
        return
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
