"""Strategies, labelled queries and the relevance metrics of a bench run.

Everything here is pure: parsing strategy specs (:func:`parse_strategy`), reading
``queries.jsonl`` (:func:`load_queries`), the metrics over ranked relevance lists
(:func:`hit_at`, :func:`reciprocal_rank`, :func:`ndcg_at`, :func:`recall_at`,
:func:`query_metrics`) and section-level judging (:func:`heading_offsets`,
:func:`section_relevant`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from memlens.bench.common import EVAL_K, METRIC_NAMES, BenchError
from memlens.core.chunking.chunker import ChunkerConfig, ChunkerConfigError, chunk_markdown
from memlens.core.search.engine import SearchHit

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
