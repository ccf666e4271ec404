"""The projection panel: what search serves for a document and why.

Shows the current revision next to the active (projected) one, the status with
its meaning, the last error, attempts and the next retry, plus a retry button.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Static

from memlens.tui.widgets.fmt import STATUS_STYLES, glyph, relative, tidy_runs, timestamp

if TYPE_CHECKING:
    from memlens.core.types import DocumentDetail, ProjectionState, Revision

MEANING = {
    "ready": "the current revision is searchable",
    "pending": "queued for projection; an earlier projection, if any, is still served",
    "processing": "being embedded and indexed now",
    "failed": "projection failed; nothing of this document is searchable",
    "stale": "the newest revision is not projected (failed or waiting); "
             "an older projection is still served",
    "tombstoned": "deleted: left search at once; history is kept",
}


def projection_content(doc: DocumentDetail, history: list[Revision], now: float,
                       status: str) -> Content:
    """The panel text for one document (``status`` may be the UI's ``processing``)."""
    p = doc.projection
    numbers = {r.id: r.number for r in history}

    def rev(rid: int | None) -> str:
        if rid is None:
            return "none"
        n = numbers.get(rid)
        return f"#{n} (id {rid})" if n is not None else f"id {rid}"

    def row(label: str, value: str | Content, style: str = "") -> list[Any]:
        # The widest label ("current revision") still gets a blank after it.
        return [(f"{label:<17}", "bold $text-muted"), (value, style) if style else value, "\n"]

    parts: list[Any] = []
    parts += row("status", f"{glyph(status)} {status}", STATUS_STYLES.get(status, "") + " bold")
    parts += row("", MEANING.get(status, ""), "$text-muted")
    parts += row("current revision", rev(doc.current_revision_id))
    active = rev(doc.active_revision_id)
    if doc.active_revision_id is None and not doc.tombstoned:
        active += "  (nothing searchable)"
    elif doc.active_revision_id != doc.current_revision_id and not doc.tombstoned:
        active += "  (differs from current)"
    parts += row("active revision", active,
                 "$text-warning" if "(" in active else "")
    parts += row("attempts", str(p.attempts or 0))
    parts += row("error", p.error or "-", "$text-error" if p.error else "")
    parts += row("started", timestamp(p.started_at))
    parts += row("updated", timestamp(p.updated_at))
    nxt = p.next_attempt_at
    if not nxt:
        when = "-"
    elif nxt <= now:
        when = f"{timestamp(nxt)} (due: the next projection run retries it)"
    else:
        when = f"{timestamp(nxt)} ({relative(nxt, now)}; back-off after {p.attempts} failures)"
    parts += row("next retry", when)
    if not doc.tombstoned and (p.vectors_total or p.vectors_capped):
        parts += vector_rows(p, now, row)
    return Content.assemble(*tidy_runs(parts))


def vector_rows(p: ProjectionState, now: float,
                row: Callable[[str, str, str], list[Any]]) -> list[Any]:
    """Stage 2 (issue 37): how many of the active nodes have their vector."""
    status, done, total, capped = p.vector_status, p.vectors_done, p.vectors_total, \
        p.vectors_capped
    text = f"{done:,} of {total:,} written"
    if status == "pending":
        text += "  (being computed; found by its words meanwhile)"
    elif status == "failed":
        text += "  (failed; found by its words meanwhile)"
    parts = row("vectors", f"{glyph(status if status != 'capped' else 'ready')} {text}",
                {"pending": "$text-warning", "failed": "$text-error"}.get(status, ""))
    if capped:
        parts += row("", f"{capped:,} more node(s) over [projection] max_vectors_per_document:"
                     " found by their words only", "$text-warning")
    if p.vector_error:
        parts += row("vector error", p.vector_error, "$text-error")
        nxt = p.vector_next_attempt_at
        if nxt:
            due = "due" if nxt <= now else relative(nxt, now)
            parts += row("vector retry", f"{timestamp(nxt)} ({due})", "")
    return parts


class ProjectionPanel(VerticalScroll):
    """Projection state of the selected document, with a retry button."""

    DEFAULT_CSS = """
    ProjectionPanel {
        padding: 0 1;
        & > #projection-text { width: 1fr; }
        & > #projection-actions { height: auto; margin-top: 1; }
        & #retry { min-width: 24; }
    }
    """

    def compose(self) -> ComposeResult:
        """Fields, then the action row."""
        yield Static("", id="projection-text")
        with Horizontal(id="projection-actions"):
            yield Button("Retry projection now (r)", id="retry", variant="primary",
                         action="app.retry_projection")

    def focus_retry(self) -> None:
        """Focus the retry button, or the panel itself when retrying is off."""
        button = self.query_one("#retry", Button)
        if button.disabled:
            self.focus()
        else:
            button.focus()

    def show(self, doc: DocumentDetail | None, history: list[Revision], now: float,
             status: str, *, unreadable: str | None = None) -> None:
        """Show one document's projection state (``None``: nothing selected).

        ``unreadable`` is why the file's latest version could not be read: the stored
        revision's projection is shown as it is, with that line, and the retry button
        only when the projection itself has something to retry (issue 42)."""
        text = self.query_one("#projection-text", Static)
        button = self.query_one("#retry", Button)
        button.display = True
        if doc is None:
            text.update("(no document selected)")
            button.disabled = True
            return
        content = projection_content(doc, history, now, status)
        if unreadable is not None:
            content = Content.assemble(
                (f"{'file':<17}", "bold $text-muted"),
                (f"{glyph('failed')} the latest version could not be read: {unreadable}",
                 "$text-error"), "\n",
                (f"{'':<17}", ""), ("search serves the stored revision; fix the file and "
                                    "save it to read it again", "$text-muted"), "\n",
                content)
            button.display = status in ("failed", "stale")
        text.update(content)
        button.disabled = doc.tombstoned or status == "processing"

    def show_not_stored(self, reason: str | None, *, reading: bool = False) -> None:
        """A file that could not be read and was never stored (or, ``reading``, one the
        watcher is reading now): nothing to project, so no retry button."""
        self.query_one("#retry", Button).display = False
        if reading:
            self.query_one("#projection-text", Static).update(Content.styled(
                f"{glyph('processing')} the watcher is reading this file; its projection "
                "starts once it is stored", "$text-muted"))
            return
        self.query_one("#projection-text", Static).update(Content.assemble(
            (f"{glyph('failed')} not ingested: {reason or 'the file could not be read'}",
             "$text-error"), "\n\n",
            ("Nothing of this file is stored, so there is no projection to retry. Fix the "
             "file and save it (the watcher reads it again), or run `memlens ingest`.",
             "$text-muted")))
