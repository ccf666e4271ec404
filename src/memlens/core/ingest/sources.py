"""Finding memory folders and reading Markdown files from them safely.

A *memory root* is one folder of Markdown files that belongs to one repository
(a Claude project slug). Claude Code keeps them at
``~/.claude/projects/<slug>/memory/``; the slug is the project path with every
character outside ``[A-Za-z0-9]`` replaced by ``-`` (:func:`claude_slug`). The
repository identity is derived only from the folder layout (or given explicitly)
and never from which files happen to exist.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from memlens.core.search.rows import claude_slug as claude_slug

MARKDOWN_SUFFIXES = (".md", ".markdown")
DEFAULT_MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_FOLDER_DEPTH = 32
"""Folders nested deeper than this under a memory root are skipped with a warning (memory
folders are flat; a runaway tree must not make paths too long or the walk too slow)."""


class SourceError(Exception):
    """A per-file problem; the message says what is wrong and what to do."""


class UsageError(Exception):
    """The paths given on the command line cannot be used."""


@dataclass(frozen=True)
class MemoryRoot:
    """One memory folder and the repository it belongs to."""

    repository: str
    path: Path


@dataclass(frozen=True)
class SourceFile:
    """A Markdown file found under a memory root."""

    root: MemoryRoot
    logical_path: str
    abs_path: Path


def is_ignored_name(name: str) -> bool:
    """True for editor side files and hidden files that are never memory.

    Covers Emacs backups (``file~``) and lock/autosave files (``#file#``,
    ``.#file``), vim swap files (``.file.swp``, ``4913``), and any hidden file.
    """
    if name.startswith(".") or name.endswith("~"):
        return True
    if name.startswith("#") and name.endswith("#"):
        return True
    if name == "4913":  # vim's write-permission probe file
        return True
    return False


def is_markdown_name(name: str) -> bool:
    """True when a file name is a Markdown memory file memlens should ingest."""
    if is_ignored_name(name):
        return False
    return name.lower().endswith(MARKDOWN_SUFFIXES)


def claude_projects_dir(home: Path | None = None) -> Path:
    """``~/.claude/projects`` (honours ``CLAUDE_CONFIG_DIR``)."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    base = Path(env).expanduser() if env else (home or Path.home()) / ".claude"
    return base / "projects"


def discover_default_roots(home: Path | None = None) -> list[MemoryRoot]:
    """Discover Claude memory folders of this user.

    Looks at ``~/.claude/projects/*/memory`` and the ``autoMemoryDirectory``
    setting of ``~/.claude/settings.json`` when present.
    """
    roots: list[MemoryRoot] = []
    projects = claude_projects_dir(home)
    if projects.is_dir():
        roots.extend(_project_roots(projects))
    settings = (home or Path.home()) / ".claude" / "settings.json"
    try:
        data = json.loads(settings.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    custom = data.get("autoMemoryDirectory") if isinstance(data, dict) else None
    if isinstance(custom, str) and custom:
        p = Path(custom).expanduser()
        if p.is_dir():
            for r in roots_for_path(p):
                if r not in roots:
                    roots.append(r)
    return roots


def _project_roots(projects: Path) -> list[MemoryRoot]:
    out: list[MemoryRoot] = []
    try:
        children = sorted(projects.iterdir())
    except OSError:
        return out
    for child in children:
        mem = child / "memory"
        if mem.is_dir() and not is_ignored_name(child.name):
            out.append(MemoryRoot(repository=child.name, path=mem.absolute()))
    return out


def roots_for_path(path: Path, repository: str | None = None) -> list[MemoryRoot]:
    """Turn a user-given path into memory roots.

    * a folder of Claude project folders (``<slug>/memory/``) gives one root each;
    * a project folder (containing ``memory/``) gives its memory folder;
    * any other folder is itself a memory folder: repository = the parent's name
      when the folder is called ``memory``, else the folder's own name.

    Raises:
        UsageError: the path does not exist or is not a folder, is the filesystem root
            or the home folder without project memory in it (it would be walked whole),
            or ``repository`` was given for a folder of several projects.
    """
    p = path.expanduser()
    if not p.exists():
        raise UsageError(f"{path}: no such folder")
    if not p.is_dir():
        raise UsageError(f"{path}: not a folder (give a memory folder or a projects folder)")
    p = p.absolute()
    if (p / "memory").is_dir() and p.name != "memory":
        return [MemoryRoot(repository=repository or p.name, path=p / "memory")]
    projects = _project_roots(p)
    if projects:
        if repository:
            raise UsageError(
                f"{path} holds {len(projects)} projects; --repository only applies to one "
                "memory folder"
            )
        return projects
    if p.name == "memory":
        return [MemoryRoot(repository=repository or p.parent.name, path=p)]
    if p.parent == p or p == Path.home().absolute():  # `ingest /` walked every disk (issue 42)
        where = "the filesystem root" if p.parent == p else "your home folder"
        raise UsageError(
            f"{path} is {where}, not a memory folder, and holds no project memory folders; "
            "give a memory folder, a project folder holding memory/, or a folder of projects "
            "such as ~/.claude/projects")
    return [MemoryRoot(repository=repository or p.name, path=p)]


def _skip_deep(base: Path, d: Path, dirnames: list[str], max_depth: int,
               warnings: list[str] | None) -> None:
    """One warning per folder too deep to enter."""
    for name in dirnames:
        rel_dir = (d / name).relative_to(base).as_posix()
        shown = rel_dir.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        if len(shown) > 120:
            shown = shown[:50] + "/…/" + shown[-50:]
        if warnings is not None:
            warnings.append(f"{shown}: folder nested more than {max_depth} levels deep;"
                            " skipped with everything in it")


def _file_problem(full: Path, rel: str, real_base: Path) -> tuple[str, str] | None:
    """Why a Markdown file cannot be used, as ``(shown path, error)``; None if it can."""
    if "\n" in rel or "\r" in rel:
        return (rel.replace("\n", "\\n").replace("\r", "\\r"),
                "file name contains a line break; rename the file")
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return (rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace"),
                "file name is not valid UTF-8; rename the file")
    if full.is_symlink():
        try:
            target = full.resolve(strict=True)
        except (OSError, RuntimeError):
            return (rel, "broken or looping symlink")
        if not target.is_relative_to(real_base):
            return (rel, "symlink points outside the memory folder; not followed")
    return None


def scan_root(root: MemoryRoot, warnings: list[str] | None = None,
              max_depth: int = MAX_FOLDER_DEPTH) -> tuple[list[SourceFile], list[tuple[str, str]]]:
    """List the Markdown files under a root, recursively.

    Symlinked folders are not followed (no loops); symlinked files are accepted
    only when they resolve inside the root. Folders more than ``max_depth`` levels
    below the root are not entered; each one skipped adds a line to ``warnings``.
    Returns the files and a list of ``(logical_path, error)`` for entries that
    cannot be used.
    """
    files: list[SourceFile] = []
    errors: list[tuple[str, str]] = []
    base = root.path
    try:
        real_base = base.resolve(strict=True)
    except OSError as exc:
        raise SourceError(f"{base}: cannot open memory folder ({exc.strerror})") from exc

    def onerror(exc: OSError) -> None:
        where = Path(exc.filename) if exc.filename else base
        try:
            rel = where.relative_to(base).as_posix()
        except ValueError:
            rel = str(where)
        errors.append((rel or ".", f"cannot list folder: {exc.strerror or exc}"))

    for dirpath, dirnames, filenames in os.walk(base, onerror=onerror, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not is_ignored_name(d))
        d = Path(dirpath)
        if dirnames and len(d.relative_to(base).parts) >= max_depth:
            _skip_deep(base, d, dirnames, max_depth, warnings)
            dirnames[:] = []
        for name in sorted(filenames):
            if not is_markdown_name(name):
                continue
            full = d / name
            rel = full.relative_to(base).as_posix()
            problem = _file_problem(full, rel, real_base)
            if problem is not None:
                errors.append(problem)
                continue
            files.append(SourceFile(root=root, logical_path=rel, abs_path=full))
    return files, errors


@dataclass(frozen=True)
class FileStat:
    """The part of ``stat`` the stat fast path compares."""

    mtime_ns: int
    size: int


def stat_file(path: Path) -> FileStat:
    """Stat a file, following a symlink; raise SourceError with a clear message."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise SourceError("file vanished before it could be read") from None
    except PermissionError:
        raise SourceError("permission denied; check the file's permissions") from None
    except OSError as exc:
        raise SourceError(f"cannot stat file: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise SourceError("not a regular file (FIFO, socket or device); skipped")
    return FileStat(mtime_ns=st.st_mtime_ns, size=st.st_size)


def read_file(path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> tuple[bytes, FileStat]:
    """Read a regular file without blocking on FIFOs and within a size limit.

    Returns the bytes and the stat taken from the open file descriptor, so the
    stat describes exactly what was read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise SourceError("file vanished before it could be read") from None
    except PermissionError:
        raise SourceError("permission denied; check the file's permissions") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SourceError("symlink loop") from None
        raise SourceError(f"cannot open file: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SourceError("not a regular file (FIFO, socket or device); skipped")
        if st.st_size > max_bytes:
            raise SourceError(
                f"file is {st.st_size:,} bytes, over the {max_bytes:,}-byte limit; "
                "memory files this large are not memory (raise the limit with "
                "[limits] max_file_bytes or MEMLENS_MAX_FILE_BYTES if you mean it)"
            )
        chunks: list[bytes] = []
        total = 0
        while True:
            try:
                b = os.read(fd, 1 << 20)
            except OSError as exc:
                raise SourceError(f"read failed: {exc.strerror or exc}") from None
            if not b:
                break
            total += len(b)
            if total > max_bytes:
                raise SourceError(
                    f"file grew past the {max_bytes:,}-byte limit while being read"
                )
            chunks.append(b)
        st2 = os.fstat(fd)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if st2.st_size != len(data) or st2.st_mtime_ns != st.st_mtime_ns:
        raise SourceError("file changed while being read; it will be read again")
    return data, FileStat(mtime_ns=st2.st_mtime_ns, size=len(data))


def decode_markdown(data: bytes) -> str:
    """Decode file bytes as UTF-8 (a UTF-8 BOM is dropped).

    Raises:
        SourceError: binary content, UTF-16/32, or invalid UTF-8 (with the offset).
    """
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        raise SourceError("file is UTF-32 encoded; save it as UTF-8")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SourceError("file is UTF-16 encoded; save it as UTF-8")
    if b"\x00" in data:
        if _looks_utf16(data):
            raise SourceError("file looks UTF-16 encoded (no byte-order mark); save it as UTF-8")
        pos = data.index(b"\x00")
        raise SourceError(f"file looks binary (NUL byte at offset {pos}); skipped")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"file is not valid UTF-8 (bad byte at offset {exc.start}); save it as UTF-8"
        ) from None


def _looks_utf16(data: bytes) -> bool:
    """NUL in (nearly) every other byte and almost never in the others: UTF-16 text."""
    sample = data[:4096]
    half = len(sample) // 2
    if half < 2:
        return False
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    return max(even, odd) >= 0.4 * half and min(even, odd) <= 0.05 * half
