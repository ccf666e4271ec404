"""Token rules for code hosting, package registries and developer tools.

GitHub, GitLab, npm, PyPI, Linear, Atlassian, Notion, Docker Hub, Postman,
Sentry, 42 Intra (a family module of `redact_rules_tokens`).
"""

from __future__ import annotations

from memlens.core.redact.rules import _ALNUM_DASH, _rule, _TokenRule

DEV_RULES: tuple[_TokenRule, ...] = (
    _rule("github-token", "gh[pousr]_", r"[A-Za-z0-9]{36,251}+(?![A-Za-z0-9_])"),
    _rule("github-token", "github_pat_", r"[A-Za-z0-9_]{22,255}+(?![A-Za-z0-9_])"),
    _rule(
        "gitlab-token",
        "gl",
        r"(?:pat|dt|rt|ptt|cbt|soat|ffct|imt|oas|ft|agent)-[A-Za-z0-9_\-]{20,}+"
        r"(?:\.[A-Za-z0-9_\-]+)*+",
        not_after=_ALNUM_DASH,
    ),
    _rule("gitlab-token", "GR1348941", r"[A-Za-z0-9_\-]{20,}+", not_after=_ALNUM_DASH),
    _rule("npm-token", "npm_", r"[A-Za-z0-9]{36}(?![A-Za-z0-9_])"),
    _rule("pypi-token", "pypi-", r"[A-Za-z0-9_\-]{50,}+", not_after=_ALNUM_DASH),
    _rule("linear-key", "lin_api_", r"[A-Za-z0-9]{40}(?![A-Za-z0-9])"),
    _rule("atlassian-token", "ATATT3", r"[A-Za-z0-9_\-=]{100,}+", not_after=_ALNUM_DASH),
    _rule("notion-token", "ntn_", r"[0-9]{11}[A-Za-z0-9]{35}(?![A-Za-z0-9_])"),
    _rule("docker-token", "dckr_pat_", r"[A-Za-z0-9_\-]{27,}+", not_after=_ALNUM_DASH),
    _rule("postman-key", "PMAK-", r"[a-f0-9]{24}-[a-f0-9]{34}(?![A-Za-z0-9])", not_after=_ALNUM_DASH),
    _rule("sentry-token", "sntry[su]_", r"[A-Za-z0-9_=+/\-]{40,}+", not_after=_ALNUM_DASH),
    _rule("intra42-secret", "s-s4t2", r"(?:ud|af)-[0-9a-fA-F]{64}(?![0-9A-Za-z])", not_after=_ALNUM_DASH),
)
