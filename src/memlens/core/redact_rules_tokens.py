"""The vendor-prefixed token rules, put together in priority order, and their scan.

The rules themselves live in family modules: `redact_rules_cloud` (cloud and
infrastructure), `redact_rules_dev` (code hosting, registries, developer
tools) and `redact_rules_saas` (chat, payments, messaging, AI). Earlier rules
win when spans overlap; prefixes differ between families, so the order between
families only decides the kind named for a merged span.
"""

from __future__ import annotations

import base64
import binascii
import re

from .redact_rules import _ALNUM_DASH, _Candidate, _rule, _TokenRule
from .redact_rules_cloud import CLOUD_RULES
from .redact_rules_dev import DEV_RULES
from .redact_rules_saas import SAAS_RULES


def _jwt_ok(secret: str) -> bool:
    header = secret.split(".", 1)[0]
    try:
        raw = base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))
    except (binascii.Error, ValueError):
        return False
    return raw.startswith(b"{") and b'"' in raw


_JWT_RULE = _rule(
    "jwt",
    "eyJ",
    r"[A-Za-z0-9_\-]{5,}+\.[A-Za-z0-9_\-]{5,}+\.[A-Za-z0-9_\-]*+",
    not_after=_ALNUM_DASH,
    check=_jwt_ok,
)

# Order is priority: when spans overlap, the earlier rule names the finding.
_TOKEN_RULES: tuple[_TokenRule, ...] = (*CLOUD_RULES, *DEV_RULES, *SAAS_RULES, _JWT_RULE)

_PRIO_TOKEN = 10


def _group_rules() -> tuple[tuple[re.Pattern[str], tuple[tuple[int, _TokenRule], ...]], ...]:
    """One scanning regex per first character, with the rules it stands for.

    Fewer passes over the text than one regex per rule; the rules are then
    tried one by one only where their group matched.
    """
    groups: dict[str, list[tuple[int, _TokenRule]]] = {}
    for prio, rule in enumerate(_TOKEN_RULES, start=_PRIO_TOKEN):
        first = rule.regex.pattern[0]
        assert first.isalnum(), rule.regex.pattern  # heads start with a literal
        groups.setdefault(first, []).append((prio, rule))
    return tuple(
        (re.compile("|".join(r.regex.pattern.replace("(?P<s>", "(?:") for _, r in rules)), tuple(rules))
        for rules in groups.values()
    )


_TOKEN_GROUPS = _group_rules()


def _scan_tokens(text: str, fast: str, out: list[_Candidate]) -> None:
    for scan, rules in _TOKEN_GROUPS:
        for hit in scan.finditer(fast):
            pos = hit.start()
            for prio, rule in rules:
                m = rule.regex.match(fast, pos) if len(rules) > 1 else hit
                if m is None:
                    continue
                s, e = m.span(rule.group) if rule.group else m.span()
                if rule.check is None or rule.check(text[s:e]):
                    out.append((s, e, prio, rule.kind))
