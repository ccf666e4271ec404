"""The relevance run: every labelled query judged per strategy, mode and embedder.

See the package docstring for how hits are judged at document and section level.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlens.bench import overlap as ov
from memlens.bench.common import BENCH_FORMAT, EVAL_K, FETCH_K, MODES, BenchError, ProgressFn
from memlens.bench.embedders import EmbedderSlot, TimedEmbedder, resolve_embedders
from memlens.bench.harness import (
    check_modes,
    display_path,
    environment,
    fresh_service,
    ingest_corpus,
    memory_roots,
    work_folder,
)
from memlens.bench.metrics import (
    DEFAULT_STRATEGIES,
    PRESETS,
    Query,
    Strategy,
    aggregate,
    dedupe_by_document,
    first_relevant_rank,
    heading_offsets,
    load_queries,
    percentile,
    query_metrics,
    section_relevant,
)
from memlens.bench.report import seed_table
from memlens.core.embedders.registry import Embedder
from memlens.core.search import engine as search_mod
from memlens.core.types import MemoryRoot, SearchSettings


def _judge(svc: Any, queries: Sequence[Query], mode: str, embedder: Embedder | None,
           per_document: int, offsets: Mapping[str, list[int]], progress: ProgressFn | None,
           label: str) -> dict[str, Any]:
    conn = svc.conn()
    doc_rows: list[dict[str, float]] = []
    sec_rows: list[dict[str, float]] = []
    by_kind_doc: dict[str, list[dict[str, float]]] = {}
    by_kind_sec: dict[str, list[dict[str, float]]] = {}
    per_query: list[dict[str, Any]] = []
    ctx: list[int] = []
    base, _, fusion = mode.partition("-")
    options = SearchSettings().fusion_options(embedder.name if embedder is not None else None)
    if fusion:
        options["fusion"] = fusion
    for q in queries:
        res = search_mod.search(conn, q.query, mode=base, embedder=embedder, k=FETCH_K,
                                per_document=0, fusion_options=options)
        hits = res.hits
        docs = dedupe_by_document(hits)[:EVAL_K]
        doc_rel = [h.repository == q.repository and h.path == q.path for h in docs]
        shown = search_mod.diversify(hits, per_document)[:EVAL_K]
        sec_rel = [section_relevant(h, q, offsets.get(q.id, [])) for h in shown]
        dm = query_metrics(doc_rel)
        sm = query_metrics(sec_rel)
        doc_rows.append(dm)
        sec_rows.append(sm)
        by_kind_doc.setdefault(q.kind, []).append(dm)
        by_kind_sec.setdefault(q.kind, []).append(sm)
        ctx.append(sum((h.end_char - h.start_char + 3) // 4 for h in shown[:3]))
        per_query.append({"id": q.id, "doc_rank": first_relevant_rank(doc_rel),
                          "section_rank": first_relevant_rank(sec_rel)})
        if progress is not None:
            progress(label, 1)
    return {
        "doc": {"overall": aggregate(doc_rows),
                "by_kind": {k: aggregate(v) for k, v in by_kind_doc.items()}},
        "section": {"overall": aggregate(sec_rows),
                    "by_kind": {k: aggregate(v) for k, v in by_kind_sec.items()}},
        "ctx_tokens_top3": round(statistics.fmean(ctx), 1) if ctx else 0.0,
        "queries": per_query,
    }


def _locate_targets(svc: Any, queries: Sequence[Query]) -> tuple[dict[str, list[int]], list[str]]:
    offsets: dict[str, list[int]] = {}
    notes: list[str] = []
    cache: dict[tuple[str, str], str | None] = {}
    for q in queries:
        key = (q.repository, q.path)
        if key not in cache:
            doc = svc.locate(q.repository, q.path)
            cache[key] = None if doc is None or doc.tombstoned else doc.content
        text = cache[key]
        if text is None:
            notes.append(f"{q.id}: answer document {q.repository}/{q.path} is not in the corpus "
                         "(scores 0)")
            continue
        if q.heading is not None:
            offs = heading_offsets(text, q.heading)
            if not offs:
                notes.append(f"{q.id}: heading {q.heading!r} not found in {q.path}; only "
                             "heading paths can match")
            offsets[q.id] = offs
    return offsets, notes


# ---------------------------------------------------------------------------
# The relevance run


@dataclass
class BenchOptions:
    """What :func:`run_bench` measures.

    Attributes:
        corpus: A folder of Claude project folders (``<slug>/memory/``) or one memory folder.
        queries: ``queries.jsonl`` with expected answers.
        strategies: Strategies to compare.
        modes: Search modes (``lexical``, ``vector``, ``hybrid``).
        embedders: Embedder names, or None for every one available.
        embedder_options: Per-name options for :func:`make_embedder`.
        per_document: The engine's per-document cap for section-level lists (0 = none).
        workdir: Where the temporary databases go (default: a fresh temp folder, removed).
        command: The command line to record in the report.
    """

    corpus: Path
    queries: Path
    strategies: list[Strategy] = field(default_factory=lambda: [PRESETS[s] for s in
                                                                DEFAULT_STRATEGIES])
    modes: list[str] = field(default_factory=lambda: list(MODES))
    embedders: list[str] | None = None
    embedder_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    per_document: int = 2
    workdir: Path | None = None
    command: str = ""


def _corpus_stats(roots: Sequence[MemoryRoot]) -> dict[str, Any]:
    sizes: list[int] = []
    for r in roots:
        for p in sorted(r.path.rglob("*")):
            if p.is_file() and p.suffix.lower() in (".md", ".markdown"):
                sizes.append(p.stat().st_size)
    return {"projects": len(roots), "files": len(sizes), "bytes": sum(sizes),
            "median_bytes": int(statistics.median(sizes)) if sizes else 0,
            "p90_bytes": int(percentile(sizes, 90)), "max_bytes": max(sizes, default=0)}


def _select_embedders(opts: BenchOptions, modes: Sequence[str]
                      ) -> tuple[list[EmbedderSlot], list[EmbedderSlot]]:
    """Resolve the requested embedders; returns (every slot, the usable ones to run).

    A lexical-only run needs one projection, so only the first embedder is used.

    Raises:
        BenchError: When no embedder is available.
    """
    needs_vectors = any(m != "lexical" for m in modes)
    names = opts.embedders
    if names is not None and not needs_vectors:
        names = names[:1]  # lexical only: one projection is enough
    slots = resolve_embedders(names, opts.embedder_options)
    usable = [s for s in slots if s.embedder is not None]
    if not usable:
        raise BenchError("no embedder is available: " + "; ".join(
            f"{s.name}: {s.reason}" for s in slots))
    if not needs_vectors:
        usable = usable[:1]
    return slots, usable


def _work_units(n_strategies: int, n_embedders: int, n_queries: int,
                modes: Sequence[str]) -> int:
    """Progress units: one per ingest plus one per judged query (lexical once per strategy)."""
    units = n_strategies * n_embedders  # one per ingest
    for i in range(n_embedders):
        units += n_strategies * n_queries * sum(
            1 for m in modes if (m != "lexical" or i == 0))
    return units


def _judge_mode(svc: Any, run: Mapping[str, Any], strategy: Strategy, slot_name: str,
                timed: TimedEmbedder, queries: Sequence[Query], mode: str, opts: BenchOptions,
                offsets: Mapping[str, list[int]], progress: ProgressFn | None,
                label: str) -> dict[str, Any]:
    """One result row: ``queries`` judged in ``mode``, with search and embed timings."""
    timed.reset()
    t = time.perf_counter()
    judged = _judge(svc, queries, mode, None if mode == "lexical" else timed,
                    opts.per_document, offsets, progress, f"{mode} {label}")
    elapsed = time.perf_counter() - t
    row: dict[str, Any] = {
        "strategy": strategy.label, "mode": mode,
        "embedder": None if mode == "lexical" else slot_name,
        "chunks": run["chunks"], "index_bytes": run["index_bytes"]}
    row.update(judged)
    row["search_ms"] = round(1000 * elapsed / len(queries), 3)
    if mode != "lexical":
        row["query_embed_ms"] = round(
            1000 * timed.query_seconds / max(1, timed.queries), 3)
    return row


def _judge_modes(svc: Any, run: Mapping[str, Any], strategy: Strategy, slot_name: str,
                 first_embedder: bool, timed: TimedEmbedder, queries: Sequence[Query],
                 modes: Sequence[str], opts: BenchOptions, offsets: Mapping[str, list[int]],
                 progress: ProgressFn | None, label: str) -> list[dict[str, Any]]:
    """The result rows of one strategy x embedder, one per mode.

    Lexical results do not depend on the embedder, so they are measured with the
    first embedder only; a failed projection gives an error row for vector modes.
    """
    results: list[dict[str, Any]] = []
    for mode in modes:
        if mode == "lexical" and not first_embedder:
            continue
        if run.get("projection_failed") and mode != "lexical":
            results.append({"strategy": strategy.label, "mode": mode, "embedder": slot_name,
                            "error": run.get("projection_error")})
            continue
        results.append(_judge_mode(svc, run, strategy, slot_name, timed, queries, mode, opts,
                                   offsets, progress, label))
    return results


def _run_all(opts: BenchOptions, usable: Sequence[EmbedderSlot], roots: Sequence[MemoryRoot],
             queries: Sequence[Query], modes: Sequence[str], progress: ProgressFn | None
             ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """Ingest and judge every strategy x embedder; returns (runs, results, notes)."""
    runs: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    notes: list[str] = []
    offsets: dict[str, list[int]] | None = None
    with work_folder(opts.workdir) as work:
        for st in opts.strategies:
            for ei, slot in enumerate(usable):
                assert slot.embedder is not None
                timed = TimedEmbedder(slot.embedder)
                label = f"{st.label} / {slot.name}"
                with fresh_service(work, f"{st.label}-{slot.name}", st.config, timed) as svc:
                    run = {"strategy": st.label, "config": st.config.canonical_json(),
                           "embedder": slot.name}
                    run.update(ingest_corpus(svc, roots, timed))
                    runs.append(run)
                    if progress is not None:
                        progress(f"ingest {label}", 1)
                    if offsets is None:  # stored text is the same for every strategy
                        offsets, notes = _locate_targets(svc, queries)
                        notes = notes or ["all answer documents and expected headings were "
                                          "found in the stored text"]
                    results += _judge_modes(svc, run, st, slot.name, ei == 0, timed, queries,
                                            modes, opts, offsets, progress, label)
    return runs, results, notes


def _queries_summary(path: Path, queries: Sequence[Query], corpus: Path) -> dict[str, Any]:
    """The report's ``queries`` block: path, count, count per kind (first-seen order),
    and per kind the content-word overlap of the questions with their answer documents
    (:mod:`memlens.bench.overlap`: mean, and how many questions are over 0.30), so
    a set whose "paraphrases" reuse the answer's words shows itself."""
    kinds: list[str] = []
    for q in queries:
        if q.kind not in kinds:
            kinds.append(q.kind)
    vocab: dict[tuple[str, str], frozenset[str] | None] = {}
    per_kind: dict[str, list[float | None]] = {k: [] for k in kinds}
    for q in queries:
        key = (q.repository, q.path)
        if key not in vocab:
            try:
                text = (corpus / q.repository / "memory" / q.path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = None  # a missing answer is reported by _locate_targets
            vocab[key] = None if text is None else ov.word_set(text)
        words = vocab[key]
        per_kind[q.kind].append(None if words is None else ov.overlap(q.query, words))
    overlap = {}
    for k, vals in per_kind.items():
        m = ov.mean(vals)
        overlap[k] = {"mean": None if m is None else round(m, 3),
                      "over_0_30": sum(1 for v in vals if v is not None and v > 0.30)}
    return {"path": display_path(path), "count": len(queries),
            "kinds": {k: sum(1 for q in queries if q.kind == k) for k in kinds},
            "null_heading": sum(1 for q in queries if q.heading is None),
            "overlap": overlap}


def _add_embed_totals(embedders_json: Sequence[dict[str, Any]], slots: Sequence[EmbedderSlot],
                      runs: Sequence[Mapping[str, Any]]) -> None:
    """Add each usable embedder's total embedding time and per-chunk cost over its runs."""
    for s_json, slot in zip(embedders_json, slots, strict=True):
        if slot.embedder is None:
            continue
        erun = [r for r in runs if r["embedder"] == slot.name]
        secs = sum(r["embed_seconds"] for r in erun)
        texts = sum(r["embedded_texts"] for r in erun)
        s_json["embed_seconds"] = round(secs, 4)
        s_json["embedded_texts"] = texts
        s_json["embed_per_chunk_ms"] = round(1000 * secs / texts, 4) if texts else 0.0


def run_bench(opts: BenchOptions, progress: ProgressFn | None = None,
              total: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Run the relevance benchmark.

    Every strategy x usable embedder ingests the corpus into a fresh database, then
    every query is judged in every mode (lexical once per strategy).

    Args:
        opts: What to measure.
        progress: Called with (description, advance) as work completes.
        total: Called once with the number of work units before any work.

    Returns:
        The JSON-ready report (see ``docs/benchmarks.md`` for the shape).

    Raises:
        BenchError: Bad corpus, queries, modes or strategies, or no usable embedder.
    """
    modes = check_modes(opts.modes)
    queries = load_queries(opts.queries)
    roots = memory_roots(opts.corpus)
    if not roots:
        raise BenchError(f"{opts.corpus}: no memory folders")
    if progress is not None:
        progress("loading embedders", 0)
    slots, usable = _select_embedders(opts, modes)
    if total is not None:
        total(_work_units(len(opts.strategies), len(usable), len(queries), modes))

    runs, results, notes = _run_all(opts, usable, roots, queries, modes, progress)
    report: dict[str, Any] = {
        "format": BENCH_FORMAT,
        "kind": "relevance",
        "command": opts.command,
        "corpus": {"path": display_path(opts.corpus), **_corpus_stats(roots)},
        "queries": _queries_summary(opts.queries, queries, opts.corpus),
        "settings": {"modes": modes, "eval_k": EVAL_K, "fetch_k": FETCH_K,
                     "per_document": opts.per_document, "clock": "fixed",
                     "install_key": "fixed", "doc_level": "hits deduplicated by document "
                     "(first occurrence) before ranking"},
        "strategies": [st.as_json() for st in opts.strategies],
        "embedders": [s.as_json() for s in slots],
        "runs": runs,
        "results": results,
        "seed_table": seed_table(opts.strategies, runs, results),
        "notes": notes,
        "environment": environment(slots),
    }
    _add_embed_totals(report["embedders"], slots, runs)
    return report
