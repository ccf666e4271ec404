"""An interrupted `memlens rechunk` converges: kill it at random moments, run it again,
and the database equals a fresh ingest + rechunk of the same files."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from memlens.core.store import db as dbm
from tests import reliability_helpers as H
from tests.conftest import REPO, run_cli

ENV = {"MEMLENS_EMBEDDER": "hashing", "PYTHONPATH": str(REPO / "src")}
FINAL = ("--strategy", "windows", "--max-tokens", "60", "--overlap", "12")


def _tree(base: Path) -> Path:
    mem = base / "projects" / "-home-dev-proj" / "memory"
    mem.mkdir(parents=True)
    rng = random.Random(7)
    for i in range(30):
        body = "\n\n".join(" ".join(rng.choice(["deploy", "cache", "key", "rollback", "queue",
                                                "retry", "index", "shard", "token"])
                                    for _ in range(40)) for _ in range(6))
        (mem / f"topic{i:02}.md").write_text(f"# Topic {i}\n\n{body}\n## Notes\n\n{body}\n")
    return base / "projects"


def _dump(db: Path) -> dict[str, object]:
    conn = dbm.connect(db)
    try:
        return H.current_dump(conn)
    finally:
        conn.close()


def test_killed_rechunk_converges(tmp_path: Path) -> None:
    projects = _tree(tmp_path)
    fresh = tmp_path / "fresh.db"
    assert run_cli("ingest", str(projects), "--db", str(fresh), env=ENV).returncode == 0
    assert run_cli("rechunk", "--all", *FINAL, "--db", str(fresh), env=ENV).returncode == 0
    want = _dump(fresh)
    rng = random.Random(11)
    for trial in range(4):
        db = tmp_path / f"t{trial}.db"
        assert run_cli("ingest", str(projects), "--db", str(db), env=ENV).returncode == 0
        child = subprocess.Popen(
            [sys.executable, "-m", "memlens.cli.main", "rechunk", "--all", *FINAL, "--db",
             str(db)], env={**__import__("os").environ, **ENV}, cwd=REPO,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.5, 2.5))
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        again = run_cli("rechunk", "--all", *FINAL, "--db", str(db), env=ENV)
        assert again.returncode == 0, again.stderr
        svc = H.make_svc(db)
        try:
            assert H.problems_of(svc) == []
        finally:
            svc.close()
        assert _dump(db) == want, f"trial {trial} did not converge"
