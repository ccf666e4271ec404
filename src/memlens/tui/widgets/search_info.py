"""The search screen's status line (moved out of :mod:`memlens.tui.screens.search`)."""

from __future__ import annotations

from memlens.core.types import NO_WORD_FILTERED_NOTE, NO_WORD_NOTE, SearchHit


def info_line(hits: list[SearchHit], mode: str, timing: str, notes: list[str],
              preferred: str | None) -> str:
    """The status line under the input: counts, mode, time, project, notes."""
    matches = sum(1 for h in hits if h.is_match)
    if not hits:
        head = "no results"
    elif matches == len(hits):
        head = f"{len(hits)} hits"
    elif matches == 0:
        head = f"no matches · {len(hits)} closest by meaning"
    else:
        head = f"{matches} matches · {len(hits) - matches} closest by meaning"
    project = f" · {preferred} first" if preferred else ""
    notes = [n for n in notes if n not in (NO_WORD_NOTE, NO_WORD_FILTERED_NOTE)]  # the head says it
    note = f" · {'; '.join(notes)}" if notes else ""
    return f"{head} · {mode}{timing}{project}{note}"
