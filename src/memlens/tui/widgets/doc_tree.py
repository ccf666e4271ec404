"""The document tree: repositories, then folders, then documents.

It stays fast with 10,000 documents because nothing is built up front:
repository nodes are added collapsed and their children are created when a
repository (or folder) is expanded, one page of :data:`PAGE` rows at a time
with a "… more" row for the rest. Row labels are rendered from the node data
on demand, so a status change only refreshes one line. What a node holds and how
its label reads are in :mod:`memlens.tui.widgets.tree_rows`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.widget import PseudoClasses, Widget
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from memlens.core.types import DocumentSummary, IndexWarning
from memlens.tui.widgets.frame_style import FrameMemo
from memlens.tui.widgets.tree_rows import (
    DirData,
    DocData,
    MoreData,
    RepoData,
    children_of,
    disk_rows,
    doc_label,
    group_label,
)

PAGE = 250
"""Children added per expansion step (the rest sit behind a "more" row)."""

NARROW = 44
"""Below this width the document rows leave out the size (the title shows it)."""

_STATUS_CLASSES = ("ready", "pending", "processing", "failed", "stale", "tombstoned")


class DocumentTree(FrameMemo, Tree[Any]):
    """Documents grouped by repository and folder, with status glyphs and sizes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right", "expand_cursor", "Expand", show=False),
        Binding("left", "collapse_cursor", "Collapse", show=False),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_home", "First row", show=False),
        Binding("G", "scroll_end", "Last row", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *Tree.COMPONENT_CLASSES,
        *(f"doc-tree--{s}" for s in _STATUS_CLASSES),
        "doc-tree--meta",
        "doc-tree--warning",
        "doc-tree--repo",
        "doc-tree--more",
    }

    DEFAULT_CSS = """
    DocumentTree {
        & > .doc-tree--ready { color: $text-success; }
        & > .doc-tree--pending { color: $text-warning; }
        & > .doc-tree--processing { color: $text-accent; text-style: bold; }
        & > .doc-tree--failed { color: $text-error; text-style: bold; }
        & > .doc-tree--stale { color: $text-warning; text-style: bold; }
        & > .doc-tree--tombstoned { color: $text-muted; text-style: strike; }
        & > .doc-tree--meta { color: $text-muted; }
        & > .doc-tree--warning { color: $text-warning; text-style: bold; }
        & > .doc-tree--repo { text-style: bold; }
        & > .doc-tree--more { color: $text-muted; text-style: italic; }

        /* The focus shows in the border (app.tcss) and the cursor row; Tree's focus
           tint and brighter guides would change every cell of every row, and every row
           would be drawn again at each focus move (see notify_style_update). */
        &:focus {
            background-tint: $foreground 0%;
            & > .tree--guides { color: $surface-lighten-2; }
            & > .tree--guides-hover { color: $surface-lighten-2; }
        }
        &:focus:light {
            & > .tree--guides { color: $surface-darken-1; }
            & > .tree--guides-hover { color: $block-cursor-background; }
        }
    }
    """

    # The component classes drawn differently with the focus: the cursor row and the
    # guides below the cursor node (Tree draws them "selected" only while focused). The
    # others, with the base style, are how rows look (see render_lines).
    _FOCUS_COMPONENTS = frozenset({"tree--cursor", "tree--guides-selected"})
    _LOOK_COMPONENTS = tuple(sorted(COMPONENT_CLASSES - _FOCUS_COMPONENTS))

    class DocumentHighlighted(Message):
        """The cursor moved onto a document row (``None``: onto something else)."""

        def __init__(self, doc_id: int | None) -> None:
            super().__init__()
            self.doc_id = doc_id

    # Adding nodes in a batch: Tree invalidates its caches and asks for a layout at every
    # add (~300 repositories and a 250-row page at 10,000 documents: a third of the
    # listing's time on the event loop); inside :meth:`_batch` that happens once. Class
    # defaults: Tree's own __init__ already invalidates.
    _batching = False
    _batch_dirty = False
    _label_width: int | None = None  # get_label_width during one _build
    _look: tuple[Any, ...] | None = None  # how rows look, but for the focus (render_lines)
    _restyled = True  # a style update since the last frame (render_lines compares looks)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("documents", **kwargs)
        self.show_root = False
        self.guide_depth = 2
        self.auto_expand = True
        self._docs: dict[int, DocumentSummary] = {}
        self._doc_nodes: dict[int, TreeNode[Any]] = {}
        self._warnings: dict[int, list[IndexWarning]] = {}
        self._repo_nodes: dict[str, TreeNode[Any]] = {}
        self._processing: set[int] = set()
        self._version = 0  # bumped on every row change (group counts are cached per version)
        self._count_cache: dict[int, tuple[int, dict[str, int], bool]] = {}
        self.filter_text = ""
        # Files on disk that could not be read: (repository, path) -> reason. A stored
        # document keeps its last good revision but shows ✗; a file never stored gets a
        # row of its own with a stable negative id (see :meth:`mark_unreadable`).
        self._unreadable: dict[tuple[str, str], str] = {}
        self._unreadable_ids: dict[tuple[str, str], int] = {}
        # New files the watcher saw and is reading: a ``⟳`` row until they are stored.
        self._incoming: set[tuple[str, str]] = set()

    # -- data ---------------------------------------------------------------
    @property
    def document_count(self) -> int:
        """Documents currently listed."""
        return len(self._docs)

    def summary(self, doc_id: int) -> DocumentSummary | None:
        """The listed summary of a document."""
        return self._docs.get(doc_id)

    def warnings(self, doc_id: int) -> list[IndexWarning]:
        """Index warnings of a listed document."""
        return self._warnings.get(doc_id, [])

    def load(self, docs: list[DocumentSummary], warnings: dict[int, list[IndexWarning]], *,
             filter_text: str = "", keep: int | None = None) -> None:
        """Replace the whole listing.

        Args:
            docs: Documents, grouped by repository (filter results: best first).
            warnings: Index warnings by document id (the ⚠ marker).
            filter_text: The active fuzzy filter; results are listed flat per repository.
            keep: A document to put the cursor back on, if still listed.
        """
        self.filter_text = filter_text
        flat = bool(filter_text)
        docs = docs + disk_rows(self._unreadable, self._incoming, self._unreadable_ids, docs,
                                filter_text)
        self._docs = {d.id: d for d in docs}
        self._warnings = dict(warnings)
        self._doc_nodes = {}
        self._repo_nodes = {}
        self._processing &= set(self._docs)
        self._version += 1
        self._count_cache = {}
        by_repo: dict[str, list[DocumentSummary]] = {}
        for d in docs:
            by_repo.setdefault(d.repository, []).append(d)
        self.clear()
        with self._batch():
            for repo, rdocs in by_repo.items():
                node = self.root.add(Text(repo), data=RepoData(repo, rdocs, flat=flat),
                                     allow_expand=True)
                self._repo_nodes[repo] = node
            if flat:
                # Populated here, so no NodeExpanded per repository: each one would be
                # dispatched by the tree and bubble through every container to the app
                # (~2,700 message dispatches for 540 repositories, ~30 ms on the loop).
                with self.prevent(Tree.NodeExpanded):
                    for node in self._repo_nodes.values():
                        node.expand()
                        self._populate(node)
        if keep is not None and self.reveal(keep):
            return
        self.select_first()

    def select_first(self) -> None:
        """Put the cursor on the first document (expanding the first repository)."""
        for node in self._repo_nodes.values():
            node.expand()
            self._populate(node)
            for child in node.children:
                if isinstance(child.data, DocData):
                    self.move_to(child)
                    return
            self.move_to(node)
            return
        self.post_message(self.DocumentHighlighted(None))

    def update_documents(self, docs: list[DocumentSummary], *, processing: bool = False) -> None:
        """Refresh rows of changed documents (status, chunk count, size).

        A document whose row would not change is left alone: refreshing a row refreshes
        its folder and repository rows, and with them every row below them (Tree keys its
        line cache on every node of a row's path), and the detail of the document under
        the cursor comes back through here at every cursor move."""
        for d in docs:
            was_processing = d.id in self._processing
            if processing:
                self._processing.add(d.id)
            else:
                self._processing.discard(d.id)
            old = self._docs.get(d.id)
            if old is None:
                continue
            changed = {k: v for k, v in d.__dict__.items()
                       if k != "headings" and old.__dict__.get(k) != v}
            if d is not old and not changed and processing == was_processing:
                continue
            self._version += 1
            # Keep the object identity: repository/folder nodes hold the same instances.
            old.__dict__.update(changed)
            self._refresh_row(d.id)

    def set_warnings(self, doc_id: int, warnings: list[IndexWarning]) -> None:
        """Update the ⚠ marker of one document."""
        if bool(warnings) != (doc_id in self._warnings):
            self._version += 1
        if warnings:
            self._warnings[doc_id] = list(warnings)
        else:
            self._warnings.pop(doc_id, None)
        node = self._doc_nodes.get(doc_id)
        if node is not None:
            node.refresh()

    def replace_warnings(self, warnings: dict[int, list[IndexWarning]]) -> None:
        """Set the ⚠ marks of every listed document (read after the listing was shown)."""
        listed = {k: list(v) for k, v in warnings.items() if k in self._docs and v}
        if listed == self._warnings:
            return
        self._warnings = listed
        self._version += 1
        self._updates += 1  # part of Tree's line-cache key: every row is drawn again
        self.refresh()

    # -- files that could not be read ------------------------------------------------
    def mark_unreadable(self, repository: str, path: str, reason: str | None) -> bool:
        """Record that a file could not be read (``reason``) or reads again (None).

        Returns True when the listing must be reloaded to add or drop the row of a file
        that was never stored; a stored document's row is refreshed in place."""
        key = (repository, path)
        if reason is None:
            if self._unreadable.pop(key, None) is None:
                return False
        else:
            if self._unreadable.get(key) == reason:
                return False
            self._unreadable[key] = reason
            self._unreadable_ids.setdefault(key, -1 - len(self._unreadable_ids))
        self._version += 1
        stored = [d.id for d in self._docs.values() if (d.repository, d.path) == key and d.id > 0]
        for doc_id in stored:
            self._refresh_row(doc_id)
        return not stored

    def mark_incoming(self, repository: str, path: str, seen: bool = True) -> bool:
        """A file the watcher saw and will read (``seen``), or one it has read (False).
        Returns True when the listing must be reloaded (its row appears or goes)."""
        key = (repository, path)
        if seen == (key in self._incoming):
            return False
        if seen:
            self._incoming.add(key)
            self._unreadable_ids.setdefault(key, -1 - len(self._unreadable_ids))
            return not any((d.repository, d.path) == key for d in self._docs.values())
        self._incoming.discard(key)
        return key not in self._unreadable

    def _refresh_row(self, doc_id: int) -> None:
        """Redraw a document's row and its folder/repository rows."""
        node = self._doc_nodes.get(doc_id)
        while node is not None and not node.is_root:
            node.refresh()
            node = node.parent

    def unreadable_reason(self, d: DocumentSummary) -> str | None:
        """Why the file of ``d`` could not be read the last time, if it could not."""
        return self._unreadable.get((d.repository, d.path))

    def never_stored(self) -> list[tuple[str, str]]:
        """(repository, path) of the files listed with a row of their own (unreadable,
        or seen by the watcher and not stored yet)."""
        return [(d.repository, d.path) for d in self._docs.values() if d.id < 0]

    def is_processing(self, doc_id: int) -> bool:
        """Whether this UI is projecting the document right now."""
        return doc_id in self._processing

    def status_of(self, d: DocumentSummary) -> str:
        """Displayed status (``processing`` while this UI is projecting it)."""
        if d.id in self._processing and not d.tombstoned:
            return "processing"
        if not d.tombstoned and (d.repository, d.path) in self._unreadable:
            return "failed"
        return d.status

    # -- lazy children -----------------------------------------------------
    def _populate(self, node: TreeNode[Any]) -> None:
        data = node.data
        if node.children or not isinstance(data, RepoData | DirData):
            return
        prefix = data.prefix if isinstance(data, DirData) else ""
        flat = isinstance(data, RepoData) and data.flat
        self._add_page(node, children_of(data.docs, prefix, data.repository, flat))

    def _add_page(self, parent: TreeNode[Any], items: list[Any]) -> None:
        with self._batch():
            for item in items[:PAGE]:
                if isinstance(item, DirData):
                    label = posixpath.basename(item.prefix.rstrip("/")) + "/"
                    parent.add(Text(label), data=item, allow_expand=True)
                else:
                    node = parent.add_leaf(Text(item.summary.path), data=item)
                    self._doc_nodes[item.summary.id] = node
            rest = items[PAGE:]
            if rest:
                parent.add_leaf(Text(f"… {len(rest):,} more"), data=MoreData(rest))

    @contextmanager
    def _batch(self) -> Iterator[None]:
        """Add nodes with one cache invalidation at the end instead of one per node
        (nested batches flush once, at the outermost)."""
        if self._batching:
            yield
            return
        self._batching, self._batch_dirty = True, False
        try:
            yield
        finally:
            self._batching = False
            if self._batch_dirty:
                self._invalidate()

    def _invalidate(self) -> None:
        """Tree's cache invalidation, deferred to the end of a :meth:`_batch`."""
        if self._batching:
            self._batch_dirty = True
            return
        super()._invalidate()

    def notify_style_update(self) -> None:
        """Draw again the rows a style change changed, without rebuilding the rows.

        Tree's handler goes through ``_invalidate``: it throws the row list away (rebuilt
        on the next idle: every expanded node walked and every label rendered to measure
        its width), asks for a layout of the whole screen, and draws every row again. A
        style change changes how rows look, never which rows there are or how wide their
        text is (a rule that changes the box, padding or border, makes Textual ask for the
        layout itself). The next frame compares how rows look (:meth:`render_lines`);
        when only the focus moved they look the same but for the cursor row and the
        guides below the cursor node (see DEFAULT_CSS), and only those are drawn again
        (~36 rows -> a few at each ``/``, Tab or Escape)."""
        Widget.notify_style_update(self)  # not Tree's: see above
        self._restyled = True
        node = self.cursor_node
        if node is not None:
            node._updates += 1  # in the line-cache key of its row and of every row below it
        self.refresh()

    def render_lines(self, crop: Region) -> list[Strip]:
        """The rows for one frame; all drawn again if how rows look changed since the
        last style update (a theme, a style rule: Textual sets the component styles after
        it reports the update, so they are compared here, at the next frame)."""
        if self._restyled:
            self._restyled = False
            look = (self.rich_style,
                    *(self.get_component_rich_style(name, partial=True)
                      for name in self._LOOK_COMPONENTS))
            if look != self._look:
                self._look = look
                self._line_cache.clear()
                self._updates += 1  # part of Tree's line-cache key: every row
        return super().render_lines(crop)

    def get_pseudo_class_state(self) -> PseudoClasses:
        """The pseudo-classes less the focus. Tree keys its line cache on this (its only
        reader, ``Tree.render_lines``), so every row was a cache miss after a focus move;
        the rows that change with the focus are drawn again by notify_style_update."""
        return super().get_pseudo_class_state()._replace(focus=False)

    def render_line(self, y: int) -> Strip:
        """Tree's ``render_line`` with the frame's base style (:class:`FrameMemo`)."""
        if self._frame_style is None:
            return super().render_line(y)
        scroll_x, scroll_y = self.scroll_offset
        return self._render_line(y + scroll_y, scroll_x, scroll_x + self.size.width,
                                 self._frame_style)

    def process_label(self, label: str | Text) -> Text:
        """A one-line :class:`Text` label as it is (Tree copies and splits every label to
        keep its first line); anything else as Tree does it."""
        if isinstance(label, Text) and "\n" not in label.plain:
            return label
        return super().process_label(label)

    def _on_tree_node_expanded(self, event: Tree.NodeExpanded[Any]) -> None:
        event.stop()  # nothing above the tree listens
        self._populate(event.node)

    def _on_tree_node_selected(self, event: Tree.NodeSelected[Any]) -> None:
        node = event.node
        if isinstance(node.data, MoreData):
            event.stop()
            self.load_more(node)

    def load_more(self, node: TreeNode[Any]) -> None:
        """Replace a "… more" row with the next page."""
        parent = node.parent
        if parent is None or not isinstance(node.data, MoreData):
            return
        items = node.data.items
        node.remove()
        self._add_page(parent, items)

    def _on_tree_node_highlighted(self, event: Tree.NodeHighlighted[Any]) -> None:
        data = event.node.data
        self.post_message(self.DocumentHighlighted(
            data.summary.id if isinstance(data, DocData) else None))

    def action_expand_cursor(self) -> None:
        """Expand the node under the cursor (or move into it)."""
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and not node.is_expanded:
            node.expand()
        elif node.children:
            self.move_to(node.children[0])

    def action_collapse_cursor(self) -> None:
        """Collapse the node under the cursor (or move to its parent)."""
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and node.is_expanded:
            node.collapse()
        elif node.parent is not None and node.parent is not self.root:
            self.move_to(node.parent)

    # -- navigation ----------------------------------------------------------
    @property
    def cursor_doc_id(self) -> int | None:
        """The document under the cursor, if any."""
        node = self.cursor_node
        if node is not None and isinstance(node.data, DocData):
            return node.data.summary.id
        return None

    def reveal(self, doc_id: int) -> bool:
        """Expand the way to a document and put the cursor on it; False if not listed."""
        d = self._docs.get(doc_id)
        if d is None:
            return False
        node = self._repo_nodes.get(d.repository)
        while node is not None:
            existing = self._doc_nodes.get(doc_id)
            if existing is not None:
                self._expand_ancestors(existing)
                self.move_to(existing)
                return True
            node.expand()
            self._populate(node)
            nxt: TreeNode[Any] | None = None
            for child in node.children:
                cd = child.data
                if isinstance(cd, DirData) and d.path.startswith(cd.prefix):
                    nxt = child
                    break
                if isinstance(cd, MoreData) and any(
                        (isinstance(i, DocData) and i.summary.id == doc_id)
                        or (isinstance(i, DirData) and d.path.startswith(i.prefix))
                        for i in cd.items):
                    self.load_more(child)
                    nxt = node
                    break
            if nxt is None and self._doc_nodes.get(doc_id) is None:
                return False
            node = nxt if nxt is not None else node
        return False

    def move_to(self, node: TreeNode[Any]) -> None:
        """Move the cursor to a node added or expanded just now (lines are rebuilt first)."""
        self._tree_lines  # noqa: B018 - property access rebuilds the line index
        self.move_cursor(node)
        # Tree only reports a highlight when the cursor *line* changes; after a reload
        # the same line may hold another document, so say it explicitly.
        data = node.data
        self.post_message(self.DocumentHighlighted(
            data.summary.id if isinstance(data, DocData) else None))

    @staticmethod
    def _expand_ancestors(node: TreeNode[Any]) -> None:
        p = node.parent
        while p is not None:
            if not p.is_root:
                p.expand()
            p = p.parent

    # -- rendering -----------------------------------------------------------
    def get_label_width(self, node: TreeNode[Any]) -> int:
        """Labels are padded to the widget width, so no per-node measuring (the width is
        read once per :meth:`_build`, not once per line)."""
        if self._label_width is not None:
            return self._label_width
        return max(10, self.size.width - 2)

    def _build(self) -> None:
        self._label_width = max(10, self.size.width - 2)
        try:
            super()._build()
        finally:
            self._label_width = None

    def _depth(self, node: TreeNode[Any]) -> int:
        depth = 0
        p = node.parent
        while p is not None and not p.is_root:
            depth += 1
            p = p.parent
        return depth

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"doc-tree--{name}", partial=True)

    def render_label(self, node: TreeNode[Any], base_style: Style, style: Style) -> Text:
        """Label from the node data: status glyph, name, chunk count, size, ⚠."""
        data = node.data
        avail = max(12, self.size.width - 1 - self._depth(node) * self.guide_depth
                    - (1 if node.parent is not None and not node.parent.is_root else 0))
        if isinstance(data, DocData):
            text = self._doc_label(data, avail)
        elif isinstance(data, RepoData | DirData):
            text = self._group_label(node, data, avail)
        elif isinstance(data, MoreData):
            text = Text(str(node.label), style=self._style("more"))
        else:
            text = Text(str(node.label))
        text.stylize(style)
        return text

    def _group_counts(self, data: RepoData | DirData) -> tuple[dict[str, int], bool]:
        """Status counts and "any warning" of a group, cached until a row changes."""
        key = id(data)
        hit = self._count_cache.get(key)
        if hit is not None and hit[0] == self._version:
            return hit[1], hit[2]
        counts: dict[str, int] = {}
        warn = False
        for d in data.docs:
            s = self.status_of(d)
            counts[s] = counts.get(s, 0) + 1
            warn = warn or d.id in self._warnings
        self._count_cache[key] = (self._version, counts, warn)
        return counts, warn

    def _doc_label(self, data: DocData, avail: int) -> Text:
        d = data.summary
        return doc_label(data, self.status_of(d), bool(self._warnings.get(d.id)), avail,
                         narrow=self.size.width < NARROW, style=self._style)

    def _group_label(self, node: TreeNode[Any], data: RepoData | DirData, avail: int) -> Text:
        icon = self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE
        counts, warn = self._group_counts(data)
        return group_label(data, icon, counts, warn, avail, style=self._style)
