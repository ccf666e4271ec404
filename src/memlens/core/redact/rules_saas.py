"""Token rules for chat, payments, messaging and AI vendors.

Slack, Discord, Anthropic, OpenAI, Stripe, Twilio, SendGrid, Hugging Face,
Shopify, Mailgun, Groq, xAI (a family module of `redact_rules_tokens`).
"""

from __future__ import annotations

import re

from memlens.core.redact.rules import (
    _ALNUM_DASH,
    _has_digit,
    _looks_fake,
    _looks_random,
    _rule,
    _token_body_ok,
    _TokenRule,
)


def _openai_ok(secret: str) -> bool:
    body = secret[3:]
    for prefix in ("proj-", "svcacct-", "admin-"):
        if body.startswith(prefix):
            body = body[len(prefix) :]
    return _token_body_ok(body) and _looks_random(body)


# Anthropic documents two shapes: ``sk-ant-api03-`` / ``sk-ant-admin01-`` + 93
# characters + ``AA`` (gitleaks' rules). A value of that exact shape is a key even
# when it reads like a documentation sample; one of another length or suffix is
# a key only if it looks generated (no ``abc123xyz``/``klmnop`` runs), so that a
# truncated real key is still caught and a malformed fake is kept.
_ANTHROPIC_SHAPE = re.compile(r"sk-ant-(?:api03|admin01)-[A-Za-z0-9_\-]{93}AA")
_ANTHROPIC_VERSIONED = re.compile(r"sk-ant-(?:api|admin)\d\d-")


def _anthropic_ok(secret: str) -> bool:
    if _ANTHROPIC_SHAPE.fullmatch(secret):
        return _token_body_ok(secret[7:])
    body = secret[7:]
    if _ANTHROPIC_VERSIONED.match(secret):
        return _token_body_ok(body) and not _looks_fake(body)
    return _token_body_ok(body)


# Slack tokens: ``xox?-`` then dash-separated parts: numeric team/user/bot ids
# (all different), the last part is the random secret. Kept:
# ``xoxp-1234-1234-1234-...`` (one id repeated), ``xoxp-<ids>-####`` (no secret part) and
# ``xoxe.xoxp-1-SlackAppConfigurationAccessTokenHere`` (a made-of-words part).
_WORD_RUN = re.compile(r"[A-Z]?[a-z]{3,}|[A-Z]{3,}")


def _short_slack_ok(secret: str) -> bool:
    """A short legacy ``xoxa-``/``xoxr-`` token: letters and digits, or both cases, in a
    body that does not read as a placeholder."""
    body = secret.rsplit("-", 1)[-1]
    has_digit = any(c.isdigit() for c in secret)
    cased = any(c.isupper() for c in body) and any(c.islower() for c in body)
    return (has_digit or cased) and any(c.isalpha() for c in body) and _token_body_ok(body) \
        and len(set(body)) >= 6


def _slack_ok(secret: str) -> bool:
    if not _has_digit(secret):
        return False
    parts = secret.split("-")[1:]
    if secret.startswith("xoxb-") and len(parts) == 2 and all(
            p.isdigit() and 10 <= len(p) <= 13 for p in parts):
        # gitleaks' bot-token shape: two ids (distinct, not a 123456... run)
        return parts[0] != parts[1] and not _looks_fake("".join(parts))
    if not parts or not parts[-1] or parts[-1].isdigit():
        return False
    ids = [p for p in parts if p.isdigit() and len(p) > 1]
    if len(set(ids)) < len(ids):
        return False  # the same id twice: a made-up sample
    last = parts[-1]
    words = sum(len(w) for w in _WORD_RUN.findall(last))
    return not (words * 10 >= len(last) * 8 and sum(c.isdigit() for c in last) < 2)


SAAS_RULES: tuple[_TokenRule, ...] = (
    _rule(
        "slack-token",
        "xox[abposre]",
        r"(?:\.xox[a-z])?-[A-Za-z0-9\-]{20,}+",
        not_after=_ALNUM_DASH,
        check=_slack_ok,
    ),
    # legacy workspace and app tokens: ``xoxa-`` / ``xoxr-``, an optional digit, 8-19 more
    _rule("slack-token", "xox[ar]-", r"(?:\d-)?[0-9A-Za-z]{8,19}(?![A-Za-z0-9\-])",
          not_after=_ALNUM_DASH, check=_short_slack_ok),
    _rule("slack-token", "xapp-", r"\d-[A-Za-z0-9\-]{10,}+", not_after=_ALNUM_DASH),
    _rule(
        "slack-webhook",
        r"hooks\.slack\.com/",
        r"(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/\-]{20,}+)",
        not_after=None,
        group="s",
    ),
    _rule(
        "discord-webhook",
        "discord",
        r"(?:app)?\.com/api/webhooks/(?P<s>\d{5,30}/[A-Za-z0-9_\-]{20,}+)",
        not_after=None,
        group="s",
    ),
    # Microsoft Teams incoming webhook: the path after ``webhookb2/`` (two GUIDs joined
    # by ``@``, ``IncomingWebhook/``, 32 characters, a GUID); the tenant host stays.
    _rule(
        "teams-webhook",
        r"webhook\.office\.com/",
        r"webhookb2/(?P<s>[A-Za-z0-9\-]{36}@[A-Za-z0-9\-]{36}/IncomingWebhook/[A-Za-z0-9]{32}"
        r"/[A-Za-z0-9\-]{36})(?![A-Za-z0-9\-])",
        not_after=None,
        group="s",
    ),
    _rule(
        "anthropic-key",
        "sk-ant-",
        r"[A-Za-z0-9_\-]{20,}+",
        not_after=_ALNUM_DASH,
        check=_anthropic_ok,
    ),
    _rule("openai-key", "sk-", r"[A-Za-z0-9_\-]{20,}+", not_after=_ALNUM_DASH, check=_openai_ok),
    _rule("stripe-key", "sk_", r"(?:live|test)_[A-Za-z0-9]{10,}+"),
    _rule("stripe-key", "rk_", r"(?:live|test)_[A-Za-z0-9]{10,}+"),
    _rule("stripe-key", "whsec_", r"[A-Za-z0-9+/=]{20,}+"),
    _rule("twilio-api-key", "SK", r"[0-9a-fA-F]{32}(?![0-9A-Za-z])"),
    _rule(
        "sendgrid-key",
        r"SG\.",
        # SG.<22>.<43>; or 66 characters of gitleaks' wider alphabet (``=`` and ``.`` too)
        r"(?:[A-Za-z0-9_\-]{16,32}+\.[A-Za-z0-9_\-]{16,64}+(?![A-Za-z0-9_\-])"
        r"|[A-Za-z0-9=_\-.]{65}[A-Za-z0-9=_\-](?![A-Za-z0-9=_\-.]))",
    ),
    _rule("huggingface-token", "hf_", r"[A-Za-z0-9]{30,40}+(?![A-Za-z0-9_])"),
    _rule("shopify-token", "shp", r"(?:at|ss|ca|pa)_[0-9a-fA-F]{32}(?![0-9A-Za-z])"),
    _rule("mailgun-key", "key-", r"[0-9a-f]{32}(?![0-9A-Za-z])", not_after=_ALNUM_DASH),
    _rule("huggingface-token", "api_org_", r"[A-Za-z0-9]{34}(?![A-Za-z0-9_])"),
    _rule("groq-key", "gsk_", r"[A-Za-z0-9]{52}(?![A-Za-z0-9_])"),
    _rule("xai-key", "xai-", r"[A-Za-z0-9]{80}(?![A-Za-z0-9_])", not_after=_ALNUM_DASH),
)
