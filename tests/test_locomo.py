"""benchmarks/locomo.py (issue 46): converter, audit corrections, scorer maths, subsets, and
one run of converter + ingest + search through the real service, on a tiny LoCoMo-shaped
fixture written here (never the real data, which is CC BY-NC and not in the repository)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import locomo as L  # noqa: E402

from memlens.core.types import SearchSettings  # noqa: E402


def _turn(speaker: str, dia: str, text: str) -> dict[str, Any]:
    return {"speaker": speaker, "dia_id": dia, "text": text}


def _dataset() -> list[dict[str, Any]]:
    """Two conversations shaped like locomo10.json (sessions, dates, qa with evidence)."""
    c0 = {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [_turn("Ana", "D1:1", "I adopted a greyhound called Biscuit."),
                      _turn("Ben", "D1:2", "  "),  # an empty turn gives no bullet
                      _turn("Ben", "D1:3", "Lovely! I started pottery classes.")],
        "session_2_date_time": "7:00 pm on 20 May, 2023",
        "session_2": [_turn("Ana", "D2:1", "We hiked the Dolomites last weekend."),
                      _turn("Ben", "D2:2", "My kiln finally arrived.")],
        "session_3_date_time": "9:10 am on 2 June, 2023",  # a date without a session
    }
    c1 = {
        "speaker_a": "Cy", "speaker_b": "Di",
        "session_1_date_time": "3:00 pm on 1 July, 2023",
        "session_1": [_turn("Cy", "D1:1", "I repaired a vintage accordion."),
                      _turn("Di", "D1:2", "I am learning Icelandic grammar.")],
    }
    qa0 = [
        {"question": "What is the name of Ana's greyhound?", "answer": "Biscuit",
         "evidence": ["D1:1"], "category": 4},
        {"question": "When did Ana hike the Dolomites?", "answer": "May 2023",
         "evidence": ["D1:1"], "category": 2},  # wrong citation, corrected by the audit
        {"question": "What did Ben buy?", "adversarial_answer": "a kiln",
         "evidence": ["D2:2"], "category": 5},
        {"question": "What hobbies do Ana and Ben have?", "answer": "hiking, pottery",
         "evidence": ["D1:3", "D2:1", "D9:1", "bogus"], "category": 1},
    ]
    qa1 = [
        {"question": "Which instrument did Cy repair?", "answer": "accordion",
         "evidence": ["D1:1"], "category": 3},
        {"question": "What language is Di learning?", "answer": "Icelandic",
         "evidence": [], "category": 4},
    ]
    return [{"sample_id": "c0", "conversation": c0, "qa": qa0},
            {"sample_id": "c1", "conversation": c1, "qa": qa1}]


CORRECTIONS = {"locomo_0_qa1": {"question_id": "locomo_0_qa1",
                                "question": "When did Ana hike the Dolomites?",
                                "error_type": "WRONG_CITATION", "correct_answer": "mid May 2023",
                                "correct_evidence": ["D2:1"]}}


def _write_data(root: Path, corrections: list[dict[str, Any]] | None = None) -> Path:
    (root / "audit").mkdir(parents=True)
    (root / "locomo10.json").write_text(json.dumps(_dataset()))
    (root / "audit" / "errors_conv_0.json").write_text(
        json.dumps(list(CORRECTIONS.values()) if corrections is None else corrections))
    (root / "audit" / "errors_conv_1.json").write_text("[]")
    return root


def test_one_note_per_session_with_dated_title_and_bullets() -> None:
    corpus = L.convert(_dataset(), {})
    assert sorted(corpus.notes) == ["locomo-c00-s01", "locomo-c00-s02", "locomo-c01-s01"]
    note = corpus.notes["locomo-c00-s01"]
    assert "title: locomo-c00-s01 (1:56 pm on 8 May, 2023)" in note
    assert "\n# Chat session at 1:56 pm on 8 May, 2023\n" in note
    bullets = [ln for ln in note.splitlines() if ln.startswith("- ")]
    assert bullets == ["- **Ana:** I adopted a greyhound called Biscuit.",
                       "- **Ben:** Lovely! I started pottery classes."]


def test_adversarial_left_out_and_truth_from_evidence_sessions() -> None:
    corpus = L.convert(_dataset(), {})
    assert corpus.adversarial == 1
    by = {q.id: q for q in corpus.questions}
    assert "locomo_0_qa2" not in by and len(corpus.questions) == 5
    assert by["locomo_0_qa0"].truth == ("locomo-c00-s01",)
    # D9 names no session of this conversation and "bogus" is no evidence id: both dropped
    assert by["locomo_0_qa3"].truth == ("locomo-c00-s01", "locomo-c00-s02")
    assert by["locomo_1_qa0"].truth == ("locomo-c01-s01",)  # D1 of conversation 1, not 0
    assert by["locomo_1_qa1"].truth == () and corpus.no_truth == 1


def test_audit_corrections_replace_evidence_and_answer() -> None:
    plain = {q.id: q for q in L.convert(_dataset(), {}).questions}
    fixed_corpus = L.convert(_dataset(), CORRECTIONS)
    fixed = {q.id: q for q in fixed_corpus.questions}
    assert plain["locomo_0_qa1"].truth == ("locomo-c00-s01",)
    assert fixed["locomo_0_qa1"].truth == ("locomo-c00-s02",)
    assert fixed["locomo_0_qa1"].answer == "mid May 2023" and fixed["locomo_0_qa1"].corrected
    assert fixed_corpus.corrected == 1 and not fixed["locomo_0_qa0"].corrected


def test_audit_that_does_not_match_the_question_fails() -> None:
    wrong = {"locomo_0_qa1": {**CORRECTIONS["locomo_0_qa1"], "question": "Something else?"}}
    with pytest.raises(L.LocomoError, match="locomo_0_qa1"):
        L.convert(_dataset(), wrong)


def test_load_corrections_rejects_duplicates_and_missing_keys(tmp_path: Path) -> None:
    rec = CORRECTIONS["locomo_0_qa1"]
    _write_data(tmp_path / "dup", [rec, rec])
    with pytest.raises(L.LocomoError, match="twice"):
        L.load_corpus(tmp_path / "dup")
    _write_data(tmp_path / "bad", [{"question_id": "x"}])
    with pytest.raises(L.LocomoError, match="lacks"):
        L.load_corpus(tmp_path / "bad")
    (tmp_path / "none").mkdir()
    with pytest.raises(L.LocomoError, match="locomo10.json"):
        L.load_corpus(tmp_path / "none")


def test_recall_and_mrr_on_hand_made_hits() -> None:
    hits = ["a", "a", "b", "c", "d", "e", "f", "g", "h", "i"]
    truth = ["b", "e"]
    s = L.score_hits(hits, truth)
    assert s == {"recall@1": 0.0, "recall@3": 0.5, "recall@5": 0.5, "recall@10": 1.0, "mrr": 1 / 3}
    c = L.score_hits(L.collapse(hits), truth)  # a, b, c, d, e, ...: "a" twice takes one place
    assert c == {"recall@1": 0.0, "recall@3": 0.5, "recall@5": 1.0, "recall@10": 1.0, "mrr": 0.5}
    assert L.reciprocal_rank(["x"] * 10 + ["b"], truth) == 0.0  # only the first ten count
    assert L.score_hits(hits, [])["recall@5"] == 0.0 and L.score_hits([], truth)["mrr"] == 0.0


def test_aggregate_means_per_category() -> None:
    per = [{"category": 1, "as_returned": {"recall@5": 1.0, "mrr": 1.0}},
           {"category": 1, "as_returned": {"recall@5": 0.0, "mrr": 0.0}},
           {"category": 4, "as_returned": {"recall@5": 0.5, "mrr": 0.25}}]
    agg = L.aggregate(per, "as_returned", ks=(5,))
    assert agg["all"] == {"n": 3, "recall@5": 0.5, "mrr": 0.4167}
    assert agg["by_category"]["1"]["recall@5"] == 0.5 and agg["by_category"]["4"]["mrr"] == 0.25
    assert agg["by_category"]["1"]["name"] == "multi-hop"


def _questions(counts: dict[int, int]) -> list[L.Question]:
    out: list[L.Question] = []
    for cat, n in counts.items():
        out += [L.Question(id=f"q{cat}_{i}", conversation=i % 10, index=cat * 10000 + i,
                           question="?", category=cat, truth=(), answer="") for i in range(n)]
    return out


def test_q300_composition_is_proportional_and_seeded() -> None:
    qs = _questions({1: 282, 2: 321, 3: 96, 4: 841})  # LoCoMo's non-adversarial counts
    sub = L.stratified(qs, 300, seed=42)
    counts = {c: sum(q.category == c for q in sub) for c in (1, 2, 3, 4)}
    assert counts == {1: 55, 2: 63, 3: 19, 4: 164}
    assert [q.id for q in L.stratified(qs, 300, seed=42)] == [q.id for q in sub]
    assert [q.id for q in L.stratified(qs, 300, seed=7)] != [q.id for q in sub]


def test_conversation_split_and_bad_specs() -> None:
    assert L.parse_conversations("0-4") == {0, 1, 2, 3, 4}
    assert L.parse_conversations("5-7,9") == {5, 6, 7, 9}
    for bad in ("a", "4-1", "1-"):
        with pytest.raises(L.LocomoError):
            L.parse_conversations(bad)
    corpus = L.convert(_dataset(), CORRECTIONS)
    assert {q.conversation for q in L.select(corpus, "all", 42, {1})} == {1}


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert L.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error:") and "locomo10.json" in err
    _write_data(tmp_path / "d")
    assert L.main([str(tmp_path / "d"), "--modes", "fuzzy"]) == 2
    assert "unknown mode" in capsys.readouterr().err


def test_end_to_end_through_the_service(tmp_path: Path) -> None:
    """Converter, the door's start-up flow into a cached database, search in every mode."""
    data = _write_data(tmp_path / "data")
    corpus = L.load_corpus(data)
    db, facts = L.cached_database(corpus, data)
    assert facts["documents"] == 3 and not facts["cached"]
    again, facts2 = L.cached_database(corpus, data)
    assert again == db and facts2["cached"]
    qs = [q for q in corpus.questions if q.id in ("locomo_0_qa0", "locomo_1_qa0")]
    svc = L.open_service(db)
    try:
        assert L.hit_notes(svc, "greyhound Biscuit", "lexical")[0] == "locomo-c00-s01"
        lex = L.evaluate(svc, qs, "lexical")
        assert lex["n"] == 2 and lex["as_returned"]["all"]["recall@1"] == 1.0
        assert lex["as_returned"]["all"]["mrr"] == 1.0
        for mode, fusion in (("vector", None), ("hybrid", None), ("hybrid", "rrf")):
            r = L.evaluate(svc, qs, mode, fusion, per_question=True)
            assert len(r["questions"]) == 2
            default = SearchSettings().fusion_options("minilm")["fusion"]  # auto's choice
            used = {"vector": {"None": 2}, "hybrid": {fusion or default: 2}}[mode]
            assert r["fusion_used"] == used  # the search ran with the fusion asked for
            assert all(q["hits"] and set(q["hits"]) <= set(corpus.notes) for q in r["questions"])
            assert r["as_returned"]["all"]["recall@10"] == 1.0  # three notes, all returned
    finally:
        svc.close()
    by_path = L.evaluate(db, qs, "hybrid", "rrf")
    assert by_path["as_returned"]["all"]["recall@10"] == 1.0
