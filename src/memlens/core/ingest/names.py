"""The logical path memlens stores for a file: its relative path, or, when a file or
folder name holds a secret, the redacted path tagged with a keyed hash.

A token used as a file name (``notes/ghp_<36>.md``) must not reach the database, yet
the document must still be found again on the next scan, told apart from another
file whose name redacts the same way, and deleted when the file goes. So the stored
path is ``redact_path(rel)`` with ``~`` and 10 hex digits of
HMAC-SHA256(install key, raw relative path) before the last extension
(``notes/[REDACTED:github-token]~3f9a2c1b7d.md``): stable across scans and
processes, unique per raw name, and not a way to confirm a guessed name without
the install key (kept outside the database). Paths without a secret are stored as
they are.

Every place that turns a file on disk into a logical path goes through
:func:`stored_logical_path` (the ingest scan and the watcher's batches), so the
whole pipeline — documents, revisions, change lists, search — sees only the
stored form. The raw path is used only to read the file.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from functools import lru_cache

from memlens.core.redact.user_rules import UserRule, active, using

TAG_HEX = 10
_TAGGED = re.compile(r"~[0-9a-f]{10}(?=\.[A-Za-z0-9]{1,8}$|$)")  # TAG_HEX digits


@lru_cache(maxsize=65536)
def _component(part: str, rules: tuple[UserRule, ...]) -> str:
    """``redact_path`` of one path component with the user ``rules`` installed,
    remembered: folder names repeat in every path under them, and a watcher rescans the
    same names again and again."""
    from memlens.core.redact.engine import redact_path  # the rules load on first use only

    with using(rules):
        return redact_path(part)


def _redacted(rel: str) -> str:
    """``redact_path(rel)`` (which works one component at a time), component by
    component through the cache."""
    rules = active()
    return "/".join(_component(p, rules) for p in rel.split("/"))


def stored_folder(rel: str) -> str:
    """The stored form of a folder's relative path: the prefix (before ``/``) of the
    stored paths of the files in it (folders carry no tag, only their files do)."""
    return _redacted(rel)


def name_tag(rel: str, key: bytes) -> str:
    """The keyed tag of a raw relative path (``TAG_HEX`` hex digits)."""
    mac = hmac.new(key, b"memlens-path\x00" + rel.encode("utf-8", "surrogateescape"),
                   hashlib.sha256)
    return mac.hexdigest()[:TAG_HEX]


def stored_logical_path(rel: str, key: bytes) -> str:
    """The logical path stored for the file at ``rel`` (``/``-separated, relative to
    its memory folder).

    Args:
        rel: The raw relative path, as read from the folder.
        key: The per-install key (:func:`memlens.core.ingest.installkey.load_install_key`).

    Returns:
        ``rel`` when no part of it holds a secret; otherwise the redacted path with
        ``~<tag>`` before the last component's extension.
    """
    red = _redacted(rel)
    if red == rel:
        return rel
    head, sep, last = red.rpartition("/")
    stem, dot, ext = last.rpartition(".")
    if not stem or not ext.isalnum() or len(ext) > 8:
        stem, dot, ext = last, "", ""
    return f"{head}{sep}{stem}~{name_tag(rel, key)}{dot}{ext}"


def is_tagged(logical_path: str) -> bool:
    """True for a stored path made by :func:`stored_logical_path` from a secret name."""
    return "[REDACTED:" in logical_path and _TAGGED.search(logical_path) is not None


def needs_new_name(logical_path: str, key: bytes) -> str | None:
    """For a logical path stored before names were redacted: its stored form now, or
    None when it is already what :func:`stored_logical_path` makes."""
    if is_tagged(logical_path):
        return None
    new = stored_logical_path(logical_path, key)
    return new if new != logical_path else None
