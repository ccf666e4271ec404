"""Redaction scored on an external labelled set (gitleaks rule samples), per context.

``tests/data/secrets/external.jsonl`` is built by ``tools/build_secret_set.py``
from the ``tps``/``fps`` samples of the gitleaks rules (MIT, see
``LICENSE-gitleaks``). The floors below are the figures measured when the set
was added (docs/reliability.md, "Redaction"); they guard against regressions.
Issue 16's targets (keyed >= 0.95 and prose >= 0.90 per family, fps >= 0.90)
are not all met yet: see the docs for the gap.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from memlens.core.redact import load_labelled, redact

EXTERNAL = Path(__file__).resolve().parent / "data" / "secrets" / "external.jsonl"

# context -> minimum share handled (secrets removed; fps left unchanged)
FLOORS = {"keyed": 0.95, "prose": 0.50, "backticks": 0.50, "fp": 0.75}


def test_external_set_per_context_floors() -> None:
    examples = load_labelled(EXTERNAL)
    assert len(examples) >= 400
    total: Counter[str] = Counter()
    ok: Counter[str] = Counter()
    for ex in examples:
        ctx = ex.format.split("/")[1]
        out = redact(ex.text).text
        total[ctx] += 1
        if ex.label == "lookalike":
            ok[ctx] += out == ex.text
        else:
            assert ex.secret
            ok[ctx] += ex.secret not in out and "[REDACTED:" in out
    scores = {ctx: ok[ctx] / total[ctx] for ctx in total}
    assert set(scores) == set(FLOORS)
    assert all(scores[c] >= FLOORS[c] for c in FLOORS), scores
