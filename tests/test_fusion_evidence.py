"""The evidence fusion (issue 46): absent is unknown, not worst; the index gives way to the
topic file it links to; the decision is a typed value whose parts add up to the score."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlens.core.embedders.registry import Embedder, make_embedder
from memlens.core.ingest.sources import roots_for_path
from memlens.core.search import engine as search_mod
from memlens.core.search import fusion as fusion_mod
from memlens.core.search.hits import SearchHit
from memlens.core.service import MemoryService
from tests.conftest import CORPUS
from tests.test_search import _service
from tests.test_search_fusion import _Failing


def _hit(nid: int, doc: int, score: float, match: str = "lexical") -> SearchHit:
    return SearchHit(repository="r", path="", heading_path=[], ordinal=0, start_char=0,
                     end_char=0, score=score, snippet="", document_id=doc, node_id=nid,
                     match=match)


_score = st.floats(min_value=0.01, max_value=30.0, allow_nan=False)
_cos = st.floats(min_value=-0.2, max_value=1.0, allow_nan=False)


@st.composite
def pools(draw: st.DrawFn) -> fusion_mod.Pool:
    """A pool of 2-12 candidates; each is on the lexical list, the vector list or both."""
    n = draw(st.integers(min_value=2, max_value=12))
    sides = draw(st.lists(st.sampled_from(("lex", "vec", "both")), min_size=n, max_size=n))
    lex = sorted(((nid, draw(_score)) for nid in range(n) if sides[nid] != "vec"),
                 key=lambda x: -x[1])
    vec = sorted(((nid, draw(_cos)) for nid in range(n) if sides[nid] != "lex"),
                 key=lambda x: -x[1])
    docs = {nid: draw(st.integers(min_value=0, max_value=n - 1)) for nid in range(n)}
    pool = fusion_mod.Pool.merge([_hit(nid, docs[nid], s) for nid, s in lex],
                                 [_hit(nid, docs[nid], s, "semantic") for nid, s in vec])
    pool.lexical_share = draw(st.floats(min_value=0.0, max_value=1.0))
    return pool


@settings(max_examples=300, deadline=None)
@given(pools(), st.floats(min_value=0.05, max_value=1.0), st.floats(min_value=0.0, max_value=2.0))
def test_absent_is_never_below_a_present_candidate_for_being_absent(
        pool: fusion_mod.Pool, knee: float, vw: float) -> None:
    """On each side an absent candidate's part is 0, which is also the floor of every
    present candidate's part: absence costs nothing a weak presence does not."""
    d = fusion_mod.decide(pool, fusion_mod.FusionParams(adapt_knee=knee, vector_weight=vw))
    for nid, part in d.parts.items():
        assert part.lexical >= 0.0 and part.vector >= 0.0
        if part.lexical_absent:
            assert part.lexical == 0.0 and nid not in pool.lex_raw
        if part.vector_absent:
            assert part.vector == 0.0 and nid not in pool.vec_raw
        assert part.score == pytest.approx(part.lexical + part.vector)
    # the same vector evidence, one lexically absent and one lexically present but weak:
    # the absent one is never ranked below the weak one
    for pa in d.parts.values():
        for pb in d.parts.values():
            if pa.lexical_absent and not pb.lexical_absent and pb.lexical == 0.0 \
                    and pa.vector >= pb.vector:
                assert pa.score >= pb.score


def test_zscore_scores_absent_as_worst() -> None:
    """The defect evidence fusion fixes (cause 1): under z-score fusion a candidate that is
    only on the vector list gets the lowest lexical value and loses to a lexically weak
    candidate with less vector evidence; under evidence fusion it wins."""
    lex = [_hit(1, 1, 10.0), _hit(3, 3, 3.0), _hit(2, 2, 2.0)]
    vec = [_hit(4, 4, 0.62, "semantic"), _hit(3, 3, 0.60, "semantic"),
           _hit(1, 1, 0.2, "semantic"), _hit(2, 2, 0.1, "semantic")]
    pool = fusion_mod.Pool.merge(lex, vec)
    pool.lexical_share = 0.4
    z = fusion_mod.decide(pool, fusion_mod.FusionParams(method="adaptive"))
    assert z.order.index(3) < z.order.index(4)
    ev = fusion_mod.decide(pool, fusion_mod.FusionParams(method="evidence"))
    assert ev.order.index(4) < ev.order.index(3)


@settings(max_examples=300, deadline=None)
@given(pools(), st.data())
def test_index_never_outranks_a_linked_topic_file(pool: fusion_mod.Pool, data: st.DataObject) -> None:
    """An index chunk ranks after the best-ranked topic file its evidence is about (same
    match status): that file takes its place. Not when the question is about the index."""
    docs = sorted({h.document_id for h in pool.fused.values()})
    index = data.draw(st.sampled_from(docs))
    others = [d for d in docs if d != index]
    linked = frozenset(data.draw(st.lists(st.sampled_from(others), unique=True))) if others \
        else frozenset()
    pool.index_links = {index: linked} if linked else {}
    pool.gives_way = {nid: linked for nid, h in pool.fused.items() if h.document_id == index}
    d = fusion_mod.decide(pool, fusion_mod.FusionParams())
    assert sorted(d.order) == sorted(pool.fused)
    first: dict[int, int] = {}
    for i, nid in enumerate(d.order):
        first.setdefault(pool.doc(nid), i)
    i_match = pool.fused[d.order[first[index]]].is_match
    eligible = [first[t] for t in linked
                if t in first and pool.fused[d.order[first[t]]].is_match >= i_match]
    if eligible:  # the best of the topic files it gives way to comes first
        assert min(eligible) < first[index]
    about = fusion_mod.decide(pool, fusion_mod.FusionParams(), "what does the MEMORY.md index list")
    plain = fusion_mod.decide(pool, fusion_mod.FusionParams(index_rule=False))
    assert about.order == plain.order


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryService]:
    base = tmp_path_factory.mktemp("evidence")
    shutil.copytree(CORPUS, base / "corpus", ignore=shutil.ignore_patterns("*.jsonl", "*.md.txt"))
    s = _service(base, make_embedder("hashing", {}))
    s.ingest(roots_for_path(base / "corpus"))
    yield s
    s.close()


def test_index_links_are_read_from_the_index(svc: MemoryService) -> None:
    """The pool knows which candidate topic files a candidate MEMORY.md links to, and an
    index chunk whose match sits on one link line gives way to that file only; one whose
    match is its own text (the project summary) gives way to none."""
    conn = svc.conn()
    repo = "-home-dev-projects-lanternfish"
    _, pool = search_mod.gather(conn, "MSRV feature flags release profile", svc.embedder,
                                n=50, adapt_top=3, index_names=("MEMORY.md",),
                                repository=repo)
    index_doc = next(d for d, p in pool.paths.items() if p == "MEMORY.md")
    build = next(d for d, p in pool.paths.items() if p == "build.md")
    assert build in pool.index_links[index_doc]
    chunks = [nid for nid, h in pool.fused.items() if h.document_id == index_doc]
    assert chunks and all(pool.gives_way[nid] == {build} for nid in chunks)
    _, own = search_mod.gather(conn, "crates lf-core lf-cli lf-render workspace", svc.embedder,
                               n=50, adapt_top=3, index_names=("MEMORY.md",), repository=repo)
    mine = [nid for nid, h in own.fused.items() if own.paths.get(h.document_id) == "MEMORY.md"]
    assert mine and all(not own.gives_way[nid] for nid in mine if nid in own.lex_raw)


def test_embedder_down_claims_no_adaptive_weight(svc: MemoryService) -> None:
    """With the embedder down hybrid is the lexical ranking and says so: the fusion
    reported is ``lexical``, with no lexical share or weight it did not use."""
    for fusion in ("evidence", "adaptive"):
        res = search_mod.search(svc.conn(), "busy_timeout SQLite", mode="hybrid",
                                embedder=cast(Embedder, _Failing(svc.embedder)),
                                fusion_options={"fusion": fusion})
        assert res.fusion == {"method": "lexical"}
        assert any("embedder unavailable" in n for n in res.notes)
        lex = search_mod.search(svc.conn(), "busy_timeout SQLite", mode="lexical")
        assert [h.node_id for h in res.hits[:3]] == [h.node_id for h in lex.hits[:3]]


def test_decision_parts_add_up_to_the_scores(svc: MemoryService) -> None:
    """Every hit's score is its decision part's score, and the hits keep the decided order
    (issue 45 explains from these values)."""
    res = search_mod.search(svc.conn(), "how do we retry failed webhook deliveries",
                            mode="hybrid", embedder=svc.embedder, per_document=0,
                            fusion_options={"fusion": "evidence"})
    assert res.decision is not None and res.hits
    for h in res.hits:
        part = res.decision.parts[h.node_id]
        assert h.score == pytest.approx(part.lexical + part.vector, abs=1e-7)
    pos = {nid: i for i, nid in enumerate(res.decision.order)}
    assert [pos[h.node_id] for h in res.hits] == sorted(pos[h.node_id] for h in res.hits)


def test_mcp_search_gives_one_hit_per_document(svc: MemoryService) -> None:
    """An agent reads documents: search_memory's k hits are k distinct files, while the
    CLI's and the TUI's search keeps up to two sections of one file."""
    from memlens.mcp.tools import search_memory

    q = "incident backfill warehouse"
    out = search_memory(svc, q, k=8, all_projects=True).data
    docs = [(h["repository"], h["path"]) for h in out["hits"]]
    assert docs and len(docs) == len(set(docs))
    chunks = svc.search(q, k=8, all_projects=True).hits
    assert len({h.document_id for h in chunks}) < len(chunks)  # the runbook holds two
