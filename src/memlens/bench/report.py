"""Turning a bench report into Markdown (and comparing reports without timings).

:func:`render_markdown` renders a relevance or a scale report; :func:`seed_table`
builds the spike's table from a relevance run; :func:`extract_notes` recovers the
hand-written reading of an earlier output so that ``--out`` keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from memlens.bench.common import METRIC_LABELS, METRIC_NAMES, TIMING_SUFFIXES
from memlens.bench.metrics import Strategy


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


def _md_intro(report: Mapping[str, Any]) -> list[str]:
    """Title, the command line, the corpus and query set, and the spike's table."""
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
    return out


def _md_strategies_and_cost(report: Mapping[str, Any]) -> list[str]:
    """The strategies' canonical configs and the index cost of every run."""
    out = ["## Strategies", ""]
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
    return out


def _md_relevance(report: Mapping[str, Any]) -> list[str]:
    """Document- and section-level metric tables, MRR by query kind, unjudged runs."""
    out: list[str] = []
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
    ov = report["queries"].get("overlap", {})

    def label(k: str) -> str:
        m = ov.get(k, {}).get("mean")
        return k if m is None else f"{k} (overlap {m:.2f})"

    out += ["## By query kind (MRR)", "",
            "Document-level / section-level MRR per kind of query. Overlap: the mean fraction "
            "of a question's content words that occur in its answer document (a paraphrase "
            "set near the keyword set's figure measures lexical search twice).", ""]
    rows = [[f"`{r['strategy']}`", _who(r)] + [
        f"{_f(r['doc']['by_kind'].get(k, {}).get('mrr', 0.0))} / "
        f"{_f(r['section']['by_kind'].get(k, {}).get('mrr', 0.0))}" for k in kinds] for r in res]
    out += _table(["Strategy", "Mode"] + [label(k) for k in kinds], rows, "ll" + "r" * len(kinds))
    out.append("")
    errs = [r for r in report["results"] if "error" in r]
    if errs:
        out += ["Runs that could not be judged:", ""]
        out += [f"- `{r['strategy']}` {_who(r)}: {r['error']}" for r in errs]
        out.append("")
    return out


def _md_embedders(report: Mapping[str, Any]) -> list[str]:
    """One row per embedder: fingerprint (or why it was skipped), size and cost."""
    out = ["## Embedders", ""]
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
    return out


def _md_reading(report: Mapping[str, Any], notes: str | None) -> list[str]:
    """The derived reading, then the hand-written notes between their markers."""
    out = ["## What the numbers show", "",
           "Derived from this run (a difference below one query's worth, 1/N of the "
           "queries, is called a tie):", ""]
    out += _reading(report) or ["- (one strategy only: nothing to compare)"]
    out += ["", NOTES_BEGIN, notes if notes is not None else
            "_Reading not written yet: add it between these markers; `--out` keeps it._",
            NOTES_END, ""]
    return out


def _md_method(report: Mapping[str, Any]) -> list[str]:
    """How the figures were obtained, and the checks on the query set."""
    out = ["## Method", "",
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
    return out


def _md_environment(report: Mapping[str, Any]) -> list[str]:
    """Versions, machine and embedder fingerprints."""
    env = report["environment"]
    out = ["## Environment", ""]
    out += [f"- Python {env['python']} ({env['platform']}), {env['cpu_count']} CPUs"
            + (f" ({env['cpu']})" if env.get("cpu") else ""),
            f"- SQLite {env['sqlite']} (APSW {env['apsw']}), sqlite-vec {env['sqlite_vec']}",
            f"- memlens {env['memlens']}, numpy {env['numpy']}, markdown-it-py "
            f"{env['markdown_it_py']}, model2vec {env['model2vec']}"]
    out += [f"- embedder `{k}`: `{v}`" for k, v in env["embedders"].items()]
    out.append("")
    return out


def render_markdown(report: Mapping[str, Any], notes: str | None = None) -> str:
    """Render a bench report (relevance or scale) as Markdown.

    A relevance report gives, in order: the spike's table, strategies and index cost,
    document- and section-level metrics, MRR by query kind, embedders, the reading
    (with the hand-written notes), the method and the environment.

    Args:
        report: What :func:`run_bench` or :func:`run_scale` returned.
        notes: Hand-written reading to keep between the notes markers (taken from an
            earlier version of the output file); a placeholder is written when None.

    Returns:
        The Markdown text.
    """
    if report.get("kind") == "scale":
        return _render_scale(report)
    out = _md_intro(report)
    out += _md_strategies_and_cost(report)
    out += _md_relevance(report)
    out += _md_embedders(report)
    out += _md_reading(report, notes)
    out += _md_method(report)
    out += _md_environment(report)
    return "\n".join(out)


def _render_scale(report: Mapping[str, Any]) -> str:
    """A scale report: one row per size x strategy x embedder, then the environment."""
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
