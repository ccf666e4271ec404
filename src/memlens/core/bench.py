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

This module holds all of the logic; ``memlens.tui.cli_bench`` only parses flags
and prints. No Textual, no rich here: progress is reported through a callback.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import importlib.metadata
import json
import math
import os
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.util import find_spec
from itertools import accumulate
from pathlib import Path
from typing import Any, Final

import apsw
import numpy as np
import numpy.typing as npt

from . import search as search_mod
from .chunking import ChunkerConfig, ChunkerConfigError, chunk_markdown
from .config import load_settings
from .embedding import Embedder, EmbeddingError, make_embedder
from .search import SearchHit
from .sources import MemoryRoot, UsageError, roots_for_path

__all__ = [
    "BENCH_FORMAT",
    "DEFAULT_EMBEDDERS",
    "DEFAULT_STRATEGIES",
    "FETCH_K",
    "GENERATOR_VERSION",
    "METRIC_NAMES",
    "PRESETS",
    "BenchError",
    "BenchOptions",
    "EmbedderSlot",
    "FixedClock",
    "Query",
    "Strategy",
    "TimedEmbedder",
    "aggregate",
    "dedupe_by_document",
    "display_path",
    "first_relevant_rank",
    "generate_corpus",
    "generate_queries",
    "heading_offsets",
    "hit_at",
    "index_size",
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
    "split_list",
    "strip_timing",
]

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


# ---------------------------------------------------------------------------
# Strategies


@dataclass(frozen=True)
class Strategy:
    """A named chunker configuration.

    Attributes:
        label: Short name used in tables (``windows-48-12``).
        config: The chunker configuration; its canonical JSON is reported.
        seed_label: The spike's wording for this strategy, if it is one of the spike's.
    """

    label: str
    config: ChunkerConfig
    seed_label: str | None = None

    def as_json(self) -> dict[str, Any]:
        """``{"label", "config"}`` with the config as canonical chunker JSON."""
        return {"label": self.label, "config": self.config.canonical_json()}


PRESETS: Final[dict[str, Strategy]] = {
    "whole": Strategy("whole", ChunkerConfig(strategy="whole"), "Whole file"),
    "headings": Strategy("headings", ChunkerConfig(strategy="headings"), "Markdown headings"),
    "windows-48-12": Strategy("windows-48-12",
                              ChunkerConfig(strategy="windows", max_tokens=48, overlap_tokens=12),
                              "48-token windows with 12-token overlap"),
    "adaptive-400-80": Strategy("adaptive-400-80",
                                ChunkerConfig(strategy="adaptive", max_tokens=400,
                                              overlap_tokens=80),
                                "Adaptive (headings, then 400/80 windows)"),
}
"""Named strategies: the spike's three plus the adaptive default."""

DEFAULT_STRATEGIES: Final = ("whole", "headings", "windows-48-12", "adaptive-400-80")

_SPEC_RE = re.compile(r"^(adaptive|headings|windows|whole)(?:[:\-](\d+)[:\-](\d+))?$")


def split_list(text: str) -> list[str]:
    """Split a comma list, keeping commas inside ``{...}`` (inline JSON configs).

    Args:
        text: e.g. ``whole,windows:96:24,{"strategy":"adaptive","max_tokens":200}``.

    Returns:
        The stripped, non-empty items.
    """
    items: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            items.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    items.append("".join(cur).strip())
    return [i for i in items if i]


def parse_strategy(spec: str) -> Strategy:
    """Parse one strategy spec.

    Accepted forms: a preset name (``whole``, ``headings``, ``windows-48-12``,
    ``adaptive-400-80``); ``KIND:MAX:OVERLAP`` or ``KIND-MAX-OVERLAP``
    (``windows:96:24``, ``adaptive:200:40``); a bare kind (chunker defaults,
    400/80); or a chunker JSON object as printed in a report's ``config`` field.

    Args:
        spec: The spec text.

    Returns:
        The strategy.

    Raises:
        BenchError: If the spec is not understood or the config is invalid.
    """
    s = spec.strip()
    if s in PRESETS:
        return PRESETS[s]
    try:
        if s.startswith("{"):
            cfg = ChunkerConfig.from_json(s)
            return _named(cfg)
        m = _SPEC_RE.match(s)
        if m is None:
            raise BenchError(
                f"unknown strategy {spec!r}; use one of {', '.join(PRESETS)}, "
                "KIND:MAX:OVERLAP (e.g. windows:96:24, adaptive:200:40) or a chunker JSON object")
        kind, mx, ov = m.group(1), m.group(2), m.group(3)
        if mx is None:
            cfg = ChunkerConfig(strategy=kind)
        else:
            cfg = ChunkerConfig(strategy=kind, max_tokens=int(mx), overlap_tokens=int(ov))
    except ChunkerConfigError as exc:
        raise BenchError(f"strategy {spec!r}: {exc}") from None
    return _named(cfg)


def _named(cfg: ChunkerConfig) -> Strategy:
    for preset in PRESETS.values():
        if preset.config == cfg:
            return preset
    if cfg.strategy in ("whole", "headings"):
        label = cfg.strategy
    else:
        label = f"{cfg.strategy}-{cfg.max_tokens}-{cfg.overlap_tokens}"
    if cfg.estimator != "chars4":
        label += f"-{cfg.estimator}"
    if cfg.index_names != ("MEMORY.md",):
        label += "-idx" + hashlib.sha256(",".join(cfg.index_names).encode()).hexdigest()[:4]
    return Strategy(label, cfg)


def parse_strategies(text: str | Sequence[str]) -> list[Strategy]:
    """Parse a comma list (or a sequence) of strategy specs; duplicates are dropped.

    Raises:
        BenchError: On the first bad spec, or when the list is empty.
    """
    specs = split_list(text) if isinstance(text, str) else [s for s in text if s.strip()]
    out: list[Strategy] = []
    seen: set[str] = set()
    for spec in specs:
        st = parse_strategy(spec)
        key = st.config.canonical_json()
        if key not in seen:
            seen.add(key)
            out.append(st)
    if not out:
        raise BenchError("no strategy given")
    return out


# ---------------------------------------------------------------------------
# Queries


@dataclass(frozen=True)
class Query:
    """One labelled query of ``queries.jsonl``."""

    id: str
    query: str
    kind: str
    repository: str
    path: str
    heading: str | None


def load_queries(path: Path) -> list[Query]:
    """Read ``queries.jsonl``: one object per line with id, query, kind, repository,
    path and heading (null allowed).

    Raises:
        BenchError: If the file is missing or a line is malformed (line number given).
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise BenchError(f"{path}: cannot read queries ({exc.strerror or exc})") from None
    out: list[Query] = []
    ids: set[str] = set()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except ValueError as exc:
            raise BenchError(f"{path}:{n}: not valid JSON ({exc})") from None
        if not isinstance(d, dict):
            raise BenchError(f"{path}:{n}: expected a JSON object")
        missing = [k for k in ("id", "query", "kind", "repository", "path") if
                   not isinstance(d.get(k), str) or not d.get(k)]
        if missing:
            raise BenchError(f"{path}:{n}: missing or empty field(s): {', '.join(missing)}")
        heading = d.get("heading")
        if heading is not None and not isinstance(heading, str):
            raise BenchError(f"{path}:{n}: heading must be a string or null")
        if d["id"] in ids:
            raise BenchError(f"{path}:{n}: duplicate id {d['id']!r}")
        ids.add(d["id"])
        out.append(Query(d["id"], d["query"], d["kind"], d["repository"], d["path"], heading))
    if not out:
        raise BenchError(f"{path}: no queries")
    return out


# ---------------------------------------------------------------------------
# Metrics (pure functions over ranked relevance lists)


def first_relevant_rank(relevant: Sequence[bool], k: int = EVAL_K) -> int | None:
    """1-based rank of the first relevant item within the top ``k``, or None."""
    for i, r in enumerate(relevant[:k], 1):
        if r:
            return i
    return None


def hit_at(relevant: Sequence[bool], k: int) -> float:
    """1.0 if a relevant item is in the top ``k``, else 0.0."""
    return 1.0 if any(relevant[:k]) else 0.0


def reciprocal_rank(relevant: Sequence[bool], k: int = EVAL_K) -> float:
    """1 / rank of the first relevant item in the top ``k`` (0.0 when there is none)."""
    r = first_relevant_rank(relevant, k)
    return 0.0 if r is None else 1.0 / r


def ndcg_at(relevant: Sequence[bool], k: int = EVAL_K, n_relevant: int = 1) -> float:
    """Binary-gain nDCG@k.

    Args:
        relevant: Relevance of each ranked item, in engine order.
        k: Cut-off.
        n_relevant: How many relevant items exist in all (the ideal ranking puts
            ``min(n_relevant, k)`` of them first). Gains beyond ``n_relevant``
            relevant items are ignored, so the result never exceeds 1.

    Returns:
        DCG / ideal DCG, or 0.0 when ``n_relevant`` is 0.
    """
    if n_relevant <= 0:
        return 0.0
    dcg = 0.0
    found = 0
    for i, r in enumerate(relevant[:k], 1):
        if r and found < n_relevant:
            dcg += 1.0 / math.log2(i + 1)
            found += 1
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(n_relevant, k) + 1))
    return dcg / ideal


def recall_at(relevant: Sequence[bool], k: int, n_relevant: int = 1) -> float:
    """Share of the ``n_relevant`` relevant items found in the top ``k`` (capped at 1)."""
    if n_relevant <= 0:
        return 0.0
    return min(1.0, sum(1 for r in relevant[:k] if r) / n_relevant)


def query_metrics(relevant: Sequence[bool]) -> dict[str, float]:
    """All metrics of one query with a single relevant target.

    Only the first relevant item earns gain: further relevant items (a second
    chunk of the same section) are redundant.
    """
    first = first_relevant_rank(relevant, len(relevant))
    single = [i + 1 == first for i in range(len(relevant))]
    return {
        "hit1": hit_at(single, 1),
        "hit3": hit_at(single, 3),
        "mrr": reciprocal_rank(single, EVAL_K),
        "ndcg10": ndcg_at(single, EVAL_K, 1),
        "recall5": recall_at(single, 5, 1),
    }


def aggregate(per_query: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Mean of each metric over queries (0.0 for an empty list), rounded to 4 places."""
    out: dict[str, float] = {}
    for m in METRIC_NAMES:
        vals = [q[m] for q in per_query]
        out[m] = round(sum(vals) / len(vals), 4) if vals else 0.0
    out["n"] = float(len(per_query))
    return out


def dedupe_by_document(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """Keep the first hit of each (repository, path), preserving engine order."""
    seen: set[tuple[str, str]] = set()
    out: list[SearchHit] = []
    for h in hits:
        key = (h.repository, h.path)
        if key not in seen:
            seen.add(key)
            out.append(h)
    return out


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (``p`` in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    s = sorted(values)
    rank = max(1, math.ceil(p / 100.0 * len(s)))
    return s[min(rank, len(s)) - 1]


# ---------------------------------------------------------------------------
# Section judging


def _norm(title: str) -> str:
    return " ".join(title.split()).casefold()


_ATX_RE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT_RE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")


def heading_offsets(text: str, heading: str) -> list[int]:
    """Character offsets of the line(s) holding ``heading`` as a real heading.

    Uses the chunker's ``headings`` strategy (so a ``#`` comment inside a code fence
    is never taken for a heading) and then finds the ATX or setext title line
    inside each section whose heading path names ``heading``.

    Args:
        text: The stored (redacted) document text.
        heading: The expected heading title.

    Returns:
        Sorted line-start offsets; empty if the heading is not found.
    """
    want = _norm(heading)
    found: set[int] = set()
    for c in chunk_markdown(text, ChunkerConfig(strategy="headings")).chunks:
        if want not in (_norm(h) for h in c.heading_path):
            continue
        lines = c.text.splitlines(keepends=True)
        pos = c.start_char
        for i, line in enumerate(lines):
            body = line.rstrip("\r\n")
            m = _ATX_RE.match(body)
            if m and _norm(m.group(1) or "") == want:
                found.add(pos)
            elif (_norm(body) == want and i + 1 < len(lines)
                  and _SETEXT_RE.match(lines[i + 1].rstrip("\r\n"))):
                found.add(pos)
            pos += len(line)
    return sorted(found)


def section_relevant(hit: SearchHit, q: Query, offsets: Sequence[int]) -> bool:
    """Section-level relevance of one hit (see the module docstring)."""
    if hit.repository != q.repository or hit.path != q.path:
        return False
    if q.heading is None:
        return True
    want = _norm(q.heading)
    if any(_norm(h) == want for h in hit.heading_path):
        return True
    return any(hit.start_char <= off < hit.end_char for off in offsets)


# ---------------------------------------------------------------------------
# Embedders


class TimedEmbedder:
    """Wraps an embedder and adds up the time spent embedding documents and queries."""

    def __init__(self, inner: Embedder) -> None:
        """Wrap ``inner``."""
        self.inner = inner
        self.doc_seconds = 0.0
        self.doc_texts = 0
        self.query_seconds = 0.0
        self.queries = 0

    @property
    def name(self) -> str:
        """The wrapped embedder's name."""
        return self.inner.name

    @property
    def model(self) -> str:
        """The wrapped embedder's model."""
        return self.inner.model

    @property
    def dim(self) -> int:
        """The wrapped embedder's dimension."""
        return self.inner.dim

    @property
    def metric(self) -> str:
        """The wrapped embedder's metric."""
        return self.inner.metric

    @property
    def version(self) -> str:
        """The wrapped embedder's version."""
        return self.inner.version

    def fingerprint(self) -> str:
        """The wrapped embedder's fingerprint (vectors are the same)."""
        return self.inner.fingerprint()

    def info(self) -> dict[str, object]:
        """The wrapped embedder's info."""
        return self.inner.info()

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed documents, timing the call."""
        t = time.perf_counter()
        try:
            return self.inner.embed_documents(texts)
        finally:
            self.doc_seconds += time.perf_counter() - t
            self.doc_texts += len(texts)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Embed a query, timing the call."""
        t = time.perf_counter()
        try:
            return self.inner.embed_query(text)
        finally:
            self.query_seconds += time.perf_counter() - t
            self.queries += 1

    def reset(self) -> None:
        """Zero the counters."""
        self.doc_seconds = self.query_seconds = 0.0
        self.doc_texts = self.queries = 0


DEFAULT_EMBEDDERS: Final = ("hashing", "static", "model2vec", "sentence-transformers")
"""Embedders tried by default, in order; unavailable ones are reported as skipped."""


@dataclass
class EmbedderSlot:
    """An embedder requested for a bench, built or skipped."""

    name: str
    embedder: Embedder | None = None
    reason: str | None = None
    load_seconds: float = 0.0
    options: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """Status, fingerprint, dimension, model size and load time."""
        if self.embedder is None:
            return {"name": self.name, "status": "skipped", "reason": self.reason}
        info = self.embedder.info()
        size = info.get("size_bytes")
        return {
            "name": self.name, "status": "ok", "model": self.embedder.model,
            "fingerprint": self.embedder.fingerprint(), "dim": self.embedder.dim,
            "model_bytes": int(size) if isinstance(size, int) else 0,
            "load_seconds": round(self.load_seconds, 4),
        }


def tokenlearn_test_model() -> Path | None:
    """The small model2vec test model of the ``tokenlearn-static-model`` package."""
    try:
        spec = find_spec("static_model")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc) / "model"
        if p.is_dir():
            return p
    return None


def resolve_embedders(names: Sequence[str] | None,
                      options: Mapping[str, Mapping[str, Any]] | None = None
                      ) -> list[EmbedderSlot]:
    """Build the requested embedders (default: every one this machine has).

    ``model2vec`` without a ``path``/``model`` option uses the
    ``tokenlearn-static-model`` test model; ``hashing`` defaults to 384 dimensions.
    With the default list, ``openai`` is listed as skipped (it needs an endpoint).

    Args:
        names: Embedder names, or None for :data:`DEFAULT_EMBEDDERS`.
        options: Per-name options passed to :func:`make_embedder`.

    Returns:
        One slot per name; ``embedder`` is None (with ``reason``) when unavailable.
    """
    opts_by = {k: dict(v) for k, v in (options or {}).items()}
    default = names is None
    wanted = list(DEFAULT_EMBEDDERS if names is None else names)
    out: list[EmbedderSlot] = []
    seen: set[str] = set()
    for raw in wanted:
        name = raw.strip().lower().replace("_", "-")
        if not name or name in seen:
            continue
        seen.add(name)
        opts = dict(opts_by.get(name, {}))
        slot = EmbedderSlot(name, options=opts)
        if name == "model2vec" and "path" not in opts and "model" not in opts:
            model = tokenlearn_test_model()
            if model is None:
                slot.reason = ("no model2vec model: install tokenlearn-static-model or pass a "
                               "model path in the config's [embedder] table")
                out.append(slot)
                continue
            opts["path"] = str(model)
            slot.options = opts
        t = time.perf_counter()
        try:
            slot.embedder = make_embedder(name, opts)
        except EmbeddingError as exc:
            slot.reason = str(exc)
        slot.load_seconds = time.perf_counter() - t
        out.append(slot)
    if default and "openai" not in seen:
        out.append(EmbedderSlot("openai", reason="not tried by default: it needs an endpoint; "
                                "pass --embedder openai with base_url in the config"))
    return out


# ---------------------------------------------------------------------------
# Running one strategy x embedder


class FixedClock:
    """A deterministic clock: starts at a fixed epoch, +1 ms per call."""

    def __init__(self, start: float = FIXED_EPOCH) -> None:
        """Start the clock at ``start``."""
        self.t = start

    def __call__(self) -> float:
        """Return the next tick."""
        self.t += 0.001
        return self.t


def _scalar(conn: apsw.Connection, sql: str) -> Any:
    row = conn.execute(sql).fetchone()
    return row[0] if row is not None else 0


def index_size(conn: apsw.Connection, db_path: Path) -> dict[str, Any]:
    """Checkpoint the WAL and measure the database.

    Returns:
        ``index_bytes`` (page_count x page_size after a truncating checkpoint),
        ``file_bytes`` (database file + WAL on disk) and ``breakdown`` (bytes per
        part: source, nodes, fts, vectors, embedding_cache, other) when the
        ``dbstat`` table is available.
    """
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = int(_scalar(conn, "PRAGMA page_count"))
    psize = int(_scalar(conn, "PRAGMA page_size"))
    files = 0
    for suffix in ("", "-wal"):
        p = Path(str(db_path) + suffix)
        if p.exists():
            files += p.stat().st_size
    out: dict[str, Any] = {"index_bytes": pages * psize, "file_bytes": files}
    try:
        parts: dict[str, int] = {"source": 0, "nodes": 0, "fts": 0, "vectors": 0,
                                 "embedding_cache": 0, "other": 0}
        for _name, tbl, size in conn.execute(
                "SELECT s.name, COALESCE(m.tbl_name, s.name), SUM(s.pgsize) FROM dbstat s"
                " LEFT JOIN sqlite_schema m ON m.name=s.name GROUP BY s.name"):
            t = str(tbl)
            if t.startswith("vec_nodes_"):
                key = "vectors"
            elif t.startswith("knowledge_nodes_fts"):
                key = "fts"
            elif t in ("knowledge_nodes", "knowledge_node_memory_chunks"):
                key = "nodes"
            elif t.startswith("memory_"):
                key = "source"
            elif t == "embedding_cache":
                key = "embedding_cache"
            else:
                key = "other"
            parts[key] += int(size)
        out["breakdown"] = parts
    except apsw.Error:
        pass
    return out


@contextmanager
def _service(workdir: Path, name: str, config: ChunkerConfig, embedder: Embedder
             ) -> Iterator[Any]:
    from .service import MemoryService

    db = workdir / f"{name}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    d = config.to_dict()
    settings = load_settings(workdir / "no-config.toml", env={}, overrides={
        "db": str(db), "chunker.strategy": d["strategy"], "chunker.max_tokens": d["max_tokens"],
        "chunker.overlap_tokens": d["overlap_tokens"], "chunker.index_names": d["index_names"],
        "chunker.estimator": d["estimator"]})
    svc = MemoryService(settings, clock=FixedClock(), embedder=embedder,
                        install_key=FIXED_INSTALL_KEY)
    try:
        yield svc
    finally:
        svc.close()


def project_all(svc: Any) -> list[Any]:
    """Project until nothing is claimable.

    ``MemoryService.project`` claims at most 1,000 documents per call, so a large
    corpus needs several calls.
    """
    outcomes: list[Any] = []
    while True:
        rep = svc.project()
        outcomes.extend(rep.outcomes)
        if not rep.outcomes:
            return outcomes


def _ingest(svc: Any, roots: Sequence[MemoryRoot], timed: TimedEmbedder) -> dict[str, Any]:
    """Ingest + project into ``svc``; returns counts, sizes and timings."""
    timed.reset()
    t0 = time.perf_counter()
    outcome = svc.ingest(roots, project=False)
    t1 = time.perf_counter()
    outcomes = project_all(svc)
    t2 = time.perf_counter()
    failed = [o for o in outcomes if o.result in ("failed", "stale")]
    conn = svc.conn()
    docs = int(_scalar(conn, "SELECT COUNT(*) FROM memory_documents WHERE tombstoned_at IS NULL"))
    chunks = int(_scalar(conn, "SELECT COUNT(*) FROM knowledge_nodes"))
    src_bytes = int(_scalar(conn, "SELECT COALESCE(SUM(source_size),0) FROM memory_documents"))
    out: dict[str, Any] = {
        "documents": docs, "source_bytes": src_bytes, "chunks": chunks,
        "ingest_failed": [f"{c.repository}/{c.path}: {c.error}" for c in outcome.report.failed],
        "projection_failed": len(failed),
        "ingest_seconds": round(t1 - t0, 4), "project_seconds": round(t2 - t1, 4),
        "total_seconds": round(t2 - t0, 4),
        "embed_seconds": round(timed.doc_seconds, 4), "embedded_texts": timed.doc_texts,
    }
    if failed:
        out["projection_error"] = failed[0].error
    out.update(index_size(conn, svc.db_path))
    return out


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
    for q in queries:
        res = search_mod.search(conn, q.query, mode=mode, embedder=embedder, k=FETCH_K,
                                per_document=0)
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


def _check_modes(modes: Sequence[str]) -> list[str]:
    out: list[str] = []
    for m in modes:
        if m not in MODES:
            raise BenchError(f"unknown search mode {m!r}; use {', '.join(MODES)}")
        if m not in out:
            out.append(m)
    if not out:
        raise BenchError("no search mode given")
    return out


def _roots(corpus: Path) -> list[MemoryRoot]:
    try:
        roots = roots_for_path(corpus)
    except UsageError as exc:
        raise BenchError(str(exc)) from None
    return roots


@contextmanager
def _workdir(path: Path | None) -> Iterator[Path]:
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="memlens-bench-") as d:
        yield Path(d)


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies inside it (for reports)."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return str(path)


def environment(slots: Sequence[EmbedderSlot] = ()) -> dict[str, Any]:
    """Versions and machine facts for the report."""
    def ver(pkg: str) -> str | None:
        try:
            return importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            return None

    vec = None
    try:
        from .db import connect

        c = connect(":memory:", migrate=False)
        vec = str(_scalar(c, "SELECT vec_version()"))
        c.close()
    except Exception:  # noqa: BLE001 - an environment probe must not fail the bench
        vec = ver("sqlite-vec")
    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor() or None
    return {
        "python": platform.python_version(), "implementation": sys.implementation.name,
        "platform": platform.platform(), "cpu_count": os.cpu_count(), "cpu": cpu,
        "sqlite": apsw.sqlite_lib_version(), "apsw": apsw.apsw_version(),
        "sqlite_vec": vec, "memlens": ver("memlens"), "numpy": ver("numpy"),
        "markdown_it_py": ver("markdown-it-py"), "model2vec": ver("model2vec"),
        "embedders": {s.name: s.embedder.fingerprint() for s in slots if s.embedder is not None},
    }


def _corpus_stats(roots: Sequence[MemoryRoot]) -> dict[str, Any]:
    sizes: list[int] = []
    for r in roots:
        for p in sorted(r.path.rglob("*")):
            if p.is_file() and p.suffix.lower() in (".md", ".markdown"):
                sizes.append(p.stat().st_size)
    return {"projects": len(roots), "files": len(sizes), "bytes": sum(sizes),
            "median_bytes": int(statistics.median(sizes)) if sizes else 0,
            "p90_bytes": int(percentile(sizes, 90)), "max_bytes": max(sizes, default=0)}


def run_bench(opts: BenchOptions, progress: ProgressFn | None = None,
              total: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Run the relevance benchmark.

    Args:
        opts: What to measure.
        progress: Called with (description, advance) as work completes.
        total: Called once with the number of work units before any work.

    Returns:
        The JSON-ready report (see ``docs/benchmarks.md`` for the shape).

    Raises:
        BenchError: Bad corpus, queries, modes or strategies, or no usable embedder.
    """
    modes = _check_modes(opts.modes)
    queries = load_queries(opts.queries)
    roots = _roots(opts.corpus)
    if not roots:
        raise BenchError(f"{opts.corpus}: no memory folders")
    needs_vectors = any(m != "lexical" for m in modes)
    if progress is not None:
        progress("loading embedders", 0)
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
    n_runs = len(opts.strategies) * len(usable)
    units = n_runs  # one per ingest
    for i in range(len(usable)):
        units += len(opts.strategies) * len(queries) * sum(
            1 for m in modes if (m != "lexical" or i == 0))
    if total is not None:
        total(units)

    runs: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    notes: list[str] = []
    offsets: dict[str, list[int]] | None = None
    with _workdir(opts.workdir) as work:
        for st in opts.strategies:
            for ei, slot in enumerate(usable):
                assert slot.embedder is not None
                timed = TimedEmbedder(slot.embedder)
                label = f"{st.label} / {slot.name}"
                with _service(work, f"{st.label}-{slot.name}", st.config, timed) as svc:
                    run = {"strategy": st.label, "config": st.config.canonical_json(),
                           "embedder": slot.name}
                    run.update(_ingest(svc, roots, timed))
                    runs.append(run)
                    if progress is not None:
                        progress(f"ingest {label}", 1)
                    if offsets is None:  # stored text is the same for every strategy
                        offsets, notes = _locate_targets(svc, queries)
                        notes = notes or ["all answer documents and expected headings were "
                                          "found in the stored text"]
                    for mode in modes:
                        if mode == "lexical" and ei > 0:
                            continue
                        if run.get("projection_failed") and mode != "lexical":
                            results.append({"strategy": st.label, "mode": mode,
                                            "embedder": slot.name,
                                            "error": run.get("projection_error")})
                            continue
                        timed.reset()
                        t = time.perf_counter()
                        judged = _judge(svc, queries, mode,
                                        None if mode == "lexical" else timed,
                                        opts.per_document, offsets, progress,
                                        f"{mode} {label}")
                        elapsed = time.perf_counter() - t
                        row: dict[str, Any] = {
                            "strategy": st.label, "mode": mode,
                            "embedder": None if mode == "lexical" else slot.name,
                            "chunks": run["chunks"], "index_bytes": run["index_bytes"]}
                        row.update(judged)
                        row["search_ms"] = round(1000 * elapsed / len(queries), 3)
                        if mode != "lexical":
                            row["query_embed_ms"] = round(
                                1000 * timed.query_seconds / max(1, timed.queries), 3)
                        results.append(row)

    kinds: list[str] = []
    for q in queries:
        if q.kind not in kinds:
            kinds.append(q.kind)
    report: dict[str, Any] = {
        "format": BENCH_FORMAT,
        "kind": "relevance",
        "command": opts.command,
        "corpus": {"path": display_path(opts.corpus), **_corpus_stats(roots)},
        "queries": {"path": display_path(opts.queries), "count": len(queries),
                    "kinds": {k: sum(1 for q in queries if q.kind == k) for k in kinds},
                    "null_heading": sum(1 for q in queries if q.heading is None)},
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
    for s_json, slot in zip(report["embedders"], slots, strict=True):
        if slot.embedder is None:
            continue
        erun = [r for r in runs if r["embedder"] == slot.name]
        secs = sum(r["embed_seconds"] for r in erun)
        texts = sum(r["embedded_texts"] for r in erun)
        s_json["embed_seconds"] = round(secs, 4)
        s_json["embedded_texts"] = texts
        s_json["embed_per_chunk_ms"] = round(1000 * secs / texts, 4) if texts else 0.0
    return report


def seed_table(strategies: Sequence[Strategy], runs: Sequence[Mapping[str, Any]],
               results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The spike's table shape (Strategy | Chunks | Hit@1 | MRR).

    Lexical search mode, document level, over the ``lexical`` queries (the spike's
    five queries were lexical), one row per strategy, the spike's three first.
    """
    order = sorted(strategies, key=lambda s: (s.seed_label is None or s.label == "adaptive-400-80",
                                              strategies.index(s)))
    out: list[dict[str, Any]] = []
    for st in order:
        res = next((r for r in results if r["strategy"] == st.label and r["mode"] == "lexical"
                    and "doc" in r), None)
        run = next((r for r in runs if r["strategy"] == st.label), None)
        if res is None or run is None:
            continue
        block = res["doc"]["by_kind"].get("lexical", res["doc"]["overall"])
        out.append({"strategy": st.label, "label": st.seed_label or st.label,
                    "chunks": run["chunks"], "hit1": block["hit1"], "mrr": block["mrr"],
                    "queries": int(block["n"])})
    return out


# ---------------------------------------------------------------------------
# Synthetic corpora


_STOP: Final = tuple(
    "the a to of and in for on with is that it by as be at from this are or we when".split())
_TECH: Final = tuple((
    "use build test deploy config cache index query schema migration worker queue retry timeout "
    "token auth session user project memory note prefer always never because instead avoid "
    "run check fix bug flaky slow fast latency error warning log metric alert dashboard "
    "release branch commit review lint format type strict python rust sqlite postgres redis "
    "docker kubernetes terraform pipeline artifact version pin upgrade rollback backfill "
    "webhook endpoint handler middleware pool connection lock vacuum snapshot replica shard "
    "partition bucket export import parser tokenizer embedding vector ranking fixture mock"
).split())
_SYLLABLES: Final = tuple(c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u",
                                                                        "ai", "ou", "er"))

GENERATOR_VERSION: Final = 2
"""Bump when :func:`generate_corpus` output changes (cached benchmark databases key on it)."""


@functools.lru_cache(maxsize=1)
def _vocab() -> tuple[tuple[str, ...], list[float]]:
    """Content words with Zipf-Mandelbrot weights: 116 tech words, then 8,000 made-up ones.

    A realistic vocabulary matters for search timings: with a few hundred words every
    query term would match most chunks, which no real memory corpus does.
    """
    rng = random.Random(4242)
    words = list(_TECH)
    seen = set(words) | set(_STOP)
    while len(words) < len(_TECH) + 8000:
        w = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    cum = list(accumulate(1.0 / (r + 2.7) for r in range(len(words))))
    return tuple(words), cum


def _rank(rng: random.Random) -> int:
    words, cum = _vocab()
    return bisect.bisect_left(cum, rng.random() * cum[-1])


def _word(rng: random.Random) -> str:
    words, _ = _vocab()
    return words[min(_rank(rng), len(words) - 1)]


_TOPICS: Final = (
    "auth database testing deploy performance architecture conventions feedback tooling "
    "observability scheduling storage frontend backend api cli debugging onboarding runbook "
    "release security caching search migrations incidents"
).split()
_FLAGS: Final = ("limit", "since", "jobs", "retries", "timeout", "batch-size", "depth", "port")
_LANGS: Final = ("bash", "python", "sql", "toml", "rust", "yaml")


def lognormal_sizes(n: int, rng: random.Random, *, median: float = 1400.0, sigma: float = 0.76,
                    lo: int = 120, hi: int = 14_000) -> list[int]:
    """File sizes with the real auto-memory mix.

    ``sigma`` 0.76 puts p90 at about 2.65 x the median, as in the spike's scan of 165
    real files (median 1,519 B, p90 4,027 B, max 13,729 B). The target median is
    1,400 B because :func:`generate_corpus` overshoots each target by about one
    Markdown block, which lands the written files at a median of about 1.5 KB.
    """
    return [int(min(hi, max(lo, rng.lognormvariate(math.log(median), sigma))))
            for _ in range(n)]


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_STOP) if rng.random() < 0.35 else _word(rng)
             for _ in range(rng.randint(6, 20))]
    if rng.random() < 0.3:
        words[rng.randrange(len(words))] = f"`{_word(rng)}_{_word(rng)}`"
    if rng.random() < 0.2:
        words[rng.randrange(len(words))] = str(rng.randint(2, 9000))
    return " ".join(words).capitalize() + "."


def _block(rng: random.Random, topics: Sequence[str]) -> str:
    kind = rng.random()
    if kind < 0.45:
        return " ".join(_sentence(rng) for _ in range(rng.randint(1, 4)))
    if kind < 0.7:
        return "\n".join(f"- {_sentence(rng)}" for _ in range(rng.randint(2, 6)))
    if kind < 0.88:
        lang = rng.choice(_LANGS)
        lines = []
        for _ in range(rng.randint(2, 7)):
            if rng.random() < 0.3:
                lines.append(f"# {_word(rng)} {_word(rng)}")
            else:
                lines.append(f"{_word(rng)}_{_word(rng)} --{rng.choice(_FLAGS)}"
                             f" {rng.randint(1, 500)}")
        return f"```{lang}\n" + "\n".join(lines) + "\n```"
    if kind < 0.95:
        rows = [f"| {_word(rng)} | {rng.randint(1, 999)} ms | {_word(rng)} |"
                for _ in range(rng.randint(2, 5))]
        return "| name | value | note |\n|---|---|---|\n" + "\n".join(rows)
    t = rng.choice(topics)
    return f"See [{t}]({t}.md) for {_word(rng)} {_word(rng)}."


def _topic_file(rng: random.Random, title: str, target: int, topics: Sequence[str]) -> str:
    parts = [f"---\nname: {title}\ndescription: {_sentence(rng)}\n"
             f"type: {rng.choice(('user', 'feedback', 'project', 'reference'))}\n---\n",
             f"# {title.replace('-', ' ').capitalize()}\n"]
    size = sum(len(p) + 1 for p in parts)
    while size < target:
        r = rng.random()
        if r < 0.22:
            block = f"## {_word(rng).capitalize()} {_word(rng)} {_word(rng)}"
        elif r < 0.3:
            block = f"### {_word(rng).capitalize()} {_word(rng)}"
        else:
            block = _block(rng, topics)
        room = target - size
        if len(block) > room + 80 and room < 120:
            block = _sentence(rng)[: max(20, room)]
        parts.append(block + "\n")
        size += len(block) + 2
    return "\n".join(parts)


@dataclass(frozen=True)
class GeneratedCorpus:
    """Where a generated corpus was written and what it holds."""

    path: Path
    files: int
    bytes: int
    projects: int
    seed: int

    def as_json(self) -> dict[str, Any]:
        """Counts, seed and generator version (the path is a temp folder and is left out)."""
        return {"files": self.files, "bytes": self.bytes, "projects": self.projects,
                "seed": self.seed, "generator": GENERATOR_VERSION}


def generate_corpus(dest: Path, n_files: int, *, seed: int = 0) -> GeneratedCorpus:
    """Write a deterministic synthetic auto-memory corpus of ``n_files`` files.

    Layout: ``dest/-home-dev-gen-pNNNN/memory/`` folders of 5 to 60 files each, a
    ``MEMORY.md`` index listing the project's topic files, topic files with front
    matter, ATX headings, paragraphs, lists, tables and fenced code with ``#``
    comment lines (which must not become headings); about 1 in 10 topic files sits
    in a ``notes/`` subfolder. File sizes follow :func:`lognormal_sizes`. Every file
    gets the same fixed modification time (in 2025), so repeated scans take the stat
    fast path at once.

    Args:
        dest: Folder to write into (created; must be empty or absent).
        n_files: Total number of Markdown files, including the indexes.
        seed: Random seed; the same seed and count give byte-identical files.

    Returns:
        Counts of what was written.

    Raises:
        BenchError: If ``n_files`` is smaller than 1.
    """
    if n_files < 1:
        raise BenchError("--generate needs at least 1 file")
    rng = random.Random(seed)
    sizes = lognormal_sizes(n_files, rng)
    dest.mkdir(parents=True, exist_ok=True)
    total = 0
    written = 0
    project = 0
    while written < n_files:
        count = min(n_files - written, rng.randint(5, 60))
        slug = f"-home-dev-gen-p{project:04d}"
        mem = dest / slug / "memory"
        mem.mkdir(parents=True, exist_ok=True)
        topics = [f"{rng.choice(_TOPICS)}-{i}" for i in range(count - 1)]
        index_lines = ["# Memory index", ""]
        for i, t in enumerate(topics):
            rel = f"notes/{t}.md" if rng.random() < 0.1 else f"{t}.md"
            text = _topic_file(rng, t, sizes[written + i + 1], topics)
            p = mem / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
            total += len(text.encode("utf-8"))
            index_lines.append(f"- [{t.replace('-', ' ').capitalize()}]({rel}) — "
                               f"{_sentence(rng)[:80]}")
        index = "\n".join(index_lines) + "\n"
        (mem / "MEMORY.md").write_text(index, encoding="utf-8")
        # A fixed, old mtime: deterministic, and outside ingest's "racily clean"
        # window (files changed in the last 2 s are re-read on the next scan).
        for p in mem.rglob("*.md"):
            os.utime(p, (FIXED_EPOCH, FIXED_EPOCH))
        total += len(index.encode("utf-8"))
        written += count
        project += 1
    return GeneratedCorpus(dest, written, total, project, seed)


def generate_queries(n: int, *, seed: int = 1) -> list[str]:
    """Deterministic search texts over the generator's vocabulary (for latency only).

    Query words are drawn from the same Zipf distribution as the corpus, skipping
    the 20 most frequent content words (people search for specific terms); a
    quarter of the queries are ``snake_case`` identifiers, a quarter questions.
    """
    rng = random.Random(seed)
    words, _ = _vocab()

    def w() -> str:
        while True:
            r = _rank(rng)
            if 20 <= r < len(words):
                return words[r]

    out: list[str] = []
    for i in range(n):
        r = i % 4
        if r == 0:
            out.append(f"{w()}_{w()}")
        elif r == 1:
            out.append(f"{w()} {w()}")
        elif r == 2:
            out.append(f"how do we {w()} the {w()} {w()}")
        else:
            out.append(" ".join(w() for _ in range(4)))
    return out


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
    modes = _check_modes(modes)
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
    with _workdir(workdir) as work:
        for n in sizes:
            cdir = work / f"gen-{n}-{seed}"
            if not cdir.exists():
                gen = generate_corpus(cdir, n, seed=seed)
            else:  # reuse a corpus generated earlier in the same workdir
                files = [p for p in cdir.rglob("*.md")]
                gen = GeneratedCorpus(cdir, len(files), sum(p.stat().st_size for p in files),
                                      len(list(cdir.iterdir())), seed)
            roots = _roots(cdir)
            for st in strategies:
                for slot in usable:
                    assert slot.embedder is not None
                    timed = TimedEmbedder(slot.embedder)
                    label = f"{n} files / {st.label} / {slot.name}"
                    with _service(work, f"scale-{n}-{st.label}-{slot.name}", st.config,
                                  timed) as svc:
                        run = _ingest(svc, roots, timed)
                        if progress is not None:
                            progress(f"ingest {label}", 1)
                        rescans = []
                        for _ in range(3):  # median of 3: one rescan is a few ms, noisy
                            t = time.perf_counter()
                            svc.ingest(roots)
                            rescans.append(time.perf_counter() - t)
                        rescan = statistics.median(rescans)
                        lat = latency(svc, queries, modes)
                        if progress is not None:
                            progress(f"search {label}", 1)
                    row: dict[str, Any] = {"files": n, "strategy": st.label,
                                           "config": st.config.canonical_json(),
                                           "embedder": slot.name, "corpus": gen.as_json()}
                    row.update(run)
                    row["files_per_s"] = round(n / run["total_seconds"], 1) \
                        if run["total_seconds"] else 0.0
                    row["rescan_seconds"] = round(rescan, 4)
                    row["rescan_files_per_s"] = round(n / rescan, 1) if rescan else 0.0
                    row["latency"] = lat
                    rows.append(row)
    return {"format": BENCH_FORMAT, "kind": "scale", "command": command,
            "settings": {"modes": list(modes), "seed": seed, "queries": n_queries, "k": EVAL_K},
            "strategies": [s.as_json() for s in strategies],
            "embedders": [s.as_json() for s in slots], "scale": rows,
            "environment": environment(slots)}


# ---------------------------------------------------------------------------
# JSON helpers


def strip_timing(obj: Any) -> Any:
    """A copy of a report without timing keys (``*_seconds``, ``*_ms``, ``*_per_s``)."""
    if isinstance(obj, dict):
        return {k: strip_timing(v) for k, v in obj.items()
                if not (isinstance(k, str) and k.endswith(TIMING_SUFFIXES))}
    if isinstance(obj, list):
        return [strip_timing(v) for v in obj]
    return obj


# ---------------------------------------------------------------------------
# Markdown


NOTES_BEGIN: Final = "<!-- memlens-bench:notes -->"
NOTES_END: Final = "<!-- /memlens-bench:notes -->"


def extract_notes(text: str) -> str | None:
    """The hand-written block between the notes markers of an earlier report, if any."""
    i = text.find(NOTES_BEGIN)
    j = text.find(NOTES_END)
    if i < 0 or j < i:
        return None
    return text[i + len(NOTES_BEGIN): j].strip("\n")


def _f(x: float) -> str:
    return f"{x:.3f}"


def _kb(n: int) -> str:
    return f"{n / 1024:,.0f} KiB" if n < 10 * 1024 * 1024 else f"{n / 1048576:,.1f} MiB"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str = "") -> list[str]:
    al = align or "l" + "r" * (len(header) - 1)
    sep = ["---:" if a == "r" else "---" for a in al]
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    out.extend("| " + " | ".join(r) + " |" for r in rows)
    return out


def _ok_results(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [r for r in report["results"] if "doc" in r]


def _who(r: Mapping[str, Any]) -> str:
    return str(r["mode"]) + (f" · {r['embedder']}" if r.get("embedder") else "")


def _reading(report: Mapping[str, Any]) -> list[str]:
    """Plain statements derived from the numbers (regenerated with every run)."""
    res = _ok_results(report)
    nq = int(report["queries"]["count"])
    tie = 1.0 / nq if nq else 0.0
    lines: list[str] = []
    strategies = [s["label"] for s in report["strategies"]]
    if len(strategies) < 2:
        return lines
    groups: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    for r in res:
        groups.setdefault((r["mode"], r.get("embedder")), []).append(r)
    for level in ("doc", "section"):
        name = "document" if level == "doc" else "section"
        for (mode, emb), rows in groups.items():
            if len(rows) < 2:
                continue
            ranked = sorted(rows, key=lambda r: (-r[level]["overall"]["mrr"],
                                                 -r[level]["overall"]["hit1"]))
            best = ranked[0]
            bm = best[level]["overall"]["mrr"]
            tied = [r["strategy"] for r in ranked[1:] if bm - r[level]["overall"]["mrr"] < tie]
            worst = ranked[-1]
            who = mode + (f" ({emb})" if emb else "")
            s = (f"- {name} level, {who}: best MRR {_f(bm)} with `{best['strategy']}`")
            if tied:
                s += " (within one query's worth of " + ", ".join(f"`{t}`" for t in tied) + ")"
            s += (f"; lowest `{worst['strategy']}` {_f(worst[level]['overall']['mrr'])}"
                  f" (spread {_f(bm - worst[level]['overall']['mrr'])}).")
            lines.append(s)
    # per kind winners at section level, hybrid with the first embedder if present
    kinds = list(report["queries"]["kinds"])
    for (mode, emb), rows in groups.items():
        if mode != "hybrid" or len(rows) < 2:
            continue
        parts = []
        for k in kinds:
            vals = [(r["section"]["by_kind"].get(k, {}).get("mrr", 0.0), r["strategy"])
                    for r in rows]
            top = max(v for v, _ in vals)
            kn = report["queries"]["kinds"][k]
            winners = [s for v, s in vals if top - v < (1.0 / kn if kn else 0.0)]
            parts.append(f"{k}: {', '.join(f'`{w}`' for w in winners)} ({_f(top)})")
        lines.append(f"- section-level MRR by query kind, hybrid ({emb}): " + "; ".join(parts)
                     + " (ties = within one query of that kind).")
        break
    return lines


def render_markdown(report: Mapping[str, Any], notes: str | None = None) -> str:
    """Render a bench report (relevance or scale) as Markdown.

    Args:
        report: What :func:`run_bench` or :func:`run_scale` returned.
        notes: Hand-written reading to keep between the notes markers (taken from an
            earlier version of the output file); a placeholder is written when None.

    Returns:
        The Markdown text.
    """
    if report.get("kind") == "scale":
        return _render_scale(report)
    out: list[str] = ["# Auto-memory retrieval: chunking strategies compared", ""]
    out.append("Generated by `memlens bench`; every figure below comes from one run of:")
    out += ["", "```sh", report.get("command") or "memlens bench", "```", ""]
    c = report["corpus"]
    q = report["queries"]
    out.append(
        f"Corpus: `{c['path']}`: {c['projects']} projects, {c['files']} files, {c['bytes']:,} "
        f"bytes (median {c['median_bytes']:,} B, p90 {c['p90_bytes']:,} B, max "
        f"{c['max_bytes']:,} B). Queries: `{q['path']}`, {q['count']} ("
        + ", ".join(f"{v} {k}" for k, v in q["kinds"].items()) + ").")
    out.append("")
    out.append("## The spike's table, reproduced")
    out.append("")
    out.append("Lexical search, document level, the lexical queries only (the spike used five "
               "lexical queries on its own corpus; this is the same table shape on the bundled "
               "corpus).")
    out.append("")
    out += _table(["Strategy", "Chunks", "Hit@1", "MRR"],
                  [[r["label"], str(r["chunks"]), _f(r["hit1"]), _f(r["mrr"])]
                   for r in report["seed_table"]])
    out.append("")

    out += ["## Strategies", ""]
    out += _table(["Label", "Chunker config (canonical JSON)"],
                  [[f"`{s['label']}`", f"`{s['config']}`"] for s in report["strategies"]], "ll")
    out.append("")

    out += ["## Index cost", "",
            "One fresh database per strategy × embedder. Index = page_count × page_size after "
            "a truncating WAL checkpoint; vectors and FTS are the sqlite-vec and FTS5 shares "
            "(dbstat). Times are wall-clock on this machine (they vary run to run).", ""]
    rows = []
    for r in report["runs"]:
        b = r.get("breakdown", {})
        rows.append([f"`{r['strategy']}`", r["embedder"], str(r["chunks"]), _kb(r["index_bytes"]),
                     _kb(b.get("fts", 0)), _kb(b.get("vectors", 0)),
                     f"{r['ingest_seconds']:.3f}", f"{r['project_seconds']:.3f}",
                     f"{r['embed_seconds']:.3f}"])
    out += _table(["Strategy", "Embedder", "Chunks", "Index", "FTS", "Vectors", "Ingest s",
                   "Project s", "Embed s"], rows, "llrrrrrrr")
    out.append("")

    res = _ok_results(report)
    for level, title, desc in (
        ("doc", "Document level",
         "A hit counts when it is in the right file. Hits are deduplicated by document "
         "(first occurrence) before ranking."),
        ("section", "Section level",
         "A hit counts when it is in the right file and its heading path names the expected "
         "heading or its span contains the heading's line (null heading: any hit in the file). "
         "Judged on the list a person sees: at most "
         f"{report['settings']['per_document']} hits per document."),
    ):
        out += [f"## {title}", "", desc, ""]
        rows = [[f"`{r['strategy']}`", _who(r)] + [_f(r[level]["overall"][m]) for m in METRIC_NAMES]
                + [f"{r['ctx_tokens_top3']:.0f}"] for r in res]
        out += _table(["Strategy", "Mode"] + [METRIC_LABELS[m] for m in METRIC_NAMES]
                      + ["Tokens top-3"], rows, "ll" + "r" * 6)
        out.append("")
    kinds = list(report["queries"]["kinds"])
    out += ["## By query kind (MRR)", "",
            "Document-level / section-level MRR per kind of query.", ""]
    rows = [[f"`{r['strategy']}`", _who(r)] + [
        f"{_f(r['doc']['by_kind'].get(k, {}).get('mrr', 0.0))} / "
        f"{_f(r['section']['by_kind'].get(k, {}).get('mrr', 0.0))}" for k in kinds] for r in res]
    out += _table(["Strategy", "Mode"] + kinds, rows, "ll" + "r" * len(kinds))
    out.append("")
    errs = [r for r in report["results"] if "error" in r]
    if errs:
        out += ["Runs that could not be judged:", ""]
        out += [f"- `{r['strategy']}` {_who(r)}: {r['error']}" for r in errs]
        out.append("")

    out += ["## Embedders", ""]
    rows = []
    for e in report["embedders"]:
        if e["status"] != "ok":
            rows.append([e["name"], "skipped", e.get("reason") or "", "", "", "", ""])
            continue
        rows.append([e["name"], "ok", f"`{e['fingerprint']}`", str(e["dim"]),
                     _kb(e["model_bytes"]) if e["model_bytes"] else "-",
                     f"{e['load_seconds']:.2f}", f"{e.get('embed_per_chunk_ms', 0.0):.3f}"])
    out += _table(["Embedder", "Status", "Fingerprint / reason", "Dim", "Model size", "Load s",
                   "Embed ms/chunk"], rows, "lllrrrr")
    out.append("")

    out += ["## What the numbers show", "",
            "Derived from this run (a difference below one query's worth, 1/N of the "
            "queries, is called a tie):", ""]
    out += _reading(report) or ["- (one strategy only: nothing to compare)"]
    out += ["", NOTES_BEGIN, notes if notes is not None else
            "_Reading not written yet: add it between these markers; `--out` keeps it._",
            NOTES_END, ""]

    out += ["## Method", "",
            "- Each strategy × embedder ingests the corpus into a fresh temporary database "
            "(fixed clock, fixed install key), then projects it; the same code path as "
            "`memlens ingest`.",
            f"- One engine call per query and mode: `search(k={report['settings']['fetch_k']}, "
            "per_document=0)`; ties in score keep the engine's order. Lexical results do not "
            "depend on the embedder and are measured once per strategy.",
            "- Metrics are means over queries of: Hit@1, Hit@3, MRR@10, nDCG@10 (binary gain, "
            "one relevant target per query; a redundant chunk of the same section earns "
            "nothing), Recall@5 (= Hit@5 with one target). A query whose answer is missing "
            "scores 0.",
            "- Tokens top-3: mean estimated tokens (ceil(chars/4)) of the first three hits of "
            "the section-level list: the reading cost of the answer's context.",
            "- Token counts are the chunker's `chars4` estimate, not model tokenization.",
            ""]
    if report.get("notes"):
        out += ["Checks on the query set:", ""] + [f"- {n}" for n in report["notes"]] + [""]
    env = report["environment"]
    out += ["## Environment", ""]
    out += [f"- Python {env['python']} ({env['platform']}), {env['cpu_count']} CPUs"
            + (f" ({env['cpu']})" if env.get("cpu") else ""),
            f"- SQLite {env['sqlite']} (APSW {env['apsw']}), sqlite-vec {env['sqlite_vec']}",
            f"- memlens {env['memlens']}, numpy {env['numpy']}, markdown-it-py "
            f"{env['markdown_it_py']}, model2vec {env['model2vec']}"]
    out += [f"- embedder `{k}`: `{v}`" for k, v in env["embedders"].items()]
    out.append("")
    return "\n".join(out)


def _render_scale(report: Mapping[str, Any]) -> str:
    out = ["# memlens scale run", "", "```sh", report.get("command") or "memlens bench --generate",
           "```", ""]
    modes = report["settings"]["modes"]
    rows = []
    for r in report["scale"]:
        lat = r["latency"]
        rows.append([str(r["files"]), f"{r['corpus']['bytes'] / 1048576:.1f} MB",
                     f"`{r['strategy']}`", r["embedder"], str(r["chunks"]),
                     _kb(r["index_bytes"]), f"{r['ingest_seconds']:.2f}",
                     f"{r['project_seconds']:.2f}", f"{r['files_per_s']:.0f}",
                     f"{r['rescan_files_per_s']:.0f}"]
                    + [f"{lat[m]['p50_ms']:.2f} / {lat[m]['p95_ms']:.2f}" for m in modes])
    out += _table(["Files", "Size", "Strategy", "Embedder", "Chunks", "Index", "Ingest s",
                   "Project s", "Files/s", "Rescan files/s"]
                  + [f"{m} p50/p95 ms" for m in modes], rows,
                  "rrll" + "r" * (6 + len(modes)))
    out.append("")
    env = report["environment"]
    out.append(f"Python {env['python']}, SQLite {env['sqlite']}, sqlite-vec {env['sqlite_vec']}, "
               f"{env['cpu_count']} CPUs. Generated corpus seed {report['settings']['seed']}; "
               f"{report['settings']['queries']} generated queries per mode, k="
               f"{report['settings']['k']}.")
    out.append("")
    return "\n".join(out)
