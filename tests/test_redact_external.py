"""Redaction scored on two external labelled sets, per family and context.

``tests/data/secrets/external.jsonl`` (the TUNING set) is built by
``tools/build_secret_set.py`` from the ``tps``/``fps`` samples of the gitleaks
rules (MIT, see ``LICENSE-gitleaks``); the rules of `memlens.core.redact.engine` were
improved by looking at its failures.
``tests/data/secrets/external_detect_secrets.jsonl`` (the HELD-OUT set) is built
by ``tools/build_secret_set_ds.py`` from detect-secrets' plugin tests
(Apache-2.0, see ``LICENSE-detect-secrets``); no rule was tuned on it, it is
only reported.

Issue 16's targets: recall >= 0.95 keyed and >= 0.90 in prose (and in
backticks/table cells) for every family of the tuning set, look-alike precision
>= 0.90 on its ``fps``. Families still below target are gated at their measured
value in ``BELOW_TARGET`` (docs/reliability.md, "Redaction", says why); every
other family must meet the target. The held-out set is gated overall at the
measured figures, as a regression guard.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memlens.core.redact.evaluate import GroupScore, evaluate, load_labelled, score_groups

DATA = Path(__file__).resolve().parent / "data" / "secrets"
TUNING = DATA / "external.jsonl"
HELD_OUT = DATA / "external_detect_secrets.jsonl"

TARGET = {"keyed": 0.95, "prose": 0.90, "backticks": 0.90}

# (family, context) -> measured share, for the tuning-set families below TARGET.
# Empty since the Bedrock rule (the aws family's one sample is an EXAMPLE-filled
# Bedrock key; its vendor prefix is evidence enough, so it is redacted).
BELOW_TARGET: dict[tuple[str, str], float] = {}
# Labels are what gitleaks' rule regex captures (tools/build_secret_set.py);
# curl's one keyed miss is an 11-character header value (``Api-Token: ...``),
# under the keyed floor's length limit: 28/29 meets the keyed target.

# context -> measured share on the whole tuning set (secrets removed; fps kept)
TUNING_FLOORS = {"keyed": 88 / 89, "prose": 89 / 89, "backticks": 89 / 89, "fp": 270 / 291}
# Look-alike precision target on the gitleaks fps (issue 16), reached.
FP_TARGET = 0.90

# Held-out set, measured once after tuning on the gitleaks set only.
# Re-measured after the issue-16 changes (tuned on the gitleaks set only): +1 prose,
# +1 backticks; the look-alikes altered are unchanged (29). After the vendor rules built from
# the gitleaks regexes (redact_rules_vendors, not tuned on this set): prose and backticks 34/57.
HELD_OUT_FLOORS = {"keyed": 52 / 57, "prose": 34 / 57, "backticks": 34 / 57, "fp": 61 / 90}
HELD_OUT_RECALL = 116 / 171
HELD_OUT_PRECISION = 116 / (116 + 29)  # 29 look-alikes altered


@pytest.fixture(scope="module")
def tuning_groups() -> dict[tuple[str, ...], GroupScore]:
    examples = load_labelled(TUNING)
    assert len(examples) >= 400
    return score_groups(examples)


def _per_context(groups: dict[tuple[str, ...], GroupScore]) -> dict[str, float]:
    handled: dict[str, int] = {}
    total: dict[str, int] = {}
    for (_, ctx), score in groups.items():
        handled[ctx] = handled.get(ctx, 0) + score.handled
        total[ctx] = total.get(ctx, 0) + score.total
    return {ctx: handled[ctx] / total[ctx] for ctx in total}


def test_tuning_set_per_context_floors(tuning_groups: dict[tuple[str, ...], GroupScore]) -> None:
    scores = _per_context(tuning_groups)
    assert set(scores) == set(TUNING_FLOORS)
    low = {c: round(scores[c], 3) for c in TUNING_FLOORS if scores[c] < TUNING_FLOORS[c] - 1e-9}
    assert not low, (low, scores)


def test_tuning_set_fp_precision_meets_target(
    tuning_groups: dict[tuple[str, ...], GroupScore],
) -> None:
    kept = sum(g.handled for (_, ctx), g in tuning_groups.items() if ctx == "fp")
    total = sum(g.total for (_, ctx), g in tuning_groups.items() if ctx == "fp")
    assert kept / total >= FP_TARGET, (kept, total)


def test_tuning_set_every_family_and_context(
    tuning_groups: dict[tuple[str, ...], GroupScore],
) -> None:
    failures = []
    for (family, ctx), score in tuning_groups.items():
        if ctx == "fp":
            continue
        floor = BELOW_TARGET.get((family, ctx), TARGET[ctx])
        if score.share < floor - 1e-9:
            failures.append(f"{family}/{ctx}: {score.handled}/{score.total} < {floor:.3f}")
    assert not failures, failures


def test_below_target_list_is_current(tuning_groups: dict[tuple[str, ...], GroupScore]) -> None:
    """A family that reaches its target must leave BELOW_TARGET (and the docs)."""
    for (family, ctx), measured in BELOW_TARGET.items():
        score = tuning_groups[(family, ctx)]
        assert score.share < TARGET[ctx], f"{family}/{ctx} now meets its target: update the list"
        assert score.share >= measured - 1e-9


def test_held_out_set_overall_and_per_context() -> None:
    examples = load_labelled(HELD_OUT)
    assert len(examples) >= 250
    result = evaluate(examples)
    assert result.recall >= HELD_OUT_RECALL - 1e-9, result.summary()
    assert result.precision >= HELD_OUT_PRECISION - 1e-9, result.summary()
    scores = _per_context(score_groups(examples))
    assert set(scores) == set(HELD_OUT_FLOORS)
    low = {c: round(scores[c], 3) for c in HELD_OUT_FLOORS if scores[c] < HELD_OUT_FLOORS[c] - 1e-9}
    assert not low, (low, scores)


def test_score_groups_rejects_unknown_field() -> None:
    with pytest.raises(ValueError):
        score_groups([], by=("colour",))


@pytest.mark.parametrize(
    "path,source,licence",
    [
        (TUNING, "gitleaks/gitleaks@b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b", "LICENSE-gitleaks"),
        (
            HELD_OUT,
            "Yelp/detect-secrets@5e141933554a0b74e7341841f318be21e895339c",
            "LICENSE-detect-secrets",
        ),
    ],
)
def test_sets_record_provenance_and_licence(path: Path, source: str, licence: str) -> None:
    import json

    header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert header == {"source": source, "comment": True}
    assert (DATA / licence).read_text(encoding="utf-8").strip()


def test_cli_breakdown_by_context() -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "memlens.core.redact.evaluate", "--evaluate", str(HELD_OUT),
         "--by", "context"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert [line.split()[0] for line in proc.stdout.splitlines()] == [
        "backticks", "fp", "keyed", "prose"
    ]


def _builder() -> object:
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "tools" / "build_secret_set.py"
    spec = importlib.util.spec_from_file_location("build_secret_set", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_builder_translates_go_flags_and_labels_the_capture() -> None:
    """Labels are what the gitleaks rule captures (Go RE2 mid-pattern flags translated)."""
    b: Any = _builder()
    assert b.go_to_py(r"\b(p8e-(?i)[a-z0-9]{4}|x)\z") == r"\b(p8e-(?i:[a-z0-9]{4})|(?i:x))\Z"
    assert b.go_to_py(r"a(?:b(?i)c|d)e") == r"a(?:b(?i:c)|(?i:d))e"
    rule = {"regex": r"\bcurl\b.*[ \t](?:-u|--user)[ \t]+('([^:']{3,}:[^']{3,})'|(\w+:\w+))(?:\s|\z)"}
    assert b.label(rule, "curl -s --user 'api:s3cr3tpw' https://x") == (
        "api:s3cr3tpw", "curl -s --user 'api:s3cr3tpw'"
    )
    assert b.label({"regex": r"\b(tok_[a-z]{4})\b"}, "x tok_abcd y") == ("tok_abcd", "tok_abcd")
    assert b.label({"regex": r"nomatch"}, "x") == "rule regex does not match in Python re"
