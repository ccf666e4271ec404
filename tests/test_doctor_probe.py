"""Issue 42: `memlens doctor --probe`, the end-to-end synthetic probe, through the real
CLI: it passes on a fresh database and on the bundled corpus (with the default embedder
too), leaves no row of its own in the real database, and fails with a named line when
the embedder is dead or the database read-only."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CORPUS, REPO, run_cli

HASHING = {"MEMLENS_EMBEDDER": "hashing"}
STEPS = ["database", "embedder", "write", "ingest", "search_lexical", "search_vector", "edit",
         "delete"]


def _probe(db: Path, env: dict[str, str], *args: str) -> tuple[int, Any, str]:
    j = run_cli("doctor", "--probe", "--db", str(db), "--json", *args, env=env)
    t = run_cli("doctor", "--probe", "--db", str(db), *args, env=env)
    assert "Traceback" not in j.stderr + t.stderr, j.stderr + t.stderr
    assert j.returncode == t.returncode
    return j.returncode, json.loads(j.stdout), t.stdout


def _state(db: Path, env: dict[str, str]) -> tuple[str, str]:
    docs = run_cli("docs", "--db", str(db), "--json", "--all", env=env)
    found = run_cli("search", "zqxprobeheliotrope", "--mode", "lexical", "--db", str(db),
                    "--json", env=env)
    assert docs.returncode == 0 and found.returncode == 0
    return docs.stdout, json.dumps(json.loads(found.stdout)["hits"])


def _passes(db: Path, env: dict[str, str]) -> None:
    before = _state(db, env)
    code, data, text = _probe(db, env)
    assert code == 0, text
    assert data["ok"] and data["problems"] == [] and data["checks"] == ["probe"]
    assert [s["name"] for s in data["probe"]["steps"]] == STEPS
    assert all(s["ok"] and s["ms"] >= 0 for s in data["probe"]["steps"])
    assert text.splitlines()[-1].startswith("probe ok in ")
    for step in STEPS:
        assert f"  {step}" in text
    after = _state(db, env)
    assert after[0] == before[0]  # the listing (deleted included) is unchanged
    assert after[1] == "[]"  # the probe's words are not in this database


def test_probe_passes_on_a_fresh_database(tmp_path: Path) -> None:
    mem = tmp_path / "proj" / "memory"
    mem.mkdir(parents=True)
    (mem / "a.md").write_text("# A\n\nfirst note\n", encoding="utf-8")
    db = tmp_path / "m.db"
    assert run_cli("ingest", str(mem), "--db", str(db), env=HASHING).returncode == 0
    _passes(db, HASHING)


@pytest.mark.parametrize("embedder", ["hashing", "default"])
def test_probe_passes_on_the_bundled_corpus(tmp_path: Path, embedder: str) -> None:
    env = HASHING if embedder == "hashing" else {}
    db = tmp_path / "m.db"
    assert run_cli("ingest", str(CORPUS), "--db", str(db), env=env).returncode == 0
    _passes(db, env)


def test_probe_names_a_dead_embedder(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    assert run_cli("ingest", str(CORPUS), "--db", str(db), env=HASHING).returncode == 0
    cfg = tmp_path / "dead.toml"
    cfg.write_text('[embedder]\nname = "model2vec"\npath = "/nonexistent/model"\n',
                   encoding="utf-8")
    code, data, text = _probe(db, {}, "--config", str(cfg))
    assert code == 1 and not data["ok"]
    assert [p["check"] for p in data["problems"]] == ["probe.embedder"], data["problems"]
    assert "model folder not found" in data["problems"][0]["message"]
    assert "[embedder]" in data["problems"][0]["fix"]
    assert "PROBLEM [probe.embedder] EmbedderUnavailable" in text
    assert text.splitlines()[-1] == "1 problem(s)"


def test_probe_names_a_read_only_database(tmp_path: Path) -> None:
    from tests.test_faults_cli import _unprivileged

    prefix = _unprivileged()  # root ignores file modes: drop the capability (or skip)
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "m.db"
    assert run_cli("ingest", str(CORPUS), "--db", str(db), env=HASHING).returncode == 0
    snapshot = db.read_bytes()
    db.chmod(0o444)
    folder.chmod(0o555)
    try:
        import os

        env = {**os.environ, **HASHING}
        p = subprocess.run([*prefix, sys.executable, "-m", "memlens.launch", "doctor", "--probe",
                            "--db", str(db), "--json"], capture_output=True, text=True,
                           env=env, cwd=REPO, timeout=300)
    finally:
        folder.chmod(0o700)
        db.chmod(0o600)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    data = json.loads(p.stdout)
    assert [x["check"] for x in data["problems"]] == ["probe.database"], data
    assert "read-only" in data["problems"][0]["message"]
    assert "writable" in data["problems"][0]["fix"]
    # the rest of the probe ran in its own temporary database and passed
    assert all(s["ok"] for s in data["probe"]["steps"] if s["name"] != "database")
    assert db.read_bytes() == snapshot
    shutil.rmtree(folder)
