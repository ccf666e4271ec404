"""The hard paraphrase sets (issue 36): well formed, and as hard as their READMEs say.

``corpus/queries_hard.jsonl`` holds paraphrases written from one-line summaries
without seeing the answer (held out: never tuned on), and ``corpus_validation/``
holds two such sets written independently (``queries_hard.jsonl``,
``queries_hard2.jsonl``). These tests check that their labels point at real sections
and that the content-word overlap with the answer stays low (every question <= 0.30,
mean <= 0.15), so an edit that makes a set easy fails here. They say nothing about
search quality.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlens.bench.metrics import load_queries
from memlens.bench.overlap import mean, overlap, word_set
from tests.test_corpus_validation import headings

ROOT = Path(__file__).resolve().parent.parent
SETS = {"dev": (ROOT / "corpus", "queries_hard.jsonl", "ht"),
        "validation": (ROOT / "corpus_validation", "queries_hard.jsonl", "hv"),
        "validation-2": (ROOT / "corpus_validation", "queries_hard2.jsonl", "hw"),
        "blind3-dev": (ROOT / "corpus", "queries_blind3.jsonl", "b3c"),
        "blind3-held-out": (ROOT / "corpus_validation", "queries_blind3.jsonl", "b3v")}
KEYS = {"id", "query", "kind", "repository", "path", "heading"}


def _rows(corpus: Path, name: str) -> list[dict]:
    text = (corpus / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("name", sorted(SETS))
def test_rows_are_well_formed_and_point_at_real_sections(name: str) -> None:
    corpus, file, prefix = SETS[name]
    rows = _rows(corpus, file)
    assert len(rows) >= 40
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert set(r) == KEYS, r["id"]
        assert r["id"].startswith(prefix) and r["kind"] == "paraphrase"
        assert 4 <= len(r["query"].split()) <= 30, r["id"]
        doc = corpus / r["repository"] / "memory" / r["path"]
        assert doc.is_file(), r["id"]
        if r["heading"] is not None:
            assert r["heading"] in headings(doc.read_text(encoding="utf-8")), r["id"]
    # the loader the bench uses reads every row
    assert len(load_queries(corpus / file)) == len(rows)


@pytest.mark.parametrize("name", sorted(SETS))
def test_questions_barely_share_the_answers_words(name: str) -> None:
    corpus, file, _ = SETS[name]
    values: list[float | None] = []
    for r in _rows(corpus, file):
        ov = overlap(r["query"], word_set(
            (corpus / r["repository"] / "memory" / r["path"]).read_text(encoding="utf-8")))
        assert ov is not None and ov <= 0.30, (r["id"], ov)
        values.append(ov)
    m = mean(values)
    assert m is not None and m <= 0.15, m


def test_no_hard_question_repeats_an_existing_one() -> None:
    for corpus, file, _ in SETS.values():
        easy = {r["query"].strip().lower() for r in
                (json.loads(x) for x in (corpus / "queries.jsonl").read_text(encoding="utf-8")
                 .splitlines() if x.strip())}
        assert not easy & {r["query"].strip().lower() for r in _rows(corpus, file)}
