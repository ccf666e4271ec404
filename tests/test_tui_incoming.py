"""Issue 42, item 4: a big new file is listed (``⟳``) the moment the watcher sees it,
before it is read, chunked, stored and embedded; the real row replaces it once stored.

Ordering, not timing: the store of the new file is held at its first write step (the
fault-injection checkpoint ``store.revision``) until the test has seen the ``⟳`` row."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlens.core import faults


def test_a_big_new_file_is_listed_before_it_is_stored(
        tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    asyncio.run(_incoming(tmp_path, clock, make_service))


async def _incoming(tmp_path: Path, clock: Any, make_service: Callable[..., Any]) -> None:
    from tests.test_tui_unreadable import _rows, _wait, _watching
    async with _watching(tmp_path, clock, make_service, (80, 24)) as (app, pilot, roots):
        tree = app.doc_tree
        svc = app.service
        gate = threading.Event()
        held = threading.Event()

        def hold(step: str) -> None:
            if step == "store.revision" and not gate.is_set():
                held.set()
                gate.wait(120)  # released below; the bound only ends a broken run

        paragraph = "the quarterly ledger reconciliation notes, line {i}\n"
        big = "# Ledger\n\n" + "".join(paragraph.format(i=i) for i in range(20_000))
        target = roots[0].path / "big-ledger.md"
        faults.set_hook(hold)
        try:
            target.write_text(big, encoding="utf-8")

            def listed() -> Any:
                return next((d for d in tree._docs.values() if d.path == "big-ledger.md"),
                            None)

            assert await _wait(pilot, lambda: listed() is not None, steps=1200)
            row = listed()
            assert row is not None and row.id < 0 and tree.status_of(row) == "processing"
            # the store was not done when the row appeared: nothing of it is in the database
            assert all(d.path != "big-ledger.md" for d in svc.list_documents())
            node = _rows(tree).get("big-ledger.md")
            if node is not None:
                label = tree.render_label(node, tree.rich_style, tree.rich_style).plain
                assert label.startswith("⟳ ")
            # the watcher goes on to store it (held there): the ⟳ row stays meanwhile
            assert await _wait(pilot, held.is_set, steps=1200)
            await pilot.pause()
            row = listed()
            assert row is not None and row.id < 0 and tree.status_of(row) == "processing"
        finally:
            gate.set()
            faults.set_hook(None)

        def stored() -> bool:
            row = listed()
            return row is not None and row.id > 0

        assert await _wait(pilot, stored, steps=2400)
        assert [d.path for d in tree._docs.values()].count("big-ledger.md") == 1



