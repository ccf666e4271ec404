"""benchmarks/matrix_memory.py keeps working: its load and TUI probes run on a tiny
database (the benchmark's own: benchmarks/tui.py's build). No figure is asserted beyond
its being measured; the TUI probe must have answered every query and the last from the
matrix."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import matrix_memory  # noqa: E402
import tui as tui_bench  # noqa: E402


@pytest.fixture(scope="module")
def tiny_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tui_bench.db_path(tmp_path_factory.mktemp("matrix-bench"), 12)
    tui_bench.build(db, 12)
    return db


def test_load_probe_measures_the_matrix(tiny_db: Path) -> None:
    out = matrix_memory.probe_load(tiny_db)
    assert out["rows"] > 12 and out["source"] == "shadow"
    assert out["matrix_mib"] > 0 and out["peak_rss_mb"] >= out["baseline_rss_mb"] > 0


def test_tui_probe_is_answered_by_the_matrix(tiny_db: Path) -> None:
    out = asyncio.run(matrix_memory._probe_tui(tiny_db, 3))
    assert out["answered"] == out["queries"] == 4
    assert out["matrix_loads"] == 1 and out["matrix_served"] == 1
    assert out["peak_rss_mb"] >= out["rss_end_mb"] > 0
