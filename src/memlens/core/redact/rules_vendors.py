"""Token rules for vendors found missing on gitleaks-generated samples (issue 16).

A family module of `redact_rules_tokens`: 1Password secret keys, Airtable,
Alibaba, Authress, Braintree, Buildkite, Cloudflare origin CA keys, Defined
Networking, Dropbox, Duffel, Dynatrace, Flutterwave, Frame.io, GitLab session
cookies, GoCardless, Harness, Infracost, LaunchDarkly, Lob, Mailchimp, Mailgun
public keys, Mapbox, New Relic, Plaid, PlanetScale, RubyGems, SettleMint,
SonarQube, Square OAuth secrets, Telegram bots, Terraform Cloud, Typeform,
Yandex Cloud. Each shape is the one of the
gitleaks rule at b58d3f1 (``config/gitleaks.toml``, the vendors' public formats
as gitleaks writes them), with a fixed prefix of at least three characters, an
exact length where the vendor documents one, and a word boundary on both
sides. Prefixes that are also common words (``live_``, ``test_``, ``pat``,
``access-``) need the full shape and a body that looks generated.
"""

from __future__ import annotations

import re

from memlens.core.redact.rules import (
    _ALNUM_DASH,
    _has_digit,
    _looks_random,
    _rule,
    _token_body_ok,
    _TokenRule,
)

# The characters a token may hold when the vendor's alphabet includes ``=``.
_B64URL = "A-Za-z0-9_\\-="


def _random_body(secret: str) -> bool:
    """The part after the first ``_``/``-`` looks generated (for word-like prefixes)."""
    body = re.split(r"[_\-]", secret, maxsplit=1)[-1]
    return _token_body_ok(body) and _looks_random(body)


def _mixed(secret: str) -> bool:
    """Letters and digits and a plausible body: for short fixed-length tokens."""
    return _has_digit(secret) and any(c.isalpha() for c in secret.rsplit("_", 1)[-1])


def _upper_lower_digit(secret: str) -> bool:
    """Upper and lower case and digits: keeps ``ico-`` + a 32-hex asset hash (a file name)."""
    return (
        any(c.isupper() for c in secret)
        and any(c.islower() for c in secret)
        and _has_digit(secret)
    )


# A full stop that ends a sentence is not part of a token whose alphabet has ``.``.
_END_DOT = r"(?![A-Za-z0-9_\-=]|\.[A-Za-z0-9_\-=])"

VENDOR_RULES: tuple[_TokenRule, ...] = (
    # 1Password account secret key: "A3-", then groups of 6, 11 (or 6-5), 5, 5 and 5
    _rule(
        "onepassword-secret",
        "A3-",
        r"[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}"
        r"(?![A-Za-z0-9\-])",
        not_after=_ALNUM_DASH,
        check=lambda secret: _has_digit(secret[3:]),  # a digit after ``A3-``
    ),
    _rule("airtable-token", "pat", r"[A-Za-z0-9]{14}\.[a-f0-9]{64}(?![A-Za-z0-9])"),
    _rule("alibaba-key", "LTAI", r"[A-Za-z0-9]{20}(?![A-Za-z0-9])", check=_mixed),
    *(
        _rule(
            "authress-key",
            head,
            r"[A-Za-z0-9]{5,30}+\.[A-Za-z0-9]{4,6}+\.acc[_\-][A-Za-z0-9\-]{10,32}+\."
            r"[A-Za-z0-9+/_=\-]{30,120}+",
            not_after=_ALNUM_DASH,
        )
        for head in ("sc_", "ext_", "scauth_", "authress_")
    ),
    _rule(
        "braintree-token",
        r"access_token\$",
        r"(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}(?![A-Za-z0-9])",
    ),
    _rule("buildkite-token", "bkua_", r"[a-f0-9]{40}(?![A-Za-z0-9_])"),
    _rule(
        "cloudflare-ca-key",
        r"v1\.0-",
        r"[a-f0-9]{24}-[a-f0-9]{146}(?![A-Za-z0-9])",
        not_after=_ALNUM_DASH,
    ),
    _rule(
        "defined-net-token",
        "dnkey-",
        rf"[{_B64URL}]{{26}}-[{_B64URL}]{{52}}(?![{_B64URL}])",
        not_after=_ALNUM_DASH,
    ),
    # Dropbox short-lived access tokens: ``sl.`` + 135 or more (gitleaks: exactly 135).
    _rule("dropbox-token", r"sl\.", rf"[{_B64URL}]{{135,}}+", not_after=_ALNUM_DASH),
    _rule(
        "duffel-token",
        "duffel_",
        rf"(?:test|live)_[{_B64URL}]{{43}}(?![{_B64URL}])",
    ),
    _rule("dynatrace-token", r"dt0c01\.", r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}(?![A-Za-z0-9])"),
    _rule(
        "flutterwave-key",
        "FLW",
        r"(?:SECK|PUBK)(?:_TEST)?-[A-Ha-h0-9]{12}(?:[A-Ha-h0-9]{20}-X)?(?![A-Za-z0-9\-])",
    ),
    _rule("frameio-token", "fio-u-", rf"[{_B64URL}]{{64}}(?![{_B64URL}])", not_after=_ALNUM_DASH),
    _rule("gitlab-session", "_gitlab_session=", r"[0-9a-z]{32}(?![A-Za-z0-9])"),
    _rule(
        "gocardless-token",
        "live_",
        rf"[{_B64URL}]{{40}}(?![{_B64URL}])",
        not_after=_ALNUM_DASH,
        check=_random_body,
    ),
    *(
        _rule(
            "harness-token",
            head,
            r"[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}(?![A-Za-z0-9])",
        )
        for head in (r"pat\.", r"sat\.")
    ),
    _rule(
        "infracost-token",
        "ico-",
        r"[A-Za-z0-9]{32}(?![A-Za-z0-9])",
        not_after=_ALNUM_DASH,
        check=_upper_lower_digit,
    ),
    *(
        _rule("lob-key", head, r"(?:pub_[a-f0-9]{31}|[a-f0-9]{35})(?![A-Za-z0-9])")
        for head in ("live_", "test_")
    ),
    _rule("mailgun-key", "pubkey-", r"[a-f0-9]{32}(?![0-9A-Za-z])", not_after=_ALNUM_DASH),
    # Mapbox: ``pk.`` public and ``sk.`` secret tokens, ``<base64url>.<22>``.
    *(
        _rule(
            "mapbox-token",
            head,
            r"[A-Za-z0-9]{40,}+\.[A-Za-z0-9_\-]{22}(?![A-Za-z0-9_\-])",
            check=_has_digit,
        )
        for head in (r"pk\.", r"sk\.")
    ),
    _rule("newrelic-key", "NRAK-", r"[A-Za-z0-9]{27}(?![A-Za-z0-9])", not_after=_ALNUM_DASH),
    _rule("newrelic-key", "NRII-", r"[A-Za-z0-9_\-]{32}(?![A-Za-z0-9_\-])", not_after=_ALNUM_DASH),
    _rule("newrelic-key", "NRJS-", r"[a-f0-9]{19}(?![A-Za-z0-9])", not_after=_ALNUM_DASH),
    # LaunchDarkly access and SDK keys: ``api-`` / ``sdk-`` + a UUID.
    *(
        _rule(
            "launchdarkly-key",
            head,
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![A-Za-z0-9\-])",
            not_after=_ALNUM_DASH,
        )
        for head in ("api-", "sdk-")
    ),
    _rule(
        "plaid-token",
        "access-",
        r"(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}"
        r"-[0-9a-f]{12}(?![A-Za-z0-9])",
        not_after=_ALNUM_DASH,
    ),
    _rule(
        "planetscale-token",
        "pscale_",
        r"(?:tkn|pw|oauth)_[A-Za-z0-9_=.\-]{31,63}[A-Za-z0-9_=\-]" + _END_DOT,
    ),
    _rule("rubygems-token", "rubygems_", r"[a-f0-9]{48}(?![A-Za-z0-9])"),
    _rule("settlemint-token", "sm_", r"(?:aat|pat|sat)_[A-Za-z0-9]{16}(?![A-Za-z0-9_])"),
    _rule("sonarqube-token", "sq", rf"[upa]_[{_B64URL}]{{40}}(?![{_B64URL}])"),
    _rule("square-token", "sq0csp-", r"[A-Za-z0-9_\-]{43}(?![A-Za-z0-9_\-])", not_after=_ALNUM_DASH),
    # Terraform Cloud: ``<14>.atlasv1.<60-70>``; the part from ``atlasv1.`` on is
    # replaced (a rule's match starts at its literal), the 14-character id stays.
    _rule(
        "terraform-token",
        r"atlasv1\.",
        rf"(?<=[A-Za-z0-9]{{14}}\.atlasv1\.)[{_B64URL}]{{60,70}}(?![{_B64URL}])",
        not_after=None,
    ),
    _rule(
        "typeform-token",
        "tfp_",
        r"[A-Za-z0-9_\-.=]{58}[A-Za-z0-9_\-=]" + _END_DOT,
    ),
    _rule(
        "yandex-token",
        r"t1\.",
        r"[A-Za-z0-9_\-]{1,200}+={0,2}\.[A-Za-z0-9_\-]{86}={0,2}(?![A-Za-z0-9_\-=])",
        not_after=_ALNUM_DASH,
    ),
)


# Tokens whose fixed part is not at the start: found at their literal anchor
# (the rule's regex), then the run before it is measured backwards (a regex
# starting with a class would be tried at every position of the text). They are
# `_TokenRule`s so that `memlens.core.redact.engine.KINDS` lists them; `scan_anchored`,
# not the prefix scan, applies them.
_HEXSET = frozenset("0123456789abcdef")
_ALNUMSET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
# (rule, characters of the run before the anchor, the run's least and greatest length)
_ANCHORED: tuple[tuple[_TokenRule, frozenset[str], int, int], ...] = (
    # Mailchimp API keys: 32 hex + ``-us`` + the data-centre number.
    (_TokenRule("mailchimp-key", re.compile(r"-us[0-9]{1,2}(?![A-Za-z0-9_\-])")), _HEXSET, 32, 32),
    # Dropbox long-lived tokens: 11 + ``AAAAAAAAAA`` + 43.
    (
        _TokenRule("dropbox-token", re.compile(rf"AAAAAAAAAA[{_B64URL}]{{43}}(?![{_B64URL}+/])")),
        _ALNUMSET,
        11,
        11,
    ),
    # Terraform Cloud: the whole ``<14>.atlasv1.<60-70>`` (the prefix rule above covers
    # the part from ``atlasv1.`` on when the id is not 14 letters and digits).
    (
        _TokenRule("terraform-token", re.compile(rf"\.atlasv1\.[{_B64URL}]{{60,70}}(?![{_B64URL}])")),
        _ALNUMSET,
        14,
        14,
    ),
    # Telegram bot tokens: the bot id, ``:A``, 34 more.
    (
        _TokenRule("telegram-bot-token", re.compile(r":A[A-Za-z0-9_\-]{34}(?![A-Za-z0-9_\-])")),
        frozenset("0123456789"),
        5,
        16,
    ),
)
ANCHORED_RULES: tuple[_TokenRule, ...] = tuple(rule for rule, *_ in _ANCHORED)
# A run starting right after one of these is the tail of a longer word or base64 blob.
_BOUNDARY = _ALNUMSET | frozenset("_-+/=")


def scan_anchored(text: str, fast: str, out: list[tuple[int, int, int, str]], prio: int) -> None:
    """Append the `ANCHORED_RULES` tokens of ``fast`` (offsets shared with ``text``)."""
    for rule, run, least, most in _ANCHORED:
        for m in rule.regex.finditer(fast):
            end = start = m.start()
            while start > 0 and end - start < most and fast[start - 1] in run:
                start -= 1
            if end - start < least or (start > 0 and fast[start - 1] in _BOUNDARY):
                continue
            if rule.check is None or rule.check(text[start : m.end()]):
                out.append((start, m.end(), prio, rule.kind))
