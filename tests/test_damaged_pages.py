"""Issue 42, item 5: a command that reads a damaged page says so in one line and exits 1,
never a partial answer with exit 0; a writing run notices a damaged database before it
writes. One 4 KB page of a real database file (built by the real CLI from the bundled
corpus) is overwritten, page by page over the tables memlens reads, and the real CLI runs
search (the one-shot lexical path and hybrid), docs, history and ingest on it. Each run
either prints exactly what it printed on the intact database (it read no damaged page)
or fails in one line that says the database is damaged, exit 1."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import apsw
import pytest

from tests.conftest import CORPUS, run_cli

ENV = {"MEMLENS_EMBEDDER": "hashing"}
TIDEWATER = "-home-dev-projects-tidewater-api"
COMMANDS: dict[str, list[str]] = {
    "search-lexical": ["search", "busy_timeout retry", "--mode", "lexical", "-k", "50"],
    "search-hybrid": ["search", "retry backoff deploy", "-k", "50", "--json"],
    "docs": ["docs", "--json"],
    "history": ["history", "database.md", "--repository", TIDEWATER, "--json"],
}
# One leaf page of each table or index memlens reads or writes (the first by page number)
# (sqlite-vec's vector chunks: a page of them unreadable is a plain SQLError from vec0,
# "vectors blob read error", which hybrid search used to degrade to lexical with exit 0)
TABLES = ("memory_documents", "memory_revisions", "memory_chunks", "knowledge_nodes",
          "knowledge_nodes_fts_data", "knowledge_node_memory_chunks", "search_history",
          "vec_%_vector_chunks00")


@pytest.fixture(scope="module")
def intact(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """The database, a corpus copy with one edit (so ingest has something to write), and
    each command's output on the intact database."""
    root = tmp_path_factory.mktemp("damage")
    corpus = root / "corpus"
    shutil.copytree(CORPUS, corpus, ignore=shutil.ignore_patterns("*.jsonl", "README.md"))
    db = root / "m.db"
    assert run_cli("ingest", str(corpus), "--db", str(db), env=ENV).returncode == 0
    for args in COMMANDS.values():  # a history row per search, so that table has pages
        assert run_cli(*args, "--db", str(db), env=ENV).returncode == 0
    c = apsw.Connection(str(db))
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()
    target = corpus / TIDEWATER / "memory" / "database.md"
    target.write_text(target.read_text(encoding="utf-8") + "\nOne more line.\n",
                      encoding="utf-8")
    want = {}
    for name, args in COMMANDS.items():
        copy = root / f"{name}.db"
        shutil.copy(db, copy)
        p = run_cli(*args, "--db", str(copy), env=ENV)
        assert p.returncode == 0, p.stderr
        want[name] = p.stdout
    return db, corpus, want


def _pages(db: Path) -> dict[str, int]:
    c = apsw.Connection(str(db))
    try:
        found = {}
        for name in TABLES:
            rows = c.execute("SELECT pageno FROM dbstat WHERE name LIKE ? AND pagetype IN"
                             " ('leaf', 'overflow') ORDER BY pagetype='overflow', pageno",
                             (name,)).fetchall()
            if rows:
                found[name] = int(rows[0][0])
        return found
    finally:
        c.close()


def _damage(src: Path, dst: Path, page: int, seed: int) -> bytes:
    data = bytearray(src.read_bytes())
    rng = random.Random(seed)
    data[(page - 1) * 4096:page * 4096] = bytes(rng.randrange(256) for _ in range(4096))
    dst.write_bytes(bytes(data))
    return bytes(data)


def _says_damaged(p: subprocess.CompletedProcess[str]) -> None:
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 1, (p.args, p.returncode, p.stderr)
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert "is damaged" in lines[0] and "memlens doctor" in lines[0], lines[0]
    assert p.stdout == "", p.stdout  # no partial answer before the line


def test_the_fixture_pages_exist(intact: tuple[Path, Path, dict[str, str]]) -> None:
    assert set(_pages(intact[0])) == set(TABLES)


# The default run damages the tables every command reads (documents, the word index, the
# vectors); the others run with --run-slow (each case is 6 CLI runs).
DEFAULT = ("memory_documents", "knowledge_nodes_fts_data", "vec_%_vector_chunks00")


@pytest.mark.parametrize("table", [t if t in DEFAULT else pytest.param(t, marks=pytest.mark.slow)
                                   for t in TABLES])
def test_a_damaged_page_is_one_line_or_a_full_answer(
        intact: tuple[Path, Path, dict[str, str]], table: str, tmp_path: Path) -> None:
    db, corpus, want = intact
    page = _pages(db)[table]
    failed = []
    for name, args in COMMANDS.items():
        copy = tmp_path / f"{name}.db"
        _damage(db, copy, page, seed=page)
        p = run_cli(*args, "--db", str(copy), env=ENV)
        if p.returncode == 0:  # it read no damaged page: the whole, same answer
            assert p.stdout == want[name] and p.stderr == "", (table, name, p.stderr)
        else:
            _says_damaged(p)
            failed.append(name)
    # a writing run checks first: nothing is written to a damaged database
    copy = tmp_path / "ingest.db"
    before = _damage(db, copy, page, seed=page)
    p = run_cli("ingest", str(corpus), "--db", str(copy), env=ENV)
    _says_damaged(p)  # found by the quick_check at start, or by the first read of it
    assert copy.read_bytes() == before
    assert not Path(f"{copy}-wal").exists() or os.path.getsize(f"{copy}-wal") == 0
    if table in ("memory_documents", "knowledge_nodes", "vec_%_vector_chunks00"):
        assert failed, f"no command read the damaged {table} page"
