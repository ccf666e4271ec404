"""End-to-end search behaviour through the real CLI and a real SQLite file: honest
"no match", the current project first, fusion settings, and an embedder that is down."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memlens.core.ingest.sources import claude_slug
from tests.conftest import run_cli

HASHING = {"MEMLENS_EMBEDDER": "hashing"}


def _json(proc: Any) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def _project(projects: Path, project_path: Path, files: dict[str, str]) -> str:
    """A Claude project folder for ``project_path``; returns its slug (the repository)."""
    slug = claude_slug(project_path)
    mem = projects / slug / "memory"
    mem.mkdir(parents=True)
    for name, text in files.items():
        (mem / name).write_text(text, encoding="utf-8")
    return slug


@pytest.fixture
def two_projects(tmp_path: Path) -> dict[str, Any]:
    """Project `alpha` says "deploy checklist" often, project `beta` once."""
    projects = tmp_path / "claude" / "projects"
    alpha_dir, beta_dir = tmp_path / "work" / "alpha", tmp_path / "work" / "beta_app"
    (beta_dir / "src" / "deep").mkdir(parents=True)
    alpha_dir.mkdir(parents=True)
    alpha = _project(projects, alpha_dir, {
        "deploy.md": "# Deploy checklist\n\nThe deploy checklist: deploy checklist items, "
                     "deploy checklist owners, deploy checklist dates.\n"})
    beta = _project(projects, beta_dir, {
        "notes.md": "# Notes\n\nWe keep a deploy checklist in the wiki.\n"})
    db = str(tmp_path / "m.db")
    _json(run_cli("ingest", str(projects), "--db", db, "--json", env=HASHING))
    return {"db": db, "alpha": alpha, "beta": beta, "beta_dir": beta_dir}


def test_claude_slug_matches_claude_code() -> None:
    assert claude_slug("/home/dev/my_app.v2") == "-home-dev-my-app-v2"
    assert claude_slug("/Users/a b/x--y") == "-Users-a-b-x--y"
    assert claude_slug("/tmp/Ünï") == "-tmp--n-"
    assert claude_slug("/tmp/a\U0001F600") == "-tmp-a--"


def test_current_project_ranks_first(two_projects: dict[str, Any]) -> None:
    db, alpha, beta = two_projects["db"], two_projects["alpha"], two_projects["beta"]
    args = ("search", "deploy checklist", "--db", db, "--json", "--mode", "lexical")
    anywhere = _json(run_cli(*args, env=HASHING))
    assert anywhere["hits"][0]["repository"] == alpha
    assert anywhere["preferred_repository"] is None
    # From a sub-folder of beta's project, beta's memory comes first.
    inside = _json(run_cli(*args, env=HASHING, cwd=two_projects["beta_dir"] / "src" / "deep"))
    assert inside["preferred_repository"] == beta
    assert [h["repository"] for h in inside["hits"]] == [beta, alpha]
    off = _json(run_cli(*args, "--all-projects", env=HASHING, cwd=two_projects["beta_dir"]))
    assert off["preferred_repository"] is None and off["hits"][0]["repository"] == alpha
    # The config switch does the same.
    cfg = Path(db).with_name("c.toml")
    cfg.write_text("[search]\nprefer_current_project = false\n", encoding="utf-8")
    by_cfg = _json(run_cli(*args, "--config", str(cfg), env=HASHING, cwd=two_projects["beta_dir"]))
    assert by_cfg["hits"][0]["repository"] == alpha


def test_nonsense_query_presents_no_matches(two_projects: dict[str, Any]) -> None:
    db = two_projects["db"]
    res = _json(run_cli("search", "zebraquokka4711", "--db", db, "--json", env=HASHING))
    assert res["matches"] == 0
    assert all(h["match"] == "closest" and h["lexical_match"] is False for h in res["hits"])
    text = run_cli("search", "zebraquokka4711", "--db", db, env=HASHING)
    assert text.returncode == 0
    lines = text.stdout.splitlines()
    assert lines[0] == "no matches"
    if len(lines) > 1:
        assert lines[1].startswith("--- closest by meaning")
    real = _json(run_cli("search", "deploy checklist", "--db", db, "--json", env=HASHING))
    assert real["matches"] == len(real["hits"]) > 0


def test_fusion_flag_and_config(two_projects: dict[str, Any], tmp_path: Path) -> None:
    db = two_projects["db"]
    for fusion in ("adaptive", "convex", "minmax", "zscore", "rrf"):
        res = _json(run_cli("search", "deploy checklist", "--db", db, "--json",
                            "--fusion", fusion, env=HASHING))
        assert res["hits"], fusion
        assert res["fusion"]["method"] == fusion
        assert ("lexical_share" in res["fusion"]) == (fusion == "adaptive")
    # an integer where a float is expected is range-checked too (it once skipped the checks)
    for line in ("adapt_top = 0", "adapt_knee = -1", 'adapt_power = "x"', "lexical_weight = -1"):
        cfg = tmp_path / "adapt.toml"
        cfg.write_text(f"[search]\n{line}\n", encoding="utf-8")
        proc = run_cli("search", "x", "--db", db, "--config", str(cfg), env=HASHING)
        err = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert proc.returncode == 2 and len(err) == 1 and "search." + line.split()[0] in err[0], proc.stderr
    bad = run_cli("search", "x", "--db", db, "--fusion", "bogus", env=HASHING)
    assert bad.returncode == 2 and "'bogus' is not one of" in bad.stderr
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[search]\nfusion = \"bogus\"\n", encoding="utf-8")
    proc = run_cli("search", "x", "--db", db, "--config", str(cfg), env=HASHING)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    err = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(err) == 1 and f"{cfg}:2" in err[0] and "search.fusion" in err[0]


# -- an embedder that goes down --------------------------------------------------------

DIM = 16


def _vec(text: str) -> list[float]:
    h = hashlib.sha256(text.encode()).digest()
    return [(b - 127.5) / 127.5 for b in h[:DIM]]


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"index": i, "embedding": _vec(t)} for i, t in enumerate(inputs)]
        raw = json.dumps({"data": data, "model": body.get("model")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def embedding_server() -> Iterator[ThreadingHTTPServer]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def test_embedder_down_hybrid_answers_lexically(tmp_path: Path,
                                                embedding_server: ThreadingHTTPServer) -> None:
    port = embedding_server.server_address[1]
    env = {"MEMLENS_EMBEDDER": "openai", "MEMLENS_OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
           "MEMLENS_OPENAI_MODEL": "fake", "MEMLENS_OPENAI_API_KEY": ""}
    projects = tmp_path / "projects"
    _project(projects, tmp_path / "p", {"a.md": "# Pool\n\nThe connection pool size is 12.\n"})
    db = str(tmp_path / "m.db")
    ing = _json(run_cli("ingest", str(projects), "--db", db, "--json", env=env))
    assert ing["projection"]["ready"] == 1
    up = _json(run_cli("search", "connection pool", "--db", db, "--json", env=env))
    assert up["hits"] and not any("embedder unavailable" in n for n in up["notes"])
    embedding_server.shutdown()
    embedding_server.server_close()
    with socket.socket() as s:  # the port now refuses connections
        assert s.connect_ex(("127.0.0.1", port)) != 0
    down = run_cli("search", "connection pool", "--db", db, "--json", env=env, timeout=120)
    res = _json(down)
    assert res["hits"] and res["hits"][0]["path"] == "a.md" and res["hits"][0]["lexical_match"]
    assert any("embedder unavailable" in n for n in res["notes"])
    text = run_cli("search", "connection pool", "--db", db, env=env, timeout=120)
    assert text.returncode == 0 and "a.md" in text.stdout
    assert "embedder unavailable" in text.stderr and "Traceback" not in text.stderr
