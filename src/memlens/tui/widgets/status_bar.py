"""The status bar: database, counts, projection queue, embedder, watcher, jobs.

Only the database *file name* is shown (the full path is in the help screen and
``memlens config``), which keeps screenshots the same on every machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from memlens.tui.widgets.fmt import glyph, tidy_runs

if TYPE_CHECKING:
    from memlens.core.types import Stats


class StatusBar(Static):
    """One line of state at the bottom of the browser."""

    DEFAULT_CSS = """
    StatusBar {
        height: 1;
        background: $panel;
        color: $foreground;
        padding: 0 1;
    }
    """

    stats: reactive[Stats | None] = reactive(None, always_update=True, layout=False)
    job: reactive[str] = reactive("")
    watch_state: reactive[str] = reactive("off")
    watch_last: reactive[str] = reactive("")
    watch_queue: reactive[int] = reactive(0)
    demo: reactive[bool] = reactive(False)

    problem: reactive[str] = reactive("")
    problems: reactive[int] = reactive(0)

    def render(self) -> Content:
        """Compose the line from the current state, dropping low-priority fields to fit."""
        segments = self._segments()
        width = max(self.size.width - 2, 0) if self.size.width else 10_000
        keep = sorted(range(len(segments)), key=lambda i: segments[i][0])
        while len(keep) > 1 and sum(_cells(segments[i][1]) for i in keep) > width:
            keep.pop()  # the lowest priority (highest number) goes first
        parts: list[Any] = []
        for i in sorted(keep):
            parts += segments[i][1]
        return Content.assemble(*tidy_runs(parts))

    def _segments(self) -> list[tuple[int, list[Any]]]:
        """(priority, parts) in display order; priority 0 is kept longest."""
        s = self.stats
        out: list[tuple[int, list[Any]]] = []
        if self.demo:
            out.append((0, [(" DEMO ", "bold reverse $text-warning"), " "]))
        if s is not None:
            out.append((6, [("db ", "$text-muted"), Path(s.db).name or "-", "  "]))
            docs: list[Any] = [f"{s.documents:,} docs"]
            if s.tombstoned:
                docs.append((f" (+{s.tombstoned:,} deleted)", "$text-muted"))
            out.append((3, docs))
            out.append((7, [f" · {s.chunks:,} chunks"]))
            pend = s.queue_pending
            failed = s.queue_failed
            queue: list[Any] = ["  ", ("queue ", "$text-muted"),
                                (f"{glyph('pending')}{pend}", "$text-warning" if pend else ""),
                                " ",
                                (f"{glyph('failed')}{failed}", "$text-error bold" if failed
                                 else "")]
            stale = s.queue_stale
            if stale:
                queue += [" ", (f"{glyph('stale')}{stale}", "$text-warning bold")]
            out.append((1, queue))
            waiting = s.vectors_waiting
            if waiting:  # stage 2: searchable by their words, vectors still being computed
                out.append((2, ["  ", ("vectors ", "$text-muted"),
                                (f"{waiting:,} waiting", "$text-warning")]))
            out.append((8, ["  ", ("embedder ", "$text-muted"), s.embedder]))
        else:
            out.append((2, [("opening database…", "$text-muted")]))
        wstyle = {"watching": "$text-success", "paused": "$text-warning",
                  "error": "$text-error bold"}.get(self.watch_state, "$text-muted")
        watch: list[Any] = ["  ", ("watch ", "$text-muted"), (self.watch_state, wstyle)]
        if self.watch_queue:
            watch.append(f" q{self.watch_queue}")
        out.append((0, watch))
        if self.watch_last:
            out.append((5, [(f" · {self.watch_last}", "$text-muted")]))
        if self.job:
            out.append((1, ["  ", (f"⟳ {self.job}", "$text-accent bold")]))
        if self.problems:
            out.append((0, ["  ", (f"✗ {self.problems:,} (E)", "$text-error bold")]))
            if self.problem:
                out.append((4, [" ", (self.problem[:60], "$text-error")]))
        return out


def _cells(parts: list[Any]) -> int:
    return sum(cell_len(p if isinstance(p, str) else p[0]) for p in parts)
