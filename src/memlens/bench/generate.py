"""Synthetic auto-memory corpora and queries for the scale run.

:func:`generate_corpus` writes a deterministic corpus with the real size mix
(:func:`lognormal_sizes`) over a Zipf-weighted vocabulary; :func:`generate_queries`
draws search texts from the same vocabulary.
"""

from __future__ import annotations

import bisect
import functools
import math
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any, Final

from memlens.bench.common import FIXED_EPOCH, BenchError

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
