"""The command palette: every memlens action, by name (document actions when one is selected)."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from memlens.tui.host import MemlensHost

Command = tuple[str, str, str]
"""(name shown, help text, action run on the app)."""

BROWSER_ACTIONS = frozenset({
    "focus_filter", "search", "toggle_tombstoned", "rechunk", "rechunk_all",
    "retry_projection", "next_chunk", "previous_chunk", "show_tab", "escape", "reload",
    "focus_pane", "open_best_match", "toggle_tree", "resize_tree",
})
"""Actions that act on the browser; off while search, a dialog or help is on top."""


def _global_commands(app: MemlensHost) -> list[Command]:
    return [
        ("Search memory", "live search (hybrid / lexical / vector)", "search"),
        ("Filter documents", "fuzzy filter over repository, path, headings, name",
         "focus_filter"),
        ("Search mode: hybrid", "weighted mix of lexical (bm25) and vector scores",
         "set_search_mode('hybrid')"),
        ("Search mode: lexical", "FTS5 bm25 only", "set_search_mode('lexical')"),
        ("Search mode: vector", "vector KNN only", "set_search_mode('vector')"),
        ("Hide deleted documents" if app.show_tombstoned else "Show deleted documents",
         "toggle tombstoned documents in the tree", "toggle_tombstoned"),
        ("Rechunk all documents…", "pick a chunker config and apply it to every live "
         "document", "rechunk_all"),
        ("Toggle dark / light theme", "switch between memlens-dark and memlens-light"
         " (text at WCAG AA contrast)",
         "toggle_dark"),
        ("Hide / show the tree", "z: the detail pane takes the whole width", "toggle_tree"),
        ("Wider tree", ">: or drag the divider", "resize_tree(1)"),
        ("Narrower tree", "<", "resize_tree(-1)"),
        ("Events (E)", "watcher events, files that could not be read, projection errors",
         "events"),
        ("Reload", "re-read everything from the database", "reload"),
        ("Show chunks", "chunk boundaries of the selected document", "show_tab('chunks')"),
        ("Show timeline", "revisions and diffs of the selected document",
         "show_tab('timeline')"),
        ("Show projection", "projection status of the selected document",
         "show_tab('projection')"),
        ("Help", "keys and legend", "help"),
        ("Quit", "leave memlens", "quit"),
        ("Pause / resume watcher", "stop or continue re-ingesting changed files"
         + ("" if app.watch_enabled else " (off: --no-watch or watch.enabled)"),
         "toggle_watch"),
    ]


DOCUMENT_COMMANDS: list[Command] = [
    ("Rechunk this document…", "preview and apply another chunker config", "rechunk"),
    ("Retry projection now", "project the selected document again, ignoring back-off",
     "retry_projection"),
    ("Next chunk", "select the next chunk", "next_chunk"),
    ("Previous chunk", "select the previous chunk", "previous_chunk"),
]


class MemlensCommands(Provider):
    """Every memlens action in the command palette (document actions when one is selected)."""

    def _commands(self) -> list[Command]:
        app = self.app
        assert isinstance(app, MemlensHost)
        on_browser = not app.screen_stack or self.screen is app.screen_stack[0]
        out = _global_commands(app)
        if not on_browser:  # from search or a dialog: only what works there
            return [c for c in out if c[2].split("(")[0] not in BROWSER_ACTIONS]
        if app.current_doc_id is not None:
            out += DOCUMENT_COMMANDS
        return out

    async def discover(self) -> Hits:
        """All commands, before anything is typed."""
        for name, help_text, action in self._commands():
            yield DiscoveryHit(name, partial(self.app.run_action, action), help=help_text)

    async def search(self, query: str) -> Hits:
        """Commands matching what was typed."""
        matcher = self.matcher(query)
        for name, help_text, action in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), partial(self.app.run_action, action),
                          help=help_text)
