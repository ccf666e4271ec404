"""Checks for ``MEMORY.md`` index files.

Claude Code loads only the first 200 lines (and at most about 25 KB) of
``MEMORY.md`` into context; anything after is invisible to it. The index should
link every topic file and link only files that exist.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from memlens.core.chunking.links import links as links

MAX_LINES = 200
MAX_BYTES = 25 * 1024



@dataclass(frozen=True)
class IndexWarning:
    """One problem with an index file."""

    kind: str  # too_long | too_large | broken_link | unlinked_topic
    message: str
    line: int | None = None
    target: str | None = None

    def as_json(self) -> dict[str, object]:
        """JSON-ready dict."""
        return asdict(self)


def check_index(index_path: str, text: str, live_paths: Iterable[str]) -> list[IndexWarning]:
    """Warnings for one index file.

    Args:
        index_path: Logical path of the index (e.g. ``MEMORY.md``).
        text: Its stored content.
        live_paths: Logical paths of the live documents of the same repository.
    """
    warnings: list[IndexWarning] = []
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        warnings.append(IndexWarning(
            "too_long", f"{len(lines)} lines; Claude stops loading after line {MAX_LINES}",
            line=MAX_LINES + 1))
    size = len(text.encode("utf-8"))
    if size > MAX_BYTES:
        cut = 0
        acc = 0
        for i, ln in enumerate(text.splitlines(keepends=True), 1):
            acc += len(ln.encode("utf-8"))
            if acc > MAX_BYTES:
                cut = i
                break
        warnings.append(IndexWarning(
            "too_large", f"{size:,} bytes; Claude stops loading at {MAX_BYTES:,} bytes "
            f"(line {cut})", line=cut))
    live = set(live_paths)
    base = posixpath.dirname(index_path)
    linked: set[str] = set()
    for line_no, target in links(text):
        norm = posixpath.normpath(posixpath.join(base, target))
        linked.add(norm)
        if norm.lower().endswith((".md", ".markdown")) and norm not in live:
            warnings.append(IndexWarning("broken_link", f"links to {target}, which does not exist",
                                         line=line_no, target=target))
    for p in sorted(live):
        if p == index_path or posixpath.basename(p) == posixpath.basename(index_path):
            continue
        if posixpath.dirname(p) != base and not p.startswith(base):
            continue
        if p not in linked:
            warnings.append(IndexWarning("unlinked_topic", f"{p} is not linked from {index_path}",
                                         target=p))
    return warnings
