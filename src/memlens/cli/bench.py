"""``memlens bench``: compare chunking strategies, search modes and embedders.

All measuring lives in :mod:`memlens.bench`; this module parses flags, shows
a rich progress bar when stderr is a terminal, and prints Markdown or JSON.

Examples::

    memlens bench                                   # the full default comparison
    memlens bench --strategies whole,windows:96:24 --modes lexical --json
    memlens bench --out docs/research/auto-memory-results.md
    memlens bench --generate 100,1000,10000 --embedder hashing
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import memlens.core.types as T

EXIT_OK = 0
EXIT_USAGE = 2


def register(sub: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add the ``bench`` subcommand to the main parser's subparsers."""
    p = sub.add_parser(
        "bench", help="benchmark chunking strategies, search modes and embedders",
        description="Ingest the corpus into a fresh temporary database per strategy and "
        "embedder, run every labelled query in each search mode, and report chunks, index "
        "size, ingest time and Hit@1/Hit@3/MRR/nDCG@10/Recall@5 at document and section "
        "level, overall and per query kind. With --generate, time ingest and search on "
        "synthetic corpora instead (no relevance metrics). The --db option is not used: "
        "every run works on temporary databases.",
        epilog="Strategies: whole, headings, windows-48-12, adaptive-400-80, or "
        "KIND:MAX:OVERLAP such as windows:96:24 or adaptive:200:40. Embedders: "
        f"{', '.join(T.EMBEDDER_NAMES)} (options from the config file's "
        "[embedder] table apply to the configured embedder).")
    p.add_argument("--corpus", type=Path, default=None, metavar="DIR",
                   help="folder of Claude project folders (default: the bundled corpus/)")
    p.add_argument("--queries", type=Path, default=None, metavar="FILE",
                   help="labelled queries, JSON lines (default: CORPUS/queries.jsonl)")
    p.add_argument("--strategies", default=None, metavar="LIST",
                   help="comma list of strategies (default: whole,headings,windows-48-12,"
                   "adaptive-400-80; with --generate: adaptive-400-80)")
    p.add_argument("--validation", type=Path, action="append", default=None,
                   metavar="DIR|FILE",
                   help="also run the same matrix on this held-out set and add a train-vs-"
                   "validation table: a corpus folder (its queries.jsonl) or a queries file "
                   "(its corpus is the folder holding it); repeat for several sets")
    p.add_argument("--modes", default="lexical,vector,hybrid", metavar="LIST",
                   help="comma list of search modes (default: lexical,vector,hybrid); "
                   "hybrid-rrf, hybrid-zscore, hybrid-minmax, hybrid-convex pick the fusion")
    p.add_argument("--embedder", default=None, metavar="NAME[,NAME...]",
                   help="embedders to compare (default: every one available here; the others "
                   "are listed as skipped with the reason)")
    p.add_argument("--per-document", type=int, default=2, metavar="N",
                   help="hits per document in section-level lists, as the search engine shows "
                   "them (default 2; 0 = no cap)")
    p.add_argument("--out", type=Path, default=None, metavar="FILE",
                   help="also write the Markdown report here (a hand-written reading between "
                   "the notes markers of an existing file is kept)")
    p.add_argument("--generate", default=None, metavar="N[,N...]",
                   help="scale run on generated corpora of N files (e.g. 100,1000,10000)")
    p.add_argument("--seed", type=int, default=0, help="generator seed for --generate (0)")
    p.add_argument("--workdir", type=Path, default=None, metavar="DIR",
                   help="keep the temporary databases (and generated corpora) here")
    common(p)
    p.set_defaults(handler=cmd_bench)


def _err(msg: str) -> None:
    print(f"memlens: {msg}", file=sys.stderr)


@contextmanager
def _progress(enabled: bool) -> Iterator[tuple[Any, Any]]:
    """Yield (total, advance) callbacks backed by a rich progress bar on stderr."""
    if not enabled:
        yield None, None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=Console(stderr=True), transient=True)
    task = progress.add_task("bench", total=None)

    def total(n: int) -> None:
        progress.update(task, total=n)

    def advance(desc: str, n: int) -> None:
        progress.update(task, advance=n, description=desc[:50].ljust(50))

    with progress:
        yield total, advance


def _command_line(argv: list[str]) -> str:
    return "memlens " + " ".join(shlex.quote(a) for a in argv)


def _embedder_options(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Options from the config file's [embedder] table, for the configured embedder."""
    from memlens.bench.entry import bench_embedder_options
    from memlens.core.service import load_settings
    from memlens.core.types import ConfigError

    try:
        settings = load_settings(getattr(args, "config", None))
    except ConfigError as exc:
        raise _Usage(str(exc)) from None
    return bench_embedder_options(settings)


class _Usage(Exception):
    pass


def cmd_bench(args: argparse.Namespace) -> int:
    """``memlens bench``."""
    from memlens.bench.common import BenchError
    from memlens.bench.entry import render_bench_report, render_train_validation, run_benchmark

    argv = sys.argv[1:] if sys.argv and sys.argv[0].endswith(("memlens", "cli.py")) else []
    command = _command_line(argv or _reconstruct(args))
    try:
        options = _embedder_options(args)
        corpus = None if args.generate else (args.corpus or _default_corpus())
        with _progress(sys.stderr.isatty()) as (total, advance):
            report = run_benchmark(
                corpus=corpus, queries=args.queries, strategies=args.strategies,
                modes=args.modes, embedders=args.embedder, generate=args.generate,
                per_document=args.per_document, seed=args.seed, workdir=args.workdir,
                command=command, embedder_options=options, progress=advance, total=total)
    except (BenchError, _Usage) as exc:
        _err(str(exc))
        return EXIT_USAGE
    for held in args.validation or []:
        held_corpus, held_queries = (held.parent, held) if held.is_file() else (held, None)
        try:
            with _progress(sys.stderr.isatty()) as (total, advance):
                rep = run_benchmark(
                    corpus=held_corpus, queries=held_queries, strategies=args.strategies,
                    modes=args.modes, embedders=args.embedder, generate=None,
                    per_document=args.per_document, seed=args.seed, workdir=None,
                    command=command, embedder_options=options, progress=advance,
                    total=total)
        except BenchError as exc:
            _err(f"validation corpus: {exc}")
            return EXIT_USAGE
        report.setdefault("validation", rep)  # the first set (the shape before sets)
        report.setdefault("validation_sets", []).append(rep)
    previous = None
    if args.out is not None and args.out.exists():
        previous = args.out.read_text(encoding="utf-8")
    md = render_bench_report(report, previous)
    if "validation_sets" in report:
        md += "\n" + render_train_validation(report, *report["validation_sets"])
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(md, encoding="utf-8")
    if args.json:
        sys.stdout.write(json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    elif args.out is not None:
        _summary(report)
        print(f"report written to {args.out}")
    else:
        sys.stdout.write(md)
    for e in report.get("embedders", []):
        if e["status"] != "ok" and not args.json:
            _err(f"embedder {e['name']} skipped: {e['reason']}")
    return EXIT_OK


def _reconstruct(args: argparse.Namespace) -> list[str]:
    out = ["bench"]
    for flag in ("corpus", "queries", "strategies", "embedder", "generate", "out"):
        v = getattr(args, flag, None)
        if v is not None:
            out += [f"--{flag}", str(v)]
    if args.modes != "lexical,vector,hybrid":
        out += ["--modes", args.modes]
    if args.json:
        out.append("--json")
    return out


def _default_corpus() -> Path:
    from memlens.bench.common import BenchError
    from memlens.tui.demo import DemoUnavailable, bundled_corpus

    try:
        return bundled_corpus()
    except DemoUnavailable as exc:
        raise BenchError(f"{exc}; pass --corpus DIR") from None


def _summary(report: dict[str, Any]) -> None:
    if report.get("kind") == "scale":
        for r in report["scale"]:
            print(f"{r['files']:>6} files  {r['strategy']:<16} {r['embedder']:<10} "
                  f"{r['chunks']:>7} chunks  ingest+project {r['total_seconds']:.2f}s")
        return
    for r in report["results"]:
        if "doc" not in r:
            continue
        d = r["doc"]["overall"]
        s = r["section"]["overall"]
        who = r["mode"] + (f"/{r['embedder']}" if r.get("embedder") else "")
        print(f"{r['strategy']:<16} {who:<22} doc MRR {d['mrr']:.3f}  section MRR {s['mrr']:.3f}")
