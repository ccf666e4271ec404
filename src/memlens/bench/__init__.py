"""Retrieval and scale benchmarks behind ``memlens bench``.

Two kinds of run:

*Relevance run* (the default). For each chunking strategy and each embedder, the
corpus is ingested into a **fresh temporary database** (fixed clock, fixed install
key, so every figure except timings is deterministic) and projected; then every
labelled query of ``queries.jsonl`` is searched in each mode and judged:

* **document level**: a hit is relevant when its (repository, path) is the
  query's. Hits are **deduplicated by document before ranking** (the first
  occurrence of a document keeps its place, later chunks of it are dropped), so
  the ranks are document ranks.
* **section level**: a hit is relevant when it is in the right document *and*
  either the expected heading is one of its ``heading_path`` titles, or the
  expected heading's line lies inside the hit's character span. A query whose
  heading is null counts any hit of the right document. The list judged is the
  one a person sees: the engine's per-document cap (default 2 hits per
  document) applied to the ranked chunks.

The ranked chunk list comes from one engine call per (query, mode):
``search(..., k=FETCH_K, per_document=0)``. Ties in score keep the engine's order;
nothing here re-sorts. Metrics (means over queries): Hit@1, Hit@3, MRR (first
relevant hit within the top 10), nDCG@10 (binary gain; with one relevant target a
redundant second chunk of the same section earns nothing), Recall@5 (one relevant
target per query, so it equals Hit@5). A query whose answer document is absent
from the index scores 0 everywhere. ``ctx_tokens_top3`` is the mean estimated
token count (``ceil(chars / 4)``) of the top three hits: what an agent pays to
read them.

*Scale run* (``--generate N``): a synthetic corpus of N files with the real size
mix (log-normal, median about 1.5 KB, p90 about 4 KB, max 14 KB; front matter,
headings, lists, tables, code fences with ``#`` comment lines) is generated with a
fixed seed, ingested, and searched with generated queries to give ingest time,
index size and search latency (p50/p95 per mode). No relevance metrics there.

This package holds all of the logic; ``memlens.cli.bench`` only parses flags
and prints. No Textual, no rich here: progress is reported through a callback.

Modules (every public name is re-exported here, so ``from memlens.core import
bench`` then ``bench.run_bench(...)`` is the way in):

* :mod:`.common`: constants, :class:`BenchError`, the progress callback type;
* :mod:`.metrics`: strategies, ``queries.jsonl``, the metrics, section judging;
* :mod:`.embedders`: building and timing the embedders compared;
* :mod:`.harness`: fresh databases, ingest, index size, environment facts;
* :mod:`.run`: the relevance run (:func:`run_bench`);
* :mod:`.generate`: synthetic corpora and queries;
* :mod:`.scale`: the scale run (:func:`run_scale`);
* :mod:`.report`: Markdown rendering and report helpers.
"""

from __future__ import annotations

from memlens.bench.common import (
    BENCH_FORMAT,
    EVAL_K,
    FETCH_K,
    FIXED_EPOCH,
    FIXED_INSTALL_KEY,
    METRIC_LABELS,
    METRIC_NAMES,
    MODES,
    TIMING_SUFFIXES,
    BenchError,
    ProgressFn,
)
from memlens.bench.embedders import (
    DEFAULT_EMBEDDERS,
    EmbedderSlot,
    TimedEmbedder,
    resolve_embedders,
    tokenlearn_test_model,
)
from memlens.bench.generate import (
    GENERATOR_VERSION,
    GeneratedCorpus,
    generate_corpus,
    generate_queries,
    lognormal_sizes,
)
from memlens.bench.generate import _word as _word  # benchmarks/retention.py draws words with it
from memlens.bench.harness import FixedClock, display_path, environment, index_size, project_all
from memlens.bench.metrics import (
    DEFAULT_STRATEGIES,
    PRESETS,
    Query,
    Strategy,
    aggregate,
    dedupe_by_document,
    first_relevant_rank,
    heading_offsets,
    hit_at,
    load_queries,
    ndcg_at,
    parse_strategies,
    parse_strategy,
    percentile,
    query_metrics,
    recall_at,
    reciprocal_rank,
    section_relevant,
    split_list,
)
from memlens.bench.report import (
    NOTES_BEGIN,
    NOTES_END,
    extract_notes,
    render_markdown,
    seed_table,
    strip_timing,
)
from memlens.bench.run import BenchOptions, run_bench
from memlens.bench.scale import latency, run_scale

__all__ = [
    "BENCH_FORMAT",
    "DEFAULT_EMBEDDERS",
    "DEFAULT_STRATEGIES",
    "EVAL_K",
    "FETCH_K",
    "FIXED_EPOCH",
    "FIXED_INSTALL_KEY",
    "GENERATOR_VERSION",
    "METRIC_LABELS",
    "METRIC_NAMES",
    "MODES",
    "NOTES_BEGIN",
    "NOTES_END",
    "PRESETS",
    "TIMING_SUFFIXES",
    "BenchError",
    "BenchOptions",
    "EmbedderSlot",
    "FixedClock",
    "GeneratedCorpus",
    "ProgressFn",
    "Query",
    "Strategy",
    "TimedEmbedder",
    "aggregate",
    "dedupe_by_document",
    "display_path",
    "environment",
    "extract_notes",
    "first_relevant_rank",
    "generate_corpus",
    "generate_queries",
    "heading_offsets",
    "hit_at",
    "index_size",
    "latency",
    "load_queries",
    "lognormal_sizes",
    "ndcg_at",
    "parse_strategies",
    "parse_strategy",
    "percentile",
    "project_all",
    "query_metrics",
    "recall_at",
    "reciprocal_rank",
    "render_markdown",
    "resolve_embedders",
    "run_bench",
    "run_scale",
    "section_relevant",
    "seed_table",
    "split_list",
    "strip_timing",
    "tokenlearn_test_model",
]
