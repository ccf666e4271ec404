"""Token families added for issue 16, in keyed, prose and backtick/table contexts.

Secrets are built at run time from random characters, so this file holds no
format-valid token that a scanner would flag.
"""

from __future__ import annotations

import random
import string

import pytest

from memlens.core.redact import KINDS, redact

_RNG = random.Random(16)
_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"


def _r(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


FAMILIES: list[tuple[str, str]] = [
    ("atlassian-token", "ATATT3" + _r(180) + "=" + _r(8, _HEX).upper()),
    ("onepassword-token", "ops_" + "eyJ" + _r(240)),
    ("grafana-token", "glsa_" + _r(32) + "_" + _r(8, _HEX)),
    ("grafana-token", "glc_" + _r(120)),
    ("notion-token", "ntn_" + _r(11, string.digits) + _r(35)),
    ("vault-token", "hvs." + _r(90)),
    ("docker-token", "dckr_pat_" + _r(27)),
    ("huggingface-token", "api_org_" + _r(34)),
    ("groq-key", "gsk_" + _r(52)),
    ("xai-key", "xai-" + _r(80)),
    ("supabase-token", "sbp_" + _r(40, _HEX)),
    ("pulumi-token", "pul-" + _r(40, _HEX)),
    ("doppler-token", "dp.pt." + _r(43)),
    ("heroku-key", "HRKU-AA" + _r(58)),
    ("postman-key", "PMAK-" + _r(24, _HEX) + "-" + _r(34, _HEX)),
    ("sentry-token", "sntrys_" + "eyJ" + _r(80)),
]

CONTEXTS = {
    "keyed": 'api_key = "{s}"',
    "prose": "I rotated it this morning, the new one is {s} and it works.",
    "backticks": "Use `{s}` for the staging deploy.",
    "table": "| service | credential |\n|---|---|\n| deploy | {s} |",
}


@pytest.mark.parametrize("kind,secret", FAMILIES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(FAMILIES)])
@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_family_redacted_in_every_context(kind: str, secret: str, context: str) -> None:
    assert kind in KINDS
    text = CONTEXTS[context].format(s=secret)
    out = redact(text).text
    assert secret not in out
    if context != "keyed":  # keyed may be named by the generic rule; elsewhere the family names it
        assert f"[REDACTED:{kind}]" in out, out


def test_cli_evaluate_still_reachable_through_redact(tmp_path: object) -> None:
    import subprocess
    import sys
    from pathlib import Path

    labelled = Path(__file__).resolve().parent / "data" / "secrets" / "labelled.jsonl"
    for mod in ("memlens.core.redact", "memlens.core.redact_eval"):
        proc = subprocess.run(
            [sys.executable, "-m", mod, "--evaluate", str(labelled)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert "recall:" in proc.stdout


def test_token_as_url_user_part() -> None:
    tok = _r(36)
    out = redact(f"git clone https://{tok}@github.com/acme/app.git").text
    assert tok not in out and "@github.com/acme/app.git" in out
    kept = "ssh://git@github.com/a/b and https://john.smith@host.org"
    assert redact(kept).text == kept
