"""The revision timeline of a document: newest first, with a coloured diff.

memlens stores a superseded revision's summary and unified diff *on that
revision*: they describe the step to the next one. So the change that
produced revision N is read from revision N-1 and shown when N is selected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from memlens.tui.widgets.fmt import chunker_label, plural, short_hash, tidy_runs, timestamp

if TYPE_CHECKING:
    from memlens.core.types import Revision

HUNK_STYLE = "$text-primary"
"""``@@`` hunk headers (a fixed cyan was 2.3:1 on the light theme's grey)."""

KIND_STYLES = {
    "create": "$text-success",
    "update": "$text-primary",
    "rename": "$text-accent",
    "delete": "$text-error",
    "rechunk": "$text-secondary",
}


def diff_content(diff: str) -> Content:
    """A unified diff coloured: ``+`` green, ``-`` red, ``@@`` cyan, headers bold."""
    parts: list[tuple[str, str] | str] = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            parts.append((line, "bold"))
        elif line.startswith("+"):
            parts.append((line, "$text-success"))
        elif line.startswith("-"):
            parts.append((line, "$text-error"))
        elif line.startswith("@@"):
            parts.append((line, HUNK_STYLE))
        else:
            parts.append(line)
        parts.append("\n")
    return Content.assemble(*parts)


def embedder_label(fp: str | None, status: str | None) -> str:
    """``hashing:v1/64d ready`` style short embedder name plus its status."""
    if not fp:
        return "embedder -"
    bits = fp.split(":")
    short = ":".join(bits[:2])
    dim = next((b[4:] for b in bits if b.startswith("dim=")), "")
    label = f"{short}/{dim}d" if dim else short
    return f"{label} {status}" if status else label


def short_embedder(fp: str | None) -> str:
    """``hashing/64`` from a fingerprint like ``hashing:v1:dim=64:...``."""
    if not fp:
        return "-"
    bits = fp.split(":")
    dim = next((b[4:] for b in bits if b.startswith("dim=")), "")
    return f"{bits[0]}/{dim}" if dim else bits[0]


class TimelineView(Vertical):
    """Revisions of the selected document and the change each one made."""

    ONE_LINE_FROM = 78
    """Revision rows take one line from this width on, two below (never folded mid-field)."""

    DEFAULT_CSS = """
    TimelineView {
        & > #revisions-legend { height: auto; max-height: 2; padding: 0 1; }
        & > #revisions { height: 40%; min-height: 5; border: none; }
        & > #revision-detail { height: 1fr; border-top: solid $panel-lighten-1; }
        & #revision-text { width: 1fr; }
    }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.history: list[Revision] = []
        self.current_id: int | None = None
        self.active_id: int | None = None
        self._one_line = True

    def compose(self) -> ComposeResult:
        """Revision list above, detail and diff below."""
        yield Static(Content.assemble(
            ("● current  ", "$text-primary"), ("◆ active projection  ", "$text-success"),
            ("newest first · its change is shown below", "$text-muted")),
            id="revisions-legend")
        yield OptionList(id="revisions")
        with VerticalScroll(id="revision-detail"):
            yield Static("", id="revision-text", markup=False)

    def set_history(self, history: list[Revision], current_id: int | None,
                    active_id: int | None) -> None:
        """Show a document's revisions (newest first)."""
        self.history = history
        self.current_id = current_id
        self.active_id = active_id
        self._one_line = self.size.width == 0 or self.size.width >= self.ONE_LINE_FROM
        self._fill(0)
        if history:
            self.show_revision(0)
        else:
            self.query_one("#revision-text", Static).update("(no revisions)")

    def _fill(self, highlighted: int | None) -> None:
        ol = self.query_one("#revisions", OptionList)
        ol.clear_options()
        ol.add_options([Option(self._row(r), id=str(r.id)) for r in self.history])
        if self.history and highlighted is not None:
            ol.highlighted = min(highlighted, len(self.history) - 1)

    def on_resize(self, event: Any) -> None:
        """Rows switch between one line and two (chunker and embedder below)."""
        one_line = event.size.width >= self.ONE_LINE_FROM
        if one_line != self._one_line:
            self._one_line = one_line
            self._fill(self.query_one("#revisions", OptionList).highlighted)

    def _row(self, r: Revision) -> Content:
        kind = r.change_kind
        status = r.embedder_status
        mark = {"ready": "✓", "failed": "✗", "pending": "…"}.get(status or "", " ")
        return Content.assemble(*tidy_runs([
            ("●" if r.id == self.current_id else " ", "$text-primary bold"),
            ("◆" if r.id == self.active_id else " ", "$text-success bold"),
            (f" #{r.number:<3} ", "bold"),
            (f"{kind:<8}", KIND_STYLES.get(kind, "")),
            f" {timestamp(r.observed_at)}  ",
            (short_hash(r.content_hash, 8), "$text-muted"),
            # Two lines when narrow; the second starts with a glyph, not blanks (which
            # some SVG renderers drop).
            "  " if self._one_line else ("\n↳" + " " * 7, "$text-muted"),
            f"{chunker_label(r.chunker.config):<15} ",
            (short_embedder(r.embedder), "$text-muted"),
            (f" {mark}", {"✓": "$text-success", "✗": "$text-error"}.get(mark, "$text-muted")),
        ]))

    @on(OptionList.OptionHighlighted, "#revisions")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        self.show_revision(event.option_index)

    @on(OptionList.OptionSelected, "#revisions")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()

    def show_revision(self, index: int) -> None:
        """Show the summary and diff of the revision at ``index`` (0 = newest)."""
        if not 0 <= index < len(self.history):
            return
        r = self.history[index]
        prev = self.history[index + 1] if index + 1 < len(self.history) else None
        lines: list[tuple[str, str] | str] = [
            (f"Revision #{r.number} · {r.change_kind}", "bold"),
            f" · {timestamp(r.observed_at)} UTC\n",
            f"path {r.path}",
            f" (was {r.previous_path})" if r.previous_path else "",
            f" · {r.size:,} bytes · {plural(r.chunks or 0, 'chunk')}\n",
            f"content hash {r.content_hash}\n",
            (f"chunker {r.chunker.name} v{r.chunker.version} {chunker_label(r.chunker.config)}"
             if r.chunker.name else "chunker -"),
            f" · {embedder_label(r.embedder, r.embedder_status)}\n",
        ]
        if r.id == self.current_id:
            lines.append(("● current revision" + (" (full snapshot stored)" if r.has_snapshot
                                                  else "") + "\n", "$text-primary"))
        if r.id == self.active_id:
            lines.append(("◆ active projection (what search serves)\n", "$text-success"))
        lines.append("\n")
        if prev is None:
            lines.append(("first revision: no earlier content to compare\n", "$text-muted"))
            # A superseded revision's summary describes the step to the *next* one,
            # which is shown there; only the current revision's own note belongs here.
            if r.summary and r.id == self.current_id:
                lines.append(f"summary: {r.summary}\n")
            detail = Content.assemble(*tidy_runs(lines))
        else:
            lines.append((f"change from #{prev.number}: ", "bold"))
            lines.append(f"{prev.summary or '-'}\n")
            diff = prev.diff or ""
            if prev.diff_truncated:
                lines.append(("(diff truncated)\n", "$text-warning"))
            if not diff.strip():
                lines.append(("the file was deleted; no diff is stored (it was empty, or "
                              "retention pruned that history)\n" if r.change_kind == "delete"
                              else "no content change (same text)\n", "$text-muted"))
            detail = Content.assemble(*tidy_runs(lines)) + diff_content(diff)
        self.query_one("#revision-text", Static).update(detail)
