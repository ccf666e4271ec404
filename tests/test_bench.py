"""memlens bench: metric functions, judging, determinism, the spike's table, the CLI."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest

from memlens import bench
from memlens.bench import (
    BenchError,
    BenchOptions,
    Query,
    dedupe_by_document,
    first_relevant_rank,
    hit_at,
    ndcg_at,
    query_metrics,
    recall_at,
    reciprocal_rank,
)
from memlens.bench import embedders as bench_embedders
from memlens.core.search.engine import SearchHit
from tests.conftest import CORPUS, REPO, run_cli


def _hit(path: str, *, repo: str = "r", score: float = 1.0, heading: tuple[str, ...] = (),
         span: tuple[int, int] = (0, 10), node: int = 0) -> SearchHit:
    return SearchHit(repository=repo, path=path, heading_path=list(heading), ordinal=0,
                     start_char=span[0], end_char=span[1], score=score, snippet="",
                     document_id=hash((repo, path)) & 0xFFFF, node_id=node)


# --------------------------------------------------------------------------- metrics


def test_first_relevant_rank_and_hits() -> None:
    rel = [False, False, True, False, True]
    assert first_relevant_rank(rel) == 3
    assert hit_at(rel, 1) == 0.0
    assert hit_at(rel, 2) == 0.0
    assert hit_at(rel, 3) == 1.0
    assert reciprocal_rank(rel) == pytest.approx(1 / 3)


def test_missing_answer_scores_zero_everywhere() -> None:
    """A query whose answer is absent from the ranking (or from the index) scores 0."""
    for rel in ([], [False] * 10, [False] * 10 + [True]):  # rank 11 is outside @10
        m = query_metrics(rel)
        assert m == {"hit1": 0.0, "hit3": 0.0, "mrr": 0.0, "ndcg10": 0.0, "recall5": 0.0}


def test_ndcg_single_relevant_doc() -> None:
    """With one relevant item nDCG@10 is 1/log2(rank+1)."""
    assert ndcg_at([True]) == 1.0
    assert ndcg_at([False, True]) == pytest.approx(1 / math.log2(3))
    assert ndcg_at([False] * 3 + [True]) == pytest.approx(1 / math.log2(5))
    assert ndcg_at([False] * 10 + [True]) == 0.0
    assert ndcg_at([True], n_relevant=0) == 0.0


def test_ndcg_several_relevant() -> None:
    # two relevant items at ranks 1 and 3 of two: (1 + 1/2) / (1 + 1/log2(3))
    got = ndcg_at([True, False, True], n_relevant=2)
    assert got == pytest.approx((1 + 1 / 2) / (1 + 1 / math.log2(3)))
    # gains past n_relevant are ignored, so the score never exceeds 1
    assert ndcg_at([True, True, True], n_relevant=1) == 1.0


def test_recall() -> None:
    assert recall_at([False, True, False, True], 5, n_relevant=2) == 1.0
    assert recall_at([False, True, False, True], 2, n_relevant=2) == 0.5
    assert recall_at([True], 5, n_relevant=0) == 0.0


def test_query_metrics_hand_computed() -> None:
    m = query_metrics([False, True, False])
    assert m == {"hit1": 0.0, "hit3": 1.0, "mrr": 0.5, "ndcg10": pytest.approx(1 / math.log2(3)),
                 "recall5": 1.0}
    # a second relevant chunk (same section again) earns nothing
    assert query_metrics([False, True, True]) == m
    # rank 4: outside Hit@3, inside Recall@5
    m4 = query_metrics([False, False, False, True])
    assert (m4["hit3"], m4["recall5"], m4["mrr"]) == (0.0, 1.0, 0.25)


def test_aggregate_means() -> None:
    per = [query_metrics([True]), query_metrics([False, True]), query_metrics([])]
    agg = bench.aggregate(per)
    assert agg["hit1"] == pytest.approx(round(1 / 3, 4))
    assert agg["mrr"] == pytest.approx(round(1.5 / 3, 4))
    assert agg["n"] == 3
    assert bench.aggregate([])["mrr"] == 0.0


def test_dedupe_keeps_first_occurrence_and_engine_order() -> None:
    """Ties in score keep the engine's order; later chunks of a seen document drop out."""
    hits = [_hit("b.md", score=0.5, node=1), _hit("a.md", score=0.5, node=2),
            _hit("b.md", score=0.5, node=3), _hit("c.md", score=0.9, node=4)]
    out = dedupe_by_document(hits)
    assert [(h.path, h.node_id) for h in out] == [("b.md", 1), ("a.md", 2), ("c.md", 4)]
    # same path in another repository is another document
    assert len(dedupe_by_document([_hit("x.md", repo="r1"), _hit("x.md", repo="r2")])) == 2


def test_ties_are_not_resorted() -> None:
    """Two equal scores: the relevant one ranked second by the engine stays second."""
    hits = [_hit("wrong.md", score=1.0), _hit("right.md", score=1.0)]
    rel = [h.path == "right.md" for h in dedupe_by_document(hits)]
    assert query_metrics(rel)["mrr"] == 0.5


def test_percentile_nearest_rank() -> None:
    vals = [float(v) for v in range(1, 21)]
    assert bench.percentile(vals, 50) == 10.0
    assert bench.percentile(vals, 95) == 19.0
    assert bench.percentile([3.0], 95) == 3.0
    assert bench.percentile([], 50) == 0.0


# --------------------------------------------------------------------------- section judging

DOC = """---
name: x
---
Intro before any heading.

# Title

```bash
# Connection settings
echo not a heading
```

## Connection settings

busy_timeout = 15000

Setext one
----------

text
"""


def test_heading_offsets_ignore_code_fence_comments() -> None:
    offs = bench.heading_offsets(DOC, "Connection settings")
    assert offs == [DOC.index("## Connection settings")]
    assert bench.heading_offsets(DOC, "Setext one") == [DOC.index("Setext one")]
    assert bench.heading_offsets(DOC, "  title ") == [DOC.index("# Title")]
    assert bench.heading_offsets(DOC, "Nope") == []


def test_section_relevance() -> None:
    q = Query("q", "busy", "lexical", "r", "db.md", "Connection settings")
    off = [100]
    assert bench.section_relevant(_hit("db.md", heading=("Title", "Connection settings")), q, off)
    assert bench.section_relevant(_hit("db.md", span=(90, 200)), q, off)  # span holds the line
    assert not bench.section_relevant(_hit("db.md", span=(101, 200)), q, off)
    assert not bench.section_relevant(_hit("db.md", span=(0, 100)), q, off)  # end is exclusive
    assert not bench.section_relevant(_hit("other.md", heading=("Connection settings",)), q, off)
    assert not bench.section_relevant(
        _hit("db.md", repo="r2", heading=("Connection settings",)), q, off)
    anywhere = Query("q", "x", "lexical", "r", "db.md", None)
    assert bench.section_relevant(_hit("db.md", span=(5000, 5001)), anywhere, [])


# --------------------------------------------------------------------------- strategies


def test_presets_and_custom_specs() -> None:
    assert bench.parse_strategy("windows-48-12").config.max_tokens == 48
    assert bench.parse_strategy("windows-48-12").config.overlap_tokens == 12
    assert bench.parse_strategy("windows:48:12").label == "windows-48-12"  # same config: preset
    st = bench.parse_strategy("windows:96:24")
    assert (st.label, st.config.strategy, st.config.max_tokens, st.config.overlap_tokens) == (
        "windows-96-24", "windows", 96, 24)
    assert bench.parse_strategy("adaptive:200:40").label == "adaptive-200-40"
    assert bench.parse_strategy("adaptive").label == "adaptive-400-80"
    cfg = bench.parse_strategy("adaptive:200:40").config
    assert bench.parse_strategy(cfg.canonical_json()).config == cfg  # reports are repeatable
    with pytest.raises(BenchError, match="unknown strategy"):
        bench.parse_strategy("sentences")
    with pytest.raises(BenchError, match="overlap_tokens"):
        bench.parse_strategy("windows:10:20")


def test_strategy_lists() -> None:
    specs = bench.split_list('whole, windows:96:24,{"strategy":"adaptive","max_tokens":200},')
    assert specs == ["whole", "windows:96:24", '{"strategy":"adaptive","max_tokens":200}']
    got = bench.parse_strategies("whole,headings,whole,windows:48:12")
    assert [s.label for s in got] == ["whole", "headings", "windows-48-12"]
    with pytest.raises(BenchError):
        bench.parse_strategies(" , ")


def test_load_queries_errors(tmp_path: Path) -> None:
    p = tmp_path / "q.jsonl"
    p.write_text('{"id":"a","query":"x","kind":"k","repository":"r"}\n')
    with pytest.raises(BenchError, match=r"q.jsonl:1: missing .*path"):
        bench.load_queries(p)
    p.write_text("not json\n")
    with pytest.raises(BenchError, match=":1: not valid JSON"):
        bench.load_queries(p)
    assert len(bench.load_queries(CORPUS / "queries.jsonl")) == 96


# --------------------------------------------------------------------------- whole runs


def _tiny_corpus(tmp_path: Path) -> tuple[Path, Path]:
    mem = tmp_path / "corpus" / "-home-dev-tiny" / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text("# Memory\n\n- [Database](database.md) — sqlite notes\n")
    (mem / "database.md").write_text(
        "# Database\n\n## Connection settings\n\nSet busy_timeout to 15000 on every "
        "connection.\n\n## Backups\n\nNightly litestream replication to the bucket.\n")
    (mem / "deploy.md").write_text("# Deploy\n\nRoll out with the blue green script.\n")
    q = tmp_path / "queries.jsonl"
    rows = [
        {"id": "t1", "query": "busy_timeout", "kind": "lexical", "repository": "-home-dev-tiny",
         "path": "database.md", "heading": "Connection settings"},
        {"id": "t2", "query": "blue green", "kind": "lexical", "repository": "-home-dev-tiny",
         "path": "deploy.md", "heading": None},
        {"id": "t3", "query": "litestream", "kind": "code", "repository": "-home-dev-tiny",
         "path": "missing.md", "heading": None},
    ]
    q.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "corpus", q


def test_tiny_corpus_hand_checked(tmp_path: Path) -> None:
    """Exact ranks on a corpus small enough to reason about, including a missing answer."""
    corpus, queries = _tiny_corpus(tmp_path)
    rep = bench.run_bench(BenchOptions(corpus=corpus, queries=queries,
                                       strategies=bench.parse_strategies("headings"),
                                       modes=["lexical"], embedders=["hashing"]))
    (res,) = rep["results"]
    ranks = {q["id"]: (q["doc_rank"], q["section_rank"]) for q in res["queries"]}
    assert ranks == {"t1": (1, 1), "t2": (1, 1), "t3": (None, None)}
    assert res["doc"]["overall"]["mrr"] == pytest.approx(round(2 / 3, 4))
    assert res["doc"]["by_kind"]["code"]["mrr"] == 0.0
    # MEMORY.md, deploy.md, and database.md's two sections ("# Database" has no text of its
    # own, so it merges into "## Connection settings")
    assert rep["runs"][0]["chunks"] == 4
    assert any("t3" in n and "not in the corpus" in n for n in rep["notes"])


@pytest.fixture(scope="module")
def corpus_reports() -> list[dict[str, Any]]:
    opts = BenchOptions(corpus=CORPUS, queries=CORPUS / "queries.jsonl",
                        strategies=bench.parse_strategies(",".join(bench.DEFAULT_STRATEGIES)),
                        modes=["lexical", "hybrid"], embedders=["hashing"],
                        embedder_options={"hashing": {"dim": 64}})
    return [bench.run_bench(opts), bench.run_bench(opts)]


def test_bench_is_deterministic(corpus_reports: list[dict[str, Any]]) -> None:
    """Two runs with the hashing embedder agree on everything except timings (sizes included)."""
    a, b = (bench.strip_timing(r) for r in corpus_reports)
    assert a == b
    assert "ingest_seconds" in corpus_reports[0]["runs"][0]
    assert "ingest_seconds" not in a["runs"][0]
    assert a["runs"][0]["index_bytes"] > 0


def test_report_shape(corpus_reports: list[dict[str, Any]]) -> None:
    rep = corpus_reports[0]
    assert [r["strategy"] for r in rep["runs"]] == list(bench.DEFAULT_STRATEGIES)
    for st in rep["strategies"]:
        cfg = json.loads(st["config"])
        assert cfg["name"] == "memlens-markdown" and "version" in cfg
    rows = [(r["strategy"], r["mode"], r["embedder"]) for r in rep["results"]]
    assert ("whole", "lexical", None) in rows and ("whole", "hybrid", "hashing") in rows
    for r in rep["results"]:
        for level in ("doc", "section"):
            assert set(r[level]["by_kind"]) == {"lexical", "paraphrase", "heading", "code"}
            for m in bench.METRIC_NAMES:
                assert 0.0 <= r[level]["overall"][m] <= 1.0
            # a section-level hit is also a document-level hit, no later
            assert r["section"]["overall"]["hit1"] <= r["doc"]["overall"]["hit1"]
        assert len(r["queries"]) == 96
    # whole files: section level equals document level (the file's span holds every heading)
    whole = next(r for r in rep["results"] if r["strategy"] == "whole" and r["mode"] == "lexical")
    assert whole["section"]["overall"] == whole["doc"]["overall"]
    env = rep["environment"]
    assert env["sqlite"] and env["sqlite_vec"] and env["cpu_count"]


def test_seed_table_shape(corpus_reports: list[dict[str, Any]]) -> None:
    """The spike's table (Strategy | Chunks | Hit@1 | MRR) with its three strategies first."""
    rep = corpus_reports[0]
    table = rep["seed_table"]
    assert [r["strategy"] for r in table][:3] == ["whole", "headings", "windows-48-12"]
    whole, headings, windows = table[:3]
    assert whole["label"] == "Whole file"
    assert windows["label"] == "48-token windows with 12-token overlap"
    assert whole["chunks"] < headings["chunks"] < windows["chunks"]
    assert whole["chunks"] == 34  # 35 files, one of them empty
    for r in table:
        assert 0.0 <= r["hit1"] <= r["mrr"] <= 1.0
        assert r["queries"] == 24
    md = bench.render_markdown(rep)
    assert "| Strategy | Chunks | Hit@1 | MRR |" in md
    assert f"| Whole file | 34 | {whole['hit1']:.3f} | {whole['mrr']:.3f} |" in md
    assert "| Markdown headings |" in md and "| 48-token windows with 12-token overlap |" in md


def test_markdown_keeps_handwritten_notes(corpus_reports: list[dict[str, Any]]) -> None:
    md = bench.render_markdown(corpus_reports[0], "My reading.\n\nSecond paragraph.")
    assert bench.extract_notes(md) == "My reading.\n\nSecond paragraph."
    assert bench.extract_notes("no markers") is None


# --------------------------------------------------------------------------- generated corpora


def test_generated_corpus_is_deterministic_with_real_size_mix(tmp_path: Path) -> None:
    a = bench.generate_corpus(tmp_path / "a", 300, seed=7)
    b = bench.generate_corpus(tmp_path / "b", 300, seed=7)
    fa = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.md"))
    fb = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*.md"))
    assert fa == fb and len(fa) == a.files == 300
    assert all((tmp_path / "a" / p).read_bytes() == (tmp_path / "b" / p).read_bytes() for p in fa)
    assert a.bytes == b.bytes
    sizes = [(tmp_path / "a" / p).stat().st_size for p in fa]
    assert 1100 <= statistics.median(sizes) <= 2000
    assert 2800 <= bench.percentile(sizes, 90) <= 5500
    assert max(sizes) <= 16_000
    text = "".join((tmp_path / "a" / p).read_text() for p in fa)
    assert "```" in text and "\n## " in text and "\n- " in text and "](" in text
    assert bench.generate_corpus(tmp_path / "c", 300, seed=8).bytes != a.bytes


def test_scale_run_small(tmp_path: Path) -> None:
    rep = bench.run_scale([40], bench.parse_strategies("adaptive-400-80"), ["lexical", "hybrid"],
                          ["hashing"], embedder_options={"hashing": {"dim": 64}}, n_queries=8,
                          workdir=tmp_path)
    (row,) = rep["scale"]
    assert row["files"] == 40 and row["documents"] == 40 and row["chunks"] >= 40
    assert row["index_bytes"] > 0 and row["rescan_files_per_s"] > 0
    assert set(row["latency"]) == {"lexical", "hybrid"}
    assert row["latency"]["lexical"]["p95_ms"] >= row["latency"]["lexical"]["p50_ms"]
    assert "results" not in rep  # no relevance metrics without queries
    assert "| Files |" in bench.render_markdown(rep)


def test_unavailable_embedders_are_listed_with_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    # the default list minus the slow model loads; sentence-transformers may or may not exist
    monkeypatch.setattr(bench_embedders, "DEFAULT_EMBEDDERS", ("hashing", "sentence-transformers"))
    slots = bench.resolve_embedders(["hashing", "no-such-embedder"])
    assert slots[0].embedder is not None
    assert slots[1].embedder is None and "unknown embedder" in (slots[1].reason or "")
    default = {s.name: s for s in bench.resolve_embedders(None)}
    assert default["hashing"].embedder is not None
    assert default["openai"].embedder is None and default["openai"].reason
    for s in default.values():
        assert (s.embedder is None) == bool(s.reason)


# --------------------------------------------------------------------------- CLI


def test_cli_bench_json() -> None:
    proc = run_cli("bench", "--strategies", "whole", "--modes", "lexical", "--embedder",
                   "hashing", "--json")
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert rep["kind"] == "relevance"
    (res,) = rep["results"]
    assert (res["strategy"], res["mode"], res["embedder"]) == ("whole", "lexical", None)
    assert rep["seed_table"][0]["label"] == "Whole file"
    assert rep["command"].startswith("memlens bench")
    assert "\x1b" not in proc.stderr  # no progress bar when stderr is not a terminal


def test_cli_bench_markdown_out(tmp_path: Path) -> None:
    out = tmp_path / "results.md"
    out.write_text(f"old\n{bench.NOTES_BEGIN}\nkept reading\n{bench.NOTES_END}\n")
    proc = run_cli("bench", "--strategies", "whole,windows:96:24", "--modes", "lexical",
                   "--embedder", "hashing", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "kept reading" in text and "old\n" not in text
    assert "`windows-96-24`" in text and "report written to" in proc.stdout


def test_cli_bench_train_vs_validation(tmp_path: Path) -> None:
    """--validation runs the same matrix on a second corpus and adds a side-by-side table."""
    out = tmp_path / "tv.md"
    proc = run_cli("bench", "--strategies", "whole", "--modes", "lexical,hybrid-rrf",
                   "--embedder", "hashing", "--validation", str(REPO / "corpus_validation"),
                   "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert rep["validation"]["corpus"]["path"].endswith("corpus_validation")
    text = out.read_text()
    assert "## Train (tuning) vs validation corpus" in text
    row = next(ln for ln in text.splitlines() if ln.startswith("| whole | lexical |"))
    assert row.count("/") == 4  # four query kinds, train / validation each
    bad = run_cli("bench", "--strategies", "whole", "--modes", "lexical", "--embedder",
                  "hashing", "--validation", str(tmp_path / "missing"))
    assert bad.returncode == 2 and "validation corpus" in bad.stderr


def test_cli_bench_usage_errors() -> None:
    proc = run_cli("bench", "--strategies", "sentences", "--json")
    assert proc.returncode == 2
    assert "unknown strategy 'sentences'" in proc.stderr
    proc = run_cli("bench", "--modes", "fuzzy", "--embedder", "hashing")
    assert proc.returncode == 2 and "unknown search mode" in proc.stderr


def test_held_out_sets_with_the_same_file_name_get_distinct_columns() -> None:
    """Two `queries_hard.jsonl` of two corpora must not both be called `hard`."""
    from memlens.bench.entry import _set_names

    def rep(corpus: str, queries: str) -> dict:
        return {"corpus": {"path": corpus}, "queries": {"path": f"{corpus}/{queries}"}}

    assert _set_names([rep("/x/corpus_validation", "queries.jsonl"),
                       rep("/x/corpus", "queries_hard.jsonl"),
                       rep("/x/corpus_validation", "queries_hard.jsonl")]) \
        == ["val", "corpus/hard", "corpus_validation/hard"]
    assert _set_names([rep("/x/c", "queries_hard.jsonl")]) == ["hard"]
