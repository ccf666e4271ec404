"""Search modes over the bundled corpus: robustness, quality floors, filters, switching."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlens.core import faults
from memlens.core.config.settings import load_settings
from memlens.core.embedders.registry import make_embedder
from memlens.core.ingest.sources import roots_for_path
from memlens.core.search.engine import build_fts_query
from memlens.core.service import MemoryService
from tests.conftest import CORPUS, Clock

QUERIES = [json.loads(line) for line in (CORPUS / "queries.jsonl").read_text().splitlines()
           if line.strip()]


def _service(base: Path, embedder: Any) -> MemoryService:
    s = load_settings(base / "none.toml", env={}, overrides={"db": str(base / "m.db")})
    return MemoryService(s, clock=Clock(), embedder=embedder, install_key=b"k" * 32)


@pytest.fixture(scope="module")
def corpus_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryService]:
    base = tmp_path_factory.mktemp("search")
    shutil.copytree(CORPUS, base / "corpus", ignore=shutil.ignore_patterns("*.jsonl", "*.md.txt"))
    svc = _service(base, make_embedder("hashing", {}))
    svc.ingest(roots_for_path(base / "corpus"))
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def static_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryService]:
    base = tmp_path_factory.mktemp("search-static")
    shutil.copytree(CORPUS, base / "corpus", ignore=shutil.ignore_patterns("*.jsonl"))
    svc = _service(base, make_embedder("static", {}))
    svc.ingest(roots_for_path(base / "corpus"))
    yield svc
    svc.close()


def _metrics(svc: MemoryService, mode: str) -> dict[str, tuple[float, float]]:
    """Document-level Hit@1 and MRR per query kind."""
    per: dict[str, list[float]] = {}
    for q in QUERIES:
        docs: list[tuple[str, str]] = []
        for h in svc.search(q["query"], mode=mode, k=10).hits:
            key = (h.repository, h.path)
            if key not in docs:
                docs.append(key)
        want = (q["repository"], q["path"])
        per.setdefault(q["kind"], []).append(1 / (docs.index(want) + 1) if want in docs else 0.0)
    return {k: (sum(1 for x in v if x == 1) / len(v), sum(v) / len(v)) for k, v in per.items()}


NASTY = ['"', '""', "'", "AND", "OR NOT", "NEAR(a b)", "*", "a*b", "SQLITE_BUSY", "foo-bar",
         "c++", "path/to/file.md", "foo.bar()", "col:val", "^start", "{x}", "(((", "é", "日本語",
         "🦀 rust", "", "   ", "-", "--repository", "\x00", "a" * 5000, "NOT", "the",
         "busy_timeout=5000", "[link](x.md)", "#", "## heading"]


@pytest.mark.parametrize("mode", ["lexical", "vector", "hybrid"])
@pytest.mark.parametrize("q", NASTY)
def test_query_text_never_raises(corpus_service: MemoryService, mode: str, q: str) -> None:
    """Operators, quotes, identifiers, unicode, emoji and empty input are all fine."""
    res = corpus_service.search(q, mode=mode, k=5)
    assert res.mode == mode
    for h in res.hits:
        for a, b in h.highlights:
            assert 0 <= a < b <= len(h.snippet)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=st.text(max_size=60))
def test_fuzzed_queries_never_raise(corpus_service: MemoryService, q: str) -> None:
    """Hypothesis: arbitrary text in every mode returns a result object."""
    for mode in ("lexical", "vector", "hybrid"):
        corpus_service.search(q, mode=mode, k=3)


def test_fts_query_builder() -> None:
    """Identifiers become phrases, operators are quoted, stop words dropped, prefix on the end."""
    assert build_fts_query("SQLITE_BUSY") == '"sqlite busy"*'
    assert build_fts_query("SQLITE_BUSY ") == '"sqlite busy"'
    assert build_fts_query("what is the busy_timeout", prefix=False) == '"busy timeout"'
    assert build_fts_query("AND OR", prefix=False) == '"and" OR "or"'
    assert build_fts_query("the", prefix=False) == '"the"'
    assert build_fts_query("🦀") is None
    assert build_fts_query("") is None


def test_identifier_queries_find_code(corpus_service: MemoryService) -> None:
    """`busy_timeout` finds the note that sets it, in lexical mode, top 3."""
    hits = corpus_service.search("busy_timeout", mode="lexical", k=3).hits
    assert hits and any("busy_timeout" in corpus_service.locate(h.repository, h.path).content
                        for h in hits)


def test_quality_floors_hashing(corpus_service: MemoryService) -> None:
    """Each mode finds the expected documents in corpus/queries.jsonl above a floor.

    Floors sit a little below measured values (hashing embedder, doc-level Hit@1):
    lexical 0.96/0.62/0.96/1.00, vector 0.67/0.25/0.92/0.83,
    hybrid 0.96/0.67/0.96/1.00 (lexical/paraphrase/heading/code).
    """
    lex = _metrics(corpus_service, "lexical")
    vec = _metrics(corpus_service, "vector")
    hyb = _metrics(corpus_service, "hybrid")
    for kind in ("lexical", "heading", "code"):
        assert lex[kind][0] >= 0.9, (kind, lex)
        assert hyb[kind][0] >= 0.9, (kind, hyb)
    assert lex["paraphrase"][0] >= 0.5
    assert vec["heading"][0] >= 0.8 and vec["code"][0] >= 0.7 and vec["lexical"][0] >= 0.55
    for kind in lex:
        # hybrid is never worse than lexical (MRR), on any kind
        assert hyb[kind][1] >= lex[kind][1] - 1e-9, (kind, lex[kind], hyb[kind])


def test_quality_static_model_beats_lexical_on_paraphrase(static_service: MemoryService) -> None:
    """With the shipped static model, hybrid is clearly better than lexical on paraphrases.

    Measured: paraphrase Hit@1 lexical 0.62, hybrid 0.71 (MRR 0.74 -> 0.81).
    """
    lex = _metrics(static_service, "lexical")
    hyb = _metrics(static_service, "hybrid")
    for kind in lex:
        assert hyb[kind][1] >= lex[kind][1] - 1e-9, (kind, lex[kind], hyb[kind])
    assert hyb["paraphrase"][1] >= lex["paraphrase"][1] + 0.04
    assert hyb["paraphrase"][0] >= 0.66


def test_filters_and_k_cap(corpus_service: MemoryService) -> None:
    """--repository and front-matter type filter every mode; k above 4096 is capped."""
    repo = "-home-dev-projects-lanternfish"
    for mode in ("lexical", "vector", "hybrid"):
        hits = corpus_service.search("build test", mode=mode, k=20, repository=repo).hits
        assert hits and all(h.repository == repo for h in hits)
        typed = corpus_service.search("prefer", mode=mode, k=20, doc_type="user").hits
        assert all(h.doc_type == "user" for h in typed)
    assert len(corpus_service.search("the", mode="vector", k=100_000).hits) > 0


def test_one_document_cannot_flood(corpus_service: MemoryService) -> None:
    """At most two hits per document (the long runbook has many matching chunks)."""
    for mode in ("lexical", "vector", "hybrid"):
        hits = corpus_service.search("incident backfill warehouse", mode=mode, k=10).hits
        counts: dict[int, int] = {}
        for h in hits:
            counts[h.document_id] = counts.get(h.document_id, 0) + 1
        assert max(counts.values()) <= 2


def test_hit_shape_and_ranks(corpus_service: MemoryService) -> None:
    """Every hybrid hit carries path, heading path, span, score, each signal's rank, snippet."""
    res = corpus_service.search("connection pool", mode="hybrid", k=5)
    assert res.hits
    for h in res.hits:
        j = h.as_json()
        assert set(j["ranks"]) == {"lexical", "vector"}
        assert j["ranks"]["lexical"] or j["ranks"]["vector"]
        doc = corpus_service.locate(h.repository, h.path)
        assert 0 <= h.start_char < h.end_char <= len(doc.content)
        assert h.snippet


def test_fuzzy_document_filter(corpus_service: MemoryService) -> None:
    """Fuzzy "go to document" matches paths, names and headings despite typos."""
    top = [d.path for d, _ in corpus_service.filter_documents("runbok")[:3]]
    assert "runbook.md" in top
    top = [d.path for d, _ in corpus_service.filter_documents("lanternfish cli flags")[:3]]
    assert "cli-flags.md" in top


def test_embedder_switch_never_empty(tmp_path: Path) -> None:
    """Switching embedders re-projects; searches during the switch never come back empty."""
    mem = tmp_path / "p" / "memory"
    mem.mkdir(parents=True)
    for i in range(6):
        (mem / f"n{i}.md").write_text(f"# Note {i}\n\nThe gateway token rotation happens weekly {i}.\n")
    svc = _service(tmp_path, make_embedder("hashing", {"dim": 64}))
    svc.ingest(roots_for_path(mem))
    svc.close()
    new = _service(tmp_path, make_embedder("hashing", {"dim": 128}))
    observer = _service(tmp_path, make_embedder("hashing", {"dim": 64}))
    seen: list[int] = []

    def hook(step: str) -> None:
        if step in ("projection.embed", "projection.swap"):
            seen.append(len(observer.search("gateway rotation", mode="hybrid", k=10).hits))

    faults.set_hook(hook)
    try:
        rep = new.project()
    finally:
        faults.set_hook(None)
    assert rep.count("ready") == 6
    assert seen and min(seen) > 0
    # all nodes now live in the new vector space; vector search with the new model works
    assert len(new.search("gateway rotation", mode="vector", k=10).hits) == 6
    assert new.doctor()[1] == []
    new.close()
    observer.close()


def test_match_spans_for_highlighting() -> None:
    from memlens.core.search.engine import match_spans

    text = "Caching: the cache key format. Cached values; keys. Invalidate after commit."
    assert [text[a:b] for a, b in match_spans(text, "cache key")] == [
        "Caching", "cache", "key", "Cached", "keys"]
    assert [text[a:b] for a, b in match_spans(text, "invalidation after commits?")] == [
        "Invalidate", "after", "commit"]
    assert match_spans(text, "the of a") == []  # stop words only
    assert match_spans(text, "") == []
    assert match_spans("a(b)[c]", "(b) [c]") == []  # one-letter fragments dropped
