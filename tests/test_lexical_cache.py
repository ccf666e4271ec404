"""Phrase postings for lexical search (memlens.core.search.lexical_cache): the same rows and
the same float64 scores as the FTS5 statement, built only at the third sight of a
phrase, dropped by every store change (and read again for the phrases that were hot),
bounded in memory, safe across threads."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlens.core.embedders.registry import make_embedder
from memlens.core.ingest.sources import roots_for_path
from memlens.core.search import engine as search_mod
from memlens.core.search.lexical_cache import LexicalCache
from memlens.core.search.query import build_fts_query, fts_phrases
from memlens.core.service import MemoryService
from memlens.core.store import db as dbm
from tests.conftest import CORPUS
from tests.test_search import _service

QUERIES = [json.loads(line)["query"] for line in (CORPUS / "queries.jsonl").read_text().splitlines()
           if line.strip()]
WORDS = ["the", "sqlite", "connection", "timeout", "deploy", "test", "release", "cache", "python",
         "config", "memory", "error", "retry", "lanternfish", "orchard", "webhook", "pool",
         "schema", "migration", "index", "log", "user", "api", "build", "de", "con", "tim"]


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryService]:
    base = tmp_path_factory.mktemp("lexcache")
    shutil.copytree(CORPUS, base / "corpus", ignore=shutil.ignore_patterns("*.jsonl", "*.md.txt"))
    s = _service(base, make_embedder("hashing", {}))
    s.ingest(roots_for_path(base / "corpus"))
    yield s
    s.close()


def _statement(conn: Any, query: str, k: int, repository: str | None = None,
               doc_type: str | None = None) -> list[tuple[int, float]]:
    res = search_mod.SearchResult(query=query, mode="lexical", hits=[],
                                  fts_query=build_fts_query(query))
    return search_mod._lexical_top(conn, res, k, repository, doc_type)


def _cached(conn: Any, cache: LexicalCache, query: str, k: int, repository: str | None = None,
            doc_type: str | None = None) -> list[tuple[int, float]] | None:
    fts = build_fts_query(query)
    assert fts is not None
    return cache.top(conn, fts_phrases(fts), k, repository, doc_type)


def _repos_and_types(conn: Any) -> tuple[list[str], list[str]]:
    repos = [str(r[0]) for r in conn.execute("SELECT DISTINCT repository FROM knowledge_nodes")]
    types = [str(r[0]) for r in conn.execute(
        "SELECT DISTINCT doc_type FROM knowledge_nodes WHERE doc_type IS NOT NULL")]
    return repos, types


@pytest.mark.parametrize("min_rows", [1, 10**9])
def test_same_rows_and_scores_as_the_statement(svc: MemoryService, min_rows: int) -> None:
    """Every corpus query, with and without filters, at several depths: identical ids and
    bit-identical scores (min_rows=1 keeps every phrase; 10**9 reads each per query)."""
    conn = svc.conn()
    cache = LexicalCache(weights=search_mod.BM25_WEIGHTS, build_after=1, fixed_rows=0, min_rows=min_rows)
    with dbm.read_txn(conn):
        repos, types = _repos_and_types(conn)
        filters = [(None, None), (repos[0], None), (None, types[0]), (repos[-1], types[0]),
                   ("no-such-repository", None)]
        compared = 0
        for q in QUERIES + WORDS:
            if build_fts_query(q) is None:
                continue
            for k in (1, 10, 40):
                for repo, dtype in filters:
                    want = _statement(conn, q, k, repo, dtype)
                    first = _cached(conn, cache, q, k, repo, dtype)
                    assert first is None or first == want
                    for _ in range(2):  # second sight builds, third reads postings
                        got = _cached(conn, cache, q, k, repo, dtype)
                        assert got is None or got == want, (q, k, repo, dtype)
                    compared += 1
    assert compared > 300
    if min_rows == 1:  # every phrase kept: the postings answer from the second sight on
        assert cache.served >= 2 * compared
        assert cache.builds > 50 and cache.nbytes() > 0
    else:  # nothing kept: the second sight reads each phrase, then SQL answers again
        assert cache.builds == 0 and cache.served > 50


def test_default_builds_at_the_third_sight(svc: MemoryService) -> None:
    conn = svc.conn()
    cache = LexicalCache(weights=search_mod.BM25_WEIGHTS, fixed_rows=0, min_rows=1)
    with dbm.read_txn(conn):
        assert _cached(conn, cache, "sqlite timeout ", 10) is None
        assert _cached(conn, cache, "timeout sqlite ", 10) is None  # same phrases, twice seen
        assert cache.builds == 0
        got = _cached(conn, cache, "sqlite timeout ", 10)  # third query with them: built
        assert got == _statement(conn, "sqlite timeout ", 10) and cache.builds == 2


def test_first_sight_runs_sql_second_builds(svc: MemoryService) -> None:
    conn = svc.conn()
    cache = LexicalCache(weights=search_mod.BM25_WEIGHTS, build_after=1, fixed_rows=0, min_rows=1)
    with dbm.read_txn(conn):
        assert _cached(conn, cache, "sqlite timeout", 10) is None  # never seen: statement
        assert cache.builds == 0 and cache.served == 0
        assert _cached(conn, cache, "sqlite timeout", 10) is not None
        assert cache.builds == 2 and cache.served == 1
        # a query with one new phrase waits for its second sight too
        assert _cached(conn, cache, "sqlite zebraquokka", 10) is None
        assert cache.served == 1
        got = _cached(conn, cache, "sqlite zebraquokka", 10)  # a word no row has: no postings
        assert got == _statement(conn, "sqlite zebraquokka", 10) != []
        assert cache.builds == 2 and cache.served == 2


def test_statement_answers_when_postings_would_cost_more(svc: MemoryService) -> None:
    """The postings answer only when their rows outweigh the fixed cost and twice the
    rare phrases' rows (which must be read per query); otherwise the statement does."""
    conn = svc.conn()
    with dbm.read_txn(conn):
        n_sqlite = len(_statement(conn, "sqlite ", 10**6))
        big = LexicalCache(weights=search_mod.BM25_WEIGHTS, build_after=1, min_rows=1, fixed_rows=n_sqlite)
        small = LexicalCache(weights=search_mod.BM25_WEIGHTS, build_after=1, min_rows=1,
                             fixed_rows=n_sqlite + 1)
        for cache in (big, small):
            for _ in range(3):
                got = _cached(conn, cache, "sqlite ", 10)
        assert big.served == 2 and got is None and small.served == 0
        assert _cached(conn, big, "sqlite ", 10) == _statement(conn, "sqlite ", 10)
        # a kept phrase with a rare one whose rows outweigh it: the statement answers
        rare = LexicalCache(weights=search_mod.BM25_WEIGHTS, build_after=1, min_rows=10**6, fixed_rows=0)
        for _ in range(3):
            assert _cached(conn, rare, "sqlite timeout ", 10) in (
                None, _statement(conn, "sqlite timeout ", 10))
        assert rare.builds == 0 and rare.served == 1  # only the second sight, which read both


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),
       open_end=st.booleans(), k=st.integers(1, 60), min_rows=st.sampled_from([1, 5, 50]),
       filt=st.integers(0, 3))
def test_property_equal_to_statement(svc: MemoryService, words: list[str], open_end: bool,
                                     k: int, min_rows: int, filt: int) -> None:
    """Any mix of frequent, rare and prefix phrases: the postings answer exactly as SQL."""
    q = " ".join(words) + ("" if open_end else " ")
    if build_fts_query(q) is None:
        return
    conn = svc.conn()
    cache = LexicalCache(weights=search_mod.BM25_WEIGHTS, build_after=1, fixed_rows=0, min_rows=min_rows)
    with dbm.read_txn(conn):
        repos, types = _repos_and_types(conn)
        repo = repos[filt % len(repos)] if filt in (1, 3) else None
        dtype = types[0] if filt >= 2 else None
        want = _statement(conn, q, k, repo, dtype)
        assert _cached(conn, cache, q, k, repo, dtype) is None  # first sight: SQL
        assert _cached(conn, cache, q, k, repo, dtype) == want
        third = _cached(conn, cache, q, k, repo, dtype)  # None: the statement is cheaper
        assert third is None or third == want


@given(text=st.text(alphabet=st.sampled_from("ab OR or AND\"'*( )x1_.-é"), max_size=40))
def test_fts_phrases_split_what_the_builder_joins(text: str) -> None:
    fts = build_fts_query(text)
    if fts is not None:
        parts = fts_phrases(fts)
        assert " OR ".join(parts) == fts
        assert all(p.startswith('"') and (p.endswith('"') or p.endswith('"*')) for p in parts)


def test_store_change_drops_every_entry(tmp_path: Path) -> None:
    """A projection change (new node ids, new statistics) drops every entry; the next
    answers are those of the new snapshot, never of the old postings. A phrase that was
    built is read again at its first search after the change (no background worker here:
    inline), a phrase seen only once starts from first sight."""
    base = tmp_path
    shutil.copytree(CORPUS, base / "corpus", ignore=shutil.ignore_patterns("*.jsonl", "*.md.txt"))
    s = _service(base, make_embedder("hashing", {}))  # the postings need no real model
    try:
        s.ingest(roots_for_path(base / "corpus"))
        conn = s.conn()
        cache = LexicalCache(weights=search_mod.BM25_WEIGHTS, build_after=1, fixed_rows=0, min_rows=1)
        q = "sqlite connection"
        with dbm.read_txn(conn):
            _cached(conn, cache, q, 10)
            before = _cached(conn, cache, q, 10)
            assert _cached(conn, cache, "release", 10) is None  # seen once
        assert before is not None and cache.builds == 2
        mem = next((base / "corpus").glob("*/memory"))
        (mem / "extra.md").write_text("# SQLite connection notes\n\n" +
                                      "sqlite connection sqlite connection pooling\n" * 5)
        s.ingest(roots_for_path(base / "corpus"))
        with dbm.read_txn(conn):
            after = _cached(conn, cache, q, 10)  # hot: read again at the new store
            assert after == _statement(conn, q, 10)
            assert _cached(conn, cache, "release", 10) is None  # seen once before: first sight
            assert _cached(conn, cache, "release", 10) == _statement(conn, "release", 10)
        assert after != before  # the new file's node ranks first and the idf moved
        assert cache.builds == 5
    finally:
        s.close()


def test_reader_snapshot_is_never_mixed_with_a_newer_one(tmp_path: Path) -> None:
    """Postings built by a newer snapshot are not used by a transaction on an older one."""
    shutil.copytree(CORPUS, tmp_path / "corpus", ignore=shutil.ignore_patterns("*.jsonl", "*.md.txt"))
    s = _service(tmp_path, make_embedder("hashing", {}))
    try:
        s.ingest(roots_for_path(tmp_path / "corpus"))
        old = dbm.connect(s.db_path, create=False)
        cache = LexicalCache(weights=search_mod.BM25_WEIGHTS, build_after=1, fixed_rows=0, min_rows=1)
        q = "release checklist"
        with dbm.read_txn(old):
            want_old = _statement(old, q, 10)  # the old snapshot starts here
            mem = next((tmp_path / "corpus").glob("*/memory"))
            (mem / "extra.md").write_text("# Release checklist\n\nrelease checklist release\n")
            s.ingest(roots_for_path(tmp_path / "corpus"))  # commits on another connection
            new = s.conn()
            with dbm.read_txn(new):
                _cached(new, cache, q, 10)
                assert _cached(new, cache, q, 10) == _statement(new, q, 10)
            for _ in range(3):
                got = _cached(old, cache, q, 10)
                assert got is None or got == want_old
            assert _statement(old, q, 10) == want_old
        old.close()
    finally:
        s.close()


def test_background_builds_never_make_a_query_wait(svc: MemoryService) -> None:
    """With a connect factory the second sight schedules the read on a worker and runs
    the statement; once built, the postings answer exactly as SQL."""
    conn = svc.conn()
    cache = LexicalCache(weights=search_mod.BM25_WEIGHTS, build_after=1, fixed_rows=0, min_rows=1,
                         connect=lambda: dbm.connect(svc.db_path, create=False))
    try:
        for q in QUERIES[:15]:
            with dbm.read_txn(conn):
                assert _cached(conn, cache, q, 10) is None  # first sight
                assert _cached(conn, cache, q, 10) is None  # second: scheduled, SQL answers
            cache.wait_built()
            with dbm.read_txn(conn):
                assert _cached(conn, cache, q, 10) == _statement(conn, q, 10), q
        assert cache.served == 15 and cache.builds > 15
        assert cache._worker_conn is not None
    finally:
        cache.clear()
    assert cache._worker_conn is None and cache.nbytes() == 0


def test_background_build_of_an_older_store_is_dropped(tmp_path: Path) -> None:
    """A build scheduled before a store change must not land in the new store's cache."""
    shutil.copytree(CORPUS, tmp_path / "corpus", ignore=shutil.ignore_patterns("*.jsonl", "*.md.txt"))
    s = _service(tmp_path, make_embedder("hashing", {}))
    try:
        s.ingest(roots_for_path(tmp_path / "corpus"))
        conn = s.conn()
        gate = threading.Event()

        def slow_connect() -> Any:
            gate.wait(30)
            return dbm.connect(s.db_path, create=False)

        cache = LexicalCache(weights=search_mod.BM25_WEIGHTS, build_after=1, fixed_rows=0, min_rows=1,
                             connect=slow_connect)
        q = "release checklist"
        with dbm.read_txn(conn):
            _cached(conn, cache, q, 10)
            assert _cached(conn, cache, q, 10) is None  # scheduled; the worker waits
        mem = next((tmp_path / "corpus").glob("*/memory"))
        (mem / "extra.md").write_text("# Release checklist\n\nrelease checklist release\n")
        s.ingest(roots_for_path(tmp_path / "corpus"))
        gate.set()
        cache.wait_built()
        assert cache.builds == 0 and not cache._entries  # read at a newer store: dropped
        with dbm.read_txn(conn):
            assert _cached(conn, cache, q, 10) is None  # hot: scheduled again, SQL answers
            cache.wait_built()
            assert _cached(conn, cache, q, 10) == _statement(conn, q, 10)
        cache.clear()
    finally:
        s.close()


def test_hot_phrases_survive_a_store_change_in_the_background(tmp_path: Path) -> None:
    """With the service's default (build at the third sight, background worker), a word
    that was served from RAM is scheduled again by its first search after a change; the
    search itself runs the statement, and the next one is served at the new store."""
    shutil.copytree(CORPUS, tmp_path / "corpus", ignore=shutil.ignore_patterns("*.jsonl", "*.md.txt"))
    s = _service(tmp_path, make_embedder("hashing", {}))
    try:
        s.ingest(roots_for_path(tmp_path / "corpus"))
        conn = s.conn()
        cache = LexicalCache(weights=search_mod.BM25_WEIGHTS, fixed_rows=0, min_rows=1,
                             connect=lambda: dbm.connect(s.db_path, create=False))
        q = "release checklist"
        mem = next((tmp_path / "corpus").glob("*/memory"))
        for round_ in range(3):  # three store changes, each followed by two searches
            with dbm.read_txn(conn):
                if round_ == 0:
                    for _ in range(3):  # first, second, third sight: scheduled
                        assert _cached(conn, cache, q, 10) is None
                else:
                    assert _cached(conn, cache, q, 10) is None  # new store: scheduled again
                cache.wait_built()
                served = cache.served
                assert _cached(conn, cache, q, 10) == _statement(conn, q, 10)
                assert cache.served == served + 1
            (mem / f"extra{round_}.md").write_text(f"# Release {round_}\n\nrelease checklist\n")
            s.ingest(roots_for_path(tmp_path / "corpus"))
        assert cache.builds == 6
        cache.clear()
        assert not cache._seen
    finally:
        s.close()


def test_sightings_are_bounded(svc: MemoryService, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_SEEN counted phrases, those seen once are forgotten, then all but the most
    seen half: the table stays bounded and a hot phrase keeps its count."""
    from memlens.core.search import lexical_cache as lc

    monkeypatch.setattr(lc, "MAX_SEEN", 50)
    conn = svc.conn()
    cache = LexicalCache(weights=search_mod.BM25_WEIGHTS, fixed_rows=0, min_rows=1)
    with dbm.read_txn(conn):
        for _ in range(2):
            _cached(conn, cache, "sqlite", 10)
        for i in range(120):
            _cached(conn, cache, f"word{i}x", 10)
        key = fts_phrases(build_fts_query("sqlite") or "")[0]
        assert len(cache._seen) <= 51 and cache._seen[key] == 2
        assert _cached(conn, cache, "sqlite", 10) == _statement(conn, "sqlite", 10)
        for i in range(120):  # phrases all seen twice: only the most seen half stays
            for _ in range(2):
                _cached(conn, cache, f"other{i}y", 10)
        assert len(cache._seen) <= 51 and cache._seen[key] == 3


def test_budget_evicts_least_recently_used(svc: MemoryService) -> None:
    conn = svc.conn()
    cache = LexicalCache(weights=search_mod.BM25_WEIGHTS, build_after=1, fixed_rows=0, min_rows=1,
                         budget_bytes=1)
    with dbm.read_txn(conn):
        for q in WORDS:
            if build_fts_query(q) is None:
                continue
            _cached(conn, cache, q, 10)
            assert _cached(conn, cache, q, 10) == _statement(conn, q, 10)
        assert len(cache._entries) == 1  # over budget: only the newest stays
        assert cache.builds > 10


def test_service_search_same_hits_with_postings(svc: MemoryService) -> None:
    """Lexical and hybrid search give the same hits (JSON shape, scores, snippets) once
    the postings answer as with no cache; MemoryService.search uses the postings."""
    conn = svc.conn()
    cache = LexicalCache(weights=search_mod.BM25_WEIGHTS, build_after=1, fixed_rows=0, min_rows=1)
    opts = svc.settings.search.fusion_options(svc.embedder.name)
    for mode in ("lexical", "hybrid"):
        for q in QUERIES[:20]:
            with dbm.read_txn(conn):
                want = search_mod.search(conn, q, mode=mode, embedder=svc.embedder, k=10,
                                         fusion_options=opts)
                for _ in range(3):
                    got = search_mod.search(conn, q, mode=mode, embedder=svc.embedder, k=10,
                                            fusion_options=opts, lexical_cache=cache)
            assert [h.as_json() for h in got.hits] == [h.as_json() for h in want.hits], (mode, q)
    assert cache.served > 0
    svc._lexical_cache = LexicalCache(weights=search_mod.BM25_WEIGHTS, build_after=1,
                                      fixed_rows=0, min_rows=1)
    live = svc.lexical_cache()
    assert live is not None
    before = live.served
    for _ in range(3):
        got = svc.search(QUERIES[0], mode="lexical", k=10, all_projects=True)
    with dbm.read_txn(conn):
        want = search_mod.search(conn, QUERIES[0], mode="lexical", k=10)
    assert [h.as_json() for h in got.hits] == [h.as_json() for h in want.hits]
    assert live.served > before


def test_threads_share_one_cache(svc: MemoryService) -> None:
    """Searches from several threads (the TUI's workers) at once: same results as serial."""
    conn = svc.conn()
    with dbm.read_txn(conn):
        want = {q: _statement(conn, q, 20) for q in QUERIES[:12]}
    cache = LexicalCache(weights=search_mod.BM25_WEIGHTS, build_after=1, fixed_rows=0, min_rows=1)
    errors: list[str] = []

    def run() -> None:
        c = dbm.connect(svc.db_path, create=False)
        try:
            for _ in range(3):
                for q, w in want.items():
                    with dbm.read_txn(c):
                        got = _cached(c, cache, q, 20)
                    if got is not None and got != w:
                        errors.append(q)
        finally:
            c.close()

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert cache.served > 0


def test_lexical_cache_mb_setting(tmp_path: Path) -> None:
    """``[search] lexical_cache_mb`` sets the budget; 0 turns the postings off (searches
    unchanged); a negative value is one clear config error."""
    from memlens.core.config.settings import ConfigError, load_settings

    off = load_settings(tmp_path / "none.toml", env={},
                        overrides={"db": str(tmp_path / "m.db"), "search.lexical_cache_mb": 0})
    s = MemoryService(off, embedder=None, install_key=b"k" * 32)
    try:
        assert s.lexical_cache() is None
        assert s.search("anything at all", mode="lexical").hits == []
    finally:
        s.close()
    small = load_settings(tmp_path / "none.toml", env={},
                          overrides={"db": str(tmp_path / "m.db"), "search.lexical_cache_mb": 3})
    s = MemoryService(small, embedder=None, install_key=b"k" * 32)
    try:
        cache = s.lexical_cache()
        assert cache is not None and cache.budget_bytes == 3 * 1024 * 1024
    finally:
        s.close()
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[search]\nlexical_cache_mb = -1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="lexical_cache_mb"):
        load_settings(cfg, env={})
