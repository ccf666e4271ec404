"""What the browser screen and the command palette need of the app, as a Protocol.

The app (:class:`memlens.tui.app.MemlensApp`) builds the browser screen and lists the
palette's provider, so they cannot import the app back without an import cycle; they
read it through this interface instead, and mypy checks that the app provides it
(``tests/test_tui_house.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from memlens.core.service import MemoryService
    from memlens.tui.messages import DetailView
    from memlens.tui.widgets.debounce import Debouncer


@runtime_checkable
class MemlensHost(Protocol):
    """The app as its screens and palette see it."""

    service: MemoryService
    clock: Callable[[], float]
    detail: DetailView | None
    current_doc_id: int | None
    show_tombstoned: bool
    watch_enabled: bool
    filter_debounce: Debouncer

    @property
    def filter_text(self) -> str:
        """The text of the document finder."""

    def load_documents(self, filter_text: str = "", keep: int | None = None) -> object:
        """List the documents matching ``filter_text`` (in a worker), keeping ``keep``."""

    def browser_mounted(self) -> None:
        """The browser screen is mounted: start loading documents."""

    def action_open_best_match(self) -> None:
        """Open the document finder's best match."""
