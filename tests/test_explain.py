"""Explaining a ranking (issue 45), through the real door on the bundled corpus with the
default embedder (MiniLM, bundled): the explanation is read from the values that made
the ranking, so for every hit of every bench question its parts add up to the reported
score and the order of the hits follows from them; "why not" says where any document
stands and what it would need."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memlens.core.types as T
from memlens.core.config.settings import load_settings
from memlens.core.service import MemoryService
from tests.conftest import CORPUS, run_cli

SETS = ("queries.jsonl", "queries_hard.jsonl")
CANDIDATE, NO_WORD = "candidate", "no query word occurs"


def _questions() -> list[dict[str, str]]:
    out = []
    for name in SETS:
        for line in (CORPUS / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(json.loads(line))
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MemoryService, Path]]:
    tmp = tmp_path_factory.mktemp("explain")
    corpus = tmp / "corpus"
    shutil.copytree(CORPUS, corpus, ignore=shutil.ignore_patterns("*.jsonl", "README.md"))
    settings = load_settings(tmp / "none.toml", env={}, overrides={"db": str(tmp / "m.db")})
    svc = MemoryService(settings, install_key=b"k" * 32)
    assert svc.embedder is not None and svc.embedder.name == "minilm"
    svc.start_up(svc.resolve_roots([corpus]))
    yield svc, tmp
    svc.close()


def check_explained(e: T.Explanation, res: T.SearchResult) -> None:
    """The explanation is of this very ranking: same hits, parts adding up to each
    reported score, and an order that follows from the parts."""
    assert [(h.repository, h.path, h.ordinal) for h in e.hits] == [
        (h.repository, h.path, h.ordinal) for h in res.hits]
    for st, hit in zip(e.hits, res.hits, strict=True):
        assert st.score is not None
        assert st.lexical.part + st.vector.part == pytest.approx(st.score, abs=1e-9)
        # a second search may read the float32 vectors from sqlite-vec or from the in-RAM
        # matrix (summed in another order): the same score to float32 precision
        assert round(st.score, 8) == pytest.approx(hit.score, rel=1e-6, abs=1e-8)
        assert st.position == e.hits.index(st) + 1
        for side in (st.lexical, st.vector):
            if side.status == CANDIDATE:
                assert side.rank is not None and side.score is not None
            assert side.words  # said in words, not only numbers
        assert st.lines[1].startswith("Score ") and st.summary.startswith("score ")
    pref = e.preferred_repository
    labels = [st.label for st in e.hits]
    for i, (a, b) in enumerate(zip(e.hits, e.hits[1:], strict=False)):
        ga = (a.match == "closest", bool(pref) and a.repository != pref)
        gb = (b.match == "closest", bool(pref) and b.repository != pref)
        assert ga <= gb, (e.query, i)
        if ga < gb:
            continue
        if b.credited_from is not None:  # a topic file in the place of the index chunk
            assert b.credited_from not in labels[:i + 1], (e.query, i)  # that follows it
            continue
        if b.moved_below is not None:  # an index chunk placed right after its topic file
            assert b.moved_below in labels[:i + 1], (e.query, i)
            continue
        assert a.score is not None and b.score is not None
        assert (a.score, -a.node_id) > (b.score, -b.node_id), (e.query, i, a.label, b.label)


def test_every_bench_hit_is_explained_by_parts_that_add_up(
        built: tuple[MemoryService, Path]) -> None:
    svc, _ = built
    questions = _questions()
    assert len(questions) == 140
    methods = set()
    rules = {"moved": 0, "credited": 0, "absent": 0}
    for q in questions:
        e = svc.explain(q["query"], k=10)
        res = svc.search(q["query"], k=10)  # the plain search ranks the same
        check_explained(e, res)
        rules["moved"] += sum(h.moved_below is not None for h in e.hits)
        rules["credited"] += sum(h.credited_from is not None for h in e.hits)
        rules["absent"] += sum(CANDIDATE not in (h.lexical.status, h.vector.status) or
                               h.lexical.status != h.vector.status for h in e.hits)
        assert e.method is not None and e.weights
        methods.add(e.method)
        assert e.lexical_weight is not None and e.vector_weight is not None
    assert methods  # the default fusion, whatever it is named
    # the order check met index moves and hits absent from one side, not only plain sorts
    assert all(rules.values()), rules


@pytest.mark.parametrize("mode", ["lexical", "vector"])
def test_one_sided_modes_explain_the_side_score(built: tuple[MemoryService, Path],
                                                mode: str) -> None:
    svc, _ = built
    for q in _questions()[:20]:
        e = svc.explain(q["query"], mode=mode, k=5)
        res = svc.search(q["query"], mode=mode, k=5)
        assert [h.score for h in e.hits] == [h.score for h in res.hits]
        other = "vector" if mode == "lexical" else "lexical"
        for st in e.hits:
            assert getattr(st, mode).part == st.score
            assert getattr(st, other).status == "side not used"


def test_why_not_for_every_expected_document_of_the_hard_set(
        built: tuple[MemoryService, Path]) -> None:
    svc, _ = built
    for q in _questions():
        if not q["id"].startswith("ht"):
            continue
        e = svc.explain(q["query"], k=10, why_not=f"{q['repository']}/{q['path']}")
        w = e.why_not
        assert w is not None and w.reason and w.needs
        st = w.standing
        assert (st.repository, st.path) == (q["repository"], q["path"])
        if st.position is not None:
            assert e.hits[st.position - 1].node_id == st.node_id
            assert st.score == e.hits[st.position - 1].score
        if st.position == 1:
            assert w.gap == 0.0
            continue
        assert e.hits[0].score is not None and w.gap is not None
        assert w.gap == pytest.approx(e.hits[0].score - (st.score or 0.0))
        if st.fused_position is None:  # not a candidate: it says so on both sides
            assert w.reason.startswith("Not a candidate")
            assert st.lexical.status != CANDIDATE
        else:
            assert st.lexical.part + st.vector.part == pytest.approx(st.score or 0.0, abs=1e-9)


def test_why_not_a_document_without_the_query_word(built: tuple[MemoryService, Path]) -> None:
    svc, _ = built
    e = svc.explain("busy_timeout", k=5,
                    why_not="-home-dev-projects-lanternfish/build.md")
    w = e.why_not
    assert w is not None
    assert w.standing.lexical.status == NO_WORD
    assert w.standing.position is None
    assert "no query word occurs" in w.reason or w.standing.match == "closest"
    assert any(line.startswith("Words:") for line in w.standing.lines)


def test_why_not_a_chunk_by_ordinal(built: tuple[MemoryService, Path]) -> None:
    svc, _ = built
    e = svc.explain("busy_timeout value for the tidewater SQLite connections", k=3,
                    why_not="-home-dev-projects-tidewater-api/database.md#0")
    assert e.why_not is not None and e.why_not.standing.ordinal == 0


@pytest.mark.parametrize("target, message", [
    ("nope.md", "no searchable document 'nope.md'"),
    ("MEMORY.md", "is in 4 repositories"),
    ("-home-dev-projects-tidewater-api/database.md#99", "has no chunk #99"),
    ("-home-dev-projects-tidewater-api/database.md#x", "must be a chunk number"),
])
def test_why_not_names_nothing(built: tuple[MemoryService, Path], target: str,
                               message: str) -> None:
    svc, _ = built
    with pytest.raises(T.ExplainError, match=message.replace("#", "#").replace(".", r"\.")):
        svc.explain("busy_timeout", why_not=target)


def test_cli_explain_text_json_and_bad_target(built: tuple[MemoryService, Path]) -> None:
    svc, tmp = built
    db = str(tmp / "m.db")
    env = {"MEMLENS_INSTALL_KEY_FILE": str(tmp / "key"), "MEMLENS_CONFIG": str(tmp / "none.toml"),
           "HF_HUB_OFFLINE": "1"}
    q = "busy_timeout value for the tidewater SQLite connections"
    text = run_cli("search", q, "-k", "2", "--explain", "--db", db, env=env)
    assert text.returncode == 0, text.stderr
    assert " 1. -home-dev-projects-tidewater-api/database.md #1" in text.stdout
    assert "Words: 1st by bm25" in text.stdout and "Meaning: " in text.stdout
    js = run_cli("search", q, "-k", "2", "--why-not",
                 "-home-dev-projects-tidewater-api/performance.md", "--json", "--db", db, env=env)
    assert js.returncode == 0, js.stderr
    data = json.loads(js.stdout)
    assert len(data["hits"]) == 2 and data["why_not"]["path"] == "performance.md"
    bad = run_cli("search", q, "--why-not", "nope.md", "--db", db, env=env)
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "Traceback" not in bad.stderr


def test_what_it_would_need_is_checked_on_the_real_fusion(
        built: tuple[MemoryService, Path]) -> None:
    """``need`` is the least score with which the ranking's own fusion puts the expected
    chunk first: just above it, it is first; just below, it is not (replayed here on the
    very pool the search fused)."""
    from memlens.core.search import fusion
    from memlens.core.store import db as dbm

    svc, _ = built
    checked = 0
    for q in _questions():
        if not q["id"].startswith("ht"):
            continue
        e = svc.explain(q["query"], k=10, why_not=f"{q['repository']}/{q['path']}")
        w = e.why_not
        assert w is not None
        if w.need_cosine is None and w.need_bm25 is None:
            continue
        conn = svc.conn()
        pools: list[fusion.Pool] = []
        with dbm.read_txn(conn):
            res = svc._search(conn, q["query"], "hybrid", 10, None, None, None, False,
                              pools=pools)
        assert res.decision is not None and res.decision.params is not None
        pool, nid = pools[0], w.standing.node_id
        for kind, need in (("lexical", w.need_bm25), ("vector", w.need_cosine)):
            if need is None:
                continue
            raw = pool.lex_raw if kind == "lexical" else pool.vec_raw
            keep = raw.get(nid)
            for x, first in ((need + 1e-5, True), (need - 1e-3, False)):
                raw[nid] = x
                order = fusion.decide(pool, res.decision.params, q["query"]).order
                assert (order[0] == nid) is first, (q["id"], kind, need, x)
            if keep is None:
                del raw[nid]
            else:
                raw[nid] = keep
            checked += 1
    assert checked >= 10


def test_a_search_that_does_not_ask_loads_no_explanation(
        built: tuple[MemoryService, Path]) -> None:
    """Explaining costs nothing when not asked: a plain search through the door does not
    even import the explanation modules."""
    import subprocess
    import sys

    _, tmp = built
    code = ("import sys; from pathlib import Path;"
            "from memlens.core.config.settings import load_settings;"
            "from memlens.core.service import MemoryService;"
            f"s = load_settings(Path({str(tmp / 'none.toml')!r}), env={{}},"
            f" overrides={{'db': {str(tmp / 'm.db')!r}}});"
            "svc = MemoryService(s, install_key=b'k' * 32);"
            "assert svc.search('busy_timeout WAL', k=3).hits;"
            "print(sorted(m for m in sys.modules if 'explain' in m))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"}, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_why_not_a_document_outside_the_filter(built: tuple[MemoryService, Path]) -> None:
    svc, _ = built
    e = svc.explain("busy_timeout", k=2, repository="-home-dev-projects-lanternfish",
                    why_not="-home-dev-projects-tidewater-api/database.md")
    w = e.why_not
    assert w is not None and w.standing.repository == "-home-dev-projects-tidewater-api"
    assert w.standing.lexical.status == w.standing.vector.status == "outside the search filter"
    assert "outside the search filter" in w.reason
    # the filter also picks among several repositories holding the same path
    e = svc.explain("busy_timeout", k=2, repository="-home-dev-projects-lanternfish",
                    why_not="MEMORY.md")
    assert e.why_not is not None
    assert e.why_not.standing.repository == "-home-dev-projects-lanternfish"


def test_explain_with_the_embedder_down(make_service: Any, tree: Any) -> None:
    """Hybrid answers lexically with a note; the explanation claims no vector weight and
    a why-not still answers."""
    from tests.test_tui import FlakyEmbedder

    emb = FlakyEmbedder()
    svc = make_service(embedder=emb)
    tree.write("a.md", "# A\n\nThe busy timeout is five seconds.\n")
    tree.write("b.md", "# B\n\nNothing about waiting here.\n")
    svc.start_up(svc.resolve_roots([tree.projects]))
    emb.query_down = True
    e = svc.explain("busy timeout", k=5, why_not="b.md")
    assert e.method == "lexical" and e.hits
    assert any("embedder unavailable" in n for n in e.notes)
    assert "no vector weight is claimed" in " ".join(e.weights)
    for h in e.hits:
        assert h.vector.status == "side not used" and h.vector.part == 0.0
        assert h.lexical.part == pytest.approx(h.score)
    assert e.why_not is not None and e.why_not.standing.lexical.status == NO_WORD
