"""The document tree's rows: what each node holds (a repository, a folder, a document,
the "… N more" row) and how a row's label reads.

The widget (:class:`~memlens.tui.widgets.doc_tree.DocumentTree`) adds the nodes a page
at a time and renders each label from its node's data on demand; the labels are built
here from plain values (status, ⚠, width), so they are the same wherever they are drawn.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich.style import Style
from rich.text import Text

from memlens.core.types import DocumentSummary
from memlens.tui.widgets.fmt import WARNING_GLYPH, glyph, human_size

TOGGLE = Style.from_meta({"toggle": True})
"""The style of a group row's expand icon (a click on it toggles the node)."""

StyleOf = Callable[[str], Style]
"""The tree's style for a component name (``ready``, ``meta``, ``warning``, ...)."""


@dataclass
class RepoData:
    """A repository node; ``docs`` are all of its (listed) documents."""

    repository: str
    docs: list[DocumentSummary]
    flat: bool = False  # filter results: documents directly under the repository


@dataclass
class DirData:
    """A folder inside a repository's memory folder."""

    repository: str
    prefix: str  # "notes/" style, always ending in "/"
    docs: list[DocumentSummary]


@dataclass
class DocData:
    """A document row."""

    summary: DocumentSummary
    flat: bool = False


@dataclass
class MoreData:
    """The "… N more" row holding the not-yet-added children of its parent."""

    items: list[Any] = field(default_factory=list)


def children_of(docs: list[DocumentSummary], prefix: str, repository: str,
              flat: bool) -> list[Any]:
    """Immediate children (folders first, then files) of ``prefix`` among ``docs``."""
    if flat:
        return [DocData(d, flat=True) for d in docs]
    dirs: dict[str, list[DocumentSummary]] = {}
    files: list[DocData] = []
    for d in docs:
        rest = d.path[len(prefix):]
        if "/" in rest:
            head = rest.split("/", 1)[0]
            dirs.setdefault(head, []).append(d)
        else:
            files.append(DocData(d))
    out: list[Any] = [DirData(repository, f"{prefix}{name}/", sub)
                      for name, sub in sorted(dirs.items())]
    # MEMORY.md (the index) first, then by path.
    files.sort(key=lambda f: (f.summary.path != f"{prefix}MEMORY.md", f.summary.path))
    out.extend(files)
    return out



def doc_label(data: DocData, status: str, warn: bool, avail: int, *, narrow: bool,
              style: StyleOf) -> Text:
    """A document row: status glyph, name, chunk count, size (left out when ``narrow``)
    and ⚠, padded to ``avail`` cells."""
    d = data.summary
    name = d.path if data.flat else posixpath.basename(d.path)
    meta = f" {d.chunk_count:>3}ch {human_size(d.size):>8}"
    tail = f" {WARNING_GLYPH}" if warn else "  "
    room = avail - 2 - len(meta) - len(tail)
    if narrow:  # a narrow sidebar: the names matter more than sizes
        meta = f" {d.chunk_count:>3}ch"
        room = avail - 2 - len(meta) - len(tail)
    if len(name) > room:
        name = name[: max(1, room - 1)] + "…"
    # No run starts with blanks (some SVG renderers drop them: "scratch.md0ch"):
    # the padding, and the blanks that right-align the counts, end the name's run.
    body = meta.lstrip(" ")
    pad = " " * (max(0, room - len(name)) + len(meta) - len(body))
    text = Text()
    text.append(f"{glyph(status)} ", style=style(status))
    if d.tombstoned:  # struck name; the padding is its own (unstruck, italic) run
        text.append(name, style=style("tombstoned"))
        text.append(pad, style=Style(italic=True))
    else:
        text.append(name + pad)
    text.append(body, style=style("meta"))
    if warn:
        text.append(" ", style=style("meta"))
        text.append(WARNING_GLYPH, style=style("warning"))
    else:
        text.append(tail, style=style("meta"))
    return text


def group_label(data: RepoData | DirData, icon: str, counts: dict[str, int], warn: bool,
                avail: int, *, style: StyleOf) -> Text:
    """A repository or folder row: expand icon, name, the counts of documents that are
    not ready, the number of documents and ⚠, padded to ``avail`` cells."""
    name = data.repository if isinstance(data, RepoData) else \
        posixpath.basename(data.prefix.rstrip("/")) + "/"
    bad = [(s, counts[s]) for s in ("failed", "stale", "processing", "pending") if counts.get(s)]
    badge = "".join(f" {glyph(s)}{n}" for s, n in bad)
    n = len(data.docs)
    meta = f" {n:>4} doc{'s' if n != 1 else ' '}"
    tail = f" {WARNING_GLYPH}" if warn else "  "
    room = avail - len(icon) - len(meta) - len(badge) - len(tail)
    if len(name) > room:
        name = "…" + name[-max(1, room - 1):]
    text = Text()
    text.append(icon, style=TOGGLE)
    # Blanks end the run before them (see doc_label), never start one.
    text.append(name + " " * max(0, room - len(name)) + " ",
                style=style("repo") if isinstance(data, RepoData) else Style())
    for s, n in bad:
        text.append(f"{glyph(s)}{n} ", style=style(s))
    body = meta.lstrip(" ")
    text.append(" " * (len(meta) - len(body) - 1), style=Style(italic=True))
    text.append(body + (" " if warn else "  "), style=style("meta"))
    if warn:
        text.append(WARNING_GLYPH, style=style("warning"))
    return text


def disk_rows(unreadable: dict[tuple[str, str], str], incoming: set[tuple[str, str]],
              ids: dict[tuple[str, str], int], docs: list[DocumentSummary],
              filter_text: str) -> list[DocumentSummary]:
    """Rows for files on disk that have no stored document (under a filter: those whose
    path contains the filter text): ``✗`` for a file that could not be read, ``⟳`` for a
    file the watcher saw and is reading (issue 42: a big new file is listed at once).
    ``ids`` gives each (repository, path) its stable negative id."""
    if not unreadable and not incoming:  # the usual case: no work on every reload
        return []
    have = {(d.repository, d.path) for d in docs}
    needle = filter_text.strip().lower()
    out = []
    for key in sorted(set(unreadable) | incoming):
        repo, path = key
        if key in have or (needle and needle not in f"{repo}/{path}".lower()):
            continue
        reason = unreadable.get(key)
        status = "failed" if reason is not None else "processing"
        out.append(DocumentSummary(
            id=ids[key], repository=repo, path=path, status=status,
            projection_status=status, tombstoned=False, current_revision_id=None,
            active_revision_id=None, chunk_count=0, size=0, name=None, doc_type=None,
            error=reason))
    return out
