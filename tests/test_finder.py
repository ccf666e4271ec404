"""The "go to document" finder (:class:`memlens.core.types.FilterIndex`) on the bundled corpus.

The table was written before the ranking was tuned: each query and the document
a person typing it means (top-1). Exact basename/path matches come first, then
prefixes (basename, path, name, heading), then fuzzy matches; a word naming one
repository (``tidewater``) narrows the search to it.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlens.core.config.settings import load_settings
from memlens.core.embedders.registry import make_embedder
from memlens.core.ingest.sources import roots_for_path
from memlens.core.service import FilterIndex, MemoryService
from tests.conftest import CORPUS, Clock, run_cli

LANTERN = "-home-dev-projects-lanternfish"
ORCHARD = "-home-dev-projects-orchard-etl"
TIDEWATER = "-home-dev-projects-tidewater-api"
KESTREL = "-home-dev-work-kestrel-dashboard"

# (query, expected repository, expected path)
TABLE: list[tuple[str, str, str]] = [
    # exact basename / path (ties keep document order: repository, then path)
    ("auth", TIDEWATER, "auth.md"),
    ("auth.md", TIDEWATER, "auth.md"),
    ("MEMORY.md", LANTERN, "MEMORY.md"),
    ("testing", LANTERN, "testing.md"),
    ("feedback", ORCHARD, "feedback.md"),
    ("duckdb", ORCHARD, "duckdb.md"),
    ("archive/retro-2024-q3.md", ORCHARD, "archive/retro-2024-q3.md"),
    ("notes/retro-2024-q3", ORCHARD, "notes/retro-2024-q3.md"),
    (f"{TIDEWATER}/feedback.md", TIDEWATER, "feedback.md"),
    # prefixes: basename, path, front-matter name, heading
    ("cross", LANTERN, "cross-compile.md"),
    ("duck", ORCHARD, "duckdb.md"),
    ("obs", TIDEWATER, "observability.md"),
    ("perf", LANTERN, "performance.md"),
    ("state", KESTREL, "state-management.md"),
    ("schema", ORCHARD, "schemas.md"),
    ("storage", ORCHARD, "storage-layout.md"),
    ("retro", ORCHARD, "archive/retro-2024-q3.md"),
    ("notes/retro", ORCHARD, "notes/retro-2024-q3.md"),
    ("api conv", TIDEWATER, "api-conventions.md"),
    ("data quality", ORCHARD, "data-quality.md"),
    ("cross compile", LANTERN, "cross-compile.md"),
    ("connection pool", TIDEWATER, "performance.md"),
    ("pagination", TIDEWATER, "api-conventions.md"),
    ("rate limits", TIDEWATER, "api-conventions.md"),
    ("refresh tokens", TIDEWATER, "auth.md"),
    ("partition pruning", ORCHARD, "schemas.md"),
    ("flamegraph", LANTERN, "performance.md"),
    ("webhook", TIDEWATER, "architecture.md"),
    ("middleware", TIDEWATER, "architecture.md"),
    ("broken pipe", LANTERN, "error-handling.md"),
    ("jemalloc", LANTERN, "cross-compile.md"),
    ("musl", LANTERN, "cross-compile.md"),
    # a repository's short name narrows to it
    ("tidewater testing", TIDEWATER, "testing.md"),
    ("testing tidewater", TIDEWATER, "testing.md"),
    ("tidewater perf", TIDEWATER, "performance.md"),
    ("kestrel memory", KESTREL, "MEMORY.md"),
    ("orchard runbook", ORCHARD, "runbook.md"),
    ("tidewater/feedback.md", TIDEWATER, "feedback.md"),
    ("lanternfish", LANTERN, "MEMORY.md"),
    # fuzzy: typos and missing separators
    ("crosscompile", LANTERN, "cross-compile.md"),
    ("frontnd build", KESTREL, "frontend-build.md"),
    ("eror handling", LANTERN, "error-handling.md"),
    ("obsrvability", TIDEWATER, "observability.md"),
    ("user prefs", LANTERN, "user-preferences.md"),
    ("acessibility", KESTREL, "accessibility.md"),
]


def _service(base: Path) -> MemoryService:
    s = load_settings(base / "none.toml", env={}, overrides={"db": str(base / "m.db")})
    return MemoryService(s, clock=Clock(), embedder=make_embedder("hashing", {"dim": 64}),
                         install_key=b"k" * 32)


@pytest.fixture(scope="module")
def corpus_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MemoryService, Path]]:
    base = tmp_path_factory.mktemp("finder")
    shutil.copytree(CORPUS, base / "corpus", ignore=shutil.ignore_patterns("*.jsonl"))
    svc = _service(base)
    svc.ingest(roots_for_path(base / "corpus"))  # projected: headings come from the chunks
    yield svc, base / "m.db"
    svc.close()


@pytest.fixture(scope="module")
def index(corpus_db: tuple[MemoryService, Path]) -> FilterIndex:
    return corpus_db[0].build_filter_index()


@pytest.mark.parametrize(("query", "repository", "path"), TABLE,
                         ids=[q for q, _, _ in TABLE])
def test_top_1(index: FilterIndex, query: str, repository: str, path: str) -> None:
    found = index.filter(query)
    assert found, f"{query!r}: no match"
    top = found[0][0]
    shown = [f"{d.repository[-14:]}/{d.path} {s:.1f}" for d, s in found[:4]]
    assert (top.repository, top.path) == (repository, path), f"{query!r}: {shown}"


def test_table_is_big_enough() -> None:
    assert len(TABLE) >= 20


def test_tiers_order_exact_then_prefix_then_fuzzy(index: FilterIndex) -> None:
    # "test": basename prefix of both testing.md; nothing exact. Prefix beats fuzzy.
    found = index.filter("test")
    assert [d.path for d, _ in found[:2]] == ["testing.md", "testing.md"]
    assert found[0][1] > max((s for d, s in found if d.path != "testing.md"), default=0)
    # exact beats a prefix, a prefix beats every fuzzy match
    found = index.filter("schemas")
    assert found[0][0].path == "schemas.md" and found[0][1] == 100.0


def test_short_queries_stay_tight(index: FilterIndex) -> None:
    # partial_ratio alone would list every document with a "p", an "r" and an "f".
    assert [d.path for d, _ in index.filter("perf")] == ["performance.md", "performance.md"]
    assert all(s >= 80 for _, s in index.filter("perf"))


def test_no_match_and_empty(index: FilterIndex) -> None:
    assert index.filter("zzqxv") == []
    everything = index.filter("  ")
    assert len(everything) == len(index.candidates)


def test_scores_are_sorted_and_bounded(index: FilterIndex) -> None:
    for query, _, _ in TABLE:
        scores = [s for _, s in index.filter(query)]
        assert scores == sorted(scores, reverse=True), query
        assert all(0 < s <= 100 for s in scores), query


def test_resolve_repository(corpus_db: tuple[MemoryService, Path]) -> None:
    svc = corpus_db[0]
    assert svc.resolve_repository("tidewater") == TIDEWATER
    assert svc.resolve_repository("lanternfish") == LANTERN
    assert svc.resolve_repository("kestrel-dashboard") == KESTREL
    assert svc.resolve_repository("Orchard-ETL") == ORCHARD
    assert svc.resolve_repository(TIDEWATER) == TIDEWATER
    with pytest.raises(LookupError) as ambiguous:
        svc.resolve_repository("projects")
    assert LANTERN in str(ambiguous.value) and KESTREL not in str(ambiguous.value)
    with pytest.raises(LookupError) as unknown:
        svc.resolve_repository("nowhere")
    assert "nowhere" in str(unknown.value) and TIDEWATER in str(unknown.value)


def test_cli_short_repository_names(corpus_db: tuple[MemoryService, Path]) -> None:
    db = str(corpus_db[1])
    r = run_cli("docs", "--repository", "tidewater", "--db", db)
    assert r.returncode == 0, r.stderr
    assert "tidewater-api/auth.md" in r.stdout and "lanternfish" not in r.stdout
    r = run_cli("history", "testing.md", "--repository", "lanternfish", "--db", db)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"{LANTERN}/testing.md")
    r = run_cli("docs", "--filter", "testing", "--repository", "tidewater", "--db", db)
    assert r.returncode == 0 and r.stdout.count("testing.md") == 1, r.stdout
    for bad in ("projects", "nowhere"):
        r = run_cli("docs", "--repository", bad, "--db", db)
        assert r.returncode == 2, r.stdout
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("memlens: ") and bad in lines[0], r.stderr


def _reference_rank(index: FilterIndex, text: str, limit: int = 200,
                    cutoff: float = 60.0) -> list[tuple[int, float]]:
    """The filter's ranking written plainly: every candidate's tier score, else both
    fuzzy scores in full (no score cutoffs), mixed as the module says."""
    from rapidfuzz import fuzz, utils

    from memlens.core.search import filter as t

    index.prepare()
    keys = index._keys or []
    query = t._norm(text)
    qwords = t._WORDS.findall(query)
    fq = utils.default_process(text)
    scored: list[tuple[float, int]] = []
    for i, k in enumerate(keys):
        s = t.tier_score(query, k, qwords)
        if s is not None:
            scored.append((s, i))
        elif fq:
            a = fuzz.WRatio(fq, index.choices[i], processor=None)
            b = fuzz.partial_ratio(fq, index.choices[i], processor=None)
            mix = t.FUZZY_WRATIO * a + (1 - t.FUZZY_WRATIO) * b
            if mix >= cutoff and a >= t.FUZZY_WRATIO_FLOOR:
                scored.append((mix * t.FUZZY_TOP / 100.0, i))
    scored.sort(key=lambda si: (-si[0], si[1]))
    return [(index.candidates[i].id, round(s, 3)) for s, i in scored[:limit]]


@settings(max_examples=150, deadline=None)
@given(st.one_of(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789 -_./", min_size=1, max_size=14),
    st.sampled_from(["eror handling", "retrys", "perfomance", "tokn", "schmea", "webhok",
                     "flamegrph", "duckbd", "conection pool", "cros compile"])))
def test_fuzzy_ranking_equals_the_plain_computation(index: FilterIndex, text: str) -> None:
    """The filter scores only what can pass (WRatio with its floor as score_cutoff,
    partial_ratio for the survivors only): the same list and scores as scoring every
    candidate in full. A WRatio cutoff one point too strict fails this; the partial_ratio
    cutoff (20: below it the mix cannot reach 60 even with WRatio at 100) is too rarely
    binding on this corpus for a mutant to show here."""
    index.prepare()
    got = [(d.id, s) for d, s in index._rank(text, None, 200, 60.0)]
    assert got == _reference_rank(index, text)
