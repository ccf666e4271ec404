"""Memory of the in-RAM vector matrix (issue 43): the matrix load's peak and the TUI's
peak RSS at 10,000 documents / ~103,000 chunks.

Usage::

    uv run python benchmarks/matrix_memory.py [--docs 10000] [--cache /tmp/memlens-tui-bench]
        [--rounds 2] [--no-tui] [--queries 6] [--json]

**Database.** The one of ``benchmarks/tui.py`` (built there and cached under ``--cache``:
the generated corpus, a 75/15-token chunker, the 384-d hashing embedder; 10,000 files ->
~103k chunks -> a 151 MiB float32 matrix). Vectors of the hashing embedder are as large
as any 384-d model's, which is all the memory figures depend on.

**load** (a fresh process per round): open the database, import numpy, open a read
transaction, read ``/proc/self/statm`` (the baseline RSS), run
:func:`memlens.core.search.vector_matrix.load`, then ``ru_maxrss``. Reported: the load's
peak over the baseline, its ratio to the matrix's own size (the floor: the matrix has to
be held), RSS after the load, wall and CPU time. Goal: peak <= 1.5x the matrix.

**tui** (a fresh process per round): the real ``MemlensApp`` (headless Textual, 140x45,
no ingest, no watcher) over the database; the search screen in vector mode, ``--queries``
queries typed (the second at an unchanged store starts the matrix load in the background),
the load awaited, one more query answered from the matrix. Reported: the process's peak
RSS (``ru_maxrss``), RSS at the end, the matrix's size and that the matrix served. Goal:
<= 300 MB.

Rounds alternate load / tui; each figure is given per round (the machine is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import tui  # noqa: E402  (benchmarks/tui.py: the database and the TUI harness)

LOAD_GOAL = 1.5
TUI_GOAL_MB = 300.0


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def probe_load(db: Path) -> dict[str, Any]:
    """One matrix load in this (fresh) process."""
    import numpy  # noqa: F401  (in the baseline: every vector path imports it)

    from memlens.core.search import engine as search_mod
    from memlens.core.search import vector_matrix as vm
    from memlens.core.store import db as dbm

    svc = tui._service(db)
    conn = dbm.connect(db, create=False)
    with dbm.read_txn(conn):
        space = search_mod.vector_space_for(conn, svc.embedder)
        assert space is not None
        base = _rss_mb()
        t0, c0 = time.perf_counter(), time.process_time()
        m = vm.load(conn, space, svc.embedder.dim, svc.embedder.metric)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = _maxrss_mb()
    matrix_mb = m.matrix.nbytes / 2**20
    out = {"rows": len(m.ids), "source": m.source, "matrix_mib": round(matrix_mb, 1),
           "baseline_rss_mb": round(base, 1), "peak_rss_mb": round(peak, 1),
           "load_peak_mb": round(peak - base, 1),
           "ratio_to_matrix": round((peak - base) / matrix_mb, 2),
           "rss_after_mb": round(_rss_mb(), 1),
           "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}
    conn.close()
    svc.close()
    return out


async def _probe_tui(db: Path, n_queries: int) -> dict[str, Any]:
    from textual.widgets import Input

    from memlens import bench
    from memlens.tui.app import MemlensApp
    from memlens.tui.screens.search import SearchScreen

    svc = tui._service(db)
    app = MemlensApp(svc, watch=False, ingest=False)
    app.animation_level = "none"
    tap = tui.FrameTap(*tui.SIZE)
    tap.install(app)
    queries = bench.generate_queries(n_queries + 1, seed=1)
    answered = 0
    async with app.run_test(size=tui.SIZE) as pilot:
        await tui._settled(app, pilot, tap)
        startup_rss = _rss_mb()
        await pilot.press("s")
        await tui._settled(app, pilot, tap)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        screen.set_mode("vector")
        box = screen.query_one("#search-input", Input)

        async def ask(q: str) -> None:
            nonlocal answered
            box.value = ""
            await tui._settled(app, pilot, tap)
            box.value = q
            await tui._settled(app, pilot, tap, quiet=0.3)
            answered += screen.last is not None and screen.last.query == q

        for q in queries[:n_queries]:
            await ask(q)
        cache = svc.vector_cache()
        await asyncio.get_running_loop().run_in_executor(None, cache.wait_loaded, 120.0)
        served0 = cache.served
        await ask(queries[n_queries])
        out = {"queries": n_queries + 1, "answered": answered,
               "startup_rss_mb": round(startup_rss, 1),
               "matrix_loads": cache.loads, "matrix_served": cache.served - served0,
               "matrix_mib": round(cache.nbytes() / 2**20, 1),
               "rss_end_mb": round(_rss_mb(), 1)}
    svc.close()
    # the kernel's high-water mark is synced lazily and can read a little below the RSS
    # just measured: the peak is at least that
    out["peak_rss_mb"] = round(max(_maxrss_mb(), float(out["rss_end_mb"])), 1)
    out["meets_goal"] = out["peak_rss_mb"] <= TUI_GOAL_MB
    return out


def _child(args: list[str]) -> dict[str, Any]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                          env=env)
    if done.returncode != 0:
        raise SystemExit(f"probe {args[0]} failed:\n{done.stderr.strip()}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/memlens-tui-bench"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--queries", type=int, default=6)
    ap.add_argument("--no-tui", action="store_true", help="only the matrix load")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--_load", metavar="DB", help=argparse.SUPPRESS)
    ap.add_argument("--_tui", nargs=2, metavar=("DB", "Q"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a._load:
        print(json.dumps(probe_load(Path(a._load))))
        return 0
    if a._tui:
        print(json.dumps(asyncio.run(_probe_tui(Path(a._tui[0]), int(a._tui[1])))))
        return 0
    db = tui.db_path(a.cache, a.docs)
    result: dict[str, Any] = {"docs": a.docs, "db": str(db), "load": [], "tui": []}
    if not db.exists():
        db.parent.mkdir(parents=True, exist_ok=True)
        result["build"] = tui.build(db, a.docs)
    result["uptime_before"] = Path("/proc/loadavg").read_text().split()[:3]
    for _ in range(a.rounds):
        result["load"].append(_child(["--_load", str(db)]))
        if not a.no_tui:
            result["tui"].append(_child(["--_tui", str(db), str(a.queries)]))
    result["uptime_after"] = Path("/proc/loadavg").read_text().split()[:3]
    loads = result["load"]
    result["load_ratio_max"] = max(r["ratio_to_matrix"] for r in loads)
    result["load_meets_goal"] = result["load_ratio_max"] <= LOAD_GOAL
    if result["tui"]:
        result["tui_peak_rss_max_mb"] = max(r["peak_rss_mb"] for r in result["tui"])
    if a.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"database: {db} (load average {' '.join(result['uptime_before'])})")
    for r in loads:
        print(f"load: {r['rows']} rows, matrix {r['matrix_mib']} MiB, peak +{r['load_peak_mb']} MB"
              f" = {r['ratio_to_matrix']}x the matrix (goal <= {LOAD_GOAL}x), after"
              f" {r['rss_after_mb']} MB RSS, {r['wall_s']} s wall / {r['cpu_s']} s CPU")
    for r in result["tui"]:
        print(f"tui: peak RSS {r['peak_rss_mb']} MB (goal <= {TUI_GOAL_MB:.0f}), end"
              f" {r['rss_end_mb']} MB, startup {r['startup_rss_mb']} MB, matrix"
              f" {r['matrix_mib']} MiB served {r['matrix_served']} of the last query")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
