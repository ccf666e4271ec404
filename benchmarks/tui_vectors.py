"""Event-loop stalls of the TUI while its worker computes vectors (issue 37), and the time
to the first lexical hit / to all vectors from the app's start.

Usage::

    uv run python benchmarks/tui_vectors.py [--files 165] [--embedder minilm] [--json]

Writes a generated corpus (:func:`memlens.bench.generate_corpus`, ``--files`` files,
plus a one-line ``good.md`` with a probe word) and starts ``MemlensApp`` under Textual's
Pilot (headless, 140x45) with the startup ingest on and the watcher off, on an empty
database: the app's startup worker ingests durably, makes every batch searchable by its
words (stage 1), then computes the vectors in slices (stage 2). Meanwhile a 5 ms asyncio
ticker on the app's event loop measures how late it wakes up (a stall is the loop blocked:
by the app, or by the worker holding the interpreter lock), and a second service in this
process polls the database every 50 ms (lexical search for the probe; documents waiting
for vectors).

Reported: ``first_hit_s`` and ``all_vectors_s`` from the app's start; the ticker's
longest lateness (``max_stall_ms``), its 99th percentile and the count over 50 ms, for the
whole run and for the stage-2 part alone (from the first lexical hit on); process CPU.
Target: no stall over 50 ms from the embedding worker.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

PROBE = "quokkaprobe"


async def run(files: int, embedder: str) -> dict[str, Any]:
    from memlens.bench import generate_corpus
    from memlens.core.config.settings import load_settings
    from memlens.core.embedders.registry import make_embedder
    from memlens.core.service import MemoryService
    from memlens.tui.app import MemlensApp

    work = Path(tempfile.mkdtemp(prefix="memlens-tui-vectors-"))
    generate_corpus(work / "claude", files, seed=0)
    (work / "claude" / "-home-dev-gen-p0000" / "memory" / "good.md").write_text(
        f"# Good\n\nThe {PROBE} fact.\n", encoding="utf-8")
    db = work / "m.db"

    def service() -> MemoryService:
        settings = load_settings(work / "none.toml", env={}, overrides={"db": str(db)})
        return MemoryService(settings, embedder=make_embedder(embedder, {}),
                             install_key=b"k" * 32)

    app_svc = service()
    roots = app_svc.resolve_roots([work / "claude"])
    app = MemlensApp(app_svc, watch=False, ingest=True, roots=roots)
    lateness: list[tuple[float, float]] = []
    marks: dict[str, float | None] = {"first_hit_s": None, "all_vectors_s": None}
    t0 = time.perf_counter()
    c0 = time.process_time()
    async with app.run_test(size=(140, 45)) as pilot:
        reader = service()

        async def tick() -> None:
            last = time.perf_counter()
            while True:
                await asyncio.sleep(0.005)
                now = time.perf_counter()
                lateness.append((now - t0, now - last - 0.005))
                last = now

        ticker = asyncio.get_running_loop().create_task(tick())
        deadline = time.perf_counter() + 600
        while time.perf_counter() < deadline:
            await pilot.pause(0.05)
            now = time.perf_counter() - t0
            try:
                hits = reader.search(PROBE, mode="lexical").hits
                waiting = reader.vectors_waiting()
                queued = reader.queued_document_ids()
            except Exception:
                continue
            if marks["first_hit_s"] is None and any(h.path == "good.md" for h in hits):
                marks["first_hit_s"] = now
            if marks["first_hit_s"] is not None and waiting == 0 and not queued:
                marks["all_vectors_s"] = now
                break
        ticker.cancel()
        reader.close()
    cpu = time.process_time() - c0

    def summary(vals: list[float]) -> dict[str, Any]:
        if not vals:
            return {"n": 0}
        ms = sorted(v * 1000 for v in vals)
        return {"n": len(ms), "max_stall_ms": round(ms[-1], 1),
                "p99_ms": round(ms[int(0.99 * (len(ms) - 1))], 1),
                "median_ms": round(statistics.median(ms), 2),
                "over_50ms": sum(1 for v in ms if v > 50)}

    first = marks["first_hit_s"] or 0.0
    return {"files": files + 1, "embedder": embedder, **{k: (round(v, 2) if v else v)
                                                          for k, v in marks.items()},
            "cpu_s": round(cpu, 2), "stalls_all": summary([v for _, v in lateness]),
            "stalls_stage2": summary([v for t, v in lateness if t >= first]),
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--files", type=int, default=165)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = asyncio.run(run(args.files, args.embedder))
    print(json.dumps(out, indent=None if not args.json else 2))


if __name__ == "__main__":
    main()
