"""Query text for search: the FTS5 expression built from what the user typed, and
the spans of the query's words in a text (for highlighting an opened hit).

Part of :mod:`memlens.core.search.engine` (which re-exports these names).
"""

from __future__ import annotations

import re

STOP_WORDS = frozenset(
    """a an and are as at be by do does did for from has have how i if in into is it its
    me my of on or our so that the their them then there these this to was we were what
    when where which who why will with you your they he she his her him us can could would
    should about any some all""".split()
)

_TERM_RE = re.compile(r"[^\s\"'`,;()\[\]{}<>!?]+")
_PART_RE = re.compile(r"[^\W_]+", re.UNICODE)


def _quote(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


def build_fts_query(text: str, *, prefix: bool = True) -> str | None:
    """Turn user text into a safe FTS5 MATCH expression (None when nothing is searchable).

    Args:
        text: What the user typed.
        prefix: Let the last term match as a prefix (as-you-type search); only
            applied when the text does not end in whitespace or ``?`` (a finished
            question).

    One-letter fragments (the ``s`` of ``user's``) and stop words are dropped
    unless nothing else is left.
    """
    terms: list[list[str]] = []
    for raw in _TERM_RE.findall(text):
        parts = [p.lower() for p in _PART_RE.findall(raw)]
        if parts:
            terms.append(parts)
    if not terms:
        return None
    content = [t for t in terms if len(t) > 1 or (t[0] not in STOP_WORDS and len(t[0]) > 1)]
    if not content:
        content = terms
    ends_open = (prefix and bool(text) and not text[-1].isspace()
                 and not text.rstrip().endswith("?"))
    last_is_last = terms[-1] is content[-1]
    out: list[str] = []
    seen: set[str] = set()
    for i, parts in enumerate(content):
        phrase = _quote(" ".join(parts))
        if ends_open and last_is_last and i == len(content) - 1 and len(parts[-1]) >= 2:
            phrase += "*"
        if phrase not in seen:
            seen.add(phrase)
            out.append(phrase)
    return " OR ".join(out)


def identifiers_only(text: str) -> bool:
    """Whether every word of ``text`` is a code identifier (``busy_timeout``,
    ``X-Request-Id``, ``foo.bar()``, ``v1.2``): such a query asks where that string
    occurs, and a chunk merely near it in meaning is not a match."""
    terms = [_PART_RE.findall(raw) for raw in _TERM_RE.findall(text)]
    terms = [t for t in terms if t]
    return bool(terms) and all(len(t) > 1 for t in terms)


def fts_phrases(fts: str) -> list[str]:
    """The phrases of an expression made by :func:`build_fts_query`, in order (its
    phrases are lower-cased, so the ``" OR "`` between them never occurs inside one)."""
    return fts.split(" OR ")


def match_spans(text: str, query: str) -> list[tuple[int, int]]:
    """Where the query's words occur in ``text`` (for highlighting an opened hit).

    The query is split the way :func:`build_fts_query` splits it (stop words and
    one-letter fragments dropped); a word matches at the start of a word of the
    text, case-insensitively, once a common English suffix is cut off (a rough
    stand-in for the porter stemmer the index uses, so ``cache`` finds ``Caching``
    and ``invalidation`` finds ``invalidate``). Returns sorted, non-overlapping
    ``(start, end)`` spans of whole words of ``text``.
    """
    terms: list[str] = []
    for raw in _TERM_RE.findall(query):
        for part in _PART_RE.findall(raw):
            low = part.lower()
            if len(low) > 1 and low not in STOP_WORDS and low not in terms:
                terms.append(low)
    if not terms:
        return []
    stems = sorted({_rough_stem(t) for t in terms}, key=len, reverse=True)
    pattern = re.compile(r"(?<![^\W_])(?:" + "|".join(re.escape(t) for t in stems) + r")[^\W_]*",
                         re.IGNORECASE)
    return [m.span() for m in pattern.finditer(text)]


_SUFFIXES = ("ations", "ation", "ings", "ing", "ions", "ion", "ies", "ed", "es", "er", "ly",
             "s", "e")


def _rough_stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word
