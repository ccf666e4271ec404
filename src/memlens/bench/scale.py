"""The scale run: generated corpora of growing size, ingest time, index size, latency."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memlens.bench.common import BENCH_FORMAT, EVAL_K, BenchError, ProgressFn
from memlens.bench.embedders import EmbedderSlot, TimedEmbedder, resolve_embedders
from memlens.bench.generate import GeneratedCorpus, generate_corpus, generate_queries
from memlens.bench.harness import (
    check_modes,
    environment,
    fresh_service,
    ingest_corpus,
    memory_roots,
    work_folder,
)
from memlens.bench.metrics import Strategy, percentile
from memlens.core.types import MemoryRoot


def latency(svc: Any, queries: Sequence[str], modes: Sequence[str], *, k: int = EVAL_K,
            warmup: int = 5) -> dict[str, dict[str, float]]:
    """p50/p95/mean search latency in ms per mode, through the service's search."""
    out: dict[str, dict[str, float]] = {}
    for mode in modes:
        for q in queries[:warmup]:
            svc.search(q, mode=mode, k=k)
        times: list[float] = []
        for q in queries:
            t = time.perf_counter()
            svc.search(q, mode=mode, k=k)
            times.append(1000 * (time.perf_counter() - t))
        out[mode] = {"p50_ms": round(percentile(times, 50), 3),
                     "p95_ms": round(percentile(times, 95), 3),
                     "mean_ms": round(statistics.fmean(times), 3), "n": float(len(times))}
    return out


def run_scale(sizes: Sequence[int], strategies: Sequence[Strategy], modes: Sequence[str],
              embedders: Sequence[str] | None = None, *,
              embedder_options: Mapping[str, Mapping[str, Any]] | None = None,
              seed: int = 0, n_queries: int = 60, workdir: Path | None = None,
              command: str = "", progress: ProgressFn | None = None,
              total: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Scale runs over generated corpora: ingest time, index size, search latency.

    Args:
        sizes: File counts to generate (e.g. 100, 1000, 10000).
        strategies: Chunking strategies to ingest with.
        modes: Search modes to time.
        embedders: Embedder names (default: every available one).
        embedder_options: Per-name options.
        seed: Generator seed.
        n_queries: Generated queries timed per mode.
        workdir: Where corpora and databases go (default: a temp folder, removed).
        command: Command line to record.
        progress: Progress callback (description, advance).
        total: Called once with the number of work units.

    Returns:
        The JSON-ready report with one ``scale`` row per size x strategy x embedder.
    """
    modes = check_modes(modes)
    if any(n < 1 for n in sizes):
        raise BenchError("--generate sizes must be positive")
    slots = resolve_embedders(embedders, embedder_options)
    usable = [s for s in slots if s.embedder is not None]
    if not usable:
        raise BenchError("no embedder is available")
    queries = generate_queries(n_queries)
    if total is not None:
        total(len(sizes) * len(strategies) * len(usable) * 2)
    rows: list[dict[str, Any]] = []
    with work_folder(workdir) as work:
        for n in sizes:
            cdir = work / f"gen-{n}-{seed}"
            gen = _scale_corpus(cdir, n, seed)
            roots = memory_roots(cdir)
            for st in strategies:
                for slot in usable:
                    rows.append(_scale_row(work, n, gen, roots, st, slot, queries, modes,
                                           progress))
    return {"format": BENCH_FORMAT, "kind": "scale", "command": command,
            "settings": {"modes": list(modes), "seed": seed, "queries": n_queries, "k": EVAL_K},
            "strategies": [s.as_json() for s in strategies],
            "embedders": [s.as_json() for s in slots], "scale": rows,
            "environment": environment(slots)}


def _scale_corpus(cdir: Path, n: int, seed: int) -> GeneratedCorpus:
    """Generate the corpus of ``n`` files in ``cdir``, or describe the one already there."""
    if not cdir.exists():
        return generate_corpus(cdir, n, seed=seed)
    # reuse a corpus generated earlier in the same workdir
    files = [p for p in cdir.rglob("*.md")]
    return GeneratedCorpus(cdir, len(files), sum(p.stat().st_size for p in files),
                           len(list(cdir.iterdir())), seed)


def _rescan_seconds(svc: Any, roots: Sequence[MemoryRoot]) -> float:
    """Median time of three start-ups at an unchanged store (one is a few ms, noisy)."""
    rescans = []
    for _ in range(3):
        t = time.perf_counter()
        svc.start_up(roots)
        rescans.append(time.perf_counter() - t)
    return statistics.median(rescans)


def _scale_row(work: Path, n: int, gen: GeneratedCorpus, roots: Sequence[MemoryRoot],
               st: Strategy, slot: EmbedderSlot, queries: Sequence[str], modes: Sequence[str],
               progress: ProgressFn | None) -> dict[str, Any]:
    """One ``scale`` row: ingest, rescan and search latency of one size x strategy x embedder."""
    assert slot.embedder is not None
    timed = TimedEmbedder(slot.embedder)
    label = f"{n} files / {st.label} / {slot.name}"
    with fresh_service(work, f"scale-{n}-{st.label}-{slot.name}", st.config, timed) as svc:
        run = ingest_corpus(svc, roots, timed)
        if progress is not None:
            progress(f"ingest {label}", 1)
        rescan = _rescan_seconds(svc, roots)
        lat = latency(svc, queries, modes)
        if progress is not None:
            progress(f"search {label}", 1)
    row: dict[str, Any] = {"files": n, "strategy": st.label,
                           "config": st.config.canonical_json(),
                           "embedder": slot.name, "corpus": gen.as_json()}
    row.update(run)
    row["files_per_s"] = round(n / run["total_seconds"], 1) if run["total_seconds"] else 0.0
    row["rescan_seconds"] = round(rescan, 4)
    row["rescan_files_per_s"] = round(n / rescan, 1) if rescan else 0.0
    row["latency"] = lat
    return row
