"""Token families added for issue 16, in keyed, prose and backtick/table contexts.

Secrets are built at run time from random characters, so this file holds no
format-valid token that a scanner would flag.
"""

from __future__ import annotations

import os
import random
import string

import pytest

from memlens.core.redact.engine import KINDS, redact

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
    for mod in ("memlens.core.redact", "memlens.core.redact.evaluate"):
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


# --------------------------------------------------------------------------
# Shapes added while tuning on the gitleaks set (tests/test_redact_external.py)
# --------------------------------------------------------------------------

_AZ = string.ascii_letters + string.digits + "_~.-"

SHAPED: list[tuple[str, str]] = [
    ("azure-client-secret", _r(3) + "8Q~" + _r(34, _AZ.replace(".", ""))),
    ("vault-token", "s." + "aB3" + _r(21)),
    ("intra42-secret", "s-s4t2ud-" + _r(64, _HEX)),
    ("octopus-key", "API-" + "Z9" + _r(24, string.ascii_uppercase + string.digits)),
    ("random-token", "Qx7" + _r(24) + "k2P"),  # 30 characters, no known prefix
]


@pytest.mark.parametrize("kind,secret", SHAPED, ids=[k for k, _ in SHAPED])
@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_shaped_token_redacted_in_every_context(kind: str, secret: str, context: str) -> None:
    assert kind in KINDS
    out = redact(CONTEXTS[context].format(s=secret)).text
    assert secret not in out
    if context != "keyed":
        assert f"[REDACTED:{kind}]" in out, out


def test_azure_client_secret_at_end_of_sentence() -> None:
    secret = "abc8Q~" + _r(33)
    out = redact(f"The client secret is {secret}.").text
    assert out == "The client secret is [REDACTED:azure-client-secret]."


@pytest.mark.parametrize(
    "text",
    [
        "handleOAuth2CallbackForUser",  # identifier, not a token
        "getUserById2FactorAuthV3 was renamed",
        "pk_live_a1B2c3D4e5F6g7H8",  # a1B2c3D4... reads abcdefgh / 12345678
        "the id is AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "curl -i -u 'test:test' https://example.org",
        "curl -u <user:password> https://example.org",
        'API_KEY="glc_' + "1" * 43 + '="',
        "s.ThisIsNotAVaultTokenAtAll",  # no digit
        "API-ENDPOINTSFORTHEWEBSERVICE",  # no digit
    ],
)
def test_fakes_and_identifiers_kept(text: str) -> None:
    assert redact(text).text == text


# --------------------------------------------------------------------------
# Unicode normalisation: zero-width characters and ASCII look-alikes
# --------------------------------------------------------------------------

_GH = "ghp_" + _r(36)


@pytest.mark.parametrize("zw", ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"])
def test_zero_width_inside_token(zw: str) -> None:
    token = _GH[:10] + zw + _GH[10:20] + zw + zw + _GH[20:]
    text = f"see {token} here {zw}"
    result = redact(text)
    assert result.text == f"see [REDACTED:github-token] here {zw}"
    (f,) = result.findings
    assert text[f.start : f.end] == token
    assert redact(result.text).text == result.text


def test_zero_width_between_key_and_value() -> None:
    text = "password\u200b = hunter2!x"
    assert redact(text).text == "password\u200b = [REDACTED:password]"


def test_cyrillic_and_fullwidth_lookalikes() -> None:
    cyr = "gh\u0440_" + _GH[4:]  # Cyrillic er for "p"
    full = "".join(chr(ord(c) + 0xFEE0) for c in _GH[:4]) + _GH[4:]  # fullwidth "ghp_"
    text = f"a {cyr} b {full} c"
    result = redact(text)
    assert result.text == "a [REDACTED:github-token] b [REDACTED:github-token] c"
    assert [text[f.start : f.end] for f in result.findings] == [cyr, full]


def test_cyrillic_prose_untouched() -> None:
    text = "Пароль хранится в хранилище, токен обновляется каждый час. Ѕо і ј."
    assert redact(text).text == text


@pytest.mark.parametrize(
    "text",
    ["1Q~" * 300_000, "s." * 400_000, "API-" * 200_000, "\u200b" * 500_000 + "x",
     ("a\u200b" * 200_000), "а" * 800_000],
)
def test_new_scanners_stay_linear(text: str) -> None:
    import time

    t0 = time.perf_counter()
    redact(text)
    if os.environ.get("MEMLENS_RUN_SLOW"):  # wall-clock bounds only in the slow run
        assert time.perf_counter() - t0 < 10


def test_zero_width_between_two_tokens_keeps_both_redacted() -> None:
    a, b = "ghp_" + _r(36), "ghp_" + _r(36)
    text = f"{a}\u200b{b}"
    out = redact(text).text
    assert a not in out and b not in out


def test_normalisation_never_loses_a_finding() -> None:
    # "р" (Cyrillic) followed by an ASCII token: the token is found either way.
    text = "р" + _GH + " \u200b"
    assert _GH not in redact(text).text


# curl credentials as gitleaks' curl rules capture them (issue 16 relabelling):
# the password of ``-u``/``--user`` in every quoting, and ``-H`` header values.
_PW = _r(6) + "!" + _r(5, string.digits) + _r(4)
_TOK = _r(24)


@pytest.mark.parametrize(
    "command,secret",
    [
        (f'curl -u ":{_PW}" https://localhost:9200', _PW),
        (f'curl -u "{_PW}:" https://localhost:9200', _PW),
        (f"curl --user kevin:'{_PW}' -iX PATCH", _PW),
        (f'curl --user "{{{_r(8, _HEX)}}}":"{{{_PW}}}" --header "Accept: x"', _PW),
        (f"see `curl -s --user 'api:{_PW}'` in the runbook", _PW),
        (f'curl -H "Authorization: Api-Token {_TOK}" https://x', _TOK),
        (f'curl -L -H "Authorization: {_TOK}"', _TOK),
        (f'curl -X POST --header "Api-Token: {_TOK[:11]}"', _TOK[:11]),
        (f'curl -H "X-Octopus-ApiKey: {_TOK}"', _TOK),
    ],
)
def test_curl_credentials_redacted(command: str, secret: str) -> None:
    out = redact(command).text
    assert secret not in out and "[REDACTED:" in out


@pytest.mark.parametrize(
    "command",
    [
        'curl -u "${username}":"${password}"',
        'curl -u "{{ $.Values.username }}:{{ $.Values.password }}"',
        'curl -u ":" https://localhost:9200',
        'curl -u "myusername:" https://localhost:9200',
        'curl --user "{password}" -X GET',
        'curl -H "Authorization: Bearer $API_KEY"',
        'curl -H "Authorization: Token **********"',
        'curl -H "Token: aaaaaaaaaaaa"',
        "run it with -h 'token: see the docs'",
    ],
)
def test_curl_placeholders_kept(command: str) -> None:
    assert redact(command).text == command


def test_sidekiq_credential_pair_keyed() -> None:
    pair = f"{_r(8, _HEX)}:{_r(8, _HEX)}"
    assert pair not in redact(f'api_key = "{pair}"').text
    assert redact('api_key = "not:hexpairs"').text == 'api_key = "not:hexpairs"'
