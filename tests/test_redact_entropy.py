"""Issue 16: the entropy fallback for prose, and the rules fixed on gitleaks' fps.

Tokens are generated at run time (seeded), so this file holds no format-valid
secret a scanner would flag; the one published key is stored reversed.
"""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from memlens.core.redact.engine import redact

_RNG = random.Random(1616)
_B64 = string.ascii_letters + string.digits + "+/"
_LOWER_ALNUM = string.ascii_lowercase + string.digits


def _r(n: int, alphabet: str) -> str:
    while True:
        tok = "".join(_RNG.choice(alphabet) for _ in range(n))
        if alphabet is not _B64 or ("+" in tok or "/" in tok):
            return tok


def _kinds(text: str) -> set[str]:
    return {f.kind for f in redact(text).findings}


B64_TOKEN = _r(64, _B64) + "=="
LOWER_TOKEN = _r(4, "ghijklmnopqrstuvwxyz") + _r(32, _LOWER_ALNUM)  # not hex
MIXED_TOKEN = _r(36, string.ascii_letters + string.digits)


@pytest.mark.parametrize(
    "template",
    [
        "I rotated it this morning, the new one is {s} and it works.",
        "The new one is {s}.",
        "| deploy | `{s}` |",
        "- staging: {s}",
    ],
)
@pytest.mark.parametrize("secret", [B64_TOKEN, LOWER_TOKEN, MIXED_TOKEN], ids=["b64", "lower", "mixed"])
def test_random_token_in_prose_is_redacted(template: str, secret: str) -> None:
    text = template.format(s=secret)
    result = redact(text)
    assert secret not in result.text
    assert "[REDACTED:random-token]" in result.text
    # nothing but the token is replaced (a final full stop stays)
    assert result.text == template.format(s="[REDACTED:random-token]")


HEX40 = _r(40, "0123456789abcdef")
LOOKALIKES = [
    f"Fixed in commit {HEX40}, see the changelog.",
    f"https://github.com/org/repo/blob/{HEX40}/src/app.py",
    "The request id was 5eb4223e-5008-46e5-be67-c7b8f2732305 in the logs.",
    f'"integrity": "sha512-{_r(86, _B64)}=="',
    f"Public key pin-sha256: {_r(43, _B64)}=",
    f"const pubkey256 = '{_r(43, _B64)}=';",
    f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_r(43, _B64)} dev@laptop",
    f"![logo](data:image/png;base64,{_r(80, _B64)})",
    "See docs/api/v1/ThingConfiguration/UpdateSettings/ReadMe for details.",
    "Open src/memlens/core/redact_rules_tokens.py and the tests.",
    "--sentinel-fuse NODE_SEA_FUSE_" + _r(32, "0123456789abcdef"),
    "* `passphrase`: {string | Buffer} The passphrase to use.",
    "[![codecov](https://codecov.io/gh/org/proj/graph/badge.svg?token=" + _r(10, "ABCDEFGHxyz12")
    + ")](https://codecov.io/gh/org/proj)",
    "the_quick_brown_fox_jumps_over_the_lazy_dog_again_and_again",
]


@pytest.mark.parametrize("text", LOOKALIKES)
def test_non_secret_constructs_are_kept(text: str) -> None:
    assert redact(text).text == text


# --- rules fixed on gitleaks' fps ---------------------------------------------------------

_ANT_BODY = "abc123xyz-456def789ghij-klmnopqrstuvwx-3456yza789bcde-1234fghijklmnopby56aaaogaopaaaabc123xyz"


def test_anthropic_documented_shape_is_a_key_even_when_it_reads_like_a_sample() -> None:
    assert len(_ANT_BODY) == 93
    assert _kinds("sk-ant-api03-" + _ANT_BODY + "AA") == {"anthropic-key"}


@pytest.mark.parametrize(
    "fake",
    ["sk-ant-api03-" + _ANT_BODY + "BB", "sk-ant-admin01-" + _ANT_BODY[:40] + "AA"],
    ids=["wrong-suffix", "too-short"],
)
def test_anthropic_malformed_sample_is_kept(fake: str) -> None:
    assert redact(fake).text == fake


def test_anthropic_truncated_random_key_is_still_redacted() -> None:
    key = "sk-ant-api03-" + _r(80, string.ascii_letters + string.digits)
    assert _kinds(f"key {key} pasted") == {"anthropic-key"}


@pytest.mark.parametrize(
    "fake",
    [
        "xoxp-1234-1234-1234-" + _r(32, "0123456789abcdef"),
        "xoxp-572370529330-573807301142-572331691188-####################",
        "xoxe.xoxp-1-SlackAppConfigurationAccessTokenHere",
    ],
)
def test_slack_samples_are_kept(fake: str) -> None:
    assert redact(f"use {fake} in the sample").text == f"use {fake} in the sample"


def test_slack_real_shape_is_redacted() -> None:
    ids = _r(12, string.digits) + "-" + _r(13, string.digits)
    tok = f"xoxb-{ids}-" + _r(24, string.ascii_letters + string.digits)
    assert _kinds(f"bot token {tok}") == {"slack-token"}


def test_published_firebase_example_key_is_kept_by_rule_and_fallback() -> None:
    published = "sIyY6oo-XoxCQe_xpFJt1WuqLefN7ALnAySazIA"[::-1]  # firebase-android-sdk
    assert redact(published).text == published
    other = "AIza" + _r(35, string.ascii_letters + string.digits)
    assert _kinds(f"key {other} here") == {"google-api-key"}


def test_every_redact_module_is_short() -> None:
    core = Path(__file__).resolve().parent.parent / "src" / "memlens" / "core"
    modules = sorted((core / "redact").glob("*.py"))
    assert len(modules) >= 8  # engine, evaluate, scan, entropy, rules and its family modules
    long = {m.name: n for m in modules if (n := len(m.read_text().splitlines())) > 600}
    assert not long, long


# --- file names -----------------------------------------------------------------------------


def test_redact_path_redacts_a_token_used_as_a_file_name() -> None:
    from memlens.core.redact.engine import redact_path

    tok = "ghp_" + _r(36, string.ascii_letters + string.digits)
    assert redact_path(f"memory/{tok}.md") == "memory/[REDACTED:github-token].md"
    assert redact_path(f"{MIXED_TOKEN}/notes.md") == "[REDACTED:random-token]/notes.md"
    # no secret: unchanged, whatever the shape
    for path in ("memory/MEMORY.md", "a/b/c.tar.gz", f"commits/{HEX40}.md", "C:\\notes\\x.md", ""):
        assert redact_path(path) == path
