"""Fault-injection points for reliability tests.

Production code calls :func:`checkpoint` at every write step of ingest and
projection. Normally that is a no-op; a test installs a hook that raises at the
Nth step to prove that each operation leaves the database exactly before or
after. :func:`set_vfs` lets a test route new connections through an APSW VFS
shim that fails file I/O.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

_local = threading.local()
_global_hook: Callable[[str], None] | None = None
_vfs: str | None = None


class InjectedFault(Exception):
    """Raised by test hooks at a chosen checkpoint."""


def checkpoint(step: str) -> None:
    """Mark a write step; a test hook may raise here."""
    hook = getattr(_local, "hook", None) or _global_hook
    if hook is not None:
        hook(step)


def set_hook(hook: Callable[[str], None] | None, *, thread_only: bool = False) -> None:
    """Install (or clear, with None) the checkpoint hook."""
    global _global_hook
    if thread_only:
        _local.hook = hook
    else:
        _global_hook = hook


def set_vfs(name: str | None) -> None:
    """Open future connections through the named VFS (None: the default VFS)."""
    global _vfs
    _vfs = name


def vfs_name() -> str | None:
    """The VFS new connections should use (None: SQLite's default)."""
    return _vfs
