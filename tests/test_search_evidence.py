"""Lexical evidence for adaptive fusion (search_evidence) and the question-overlap gauge."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlens.bench import overlap as ov
from memlens.core.embedders.registry import make_embedder
from memlens.core.ingest.sources import roots_for_path
from memlens.core.search import evidence as ev
from memlens.core.search.query import build_fts_query, fts_phrases
from memlens.core.service import MemoryService
from tests.test_search import _service

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
         "india", "juliet", "kilo", "lima"]


def _write(root: Path, files: dict[str, str]) -> None:
    mem = root / "-home-u-proj" / "memory"
    mem.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (mem / name).write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryService]:
    base = tmp_path_factory.mktemp("evidence")
    files = {f"n{i}.md": f"# Note {i}\n\n" + " ".join(WORDS[j] for j in range(12) if (i >> (j % 6)) & 1
                                                  or j == i % 12) + " caching retries\n"
             for i in range(40)}
    files["rare.md"] = "# Rare\n\nThe zanzibar switch controls deployment freezes.\n"
    _write(base / "c", files)
    s = _service(base, make_embedder("hashing", {}))
    s.ingest(roots_for_path(base / "c"))
    yield s
    s.close()


def _ids(svc: MemoryService) -> list[int]:
    return [int(r[0]) for r in svc.conn().execute("SELECT id FROM knowledge_nodes ORDER BY id")]


def test_row_count_reads_fts5_totals(svc: MemoryService) -> None:
    conn = svc.conn()
    assert ev.fts_row_count(conn) == conn.execute(
        "SELECT count(*) FROM knowledge_nodes").fetchone()[0] == 41


def test_holders_agree_with_the_main_index(svc: MemoryService) -> None:
    """The TEMP table answers exactly as the main index does (same tokenizer: porter
    stems ``caching`` / ``cached``; the prefix phrase of a query still being typed)."""
    conn = svc.conn()
    ids = _ids(svc)
    fts = build_fts_query("cached retry alpha golf zanzibar nosuchword delt")
    assert fts is not None
    phrases = fts_phrases(fts)
    got = ev.holders(conn, phrases, ids)
    for p in phrases:
        want = {int(r[0]) for r in conn.execute(
            "SELECT rowid FROM knowledge_nodes_fts WHERE knowledge_nodes_fts MATCH ?", (p,))}
        assert got[p] == want, p
    assert got['"nosuchword"'] == set()
    assert len(got['"cached"']) == 40  # "caching" in every note, by its stem
    # the TEMP table is emptied after each use
    assert conn.execute("SELECT count(*) FROM temp.memlens_evidence").fetchone()[0] == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(WORDS + ["zanzibar", "nosuchword", "switch"]), min_size=1,
                max_size=6))
def test_coverage_is_the_idf_share_of_held_phrases(svc: MemoryService, words: list[str]) -> None:
    conn = svc.conn()
    fts = build_fts_query(" ".join(words), prefix=False)
    assert fts is not None
    ids = _ids(svc)
    n = ev.fts_row_count(conn)
    weights = ev.phrase_weights(conn, fts)
    cov = ev.coverage(conn, fts, ids)
    for nid in ids[:8] + ids[-2:]:
        held = [p for p in weights if conn.execute(
            "SELECT 1 FROM knowledge_nodes_fts WHERE knowledge_nodes_fts MATCH ? AND rowid=?",
            (p, nid)).fetchone()]
        want = sum(weights[p] for p in held) / sum(weights.values())
        assert math.isclose(cov[nid], min(1.0, want), abs_tol=1e-9)
        assert 0.0 <= cov[nid] <= 1.0
    for p, w in weights.items():  # idf from the count, capped at df_cap rows
        df = conn.execute("SELECT count(*) FROM knowledge_nodes_fts WHERE knowledge_nodes_fts"
                          " MATCH ?", (p,)).fetchone()[0]
        assert math.isclose(w, ev.idf(min(df, ev.df_cap(n)), n))


def test_absent_words_lower_coverage(svc: MemoryService) -> None:
    """A word no memory holds is the asker's word, not the memory's: it counts against
    coverage (weighing the most), so the best row of ``zanzibar`` covers the question
    fully and that of ``zanzibar`` among unknown words only in part."""
    conn = svc.conn()
    ids = _ids(svc)
    full = max(ev.coverage(conn, build_fts_query("zanzibar switch", prefix=False), ids).values())
    part = max(ev.coverage(conn, build_fts_query("zanzibar flibbet quorple", prefix=False),
                           ids).values())
    assert full == pytest.approx(1.0)
    assert 0.2 < part < 0.5
    assert ev.coverage(conn, None, ids) == {}
    assert ev.coverage(conn, '"alpha"', []) == {}


def test_df_cap_bounds() -> None:
    assert ev.df_cap(10) == ev.DF_CAP_MIN
    assert ev.df_cap(160_000) == 10_000
    assert ev.idf(0, 100) > ev.idf(10, 100) > ev.idf(90, 100) > 0


def test_overlap_definition() -> None:
    """Lower-cased content words (stop words and words under 3 letters dropped) found
    anywhere in the answer; ``a_b`` splits; no content word gives None."""
    assert ov.content_words("How do I set the BUSY_TIMEOUT on db?") == ["set", "busy", "timeout"]
    assert ov.overlap("How do I set the BUSY_TIMEOUT on db?", "busy timeout = 5000") == \
        pytest.approx(2 / 3)
    assert ov.overlap("what is it", "anything") is None
    assert ov.shared_words("retry the retry queue", "Retry later") == ["retry"]
    assert ov.mean([None, 0.5, 1.0]) == pytest.approx(0.75)
    assert ov.mean([None]) is None
