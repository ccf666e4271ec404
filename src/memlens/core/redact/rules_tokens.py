"""The vendor-prefixed token rules, put together in priority order, and their scan.

The rules themselves live in family modules: `redact_rules_cloud` (cloud and
infrastructure), `redact_rules_dev` (code hosting, registries, developer
tools), `redact_rules_saas` (chat, payments, messaging, AI) and
`redact_rules_vendors` (vendors found missing on gitleaks-generated samples,
issue 16). Earlier rules
win when spans overlap; prefixes differ between families, so the order between
families only decides the kind named for a merged span.
"""

from __future__ import annotations

import base64
import binascii
import re

from memlens.core.redact.rules import _ALNUM_DASH, _Candidate, _rule, _TokenRule
from memlens.core.redact.rules_cloud import CLOUD_RULES
from memlens.core.redact.rules_dev import DEV_RULES
from memlens.core.redact.rules_saas import SAAS_RULES
from memlens.core.redact.rules_vendors import ANCHORED_RULES, VENDOR_RULES, scan_anchored


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

# Order is priority: when spans overlap, the earlier rule names the finding. The
# vendor rules share the JWT rule's priority (their prefixes overlap no other
# rule's; a Mapbox ``sk.eyJ...`` starts before the JWT inside it, and on a tie the
# earlier span names the finding), so that every priority stays below
# `redact_rules._PRIO_URL` and the older rules keep theirs.
_BASE_RULES: tuple[_TokenRule, ...] = (*CLOUD_RULES, *DEV_RULES, *SAAS_RULES)
_PREFIX_RULES: tuple[_TokenRule, ...] = (*_BASE_RULES, _JWT_RULE, *VENDOR_RULES)
# Every token rule; the anchored ones (`redact_rules_vendors.scan_anchored`) last.
_TOKEN_RULES: tuple[_TokenRule, ...] = (*_PREFIX_RULES, *ANCHORED_RULES)

_PRIO_TOKEN = 10


def _group_rules() -> tuple[tuple[re.Pattern[str], tuple[tuple[int, _TokenRule], ...]], ...]:
    """One scanning regex per first character, with the rules it stands for.

    Fewer passes over the text than one regex per rule; the rules are then
    tried one by one only where their group matched.
    """
    groups: dict[str, list[tuple[int, _TokenRule]]] = {}
    for i, rule in enumerate(_PREFIX_RULES):
        prio = _PRIO_TOKEN + min(i, len(_BASE_RULES))
        first = rule.regex.pattern[0]
        assert first.isalnum() or first == "_", rule.regex.pattern  # heads start with a literal
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
    scan_anchored(text, fast, out, _PRIO_TOKEN + len(_BASE_RULES))
