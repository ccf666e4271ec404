"""benchmarks/tui.py keeps working: its measuring code runs on a tiny database.

No timing is asserted (the figures are the benchmark's business); the tests check
that every phase measured something, i.e. that the frame tap still sees the
frames Textual renders and recognises the results on them.
"""

from __future__ import annotations

import asyncio
import gc
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from memlens.tui.screens.search import DEBOUNCE_SECONDS
from tests.conftest import REPO, load_benchmark

tui_bench = load_benchmark("tui")


@pytest.fixture(scope="module")
def tiny_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("tui-bench")
    db = tui_bench.db_path(cache, 24)
    info = tui_bench.build(db, 24)
    assert info["documents"] == 24 and info["chunks"] > 24
    return db


def _finite(summary: dict[str, Any], n: int) -> None:
    assert summary["n"] == n
    for key in ("p50_ms", "p95_ms", "max_ms"):
        assert math.isfinite(summary[key]) and summary[key] > 0
    assert summary["loop_stall_ms"] >= 0 and summary["cpu_s"] >= 0


def test_measure_sees_every_phase_on_screen(tiny_db: Path) -> None:
    out = asyncio.run(tui_bench.measure(tiny_db, 2, modes=("lexical", "vector"),
                                        detail_moves=2, filters=("alpha", "zz")))
    assert out["documents_listed"] == 24
    assert out["first_frame_s"] > 0
    assert out["documents_on_screen_s"] is not None
    assert out["documents_on_screen_s"] >= out["first_frame_s"]
    _finite(out["detail"], 2)
    _finite(out["filter"], 2)
    assert out["focus_filter"]["loop_stall_ms"] >= 0 and "p50_ms" not in out["focus_filter"]
    for mode in ("lexical", "vector"):
        r = out[f"search_{mode}"]
        _finite(r, 2)
        assert r["missed"] == 0
        # Last key -> fired is at least the debounce. (Last key -> the frame that shows the
        # final results is not: on a busy machine the debounce can fire between two keys,
        # and a search for all but the last letter may show the very same lines, so that
        # frame comes before the last search; seen in a fresh-clone run.)
        debounce_ms = DEBOUNCE_SECONDS * 1000
        assert r["p50_ms"] > 0
        assert r["press_to_fired_p50_ms"] >= debounce_ms * 0.9
        assert r["service_p50_ms"] > 0
    assert out["frames"] > 10 and out["terminal_bytes"] > 0
    assert "search_hybrid" not in out


def test_loop_watch_times_garbage_collections_only_when_sampling() -> None:
    async def run(sample: bool) -> tui_bench.LoopWatch:
        watch = tui_bench.LoopWatch(sample=sample)
        watch.start()
        assert (watch._gc in gc.callbacks) is sample
        gc.collect(2)
        gc.collect(0)
        await asyncio.sleep(0.02)
        watch.stop()
        assert watch._gc not in gc.callbacks
        return watch

    sampled = asyncio.run(run(True))
    count, longest, longest_cpu, total, in_workers = sampled.gc_pauses[2]
    assert count >= 1 and longest > 0 and longest_cpu > 0 and total >= longest
    assert in_workers == 0  # collected on the loop's own thread
    assert sampled.gc_pauses[0][0] >= 1
    assert asyncio.run(run(False)).gc_pauses == {}


def test_measure_find_stalls_reports_gc_pauses(tiny_db: Path) -> None:
    out = asyncio.run(tui_bench.measure(tiny_db, 1, modes=("lexical",), detail_moves=1,
                                        filters=("zz",), find_stalls=True))
    assert out["search_lexical"]["missed"] == 0
    assert isinstance(out["stall_samples"], list)
    # A Textual run allocates enough for the youngest generation to be collected.
    assert out["gc_pauses"]["gen0"]["count"] > 0
    assert all(v["longest_ms"] >= 0 and v["longest_cpu_ms"] >= 0 and v["total_ms"] >= 0
               and 0 <= v["in_workers"] <= v["count"] for v in out["gc_pauses"].values())


def test_frame_tap_models_layout_and_chop_updates() -> None:
    from rich.segment import Segment
    from textual._compositor import ChopsUpdate, LayoutUpdate
    from textual.geometry import Region
    from textual.strip import Strip

    tap = tui_bench.FrameTap(12, 3)
    tap._apply(LayoutUpdate([[Strip([Segment("hello world!")])], [Strip([Segment("ab")])]],
                            Region(0, 0, 12, 2)))
    assert tap.text((0, 0, 12, 2)) == "hello world!\nab          "
    # A chop update writes only its span (x2 exclusive); a wide character takes two cells.
    tap._apply(ChopsUpdate([{}, {2: Strip([Segment("日x")])}, {}], [(1, 2, 4)], [[], [5], []]))
    assert tap.text((0, 1, 6, 1)) == "ab日  "
    assert tap.text((0, 0, 5, 1)) == "hello"
    # Kept frames must not be work for the measured app's garbage collector.
    rows = tap.snapshot()
    assert tap.text((0, 1, 6, 1), rows) == "ab日  "
    gc.collect()  # untracks the rows; the outer tuple goes on the next collection
    gc.collect()
    assert not gc.is_tracked(rows) and not any(gc.is_tracked(r) for r in rows)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_spawned_first_paint(tiny_db: Path) -> None:
    out = tui_bench.first_paint_spawned(tiny_db, tiny_db.parent, 1)
    assert out["documents_on_screen_s"][0] is not None, out["runs"][0]["pane"]
    assert out["python_print_floor_s"][0] is not None


def test_callback_probe_names_what_ran_and_restores_textual(
        tiny_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """benchmarks/tui_callbacks.py: the stalls list the callbacks inside them, the focus
    breakdown has the tree's redraw, and every wrapped method is put back."""
    import asyncio.events

    # It imports its sibling ``tui`` from sys.path; monkeypatch puts sys.path back after
    # the test (benchmarks/ holds a static_model.py that hides the installed package).
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import tui_callbacks
    from textual.widget import Widget

    run, render_lines = asyncio.events.Handle._run, Widget.render_lines
    out = asyncio.run(tui_callbacks.probe(tiny_db, late_ms=0.0, presses=1,
                                          filters=("alpha",), queries=2))
    assert asyncio.events.Handle._run is run and Widget.render_lines is render_lines
    assert out["stalls"] and all(s["late_ms"] >= 0 for s in out["stalls"])
    assert any(c["what"].startswith("task ") for s in out["stalls"] for c in s["callbacks"])
    whats = {r["what"]: r for r in out["focus_filter_per_press"]}
    assert whats["render_lines DocumentTree#tree"]["ms"] > 0
    assert whats["screen update timer"]["calls"] >= 1
    assert out["tree_draw_ms"]["cpu"] > 0 and out["tree_draw_ms"]["lines"] > 0
    # The search probe: every stall is labelled with its phase, and each mode's last key
    # -> results breakdown has the results list's own drawing.
    assert {s["phase"].split()[0] for s in out["stalls"]} >= {"focus_filter", "search"}
    for mode in ("lexical", "hybrid"):
        rows = {r["what"]: r for r in out["results_per_query"][mode]}
        assert rows["render_lines OptionList#search-results"]["ms"] > 0


def test_search_stamps_wrap_the_screen_from_the_benchmark(
        tmp_path: Path, clock: Any, make_service: Any) -> None:
    """The benchmark stamps "debounce fired" and "results handled" by wrapping the
    search screen's methods (the app keeps no timing hooks): a search shown gets both
    stamps, in order, and one fired -> handled time."""
    from memlens.tui.screens.search import SearchScreen
    from tests.test_tui import SIZE, build_scenario, settle, type_text

    sc = build_scenario(tmp_path, clock, make_service, states=False)
    app = sc.app()

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("s")
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, SearchScreen)
            stamper = tui_bench.SearchStamps(screen)
            assert stamper.stamps == {} and not hasattr(screen, "stamps")
            await type_text(pilot, "heap")
            await settle(pilot)
            assert screen.last is not None and screen.last.query == "heap"
            stamps = stamper.stamps
            assert set(stamps) == {"fired", "handled"} and stamps["handled"] >= stamps["fired"]
            assert stamper.in_app[-1] == stamps["handled"] - stamps["fired"]

    asyncio.run(run())
