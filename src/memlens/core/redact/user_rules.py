"""Redaction rules the user adds in the config file (``[[redact.rules]]``).

Each rule has a ``name`` (the marker kind: ``[REDACTED:<name>]``), a ``pattern`` (a Python
regular expression for the secret; when it has capture groups, group 1 is the secret
and the rest of the match is kept), optional ``keywords`` and an optional
``min_entropy``. A rule fires on a match only when, with ``keywords``, one of them
(case-insensitive) occurs *near* the match: on the same line, at most
:data:`NEAR_CHARS` characters before its start or after its end; and, with
``min_entropy``, the secret has at least that Shannon entropy in bits per character.

Where built-in rules find the same text, the built-in kind names the marker (user rules
rank after every built-in one); either way the text is replaced.

Guards against a catastrophic pattern (Python's ``re`` has no time limit): a pattern
is at most :data:`MAX_PATTERN_CHARS` characters, may not match the empty string, and a
repeated group (``(...)*``, ``(...)+``, ``(...){n,}``) may hold neither a quantifier nor
``|`` (the shapes of exponential backtracking such as ``(a+)+`` and ``(a|a)*``).

The engine (:mod:`memlens.core.redact.engine`) applies the rules installed with
:func:`install`; the service installs the rules of its settings when it is created.
This module is light: it never loads the built-in rules.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

__all__ = ["MAX_PATTERN_CHARS", "NEAR_CHARS", "RULE_KEYS", "UserRule", "UserRuleError",
           "active", "fingerprint", "install", "parse_rule", "scan", "using"]

MAX_PATTERN_CHARS = 300
NEAR_CHARS = 80
RULE_KEYS = ("name", "pattern", "keywords", "min_entropy")
_PRIO_USER = 98  # after every built-in kind (`_PRIO_CONTEXT` = 97)
_NAME_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?")
# A repeated group holding a quantifier or an alternation (escapes and classes skipped).
_NESTED = re.compile(r"\((?:[^()\\\[]|\\.|\[(?:[^\]\\]|\\.)*\])*?(?:[*+|]|\{\d*,?\d*\})"
                     r"(?:[^()\\\[]|\\.|\[(?:[^\]\\]|\\.)*\])*\)(?:[*+]|\{\d*,\d*\})")


class UserRuleError(ValueError):
    """A ``[[redact.rules]]`` entry is invalid; the message says what is wrong."""


@dataclass(frozen=True)
class UserRule:
    """One user redaction rule (see the module docstring)."""

    name: str
    pattern: str
    keywords: tuple[str, ...] = ()
    min_entropy: float | None = None

    def as_json(self) -> dict[str, object]:
        """``{"name", "pattern", "keywords", "min_entropy"}``."""
        return {"name": self.name, "pattern": self.pattern, "keywords": list(self.keywords),
                "min_entropy": self.min_entropy}


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def parse_rule(raw: object, builtin_kinds: Iterable[str] = ()) -> UserRule:
    """Check one ``[[redact.rules]]`` table and return its rule.

    Raises:
        UserRuleError: a missing name or pattern, a wrong type, an unknown key, a bad
            or unsafe regular expression, or a name taken by a built-in kind.
    """
    if not isinstance(raw, dict):
        raise UserRuleError("a rule must be a table with `name` and `pattern`")
    unknown = sorted(set(raw) - set(RULE_KEYS))
    if unknown:
        raise UserRuleError(f"unknown key `{unknown[0]}` (valid: {', '.join(RULE_KEYS)})")
    name = raw.get("name")
    if name is None:
        raise UserRuleError("missing `name`")
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise UserRuleError(f"`name` must be 1-40 lower-case letters, digits or '-', got {name!r}")
    if name in set(builtin_kinds):
        raise UserRuleError(f"`name` {name!r} is a built-in kind; choose another")
    pattern = raw.get("pattern")
    if pattern is None:
        raise UserRuleError("missing `pattern`")
    if not isinstance(pattern, str):
        raise UserRuleError(f"`pattern` must be a string, got {pattern!r}")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise UserRuleError(f"`pattern` is {len(pattern)} characters, over the limit of"
                            f" {MAX_PATTERN_CHARS}")
    try:
        rx = _compiled(pattern)
    except re.error as exc:
        raise UserRuleError(f"bad regular expression in `pattern`: {exc}") from None
    if rx.match("") is not None:
        raise UserRuleError("`pattern` matches the empty string")
    if _NESTED.search(pattern):
        raise UserRuleError("`pattern` repeats a group that holds a quantifier or '|'"
                            " (catastrophic backtracking); repeat the inner part only")
    kws = raw.get("keywords", [])
    if not isinstance(kws, list) or not all(isinstance(k, str) and k.strip() for k in kws):
        raise UserRuleError(f"`keywords` must be a list of non-empty strings, got {kws!r}")
    ent = raw.get("min_entropy")
    if ent is not None and (isinstance(ent, bool) or not isinstance(ent, (int, float))
                            or not 0 <= ent <= 8):
        raise UserRuleError(f"`min_entropy` must be a number from 0 to 8, got {ent!r}")
    return UserRule(name, pattern, tuple(k.strip().lower() for k in kws),
                    None if ent is None else float(ent))


_ACTIVE: tuple[UserRule, ...] = ()


def install(rules: Sequence[UserRule]) -> None:
    """Make ``rules`` the user rules every later redaction applies (process-wide)."""
    global _ACTIVE
    _ACTIVE = tuple(rules)


_USING: contextvars.ContextVar[tuple[UserRule, ...] | None] = contextvars.ContextVar(
    "memlens_user_rules", default=None)


def active() -> tuple[UserRule, ...]:
    """The user rules redaction applies here: those of :func:`using`, else the installed."""
    rules = _USING.get()
    return _ACTIVE if rules is None else rules


@contextlib.contextmanager
def using(rules: Sequence[UserRule]) -> Iterator[None]:
    """Apply ``rules`` instead of the installed ones inside the block (this thread or
    task only: other threads keep the installed rules)."""
    token = _USING.set(tuple(rules))
    try:
        yield
    finally:
        _USING.reset(token)


def fingerprint(rules: Sequence[UserRule]) -> str:
    """A short hash naming ``rules`` (empty string for none): what the redaction applied
    beyond the built-in rules."""
    if not rules:
        return ""
    blob = json.dumps([r.as_json() for r in rules], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _entropy(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _near(text: str, start: int, end: int, keywords: tuple[str, ...]) -> bool:
    ls = text.rfind("\n", 0, start) + 1
    le = text.find("\n", end)
    le = len(text) if le < 0 else le
    window = text[max(ls, start - NEAR_CHARS):min(le, end + NEAR_CHARS)].lower()
    return any(k in window for k in keywords)


def scan(text: str, out: list[tuple[int, int, int, str]],
         rules: Sequence[UserRule] | None = None) -> None:
    """Append a candidate ``(start, end, priority, name)`` for each secret a rule finds."""
    for rule in active() if rules is None else rules:
        rx = _compiled(rule.pattern)
        for m in rx.finditer(text):
            g = 1 if rx.groups and m.group(1) is not None else 0
            s, e = m.span(g)
            if s >= e:
                continue
            if rule.keywords and not _near(text, s, e, rule.keywords):
                continue
            if rule.min_entropy is not None and _entropy(text[s:e]) < rule.min_entropy:
                continue
            out.append((s, e, _PRIO_USER, rule.name))
