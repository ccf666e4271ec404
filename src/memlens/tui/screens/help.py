"""The help screen: keys, status glyphs and where the data lives."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from memlens.tui.widgets.fmt import STATUS_GLYPHS, STATUS_STYLES, WARNING_GLYPH

KEYS: list[tuple[str, str]] = [
    ("/", "filter documents: file name, path, heading, name; `tidewater` picks a repository"),
    ("enter  esc", "in the filter: open the best match / return to the tree"),
    ("s", "live search (hybrid; ctrl+t cycles hybrid/lexical/vector; enter opens the hit)"),
    ("x", "in search (tab to the results): why this hit ranks here; why not any document"),
    ("↑ ↓ → ← enter", "move in the tree, expand/collapse, open a folder's next page"),
    ("j k  g G", "down / up, first / last (tree rows; chunks in the chunk view)"),
    ("tab shift+tab", "next / previous pane: tree, the shown tab, filter"),
    ("< >", "narrower / wider tree (shorter / taller when stacked); or drag the divider"),
    ("z", "hide / show the tree (the detail takes the whole width)"),
    ("1 2 3", "chunks / timeline / projection tab"),
    ("n p  ] [", "next / previous chunk"),
    ("c", "rechunk the selected document (or all) with a preview"),
    ("r", "retry the selected document's projection now"),
    ("t", "show / hide deleted (tombstoned) documents"),
    ("w", "pause / resume the file watcher"),
    ("d", "toggle dark / light theme"),
    ("ctrl+r", "reload everything from the database"),
    ("ctrl+p", "command palette (every action)"),
    ("?", "this help"),
    ("q", "quit"),
]


def legend_content(db_path: str, demo_note: str = "") -> Content:
    """The help text below the keys: statuses, the chunk view, layout, database."""
    parts: list[Any] = [("Projection status\n", "bold underline")]
    meaning = {
        "ready": "searchable", "pending": "queued", "processing": "being projected",
        "failed": "failed, not searchable", "stale": "older projection still served",
        "tombstoned": "deleted",
    }
    for s, g in STATUS_GLYPHS.items():
        parts += [("  ", ""), (f"{g} {s:<11}", STATUS_STYLES[s]), f"{meaning[s]}\n"]
    parts += [("  ", ""), (f"{WARNING_GLYPH} {'warning':<11}", "$text-warning bold"),
              "MEMORY.md over 200 lines / 25 KB, broken links or unlinked topics\n"]
    parts.append(("\nChunk view\n", "bold underline"))
    parts.append("  bands alternate per chunk; gutter: #ordinal, token count, ↑ovl = overlap\n"
                 "  with the previous chunk; ▌ marks the selected chunk; the bar is tokens\n"
                 "  against max_tokens (red when over).\n")
    parts.append(("\nLayout\n", "bold underline"))
    parts.append("  under 100 columns the tree sits above the detail pane; the tree's size\n"
                 "  (< > or a drag) is kept until you quit.\n")
    parts.append(("\nDatabase\n", "bold underline"))
    parts.append(f"  {db_path}\n")
    if demo_note:
        parts.append((f"  {demo_note}\n", "$text-warning"))
    return Content.assemble(*parts)


class HelpScreen(ModalScreen[None]):
    """Keys and legend; any of escape, q or ? closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "close", "Close"),
    ]

    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
        & > VerticalScroll {
            width: 100; max-width: 95%; height: 36; max-height: 95%;
            border: thick $primary; background: $surface; padding: 0 1;
        }
        /* Key | what it does: a description wraps under itself, not under the key. */
        & .key-row { height: auto; }
        & .key { width: 18; padding-left: 2; text-style: bold; color: $text-accent; }
        & .what { width: 1fr; }
        & #keys-head { text-style: bold underline; }
        & #legend { margin-top: 1; }
    }
    """

    def __init__(self, db_path: str, demo_note: str = "") -> None:
        super().__init__()
        self.db_path = db_path
        self.demo_note = demo_note

    def compose(self) -> ComposeResult:
        """The keys as a two-column table, then the legend; one scrollable box."""
        with VerticalScroll():
            yield Static("Keys", id="keys-head")
            for key, what in KEYS:
                with Horizontal(classes="key-row"):
                    yield Static(key, classes="key", markup=False)
                    yield Static(what, classes="what", markup=False)
            yield Static(legend_content(self.db_path, self.demo_note), id="legend")

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)
