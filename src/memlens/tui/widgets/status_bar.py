"""The status bar: database, counts, projection queue, embedder, watcher, jobs.

Only the database *file name* is shown (the full path is in the help screen and
``memlens config``), which keeps screenshots the same on every machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from .fmt import glyph, tidy_runs


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

    stats: reactive[dict[str, Any]] = reactive(dict, always_update=True, layout=False)
    job: reactive[str] = reactive("")
    watch_state: reactive[str] = reactive("off")
    watch_last: reactive[str] = reactive("")
    watch_queue: reactive[int] = reactive(0)
    demo: reactive[bool] = reactive(False)

    def render(self) -> Content:
        """Compose the line from the current state."""
        s = self.stats
        parts: list[Any] = []
        if self.demo:
            parts += [(" DEMO ", "bold reverse $text-warning"), " "]
        if s:
            db = Path(str(s.get("db", ""))).name or "-"
            q = s.get("queue", {})
            parts += [
                ("db ", "$text-muted"), db, "  ",
                f"{s.get('documents', 0):,} docs",
            ]
            if s.get("tombstoned"):
                parts.append((f" (+{s['tombstoned']:,} deleted)", "$text-muted"))
            parts += [f" · {s.get('chunks', 0):,} chunks  ", ("queue ", "$text-muted")]
            pend = int(q.get("pending", 0)) + int(q.get("processing", 0))
            parts.append((f"{glyph('pending')}{pend}", "$text-warning" if pend else ""))
            parts.append(" ")
            failed = int(q.get("failed", 0))
            parts.append((f"{glyph('failed')}{failed}", "$text-error bold" if failed else ""))
            stale = int(q.get("stale", 0))
            if stale:
                parts += [" ", (f"{glyph('stale')}{stale}", "$text-warning bold")]
            parts += ["  ", ("embedder ", "$text-muted"), str(s.get("embedder", "-"))]
        else:
            parts.append(("opening database…", "$text-muted"))
        parts += ["  ", ("watch ", "$text-muted")]
        wstyle = {"watching": "$text-success", "paused": "$text-warning",
                  "error": "$text-error bold"}.get(self.watch_state, "$text-muted")
        parts.append((self.watch_state, wstyle))
        if self.watch_queue:
            parts.append(f" q{self.watch_queue}")
        if self.watch_last:
            parts.append((f" · {self.watch_last}", "$text-muted"))
        if self.job:
            parts += ["  ", (f"⟳ {self.job}", "$text-accent bold")]
        return Content.assemble(*tidy_runs(parts))
