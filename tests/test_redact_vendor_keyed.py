"""Issue 44: the keyed misses on the public sets, each built from its public sample.

Sources and licences:

* gitleaks (MIT, ``tests/data/secrets/LICENSE-gitleaks``), ``cmd/generate/config/rules``
  at b58d3f1: the sample shapes of ``utils.GenerateSampleSecrets`` (``<{i}Token>``
  newline value newline ``</{i}Token>``, ``{i}Token="{s}"``) and the rule samples of
  ``snyk.go``, ``sonar.go``, ``teams.go``, ``sidekiq.go``, ``hashicorp.go`` (quoted
  below where gitleaks writes a fixed value; gitleaks draws the other values at run
  time, so these are drawn here with a seeded generator);
* trufflehog (AGPL-3.0), ``pkg/detectors/{instamojo,plivo,parsehub,postgres}``: only the
  formats are taken (keyword, then the value's length and alphabet; the libpq
  ``key='value'`` part and the URI of the postgres detector); no test string of theirs
  is copied: every value below is made up here.
"""

from __future__ import annotations

import random
import string

import pytest

from memlens.core.redact.engine import redact

_RNG = random.Random(44)


def _draw(alphabet: str, n: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


HEX = "0123456789abcdef"
ALNUM = string.ascii_letters + string.digits
HEX64 = _draw(HEX, 64)
SIDEKIQ = f"{_draw(HEX, 8)}:{_draw(HEX, 8)}"
GUID = "-".join(_draw(HEX, n) for n in (8, 4, 4, 4, 12))
GUID2 = "-".join(_draw(HEX, n) for n in (8, 4, 4, 4, 12))
GUID3 = "-".join(_draw(HEX, n) for n in (8, 4, 4, 4, 12))
TEAMS_PATH = f"{GUID}@{GUID2}/IncomingWebhook/{_draw(HEX, 32)}/{GUID3}"
TF_BODY = _draw(ALNUM + "-_", 66) + "A"
INSTAMOJO40 = _draw(ALNUM, 39) + "7"
INSTAMOJO60 = _draw(ALNUM, 59) + "3"
INSTAMOJO128 = _draw(ALNUM, 127) + "9"
PLIVO_ID = _draw(string.ascii_uppercase, 20)
PLIVO_TOKEN = _draw(ALNUM, 39) + "1"
PARSEHUB = _draw(string.ascii_letters, 6) + _draw(string.digits, 2) + _draw(ALNUM, 4)
# Values shaped like the public samples (runs such as ``123456``, which the generic checks
# read as documentation fakes): only the vendor's key and exact shape find them.
INSTAMOJO_DOC = "Ab12345678" + _draw(ALNUM, 50)
PARSEHUB_DOC = "tK8123456mQx"
PLIVO_DOC = "MA" + _draw(string.ascii_uppercase, 18)
PG_PASSWORD = ".kR#=-;|4wP!z^7("  # punctuation-heavy, in the postgres detector's format

CASES = [
    # gitleaks GenerateSampleSecrets "xml - element multiline" (discord rule, Hex("64"))
    ("discord-xml-multiline", f"<discordToken>\n    {HEX64}\n</discordToken>", HEX64),
    # gitleaks snyk.go: GenerateSampleSecrets("snyk", "12345678-ABCD-ABCD-ABCD-1234567890AB")
    ("snyk-ini", 'snykToken="12345678-ABCD-ABCD-ABCD-1234567890AB"',
     "12345678-ABCD-ABCD-ABCD-1234567890AB"),
    ("snyk-make", 'SNYK_API_KEY ?= "12345678-ABCD-ABCD-ABCD-1234567890AB"',
     "12345678-ABCD-ABCD-ABCD-1234567890AB"),
    # gitleaks sonar.go: GenerateSampleSecrets("sonar", "12345678ABCDEFH1234567890ABCDEFH12345678")
    ("sonar-ini", 'sonarToken="12345678ABCDEFH1234567890ABCDEFH12345678"',
     "12345678ABCDEFH1234567890ABCDEFH12345678"),
    ("sonar-login", 'SONAR.LOGIN ::= "12345678ABCDEFH1234567890ABCDEFH12345678"',
     "12345678ABCDEFH1234567890ABCDEFH12345678"),
    # gitleaks teams.go: "https://mycompany.webhook.office.com/webhookb2/" + NewSecret(...)
    ("teams-webhook", f"https://mycompany.webhook.office.com/webhookb2/{TEAMS_PATH}", TEAMS_PATH),
    # gitleaks sidekiq.go: GenerateSampleSecrets("BUNDLE_ENTERPRISE__CONTRIBSYS__COM", hex8:hex8)
    ("sidekiq-xml-multiline", "<BUNDLE_ENTERPRISE__CONTRIBSYS__COMToken>\n    "
     f"{SIDEKIQ}\n</BUNDLE_ENTERPRISE__CONTRIBSYS__COMToken>", SIDEKIQ),
    # gitleaks hashicorp.go: the literal sample; the whole token, the 14-character id too
    ("terraform-literal", '#token = "hE1hlYILrSqpqh.atlasv1.ARjZuyzl33F71WR55s6ln5GQ1HWIwTDDH3Mi'
     'Rjz7OnpCfaCb1RCF5zGaSncCWmJdcYA"', "hE1hlYILrSqpqh.atlasv1.ARjZuyzl33F71WR55s6ln5GQ1HWIwTD"
     "DH3MiRjz7OnpCfaCb1RCF5zGaSncCWmJdcYA"),
    ("terraform-prose", f"the token is 9f8e7d6c5b4a3f.atlasv1.{TF_BODY} for the org",
     f"9f8e7d6c5b4a3f.atlasv1.{TF_BODY}"),
    # trufflehog instamojo format: keyword, then '<40>' (key) and '<128>' (secret)
    ("instamojo-key", f"instamojo '{INSTAMOJO40}'", INSTAMOJO40),
    ("instamojo-secret", f"instamojo '{INSTAMOJO128}'", INSTAMOJO128),
    ("instamojo-60", f"INSTAMOJO_AUTH_TOKEN={INSTAMOJO60}", INSTAMOJO60),
    ("instamojo-doc-shape", f"instamojo '{INSTAMOJO_DOC}'", INSTAMOJO_DOC),
    # trufflehog plivo format: "plivo token - '<20 upper-case>'" and "- '<40>'"
    ("plivo-id", f"plivo token - '{PLIVO_ID}'", PLIVO_ID),
    ("plivo-token", f"plivo token - '{PLIVO_TOKEN}'", PLIVO_TOKEN),
    # trufflehog parsehub format: "parsehub token = '<12 letters and digits>'"
    ("parsehub", f"parsehub token = '{PARSEHUB}'", PARSEHUB),
    ("parsehub-doc-shape", f"parsehub token = '{PARSEHUB_DOC}'", PARSEHUB_DOC),
    ("plivo-auth-id", f"PLIVO_AUTH_ID={PLIVO_DOC}", PLIVO_DOC),
    # trufflehog postgres format: a libpq key='value' part and a URI, punctuation-heavy
    ("postgres-kv", f"postgres host=db user=app password='{PG_PASSWORD}'", PG_PASSWORD),
    ("postgres-uri", f"postgres://app:{PG_PASSWORD}@db.internal:5432/main", PG_PASSWORD),
]


@pytest.mark.parametrize(("name", "text", "secret"), CASES, ids=[c[0] for c in CASES])
def test_keyed_miss_is_redacted(name: str, text: str, secret: str) -> None:
    out = redact(text).text
    assert secret not in out and "[REDACTED:" in out, (name, out)
    # nothing of it is left either (a partly covered token counts as a miss)
    for part in (secret[:12], secret[-12:]):
        assert part not in out, (name, out)


@pytest.mark.parametrize(("text", "kept"), [
    # the host, the tenant and the user stay
    (f"https://mycompany.webhook.office.com/webhookb2/{TEAMS_PATH}", "mycompany.webhook.office.com"),
    (f"postgres://app:{PG_PASSWORD}@db.internal:5432/main", "postgres://app:"),
    (f"postgres://app:{PG_PASSWORD}@db.internal:5432/main", "@db.internal:5432/main"),
])
def test_context_stays(text: str, kept: str) -> None:
    assert kept in redact(text).text


@pytest.mark.parametrize("text", [
    # a commit after a Sonar word is no Sonar token: the key must be sonar login/token
    "SonarQube analysis for commit 3f1c2a9b8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b passed",
    # a Snyk organisation or project id is a UUID without a token key
    "snyk org id 3f1c2a9b-8e7d-4c5b-9a3f-2e1d0c9b8a7f",
    # a placeholder after the right key
    'snykToken="00000000-0000-0000-0000-000000000000"',
    "sonar.token=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    # words after a vendor name
    "Plivo sends SMS; see the Plivo console for the auth id",
    "parsehub projects export to CSV every morning",
    # a postgres URL without a password
    "postgres://db.internal:5432/main, mail ops@example.org",
    # nested XML is not a value
    "<discordToken>\n  <value>see below</value>\n</discordToken>",
])
def test_look_alikes_are_kept(text: str) -> None:
    assert redact(text).text == text


# -- prefixed formats alone in prose (issue 44 item 3), shapes of gitleaks' rules (MIT) --------

_LD = string.ascii_lowercase + string.digits
SENDGRID_WIDE = "SG.q=" + _draw(_LD, 30) + "=" + _draw(_LD + "-_", 32) + "q"  # 66 after SG.
VAULT_LOWER = "s." + "".join(_RNG.sample(string.ascii_lowercase, 12) + _RNG.sample(string.digits, 8)
                             + _RNG.sample(string.ascii_lowercase, 4))
SLACK_SHORT = "xoxr-" + _draw(string.ascii_letters, 9) + _draw(string.digits, 9)
SLACK_APP = "xoxa-3-" + "qWmZkTvR"
SLACK_BOT_IDS = "xoxb-5207319264081-0649135728406"
REPEATED = "k3j9x2m7" + _draw(_LD, 8)  # 16: too short for the random-token fallback

PROSE = [
    ("sendgrid-wide", f"the new one is {SENDGRID_WIDE} and it works.", SENDGRID_WIDE),
    ("vault-legacy-lower", f"the new one is {VAULT_LOWER} and it works.", VAULT_LOWER),
    ("slack-legacy-short", f"the new one is {SLACK_SHORT} and it works.", SLACK_SHORT),
    ("slack-app-short", f"the new one is {SLACK_APP} and it works.", SLACK_APP),
    ("slack-bot-two-ids", f"the new one is {SLACK_BOT_IDS} and it works.", SLACK_BOT_IDS),
    # the same secret again: trufflehog's "keyword token = 'X' | 'X'" format, and a value
    # pasted again without its key on a later line
    ("repeat-after-pipe", f"weatherbit token = '{REPEATED}' | '{REPEATED}'", REPEATED),
    ("repeat-next-line", f"api_token = {REPEATED}\nused it: {REPEATED}\n", REPEATED),
]


@pytest.mark.parametrize(("name", "text", "secret"), PROSE, ids=[c[0] for c in PROSE])
def test_prefixed_in_prose_and_repeats(name: str, text: str, secret: str) -> None:
    out = redact(text).text
    assert secret not in out and "[REDACTED:" in out, (name, out)


@pytest.mark.parametrize("text", [
    "xoxb-1234567890-1234567890",  # a 123456... run, twice the same id
    "see s.thisisaverylongdomain1 for details",  # no digits run of a token
    "xoxr-abcdefgh and xoxa-12345678",  # a run, digits only
    # a repeat is a whole token: a longer word holding the value stays
    "port = 8080, see 8080abcdef",
])
def test_prefixed_look_alikes_kept(text: str) -> None:
    assert redact(text).text == text


def test_a_repeat_is_replaced_as_a_whole_token_only() -> None:
    out = redact("password=hunter2x9\nlater: hunter2x9 and hunter2x9abc").text
    assert out == "password=[REDACTED:password]\nlater: [REDACTED:password] and hunter2x9abc"
