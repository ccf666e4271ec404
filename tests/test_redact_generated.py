"""Redaction on samples generated from every gitleaks rule, and the vendor rules added for them.

``tests/data/secrets/generated_gitleaks.jsonl`` is built by
``tools/build_secret_set_gen.py``: a few samples per rule of gitleaks'
``config/gitleaks.toml`` (MIT, see ``LICENSE-gitleaks``), drawn by hypothesis
from the rule's secret group, in the keyed, prose and backticks contexts; each
line's ``group`` says whether the secret carries a fixed literal (``prefixed``)
or is only a run of characters (``bare``: gitleaks needs a vendor keyword next
to it, so only the keyed context is meaningful). The set is gated per context
and group at the figures measured after `memlens.core.redact.rules_vendors`
(docs/reliability.md, "Redaction on gitleaks-generated samples").

Secrets of the unit tests are built at run time from random characters, so
this file holds no format-valid token that a scanner would flag.
"""

from __future__ import annotations

import json
import random
import string
import sys
from pathlib import Path

import pytest

from memlens.core.redact.engine import KINDS, redact
from memlens.core.redact.evaluate import GroupScore, load_labelled, score_groups

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "tests" / "data" / "secrets" / "generated_gitleaks.jsonl"

# (group, context) -> measured share after the vendor rules (before: prefixed
# keyed 379/394, prose 286/394, backticks 286/394; bare keyed 254/267, prose and
# backticks 87/267).
FLOORS = {
    ("prefixed", "keyed"): 384 / 394,
    ("prefixed", "prose"): 366 / 394,
    ("prefixed", "backticks"): 366 / 394,
    ("bare", "keyed"): 254 / 267,
    ("bare", "prose"): 89 / 267,
    ("bare", "backticks"): 89 / 267,
}
CONTEXT_FLOORS = {"keyed": 638 / 661, "prose": 455 / 661, "backticks": 455 / 661}


@pytest.fixture(scope="module")
def generated_groups() -> dict[tuple[str, ...], GroupScore]:
    return score_groups(load_labelled(GENERATED), by=("group", "context"))


def test_generated_set_header_and_coverage() -> None:
    lines = GENERATED.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert header["comment"] is True
    assert header["source"] == "gitleaks/gitleaks@b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b"
    assert "from_regex" in header["method"]
    rows = [json.loads(line) for line in lines[1:]]
    assert {r["group"] for r in rows} == {"prefixed", "bare"}
    assert {r["obfuscation"] for r in rows} == {"reversed"}
    rules = {r["format"].rpartition("/")[0] for r in rows}
    assert len(rules) >= 215  # of 221 rules with a regex; see the tool's drop counts
    examples = load_labelled(GENERATED)
    assert len(examples) == len(rows) >= 1900
    assert all(e.group in ("prefixed", "bare") and e.secret in e.text for e in examples)


def test_generated_set_per_group_and_context_floors(
    generated_groups: dict[tuple[str, ...], GroupScore],
) -> None:
    assert set(generated_groups) == set(FLOORS)
    low = {
        k: f"{g.handled}/{g.total}"
        for k, g in generated_groups.items()
        if g.share < FLOORS[k] - 1e-9  # type: ignore[index]
    }
    assert not low, low


def test_generated_set_per_context_floors(
    generated_groups: dict[tuple[str, ...], GroupScore],
) -> None:
    for ctx, floor in CONTEXT_FLOORS.items():
        handled = sum(g.handled for (_, c), g in generated_groups.items() if c == ctx)
        total = sum(g.total for (_, c), g in generated_groups.items() if c == ctx)
        assert handled / total >= floor - 1e-9, (ctx, handled, total)


def test_cli_groups_by_group_field(capsys: pytest.CaptureFixture[str]) -> None:
    from memlens.core.redact.evaluate import _main

    assert _main(["--evaluate", str(GENERATED), "--by", "group,context"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in out] == [
        ["bare", "backticks"], ["bare", "keyed"], ["bare", "prose"],
        ["prefixed", "backticks"], ["prefixed", "keyed"], ["prefixed", "prose"],
    ]


# --------------------------------------------------------------------------
# The generator's own pieces (tools/build_secret_set_gen.py)
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gen() -> object:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import build_secret_set_gen
    finally:
        sys.path.remove(str(ROOT / "tools"))
    return build_secret_set_gen


def test_secret_patterns_take_the_secret_group_per_alternative(gen: object) -> None:
    patterns = gen.secret_patterns  # type: ignore[attr-defined]
    keyword = r"(?i)[\w.-]{0,50}?(?:acme)(?:[ \t\w.-]{0,20})[\s'\"]{0,3}(?:=|:)([a-z0-9]{32})(?:\s|$)"
    assert patterns({"regex": keyword}) == ["[a-z0-9]{32}"]
    two = r"\b(foo_[a-f0-9]{8})\b|\b(BAR-[A-Z]{4})(?:;|$)"
    assert patterns({"regex": two}) == ["foo_[a-f0-9]{8}", "BAR-[A-Z]{4}"]
    assert patterns({"regex": r"(x)(lit_[0-9]{4})", "secretGroup": 2}) == ["lit_[0-9]{4}"]
    assert patterns({"regex": r"\bAKCp[A-Za-z0-9]{69}\b"}) == [r"\bAKCp[A-Za-z0-9]{69}\b"]
    # RE2's mid-pattern flag becomes a scoped group, then case-insensitivity is dropped
    assert patterns({"regex": r"\b(p8e-(?i)[a-z0-9]{32})\b"}) == ["p8e-(?:[a-z0-9]{32})"]


@pytest.mark.parametrize(
    "pattern,group",
    [
        ("NRAK-[A-Z0-9]{27}", "prefixed"),
        ("(?:sc|ext|scauth)_[a-z0-9]{5,30}", "prefixed"),  # every branch + "_": >= 3
        ("(?:A3T[A-Z0-9]|AKIA|ASIA)[A-Z2-7]{16}", "prefixed"),
        ("[a-zA-Z0-9_~.]{3}[0-9]Q~[a-zA-Z0-9_~.-]{31,34}", "prefixed"),  # infix Q~
        ("[a-f0-9]{32}-us[0-9]{2}", "prefixed"),  # infix -us
        ("[a-z0-9]{11}(AAAAAAAAAA)[a-z0-9]{43}", "prefixed"),  # 4+ character infix
        ("A{22}[A-Za-z0-9%]{80}", "prefixed"),  # a fixed run
        ("[a-z0-9]{32}", "bare"),
        ("SK[0-9a-fA-F]{32}", "bare"),  # two characters only
        ("(?:squ_|sqp_)?[a-z0-9]{40}", "bare"),  # an optional prefix
        ("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{12}", "bare"),  # single-character separators
    ],
)
def test_rule_group(gen: object, pattern: str, group: str) -> None:
    assert gen.rule_group(pattern) == group  # type: ignore[attr-defined]


def test_placeholder_reasons(gen: object) -> None:
    reason = gen.placeholder_reason  # type: ignore[attr-defined]
    assert reason("AKCp" + "0" * 69) is not None
    assert reason("FLWSECK_TEST-" + "0" * 12, prefix=13) is not None
    assert reason("FLWSECK_TEST-" + "0" * 11 + "1", prefix=0) is None  # the prefix dilutes it
    assert reason("ab" * 8) == "a short unit repeated"
    assert reason("c5yimxs0ftmw7kjt6ms07iteo3pov9y0") is None


def test_draw_is_deterministic_and_matches(gen: object) -> None:
    import re

    first = gen.draw("NRAK-[A-Z0-9]{27}", "rule-a", n=6)  # type: ignore[attr-defined]
    assert first == gen.draw("NRAK-[A-Z0-9]{27}", "rule-a", n=6)  # type: ignore[attr-defined]
    assert all(re.fullmatch("NRAK-[A-Z0-9]{27}", s) for s in first)
    other = gen.draw("NRAK-[A-Z0-9]{27}", "rule-b", n=6)  # type: ignore[attr-defined]
    assert other != first  # seeded per rule: rules do not share samples


# --------------------------------------------------------------------------
# The vendor rules (memlens.core.redact.rules_vendors)
# --------------------------------------------------------------------------

_RNG = random.Random(1616)
_ALNUM = string.ascii_letters + string.digits
_LOWNUM = string.ascii_lowercase + string.digits
_UPNUM = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_URL = _ALNUM + "_-"


def _r(n: int, alphabet: str = _ALNUM) -> str:
    while True:
        s = "".join(_RNG.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in s) or not any(c.isdigit() for c in alphabet):
            return s


def _uuid() -> str:
    return "-".join(_r(n, _HEX) for n in (8, 4, 4, 4, 12))


VENDORS: list[tuple[str, str]] = [
    ("onepassword-secret", "-".join(["A3", _r(6, _UPNUM), _r(11, _UPNUM), _r(5), _r(5), _r(5)]).upper()),
    ("airtable-token", "pat" + _r(14) + "." + _r(64, _HEX)),
    ("alibaba-key", "LTAI" + _r(20)),
    ("authress-key", f"sc_{_r(12, _LOWNUM)}.{_r(5, _LOWNUM)}.acc_{_r(20, _LOWNUM)}.{_r(48)}"),
    ("braintree-token", "access_token$production$" + _r(16, _LOWNUM) + "$" + _r(32, _HEX)),
    ("buildkite-token", "bkua_" + _r(40, _HEX)),
    ("cloudflare-ca-key", "v1.0-" + _r(24, _HEX) + "-" + _r(146, _HEX)),
    ("defined-net-token", "dnkey-" + _r(26, _URL) + "-" + _r(52, _URL)),
    ("dropbox-token", "sl." + _r(140, _URL)),
    ("dropbox-token", _r(11, _LOWNUM) + "AAAAAAAAAA" + _r(43, _URL)),
    ("duffel-token", "duffel_live_" + _r(43, _URL)),
    ("dynatrace-token", "dt0c01." + _r(24, _UPNUM) + "." + _r(64, _UPNUM)),
    ("flutterwave-key", "FLWSECK_TEST-" + _r(32, "abcdefgh0123456789") + "-X"),
    ("flutterwave-key", "FLWSECK_TEST-" + _r(12, "abcdefgh0123456789")),
    ("frameio-token", "fio-u-" + _r(64, _URL)),
    ("gitlab-session", "_gitlab_session=" + _r(32, _LOWNUM)),
    ("gocardless-token", "live_" + _r(40, _URL)),
    ("harness-token", "pat." + _r(22) + "." + _r(24) + "." + _r(20)),
    ("infracost-token", "ico-" + _r(16, string.ascii_uppercase) + _r(15, string.ascii_lowercase) + "7"),
    ("launchdarkly-key", "api-" + _uuid()),
    ("lob-key", "live_" + _r(35, _HEX)),
    ("lob-key", "test_pub_" + _r(31, _HEX)),
    ("mailchimp-key", _r(32, _HEX) + "-us12"),
    ("mailgun-key", "pubkey-" + _r(32, _HEX)),
    ("mapbox-token", "sk.eyJ1Ijoi" + _r(50) + "." + _r(22, _URL)),
    ("newrelic-key", "NRAK-" + _r(27, _UPNUM)),
    ("newrelic-key", "NRII-" + _r(32, _URL)),
    ("newrelic-key", "NRJS-" + _r(19, _HEX)),
    ("plaid-token", "access-production-" + _uuid()),
    ("planetscale-token", "pscale_tkn_" + _r(43, _URL)),
    ("rubygems-token", "rubygems_" + _r(48, _HEX)),
    ("settlemint-token", "sm_pat_" + _r(16)),
    ("sonarqube-token", "squ_" + _r(40, _HEX)),
    ("square-token", "sq0csp-" + _r(43, _URL)),
    ("telegram-bot-token", _r(10, string.digits) + ":AA" + _r(33, _URL)),
    ("typeform-token", "tfp_" + _r(59, _URL)),
    ("yandex-token", "t1." + _r(40, _URL) + "." + _r(86, _URL)),
]

CONTEXTS = {
    "keyed": 'api_key = "{s}"',
    "prose": "I rotated it this morning, the new one is {s} and it works.",
    "sentence-end": "The deploy now uses {s}.",
    "backticks": "Use `{s}` for the staging deploy.",
    "table": "| service | credential |\n|---|---|\n| deploy | {s} |",
}


@pytest.mark.parametrize("kind,secret", VENDORS, ids=[f"{k}-{i}" for i, (k, _) in enumerate(VENDORS)])
@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_vendor_token_redacted_in_every_context(kind: str, secret: str, context: str) -> None:
    assert kind in KINDS
    text = CONTEXTS[context].format(s=secret)
    out = redact(text).text
    if kind == "terraform-token":
        return
    assert secret not in out, out
    if context != "keyed":  # keyed may be named by the generic rule; elsewhere the family names it
        assert f"[REDACTED:{kind}]" in out, out
        assert out.startswith(text[: text.index(secret)]), out  # only the token replaced


def test_terraform_token_secret_part_replaced() -> None:
    token = _r(14, _LOWNUM) + ".atlasv1." + _r(64, _URL)
    out = redact(f"The workspace token is {token} for now.").text
    assert token.split(".atlasv1.")[1] not in out
    assert "[REDACTED:terraform-token]" in out


@pytest.mark.parametrize(
    "text",
    [
        # a 32-hex asset hash after ico- (a file name), and placeholders
        "http://assets.example.org/media/video_box.ico-" + "7a388b69018576d24b59331fd60aab0c" + ".png",
        "ico-" + "X" * 32,
        "pubkey-" + "0" * 32,
        "sonar token: squ_" + "x" * 40,
        "access-sandbox-00000000-0000-0000-0000-000000000000",
        "api-00000000-0000-0000-0000-000000000000",
        "FLWSECK_TEST-" + "0" * 32 + "-X",
        "the key looks like A3-ABCDEF-GHIJKLMNOPQ-RSTUV-WXYZA-BCDEF in the docs",  # no digit
        # words and names that start like a vendor prefix
        "see test_parse_config_file_with_defaults_ok and live_reload_settings_for_the_dev_server",
        "run on a t1.micro instance, then pat.example.com and sat.nav.example.org",
        "the pattern was patched.", "NRAK-", "sk.eyJ", "dnkey-short-value",
        # a shorter or longer run before an anchored suffix
        "ab" + "c" * 3 + "-us12 and " + "f" * 40 + "-us1",
        "12:AA" + "b" * 33,  # bot id shorter than five digits (and a repeated body)
        # base64 with a run of A (zero bytes) inside a blob
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==",
        # a longer hex run before -us: a digest, not a Mailchimp key
        _r(40, _HEX) + "-us12",
        # Terraform: the id is missing
        "atlasv1." + "Q" * 64,
    ],
)
def test_vendor_lookalikes_kept(text: str) -> None:
    assert redact(text).text == text


def test_mapbox_token_inside_jwt_named_mapbox() -> None:
    token = "sk.eyJ1IjoiZXhhbXBsZSIsImEiOiJ" + _r(28) + "." + _r(22, _URL)
    out = redact(f"export MAPBOX is {token} ok").text
    assert out == "export MAPBOX is [REDACTED:mapbox-token] ok"
