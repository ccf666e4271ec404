"""The ``python -m memlens.core.redact.engine`` command line (moved out of test_redact.py)."""

from __future__ import annotations

import random
import string
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LABELLED = REPO / "tests" / "data" / "secrets" / "labelled.jsonl"
_rng = random.Random(4321)


def r(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def test_evaluate_cli() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "memlens.core.redact", "--evaluate", str(LABELLED)],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "recall:      1.000" in proc.stdout


def test_redact_cli_stdin() -> None:
    token = "npm_" + r(36)
    proc = subprocess.run(
        [sys.executable, "-m", "memlens.core.redact"],
        input=f"npm token {token}\n", capture_output=True, text=True, cwd=REPO, timeout=60,
    )
    assert proc.returncode == 0
    assert proc.stdout == "npm token [REDACTED:npm-token]\n"
    assert "npm-token=1" in proc.stderr
