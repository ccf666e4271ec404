"""Finished searches are kept (redacted, bounded) for recall and rechunk previews."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlens.core.search import history as search_history
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
    from memlens.core.config.settings import load_settings
    from memlens.core.service import MemoryService

    svc = MemoryService(load_settings(tmp_path / "none.toml", env={}, overrides={"db": db}))
    try:
        assert svc.recent_searches()[:2] == ["pool size", "connection pool"]
    finally:
        svc.close()


def _texts_of_labelled_sets() -> list[str]:
    from memlens.core.redact.evaluate import load_labelled

    data = Path(__file__).resolve().parent / "data" / "secrets"
    out: list[str] = []
    for name in ("external.jsonl", "external_detect_secrets.jsonl", "labelled.jsonl"):
        for ex in load_labelled(data / name):
            out.append(ex.text)
            out.extend(ex.text.split())
            if ex.secret:
                out.append(ex.secret)
    return out


def test_plain_text_shortcut_never_skips_a_finding() -> None:
    """Text the history stores without loading the rules must be text they leave alone."""
    from memlens.core.redact.engine import redact
    from memlens.core.search.history import needs_redaction

    skipped = 0
    for text in _texts_of_labelled_sets():
        if not needs_redaction(text):
            skipped += 1
            assert redact(text).text == text, text
    assert skipped > 100  # the shortcut is exercised by real words of the sets
    for secretish in ("password is hunterxyz", "my token abc", "API KEY here", "Bearer abc",
                      "ghp_" + "a1" * 18, "user pass", "x" * 17, "a  b", " a", "zero\u200bwidth"):
        assert needs_redaction(secretish), secretish


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.from_regex(r"[A-Za-z0-9_]{1,16}(?: [A-Za-z0-9_]{1,16}){0,15}", fullmatch=True))
def test_plain_text_shortcut_property(text: str) -> None:
    from memlens.core.redact.engine import redact
    from memlens.core.search.history import needs_redaction

    if not needs_redaction(text):
        assert redact(text).text == text


def test_cli_search_with_plain_words_does_not_load_the_rules(tmp_path: Path, tree: Any) -> None:
    """`memlens search deploy rollback` stores its history without importing the rules;
    a query with a token still goes through them and is stored redacted."""
    import subprocess
    import sys

    tree.write("a.md", "# Deploy\n\nRoll back with care.\n")
    db = tmp_path / "m.db"
    assert run_cli("ingest", str(tree.projects), "--db", str(db)).returncode == 0
    code = ("import sys, runpy; sys.argv=['memlens','search','--mode','lexical','deploy rollback',"
            f"'--db',{str(db)!r}]\n"
            "try:\n    runpy.run_module('memlens.cli.main', run_name='__main__')\n"
            "except SystemExit: pass\n"
            "print('RULES', 'memlens.core.redact.rules' in sys.modules, file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "RULES False" in proc.stderr, proc.stderr
    assert run_cli("search", "--mode", "lexical", f"deploy {TOKEN}", "--db", str(db)).returncode == 0
    import apsw

    conn = apsw.Connection(str(db))
    stored = [r[0] for r in conn.execute("SELECT query FROM search_history ORDER BY id")]
    conn.close()
    assert stored[0] == "deploy rollback"
    assert TOKEN not in stored[-1] and "[REDACTED:" in stored[-1], stored
