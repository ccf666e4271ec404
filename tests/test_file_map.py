"""The whole-file map above the chunk view (pure layout)."""

from __future__ import annotations

from memlens.core.chunking.chunker import ChunkerConfig, chunk_markdown
from memlens.tui.widgets.file_map import BAND_A, BAND_B, GAP, LIMIT, OVERLAP, SELECTED, map_cells


def _chunks(text: str, **cfg: object) -> list:
    return chunk_markdown(text, ChunkerConfig.from_dict({"strategy": "windows", **cfg})).chunks


def test_empty_and_blank() -> None:
    assert map_cells([], 0, 5) == [GAP] * 5
    assert map_cells([], 100, 3) == [GAP] * 3


def test_bands_overlaps_selection_and_limit() -> None:
    text = " ".join(f"w{i}" for i in range(400))
    chunks = _chunks(text, max_tokens=60, overlap_tokens=12)
    assert len(chunks) > 3 and all(c.overlap_chars for c in chunks[1:])
    cells = map_cells(chunks, len(text), 80)
    assert len(cells) == 80 and GAP not in cells
    assert BAND_A in cells and BAND_B in cells and OVERLAP in cells
    sel = map_cells(chunks, len(text), 80, selected=2)
    lo = chunks[2].start_char * 80 // len(text)
    assert sel[lo + 1] == SELECTED and SELECTED not in cells
    lim = map_cells(chunks, len(text), 80, limits=[len(text) // 2])
    assert lim[(len(text) // 2) * 80 // len(text)] == LIMIT and lim.count(LIMIT) == 1


def test_every_cell_maps_in_order_for_any_width() -> None:
    text = "# A\n\n" + "alpha beta gamma. " * 300
    chunks = chunk_markdown(text, ChunkerConfig(max_tokens=80, overlap_tokens=16)).chunks
    for width in (1, 7, 40, 200, 5000):
        cells = map_cells(chunks, len(text), width)
        assert len(cells) == width
