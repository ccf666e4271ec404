"""``memlens bench``'s entry points: the CLI (``memlens.cli.bench``) imports these,
never the rest of :mod:`memlens.bench`. The benchmark is a client of the door (the
service imports nothing of it); it drives the door's start-up flow
(:func:`memlens.bench.harness.ingest_corpus`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memlens.core.types import Settings


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
    from memlens import bench

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
    from memlens import bench

    notes = bench.extract_notes(previous) if previous is not None else None
    return bench.render_markdown(report, notes)


def _set_name(rep: Mapping[str, Any], i: int) -> str:
    """A held-out set's column name: ``val`` for a corpus's own ``queries.jsonl``, else
    the queries file's stem without ``queries_`` (``queries_hard.jsonl`` -> ``hard``)."""
    stem = Path(str(rep.get("queries", {}).get("path", ""))).stem
    if stem in ("", "queries"):
        return "val" if i == 1 else f"val{i}"
    return stem.removeprefix("queries_").removeprefix("queries-") or f"set{i}"


def _set_names(held_out: Sequence[Mapping[str, Any]]) -> list[str]:
    """:func:`_set_name` of each held-out set; names that two sets share get their
    corpus folder's name in front (``corpus/hard``, ``corpus_validation/hard``)."""
    base = [_set_name(rep, i) for i, rep in enumerate(held_out, 1)]
    names = list(base)
    for i, (name, rep) in enumerate(zip(base, held_out, strict=True)):
        if base.count(name) > 1:
            folder = Path(str(rep.get("corpus", {}).get("path", ""))).name
            names[i] = f"{folder}/{name}" if folder else f"{name}{i + 1}"
    return names


def render_train_validation(train: Mapping[str, Any], *held_out: Mapping[str, Any]) -> str:
    """Markdown table: document-level Hit@1 per query kind, the tuning corpus beside each
    held-out set (never tuned on), for every strategy x mode x embedder row the train run
    has; a first row gives each set's content-word overlap per kind (the mean fraction
    of a question's content words found in its answer document)."""
    def rows(rep: Mapping[str, Any]) -> dict[tuple[str, str, str], Mapping[str, Any]]:
        return {(r["strategy"], r["mode"], r.get("embedder") or "-"): r
                for r in rep.get("results", []) if "doc" in r}

    sets = [train, *held_out]
    tables = [rows(rep) for rep in sets]
    kinds = [k for k in ("lexical", "paraphrase", "heading", "code")
             if any(k in rep.get("queries", {}).get("kinds", {}) for rep in sets)]
    names = ["train"] + _set_names(held_out)
    head = ["strategy", "mode", "embedder"] + [f"{k} {' / '.join(names)}" for k in kinds]

    def where(rep: Mapping[str, Any]) -> str:
        q = rep.get("queries", {}).get("path", "?")
        return f"`{rep.get('corpus', {}).get('path', '?')}` (queries `{q}`)"

    lines = ["## Train (tuning) vs validation corpus", "",
             f"Train: {where(train)}; "
             + "; ".join(f"{n}: {where(rep)}" for n, rep in zip(names[1:], held_out, strict=True))
             + " (never tuned on). Cells are document-level Hit@1; the overlap row is the mean"
             " fraction of a question's content words that occur in its answer document.",
             "", "| " + " | ".join(head) + " |", "|" + "---|" * 3 + "---:|" * len(kinds)]

    def overlap(rep: Mapping[str, Any], k: str) -> str:
        v = rep.get("queries", {}).get("overlap", {}).get(k, {}).get("mean")
        return "–" if v is None else f"{v:.2f}"

    lines.append("| (overlap) | | | " + " | ".join(
        " / ".join(overlap(rep, k) for rep in sets) for k in kinds) + " |")

    def cell(r: Mapping[str, Any] | None, k: str) -> str:
        if r is None:
            return "–"
        v = r["doc"]["by_kind"].get(k, {}).get("hit1")
        return "–" if v is None else f"{v:.2f}"

    for key in tables[0]:
        cells = [" / ".join(cell(t.get(key), k) for t in tables) for k in kinds]
        lines.append("| " + " | ".join([*key, *cells]) + " |")
    return "\n".join(lines) + "\n"
