"""Fusion methods, k-independence, honest "no match", degrade-on-embedder-failure, query building."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any, cast

import pytest

from memlens.core.embedders.registry import Embedder, EmbedderUnavailable, make_embedder
from memlens.core.ingest.sources import roots_for_path
from memlens.core.search import engine as search_mod
from memlens.core.search.engine import FUSIONS, SearchError, build_fts_query
from memlens.core.service import MemoryService
from tests.conftest import CORPUS
from tests.test_search import _service


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryService]:
    base = tmp_path_factory.mktemp("fusion")
    shutil.copytree(CORPUS, base / "corpus", ignore=shutil.ignore_patterns("*.jsonl", "*.md.txt"))
    s = _service(base, make_embedder("hashing", {}))
    s.ingest(roots_for_path(base / "corpus"))
    yield s
    s.close()


class _Failing:
    """An embedder whose endpoint is down: same fingerprint, every embed raises."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.dim = inner.dim
        self.metric = "cosine"

    def fingerprint(self) -> str:
        return str(self.inner.fingerprint())

    def embed_query(self, text: str) -> Any:
        raise EmbedderUnavailable("embedding endpoint http://127.0.0.1:9/v1: connection refused")

    def embed_documents(self, texts: Any) -> Any:
        raise EmbedderUnavailable("connection refused")


def test_drops_one_letter_fragments() -> None:
    assert build_fts_query("user's preference", prefix=False) == '"user" OR "preference"'


def test_extra_stop_words_dropped() -> None:
    assert build_fts_query("what do they cache", prefix=False) == '"cache"'


def test_no_prefix_on_finished_question() -> None:
    assert build_fts_query("how do we deploy?") == '"deploy"'
    assert build_fts_query("how do we deploy ?") == '"deploy"'
    assert build_fts_query("how do we deploy") == '"deploy"*'


def test_fallback_when_only_fragments() -> None:
    assert build_fts_query("a", prefix=False) == '"a"'


@pytest.mark.parametrize("fusion", FUSIONS)
def test_top_k_does_not_depend_on_k(svc: MemoryService, fusion: str) -> None:
    """The first 3 hits with k=3 are the first 3 with k=10 and k=30, for every fusion."""
    conn = svc.conn()
    for q in ("build test", "how are retries handled", "busy_timeout", "prefer short answers"):
        tops = []
        for k in (3, 10, 30):
            res = search_mod.hybrid(conn, q, svc.embedder, k=k, fusion=fusion)
            tops.append([h.node_id for h in res.hits[:3]])
        assert tops[0] == tops[1] == tops[2], (fusion, q, tops)


def test_unknown_fusion_is_an_error(svc: MemoryService) -> None:
    with pytest.raises(SearchError):
        search_mod.hybrid(svc.conn(), "x", svc.embedder, fusion="bogus")


@pytest.mark.parametrize("fusion", FUSIONS)
def test_nonsense_token_has_no_lexical_matches(svc: MemoryService, fusion: str) -> None:
    """`zebraquokka4711` exists nowhere: no hit is presented as a match."""
    res = search_mod.search(svc.conn(), "zebraquokka4711", mode="hybrid", embedder=svc.embedder,
                            fusion_options={"fusion": fusion})
    assert res.hits, "the hashing embedder always finds some neighbours; they must be labelled"
    assert all(not h.lexical_match and h.match == "closest" and not h.is_match
               for h in res.hits)
    assert res.matches == 0 and search_mod.NO_WORD_NOTE in res.notes
    via_service = svc.search("zebraquokka4711", mode="hybrid").as_json()
    assert via_service["matches"] == 0
    assert all(h["match"] == "closest" and not h["lexical_match"] for h in via_service["hits"])


def test_nonsense_in_vector_mode_is_closest_only(svc: MemoryService) -> None:
    res = svc.search("zebraquokka4711 qqxv", mode="vector")
    assert res.matches == 0 and all(h.match == "closest" for h in res.hits)
    real = svc.search("busy_timeout", mode="vector")
    assert real.hits and all(h.match == "semantic" for h in real.hits)


def test_a_real_word_makes_semantic_hits_matches(svc: MemoryService) -> None:
    res = svc.search("busy_timeout zebraquokka4711", mode="hybrid")
    assert res.matches == len(res.hits) > 0
    assert {h.match for h in res.hits} <= {"lexical", "semantic"}


@pytest.mark.parametrize("text, expected", [
    ("busy_timeout", True), ("X-Request-Id", True), ("foo.bar()", True), ("v1.2 SQLITE_BUSY", True),
    ("busy timeout", False), ("busy_timeout settings", False), ("pgbouncer", False),
    ("user's", False), ("", False), ("   ", False),
])
def test_identifiers_only(text: str, expected: bool) -> None:
    assert search_mod.identifiers_only(text) is expected


@pytest.mark.parametrize("fusion", FUSIONS)
def test_identifier_query_presents_only_its_occurrences_as_matches(
        svc: MemoryService, fusion: str) -> None:
    """`busy_timeout` asks where that string occurs: chunks merely near it by meaning
    (retro notes, a runbook) were counted as matches beside the ones holding it. They
    are "closest" now, after every match; a plain-word query keeps its semantic hits."""
    res = search_mod.search(svc.conn(), "busy_timeout", mode="hybrid", embedder=svc.embedder,
                            k=10, fusion_options={"fusion": fusion, "semantic_min_z": None})
    assert res.hits and res.matches >= 1
    for h in res.hits:
        assert h.is_match == h.lexical_match, (h.path, h.match)
        assert h.match in ("lexical", "closest")
    assert [h.is_match for h in res.hits] == sorted((h.is_match for h in res.hits), reverse=True)
    assert not all(h.is_match for h in res.hits), "the hashing embedder finds neighbours"
    words = search_mod.search(svc.conn(), "connection timeout", mode="hybrid",
                              embedder=svc.embedder, k=10,
                              fusion_options={"fusion": fusion, "semantic_min_z": None})
    assert any(h.match == "semantic" for h in words.hits)


def test_lexical_hits_are_marked(svc: MemoryService) -> None:
    hits = svc.search("busy_timeout", mode="hybrid", k=5).hits
    assert hits and hits[0].lexical_match and hits[0].match == "lexical"
    d = hits[0].as_json()
    assert d["lexical_match"] is True and {"score", "ranks", "snippet", "path"} <= set(d)


def test_semantic_floor_thins_semantic_only_hits(svc: MemoryService) -> None:
    conn = svc.conn()
    loose = search_mod.hybrid(conn, "zebraquokka4711", svc.embedder, k=50, semantic_min_z=None)
    strict = search_mod.hybrid(conn, "zebraquokka4711", svc.embedder, k=50)
    assert len(strict.hits) < len(loose.hits) or not loose.hits


def test_embedder_failure_degrades_to_lexical(svc: MemoryService) -> None:
    """Embedder raising in hybrid mode -> lexical results plus a note, no exception."""
    failing = cast(Embedder, _Failing(svc.embedder))
    res = search_mod.search(svc.conn(), "busy_timeout", mode="hybrid", embedder=failing, k=5)
    assert res.hits and all(h.lexical_match for h in res.hits)
    assert any("embedder unavailable" in n for n in res.notes)
    lex = search_mod.search(svc.conn(), "busy_timeout", mode="lexical", k=5)
    assert [h.node_id for h in res.hits][:1] == [h.node_id for h in lex.hits][:1]
    assert "notes" in res.as_json()


def test_adaptive_weight_follows_the_lexical_share(svc: MemoryService) -> None:
    """Adaptive fusion reports the share of the question its best lexical candidates hold
    and the lexical weight it gave: a keyword question keeps the full weight; the same
    keyword among words the memory never uses gets a smaller one; JSON carries both."""
    conn = svc.conn()
    opts = {"fusion": "adaptive", "adapt_knee": 0.6, "adapt_power": 2.0, "adapt_top": 3}
    key = search_mod.search(conn, "busy_timeout SQLite connections", mode="hybrid",
                            embedder=svc.embedder, fusion_options=opts)
    assert key.fusion is not None and key.fusion["method"] == "adaptive"
    assert key.fusion["lexical_share"] >= 0.6 and key.fusion["lexical_weight"] == 1.0
    vague = search_mod.search(conn, "sqlite wibblefrotz quorpleness zanthic blorvish",
                              mode="hybrid", embedder=svc.embedder, fusion_options=opts)
    assert vague.fusion is not None
    share = vague.fusion["lexical_share"]
    assert 0.0 < share < 0.6
    assert vague.fusion["lexical_weight"] == pytest.approx((share / 0.6) ** 2, abs=1e-4)
    j = vague.as_json()
    assert j["fusion"]["method"] == "adaptive" and "lexical_share" in j["fusion"]
    assert search_mod.search(conn, "busy_timeout", mode="lexical").as_json()["fusion"] is None


def test_adaptive_with_a_low_share_leans_on_the_vector_side(svc: MemoryService) -> None:
    """When the lexical share is low the fused order is (nearly) the vector order: the
    first hit is the vector side's first, not bm25's."""
    conn = svc.conn()
    q = "sqlite wibblefrotz quorpleness zanthic blorvish"
    low = search_mod.search(conn, q, mode="hybrid", embedder=svc.embedder,
                            fusion_options={"fusion": "adaptive", "adapt_power": 8.0})
    lex = search_mod.search(conn, q, mode="lexical")
    vec = search_mod.search(conn, q, mode="vector", embedder=svc.embedder)
    assert low.fusion is not None and low.fusion["lexical_weight"] < 0.01
    assert low.hits[0].node_id == vec.hits[0].node_id
    full = search_mod.search(conn, q, mode="hybrid", embedder=svc.embedder,
                             fusion_options={"fusion": "adaptive", "adapt_knee": 1e-6,
                                             "vector_weight": 0.0})
    assert full.hits[0].node_id == lex.hits[0].node_id  # knee ~0: the lexical order


def test_adaptive_degrades_to_lexical_when_the_embedder_is_down(svc: MemoryService) -> None:
    res = search_mod.search(svc.conn(), "busy_timeout", mode="hybrid",
                            embedder=cast(Embedder, _Failing(svc.embedder)),
                            fusion_options={"fusion": "adaptive"})
    assert res.hits and any("embedder unavailable" in n for n in res.notes)
    lex = search_mod.search(svc.conn(), "busy_timeout", mode="lexical")
    assert [h.node_id for h in res.hits[:3]] == [h.node_id for h in lex.hits[:3]]
