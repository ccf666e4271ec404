"""``memlens bench`` behind the door: the CLI calls these (through
:mod:`memlens.core.service`), never the bench module itself."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .config import Settings


def bench_embedder_options(settings: Settings) -> dict[str, dict[str, Any]]:
    """Options from the config file's [embedder] table, keyed by the configured embedder."""
    name = settings.embedder.name
    if name in ("auto", "") or not settings.embedder.options:
        return {}
    return {name.replace("_", "-"): dict(settings.embedder.options)}


def run_benchmark(*, corpus: Path | None, queries: Path | None, strategies: str | None,
                  modes: str, embedders: str | None, generate: str | None, per_document: int,
                  seed: int, workdir: Path | None, command: str,
                  embedder_options: Mapping[str, Mapping[str, Any]],
                  progress: Callable[[str, int], None] | None = None,
                  total: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Run the retrieval benchmark (or, with ``generate``, the scale runs); the report dict.

    Raises:
        BenchError: Bad arguments, or the corpus/queries cannot be used.
    """
    from . import bench

    strats = bench.parse_strategies(
        strategies or ("adaptive-400-80" if generate else ",".join(bench.DEFAULT_STRATEGIES)))
    mode_list = bench.split_list(modes)
    emb = bench.split_list(embedders) if embedders else None
    if per_document < 0:
        raise bench.BenchError("--per-document must be 0 or more")
    if generate:
        try:
            sizes = [int(x) for x in bench.split_list(generate)]
        except ValueError:
            raise bench.BenchError(f"--generate takes file counts such as 100,1000, "
                                   f"got {generate!r}") from None
        return bench.run_scale(sizes, strats, mode_list, emb, embedder_options=embedder_options,
                               seed=seed, workdir=workdir, command=command, progress=progress,
                               total=total)
    if corpus is None:
        raise bench.BenchError("no corpus; pass --corpus DIR")
    opts = bench.BenchOptions(corpus=corpus, queries=queries or corpus / "queries.jsonl",
                              strategies=strats, modes=mode_list, embedders=emb,
                              embedder_options={k: dict(v) for k, v in
                                                embedder_options.items()},
                              per_document=per_document,
                              workdir=workdir, command=command)
    return bench.run_bench(opts, progress=progress, total=total)


def render_bench_report(report: Mapping[str, Any], previous: str | None = None) -> str:
    """The Markdown report; ``previous`` (an earlier report's text) keeps its notes."""
    from . import bench

    notes = bench.extract_notes(previous) if previous is not None else None
    return bench.render_markdown(report, notes)


def render_train_validation(train: Mapping[str, Any], validation: Mapping[str, Any]) -> str:
    """Markdown table: document-level Hit@1 per query kind, tuning corpus beside the
    validation corpus, for every strategy x mode x embedder row both runs have."""
    def rows(rep: Mapping[str, Any]) -> dict[tuple[str, str, str], Mapping[str, Any]]:
        return {(r["strategy"], r["mode"], r.get("embedder") or "-"): r
                for r in rep.get("results", []) if "doc" in r}

    tr, va = rows(train), rows(validation)
    kinds = [k for k in ("lexical", "paraphrase", "heading", "code")
             if k in train.get("queries", {}).get("kinds", {})
             or k in validation.get("queries", {}).get("kinds", {})]
    head = ["strategy", "mode", "embedder"] + [f"{k} train / val" for k in kinds]
    lines = [
        "## Train (tuning) vs validation corpus",
        "",
        f"Train: `{train.get('corpus', {}).get('path', '?')}`; validation: "
        f"`{validation.get('corpus', {}).get('path', '?')}` (never tuned on). Cells are "
        "document-level Hit@1.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * 3 + "---:|" * len(kinds),
    ]

    def cell(r: Mapping[str, Any] | None, k: str) -> str:
        if r is None:
            return "–"
        v = r["doc"]["by_kind"].get(k, {}).get("hit1")
        return "–" if v is None else f"{v:.2f}"

    for key in [k for k in tr if k in va] + [k for k in tr if k not in va]:
        cells = [f"{cell(tr.get(key), k)} / {cell(va.get(key), k)}" for k in kinds]
        lines.append("| " + " | ".join([*key, *cells]) + " |")
    return "\n".join(lines) + "\n"
