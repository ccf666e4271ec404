"""Token rules for cloud and infrastructure providers (a family module of `redact_rules_tokens`).

AWS (access keys, Bedrock API keys), Google Cloud, Databricks, DigitalOcean, HashiCorp Vault, Doppler, Pulumi,
Heroku, Supabase, age, Grafana, 1Password, Octopus Deploy. Each rule is a
vendor prefix plus the documented shape of the rest; `redact_rules_tokens`
puts the families together in priority order.
"""

from __future__ import annotations

import hashlib

from memlens.core.redact.rules import _ALNUM_DASH, _entropy, _has_digit, _rule, _token_body_ok, _TokenRule


def _vault_legacy_ok(secret: str) -> bool:
    """A legacy ``s.`` Vault token: mixed case (:func:`_mixed_random`), or lower case and
    digits as gitleaks' rule allows, then with 6+ of each and entropy >= 3.8 (a domain
    or a file name such as ``s.something`` has neither)."""
    if _mixed_random(secret):
        return True
    body = secret[2:]
    return (body.islower() and sum(c.isdigit() for c in body) >= 6
            and sum(c.isalpha() for c in body) >= 6 and _entropy(body) >= 3.8
            and _token_body_ok(body))


def _mixed_random(secret: str) -> bool:
    """Upper case, lower case and digits, entropy >= 3.5: for short-prefix tokens."""
    return (
        any(c.isupper() for c in secret)
        and any(c.islower() for c in secret)
        and any(c.isdigit() for c in secret)
        and _entropy(secret) >= 3.5
        and _token_body_ok(secret)
    )


# Google API keys published as examples in github.com/firebase/firebase-android-sdk
# (gitleaks' ``gcp-api-key`` allowlist at b58d3f1, cmd/generate/config/rules/gcp.go).
# They ship in public SDK sources, so they are not secrets. Stored as SHA-256 so
# that this file holds no key-shaped string.
_PUBLIC_GOOGLE_KEYS = frozenset(
    {
        "f56e323494a6ffc2064e7a955908957d84f0755e5f975dabd64328d0359a8f7c",
        "2037abcaffb2b77785da716cf7ccff4ff4d00c4ea930db0167b7d71f50af7eb4",
        "3f370c9dd8225c63b5c77de1f785edc9712958f18bb612d5fa2e0ae33aeca682",
        "e4a5542bb7fd7b67e943c71ad29c34b5972c9840597e7eda53e666f44d5da0b9",
        "a19f89ab3555eac10c40741f6df79ecf0935998f15569f8db9d67bce0181fff6",
        "0b476bdf9acf2123d547b5ae76f1e59884d8ec9553ee0c47e9f31fd4768f3f3c",
        "eb540d2b6ee2a0a47c5779bc8a0141784c6b753840d4c6f4e2428a6e86e9e0b1",
        "37f8f09bdf12c2f2eae4ead7273a62ddb0c23459cbf902892f282b57f7ed6619",
        "8731261cb72d86267a32a532ebd3df429e2144e5e4ced7e13568bc9e6c8fb1b1",
        "49f777db995e8260da7ca9ffdf0c08d66f0453e97ec967018baf2cdfe3b582d0",
        "27a9a42931dff7eb2f8434e20a9bce976ea364e7bee49187f19d5cfeca9c7045",
        "dc0fcf046c61640cbd1e8b999ada3262d722c2ca4bf42dceac999020ffdbb614",
        "4c98242dcadc8b29005c6b4aad526552d5ea1842149154c0694adeec75847583",
        "ea9bb1082cf95663f5faca23b8b15ef2aa0fce0a5c6df9c32dcb85b2e0a4513d",
        "3a8b61d0f636b007840c0d40ba12bcf48465dc054cdc1a68704a33521d84b665",
        "a6c814bc555ae62c7bd8b58ec07bf559c7ed3a009976a1e0acc9cef0d4473b41",
    }
)


def is_public_example(token: str) -> bool:
    """Whether ``token`` is a published example key (the fallback keeps it too)."""
    if not token.startswith("AIza"):
        return False
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest() in _PUBLIC_GOOGLE_KEYS


def _google_key_ok(secret: str) -> bool:
    return not is_public_example(secret) and _token_body_ok(secret)


def _any_body(secret: str) -> bool:
    """For prefixes that decode to a vendor name (Bedrock's ``ABSK`` + base64 of
    ``BedrockAPIKey-``): the prefix alone is the evidence, so even an ``EXAMPLE``-filled
    body is treated as a key (redacting a documented fake costs nothing)."""
    return len(secret) >= 20


CLOUD_RULES: tuple[_TokenRule, ...] = (
    _rule("aws-access-key", "A(?:KIA|SIA|BIA|CCA)", r"[A-Z0-9]{16}(?![A-Za-z0-9])"),
    # Amazon Bedrock API keys: long-term ``ABSK`` + base64("BedrockAPIKey-…"), 132
    # characters in all (gitleaks' ``aws-amazon-bedrock-api-key-long-lived``); short-term
    # ``bedrock-api-key-`` + base64 of a presigned URL.
    _rule("aws-bedrock-key", "ABSKQmVkcm9ja0FQSUtleS", r"[A-Za-z0-9+/=]{110}(?![A-Za-z0-9+/=])",
          check=_any_body),
    _rule("aws-bedrock-key", "bedrock-api-key-", r"[A-Za-z0-9+/]{40,}+={0,2}",
          not_after=_ALNUM_DASH, check=_any_body),
    _rule(
        "google-api-key",
        "AIza",
        r"[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])",
        not_after=_ALNUM_DASH,
        check=_google_key_ok,
    ),
    _rule("google-oauth", "GOCSPX-", r"[0-9A-Za-z_\-]{20,}+", not_after=_ALNUM_DASH),
    _rule("google-oauth", r"ya29\.", r"[0-9A-Za-z_\-]{20,}+", not_after=_ALNUM_DASH),
    _rule("databricks-token", "dapi", r"[0-9a-f]{32}(?:-\d+)?(?![0-9A-Za-z])"),
    _rule("digitalocean-token", "do[opr]_v1_", r"[0-9a-f]{64}(?![0-9A-Za-z])"),
    _rule("age-secret-key", "AGE-SECRET-KEY-1", r"[0-9A-Z]{58}(?![0-9A-Za-z])"),
    _rule("onepassword-token", "ops_", r"eyJ[A-Za-z0-9+/=_\-]{100,}+"),
    _rule("grafana-token", "glsa_", r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}(?![A-Za-z0-9])"),
    _rule("grafana-token", "glc_", r"[A-Za-z0-9+/]{32,400}+={0,2}"),
    _rule("vault-token", r"hv[sb]\.", r"[A-Za-z0-9_\-]{24,}+", not_after=_ALNUM_DASH),
    _rule("supabase-token", "sbp_", r"[a-f0-9]{40}(?![A-Za-z0-9_])"),
    _rule("pulumi-token", "pul-", r"[a-f0-9]{40}(?![A-Za-z0-9_])", not_after=_ALNUM_DASH),
    _rule("doppler-token", r"dp\.pt\.", r"[A-Za-z0-9]{43}(?![A-Za-z0-9_])"),
    _rule("heroku-key", "HRKU-", r"[A-Za-z0-9_\-]{58,}+", not_after=_ALNUM_DASH),
    _rule("vault-token", r"s\.", r"[A-Za-z0-9]{24}(?![A-Za-z0-9_.\-])",
          check=_vault_legacy_ok),
    _rule("octopus-key", "API-", r"[A-Z0-9]{26}(?![A-Za-z0-9])", not_after=_ALNUM_DASH, check=_has_digit),
)
