"""`memlens ingest` exits 1 when a document it stored could not be projected, like
`memlens project` does, and says which one and why — through the real CLI and a real
SQLite file. The embedder is a real HTTP client pointed at a port nothing listens on.

Since the two-stage projection (issue 37) such a document is searchable by its words at
once; what fails is its vectors, and that is what the one line per document says."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.conftest import run_cli


def _closed_port() -> int:
    """A local TCP port with no listener (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _setup(tmp_path: Path) -> tuple[Path, str, Path]:
    mem = tmp_path / "proj" / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text("# Memory\n\n- [deploy](deploy.md)\n", encoding="utf-8")
    (mem / "deploy.md").write_text("# Deploy\n\nRoll back with helm rollback.\n",
                                   encoding="utf-8")
    cfg = tmp_path / "refused.toml"
    cfg.write_text(
        "[embedder]\nname = \"openai\"\n"
        f"base_url = \"http://127.0.0.1:{_closed_port()}/v1\"\nmodel = \"m\"\ndim = 8\n"
        "max_retries = 0\n",
        encoding="utf-8")
    return mem, str(tmp_path / "m.db"), cfg


def test_unprojected_documents_make_ingest_exit_1(tmp_path: Path) -> None:
    mem, db, cfg = _setup(tmp_path)
    p = run_cli("ingest", str(mem), "--repository", "demo", "--db", db, "--config", str(cfg))
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "2 created" in p.stdout and "2 ready" in p.stdout.splitlines()[1]
    assert "2 failed" in p.stdout.splitlines()[2]  # the vectors line
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 2, p.stderr  # one line per document, no traceback
    assert all(line.startswith("memlens: demo/") and "searchable by its words" in line
               and "vectors failed" in line and "connection refused" in line
               for line in lines), p.stderr
    assert "Traceback" not in p.stderr
    words = run_cli("search", "rollback", "--mode", "lexical", "--db", db, "--json")
    assert [h["path"] for h in json.loads(words.stdout)["hits"]] == ["deploy.md"]

    # JSON names them; nothing stored is lost: a working embedder projects both.
    j = run_cli("ingest", str(mem), "--repository", "demo", "--db", db, "--config", str(cfg),
                "--json")
    assert j.returncode == 0, j.stderr  # unchanged files: nothing was projected this run
    fixed = run_cli("project", "--db", db, "--embedder", "hashing", "--force")
    assert fixed.returncode == 0, fixed.stderr
    hits = run_cli("search", "rollback", "--mode", "lexical", "--db", db, "--json")
    assert json.loads(hits.stdout)["hits"], hits.stdout


def test_json_lists_the_unprojected_documents(tmp_path: Path) -> None:
    mem, db, cfg = _setup(tmp_path)
    p = run_cli("ingest", str(mem), "--repository", "demo", "--db", db, "--config", str(cfg),
                "--json")
    assert p.returncode == 1, p.stderr
    data = json.loads(p.stdout)
    assert data["projection"]["ready"] == 2 and "projection_failed" not in data
    assert data["vectors"]["written"] == 0 and data["vectors"]["waiting"] == 2
    assert "connection refused" in data["vectors"]["error"]
    got = sorted((f["repository"], f["path"]) for f in data["vectors_failed"])
    assert got == [("demo", "MEMORY.md"), ("demo", "deploy.md")]
    assert all("connection refused" in f["error"] for f in data["vectors_failed"])


def test_a_working_embedder_keeps_exit_0(tmp_path: Path) -> None:
    """Control: the same ingest with an embedder that answers exits 0 without the field."""
    mem, db, _ = _setup(tmp_path)
    p = run_cli("ingest", str(mem), "--repository", "demo", "--db", db, "--embedder", "hashing",
                "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert "projection_failed" not in out and "vectors_failed" not in out
    assert out["vectors"]["waiting"] == 0 and out["vectors"]["error"] is None
