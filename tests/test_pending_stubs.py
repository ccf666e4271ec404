"""Issue 42, "not yet" vs "no match": a search can name the documents in its scope that
are not searchable yet (stored but not indexed, indexing failed, vectors waiting or
failed), so an agent never takes "not indexed" for "not there". On by default in MCP
`search_memory`, opt-in (`--pending`) in `memlens search`. Real CLI, real SQLite files,
the MCP SDK's stdio client against the real server."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.test_mcp import Built, Recorder, run, session

pytest.importorskip("mcp")

ALPHA, BETA = "-home-dev-alpha", "-home-dev-beta"


def _write(root: Path, repo: str, name: str, text: str) -> None:
    mem = root / repo / "memory"
    mem.mkdir(parents=True, exist_ok=True)
    (mem / name).write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def late(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """alpha/a.md projected, then edited and stored unprojected (an older revision is
    searchable); beta/b.md stored unprojected (nothing of it is searchable)."""
    b = Built(tmp_path_factory.mktemp("pending"))
    b.cwd.mkdir()
    _write(b.corpus, ALPHA, "a.md", "# A\n\nThe heliotrope rollout.\n")
    _write(b.corpus, ALPHA, "done.md", "# Done\n\nNothing waits here.\n")
    assert run_cli("ingest", str(b.corpus), "--db", str(b.db), env=b.env).returncode == 0
    _write(b.corpus, ALPHA, "a.md", "# A\n\nThe heliotrope rollout.\n\nThe quokkaplasm too.\n")
    _write(b.corpus, BETA, "b.md", "# B\n\nThe quokkaplasm migration plan.\n")
    p = run_cli("ingest", str(b.corpus), "--db", str(b.db), "--defer-projection", env=b.env)
    assert p.returncode == 0, p.stderr
    return b


def _search(b: Built, *args: str) -> Any:
    p = run_cli("search", *args, "--db", str(b.db), env=b.env, cwd=b.cwd)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout) if "--json" in args else p.stdout


def _stubs(data: Any) -> list[tuple[str, str, str, str]]:
    return [(d["repository"], d["path"], d["status"], d["searchable"])
            for d in data["pending"]["documents"]]


def test_cli_pending_is_opt_in_and_scoped(late: Built) -> None:
    data = _search(late, "quokkaplasm", "--json")
    assert data["matches"] == 0 and "pending" not in data  # off by default
    data = _search(late, "quokkaplasm", "--pending", "--json")
    assert data["matches"] == 0  # not indexed yet: no hit, and the stubs say why
    assert data["pending"]["total"] == 2
    assert _stubs(data) == [(ALPHA, "a.md", "pending", "older_revision"),
                            (BETA, "b.md", "pending", "nothing")]
    only = _search(late, "quokkaplasm", "--pending", "--repository", BETA, "--json")
    assert _stubs(only) == [(BETA, "b.md", "pending", "nothing")]
    text = _search(late, "quokkaplasm", "--pending")
    assert "not searchable yet: 2 document(s) in scope" in text
    assert f"{BETA}/b.md — pending: not searchable yet" in text
    assert f"{ALPHA}/a.md — pending: an older revision is searchable" in text
    assert "not searchable yet" not in _search(late, "quokkaplasm")  # text: off by default
    # once projected, nothing is pending and the word is found
    assert run_cli("project", "--db", str(late.db), env=late.env).returncode == 0
    data = _search(late, "quokkaplasm", "--pending", "--json")
    assert data["pending"] == {"total": 0, "documents": []} and data["matches"] == 2


def test_mcp_search_names_what_is_not_searchable_yet(tmp_path: Path) -> None:
    b = Built(tmp_path)
    b.cwd.mkdir()
    _write(b.corpus, ALPHA, "a.md", "# A\n\nThe heliotrope rollout.\n")
    assert run_cli("ingest", str(b.corpus), "--db", str(b.db), env=b.env).returncode == 0
    _write(b.corpus, BETA, "b.md", "# B\n\nThe quokkaplasm migration plan.\n")
    p = run_cli("ingest", str(b.corpus), "--db", str(b.db), "--defer-projection", env=b.env)
    assert p.returncode == 0, p.stderr

    async def body() -> None:
        async with session(b) as s:
            r = Recorder(s)
            text, data = await r.ok("search_memory", {"query": "quokkaplasm", "mode": "lexical"})
            assert data["matches"] == 0 and not data["hits"]
            assert _stubs(data) == [(BETA, "b.md", "pending", "nothing")]
            assert "Not searchable yet in memory: 1 document(s)" in text
            assert f"{BETA}/b.md — pending: not searchable yet" in text
            _, data = await r.ok("search_memory", {"query": "quokkaplasm",
                                                   "include_pending": False})
            assert "pending" not in data
            _, data = await r.ok("search_memory", {"query": "heliotrope", "repository": ALPHA})
            assert data["pending"] == {"total": 0, "documents": []} and data["matches"] == 1

    run(body)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_mcp_stubs_for_vectors_that_failed(tmp_path: Path) -> None:
    """An embedder that refuses: the words are searchable, the vectors failed. A hybrid
    search (answered lexically) names them `vectors_failed`, searchable by words only; a
    lexical search, which needs no vector, names none."""
    b = Built(tmp_path)
    b.cwd.mkdir()
    cfg = tmp_path / "refused.toml"
    cfg.write_text("[embedder]\nname = \"openai\"\n"
                   f"base_url = \"http://127.0.0.1:{_closed_port()}/v1\"\nmodel = \"m\"\n"
                   "dim = 8\nmax_retries = 0\n", encoding="utf-8")
    b.env.pop("MEMLENS_EMBEDDER")
    b.env["MEMLENS_CONFIG"] = str(cfg)
    _write(b.corpus, ALPHA, "a.md", "# A\n\nThe heliotrope rollout.\n")
    p = run_cli("ingest", str(b.corpus), "--db", str(b.db), env=b.env)
    assert p.returncode == 1 and "vectors failed" in p.stderr, p.stderr

    async def body() -> None:
        async with session(b) as s:
            r = Recorder(s)
            text, data = await r.ok("search_memory", {"query": "heliotrope"})
            assert data["matches"] == 1 and data["notes"]  # answered by its words
            assert _stubs(data) == [(ALPHA, "a.md", "vectors_failed", "words_only")]
            assert "connection refused" in data["pending"]["documents"][0]["error"]
            assert "vectors failed: searchable by words only" in text
            _, data = await r.ok("search_memory", {"query": "heliotrope", "mode": "lexical"})
            assert data["pending"]["total"] == 0

    run(body)
