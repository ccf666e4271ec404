"""Finished searches are kept (redacted, bounded) for recall and rechunk previews."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memlens.core import search_history
from tests.conftest import run_cli

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_record_recent_prune_and_redact(make_service: Any) -> None:
    svc = make_service()
    conn, now = svc.conn(), svc.clock
    assert search_history.record(conn, "cache key", "hybrid", "cli", now(), keep=3)
    assert not search_history.record(conn, "cache key", "hybrid", "cli", now(), keep=3)  # repeat
    assert not search_history.record(conn, "   ", "hybrid", "cli", now(), keep=3)
    for q in ("alpha", "beta", "gamma"):
        search_history.record(conn, q, "lexical", "tui", now(), keep=3)
    assert search_history.recent(conn) == ["gamma", "beta", "alpha"]  # bounded to 3
    search_history.record(conn, f"token {TOKEN}", "hybrid", "cli", now(), keep=3)
    newest = search_history.recent(conn, 1)[0]
    assert TOKEN not in newest and "[REDACTED:" in newest
    assert not search_history.record(conn, "off", "hybrid", "cli", now(), keep=0)
    assert search_history.forget_all(conn) == 3 and search_history.recent(conn) == []


def test_service_respects_the_setting(make_service: Any) -> None:
    svc = make_service(**{"search.history": 0})
    assert not svc.remember_search("x y", "hybrid", "cli")
    assert svc.recent_searches() == []


def test_cli_search_is_kept(tmp_path: Path, tree: Any) -> None:
    env = {"MEMLENS_EMBEDDER": "hashing"}
    tree.write("a.md", "# Pool\n\nThe connection pool size is 12.\n")
    db = str(tmp_path / "m.db")
    assert run_cli("ingest", str(tree.projects), "--db", db, env=env).returncode == 0
    for q in ("connection pool", "pool size"):
        assert run_cli("search", q, "--db", db, "--mode", "lexical", env=env).returncode == 0
    from memlens.core.config import load_settings
    from memlens.core.service import MemoryService

    svc = MemoryService(load_settings(tmp_path / "none.toml", env={}, overrides={"db": db}))
    try:
        assert svc.recent_searches()[:2] == ["pool size", "connection pool"]
    finally:
        svc.close()
