"""Constants, the progress callback type and the error shared by every bench module."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Final

from memlens.core.search import engine as search_mod

BENCH_FORMAT: Final = 1
"""Version of the JSON shape produced by :func:`run_bench` / :func:`run_scale`."""

FETCH_K: Final = 50
"""Chunks fetched per (query, mode) before judging."""

EVAL_K: Final = 10
"""Depth of every ranked list judged (MRR@10, nDCG@10)."""

FIXED_EPOCH: Final = 1_750_000_000.0
FIXED_INSTALL_KEY: Final = hashlib.sha256(b"memlens-bench").digest()

METRIC_NAMES: Final = ("hit1", "hit3", "mrr", "ndcg10", "recall5")
"""Keys of a metric block, in display order."""

METRIC_LABELS: Final = {"hit1": "Hit@1", "hit3": "Hit@3", "mrr": "MRR", "ndcg10": "nDCG@10",
                        "recall5": "R@5"}

MODES: Final = search_mod.MODES

TIMING_SUFFIXES: Final = ("_seconds", "_ms", "_per_s")
"""JSON keys ending with these hold timings (they vary run to run)."""

ProgressFn = Callable[[str, int], None]
"""``progress(description, advance)``; a total is announced once with advance 0."""


class BenchError(Exception):
    """A benchmark request that cannot run (bad strategy, missing corpus...)."""
