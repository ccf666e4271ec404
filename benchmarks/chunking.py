"""Chunker throughput next to a bare markdown-it-py parse of the same texts.

Usage::

    uv run python benchmarks/chunking.py [--corpus DIR] [--generated-mb 10] [--repeat 3]
        [--pathological] [--json]

Two text sets are measured:

* ``corpus``: every ``*.md`` file under ``--corpus`` (default: the bundled ``corpus/``
  folder), except a ``README.md`` at its top level.
* ``generated``: a deterministic synthetic corpus of about ``--generated-mb`` MB whose
  file sizes follow the real auto-memory size mix seen in the design spike (median
  1.5 KB, p90 4 KB, max 14 KB): front matter, headings, paragraphs, lists of links,
  fenced code with ``#`` comment lines, and a ``MEMORY.md`` index in every project.

For each set it measures process CPU time (best of ``--repeat`` interleaved runs, so a
busy machine skews the figures less than wall-clock time would):

* ``parse``: ``MarkdownIt("commonmark").parse(text)`` -- the floor the chunker is
  compared against (target: chunker <= 2x parse);
* ``parse-block``: the same parser with the inline pass disabled, which is what the
  chunker runs internally;
* ``chunk``: ``chunk_markdown`` with the default config (adaptive, 400/80 tokens);
* ``chunk-split``: ``chunk_markdown`` with 100/20 tokens, so nearly every file is
  parsed and split (the worst case for the adaptive strategy);
* ``chunk-headings``: the ``headings`` strategy, which always parses.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

from memlens.core.chunking.chunker import DEFAULT_CONFIG, ChunkerConfig, chunk_markdown

ROOT = Path(__file__).resolve().parent.parent

WORDS = (
    "the a to of and in for on with is that it by as be at from this are or use we when "
    "build test deploy config cache index query schema migration worker queue retry timeout "
    "token auth session user project memory note prefer always never because instead avoid "
    "run check fix bug flaky slow fast latency error warning log metric alert dashboard "
    "release branch commit review lint format type strict python rust sqlite postgres redis "
    "docker kubernetes terraform ci pipeline artifact version pin upgrade rollback backfill"
).split()
TOPICS = (
    "auth database testing deploy performance architecture conventions feedback tooling "
    "observability scheduling storage frontend backend api cli debugging onboarding"
).split()


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 22))]
    if rng.random() < 0.3:
        words[rng.randrange(len(words))] = f"`{rng.choice(WORDS)}_{rng.choice(WORDS)}`"
    if rng.random() < 0.15:
        words[rng.randrange(len(words))] = f"**{rng.choice(WORDS)}**"
    return " ".join(words).capitalize() + "."


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(1, 4)))


def _block(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.5:
        return _paragraph(rng)
    if kind < 0.8:
        items = []
        for _ in range(rng.randint(2, 7)):
            item = f"- {_sentence(rng)}"
            if rng.random() < 0.3:
                item += f" See [{rng.choice(TOPICS)}]({rng.choice(TOPICS)}.md)."
            items.append(item)
            if rng.random() < 0.2:
                items.append(f"  - {_sentence(rng)}")
        return "\n".join(items)
    lines = []
    for _ in range(rng.randint(2, 10)):
        if rng.random() < 0.3:
            lines.append(f"# {rng.choice(WORDS)} {rng.choice(WORDS)}")
        else:
            lines.append(f"{rng.choice(WORDS)} --{rng.choice(WORDS)}={rng.randint(1, 999)}")
    return f"```{rng.choice(['bash', 'python', 'sql', ''])}\n" + "\n".join(lines) + "\n```"


def _topic_file(rng: random.Random, target: int) -> str:
    parts: list[str] = []
    if rng.random() < 0.6:
        parts.append(
            f"---\nname: {rng.choice(TOPICS)}\ndescription: {_sentence(rng)}\n"
            f"type: {rng.choice(['project', 'feedback', 'user', 'reference'])}\n---"
        )
    if rng.random() < 0.4:
        parts.append(_paragraph(rng))
    parts.append(f"# {rng.choice(TOPICS).capitalize()} notes")
    size = sum(len(p) + 2 for p in parts)
    while size < target:
        if rng.random() < 0.25:
            level = rng.choice([2, 2, 2, 3, 3, 4])
            part = "#" * level + " " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        else:
            part = _block(rng)
        if size + len(part) > target * 1.05 and size > target * 0.7:
            break  # keep the file near its drawn size
        parts.append(part)
        size += len(part) + 2
    return "\n\n".join(parts) + "\n"


def _index_file(rng: random.Random, target: int) -> str:
    lines = [f"# {rng.choice(TOPICS)} project memory", ""]
    size = sum(len(line) + 1 for line in lines)
    while size < target:
        topic = rng.choice(TOPICS)
        line = f"- [{topic.capitalize()}]({topic}.md) — {_sentence(rng)}"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines) + "\n"


def _file_size(rng: random.Random) -> int:
    # Lognormal with median 1.5 KB and p90 4 KB (z(0.9) = 1.2816), capped so no file exceeds 14 KB.
    sigma = math.log(4000 / 1500) / 1.2816
    return int(min(13_300, max(120, rng.lognormvariate(math.log(1500), sigma))))


def generated_corpus(megabytes: float, seed: int = 20240627) -> list[tuple[str, str]]:
    """Return ``(path, text)`` pairs totalling about ``megabytes`` MB of UTF-8."""
    rng = random.Random(seed)
    files: list[tuple[str, str]] = []
    total = 0
    project = 0
    while total < megabytes * 1_000_000:
        project += 1
        for i in range(rng.randint(5, 40)):
            size = _file_size(rng)
            if i == 0:
                path, text = f"p{project}/memory/MEMORY.md", _index_file(rng, min(size, 3000))
            else:
                path, text = f"p{project}/memory/topic-{i}.md", _topic_file(rng, size)
            files.append((path, text))
            total += len(text.encode("utf-8"))
    return files


def corpus_files(folder: Path) -> list[tuple[str, str]]:
    """Return ``(path, text)`` for every Markdown file under ``folder``."""
    out = []
    for path in sorted(folder.rglob("*.md")):
        if path.parent == folder and path.name == "README.md":
            continue
        out.append((str(path.relative_to(folder)), path.read_text(encoding="utf-8")))
    return out


@dataclass
class Timing:
    name: str
    seconds: float
    mb_per_s: float
    files_per_s: float


def measure(files: list[tuple[str, str]], repeat: int) -> dict[str, object]:
    """Time the parser floor and the chunker variants on ``files``.

    Each repeat runs every measure once (interleaved, so background load hits them
    alike); the best process CPU time per measure is kept.
    """
    full = MarkdownIt("commonmark")
    block = MarkdownIt("commonmark")
    block.disable(["inline", "text_join"])
    split = ChunkerConfig(max_tokens=100, overlap_tokens=20)
    headings = ChunkerConfig(strategy="headings")
    measures: list[tuple[str, Callable[[str, str], object]]] = [
        ("parse", lambda p, t: full.parse(t)),
        ("parse-block", lambda p, t: block.parse(t)),
        ("chunk", lambda p, t: chunk_markdown(t, DEFAULT_CONFIG, path=p)),
        ("chunk-split", lambda p, t: chunk_markdown(t, split, path=p)),
        ("chunk-headings", lambda p, t: chunk_markdown(t, headings, path=p)),
    ]
    best = {name: math.inf for name, _ in measures}
    for _ in range(repeat):
        for name, fn in measures:
            gc.collect()
            start = time.process_time()
            for path, text in files:
                fn(path, text)
            best[name] = min(best[name], time.process_time() - start)
    sizes = sorted(len(t.encode("utf-8")) for _, t in files)
    total_mb = sum(sizes) / 1_000_000
    runs = [Timing(n, best[n], total_mb / best[n], len(files) / best[n]) for n, _ in measures]
    floor = runs[0].seconds
    chunks = {
        "default": sum(len(chunk_markdown(t, DEFAULT_CONFIG, path=p).chunks) for p, t in files),
        "split": sum(len(chunk_markdown(t, split, path=p).chunks) for p, t in files),
    }
    return {
        "files": len(files),
        "megabytes": round(total_mb, 3),
        "size_median": int(statistics.median(sizes)) if sizes else 0,
        "size_p90": sizes[int(0.9 * (len(sizes) - 1))] if sizes else 0,
        "size_max": sizes[-1] if sizes else 0,
        "chunks": chunks,
        "timings": [
            {
                "name": r.name,
                "seconds": round(r.seconds, 4),
                "mb_per_s": round(r.mb_per_s, 2),
                "files_per_s": round(r.files_per_s, 1),
                "ratio_to_parse": round(r.seconds / floor, 3),
            }
            for r in runs
        ],
    }


def pathological_inputs() -> dict[str, str]:
    """Inputs that must finish in bounded time (the chunker falls back to a line scan
    above ``PARSE_LIMIT_CHARS``)."""
    return {
        "50 MB of prose lines": "Some words here and there, a line of prose.\n" * 1_200_000,
        "50 MB single line, no whitespace": "x" * 50_000_000,
        "100k lines": "line of text number something\n" * 100_000,
        "10k headings": "".join(f"{'#' * (i % 6 + 1)} H{i}\nbody {i}\n" for i in range(10_000)),
        "1000 list lines, indent +1 space": "".join(" " * i + "- item\n" for i in range(1000)),
        "1000-deep nested list (+2 spaces)": "".join("  " * i + "- item\n" for i in range(1000)),
        "1000-deep block quote": "".join(">" * i + " q\n" for i in range(1000)),
        "100k-char emphasis run": "*a " * 33_000,
        "1 MB of unclosed brackets": "[" * 1_000_000,
    }


def measure_pathological() -> list[dict[str, object]]:
    """Time the default chunker on each pathological input (one run each)."""
    out: list[dict[str, object]] = []
    for name, text in pathological_inputs().items():
        start = time.process_time()
        result = chunk_markdown(text)
        seconds = time.process_time() - start
        out.append(
            {
                "name": name,
                "megabytes": round(len(text.encode("utf-8")) / 1_000_000, 2),
                "seconds": round(seconds, 3),
                "chunks": len(result.chunks),
                "parser": result.parser,
            }
        )
    return out


def machine() -> dict[str, object]:
    """Describe the machine the figures come from."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import markdown_it

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "markdown_it_py": markdown_it.__version__,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print a table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=ROOT / "corpus", help="corpus folder")
    parser.add_argument("--generated-mb", type=float, default=10.0, help="generated corpus size")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best kept)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--pathological", action="store_true", help="also time huge / deeply nested inputs")
    args = parser.parse_args(argv)

    report: dict[str, object] = {"machine": machine(), "config": DEFAULT_CONFIG.canonical_json()}
    sets: dict[str, dict[str, object]] = {}
    corpus = corpus_files(args.corpus) if args.corpus.is_dir() else []
    if corpus:
        sets["corpus"] = measure(corpus, args.repeat)
    else:
        print(f"note: no Markdown files under {args.corpus}; skipping it", file=sys.stderr)
    if args.generated_mb > 0:
        sets["generated"] = measure(generated_corpus(args.generated_mb), args.repeat)
    report["sets"] = sets
    if args.pathological:
        report["pathological"] = measure_pathological()

    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    info = report["machine"]
    assert isinstance(info, dict)
    print(
        f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}, "
        f"markdown-it-py {info['markdown_it_py']}"
    )
    for name, result in sets.items():
        print(
            f"\n[{name}] {result['files']} files, {result['megabytes']} MB "
            f"(median {result['size_median']} B, p90 {result['size_p90']} B, "
            f"max {result['size_max']} B), chunks: {result['chunks']}"
        )
        print(f"  {'measure':<16}{'seconds':>9}{'MB/s':>9}{'files/s':>10}{'x parse':>9}")
        timings = result["timings"]
        assert isinstance(timings, list)
        for t in timings:
            print(
                f"  {t['name']:<16}{t['seconds']:>9.3f}{t['mb_per_s']:>9.2f}"
                f"{t['files_per_s']:>10.0f}{t['ratio_to_parse']:>9.2f}"
            )
    patho = report.get("pathological")
    if isinstance(patho, list):
        print(f"\n[pathological] default config\n  {'input':<34}{'MB':>7}{'seconds':>9}{'chunks':>8}  parser")
        for p in patho:
            print(f"  {p['name']:<34}{p['megabytes']:>7}{p['seconds']:>9.3f}{p['chunks']:>8}  {p['parser']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
