"""How many of a question's words its answer already contains (a set-difficulty gauge).

A retrieval set whose paraphrase questions reuse the answer's words measures lexical
search twice and calls it semantic; this module gives the figure that shows it. The
definition is the one issue 36 used on the held-out corpus: the mean, over questions,
of the fraction of a question's *content words* (lower-cased, stop words and words
under 3 letters dropped) that occur anywhere in the answer document.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memlens.core.search.query import STOP_WORDS

_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)


def content_words(text: str) -> list[str]:
    """The content words of ``text``, in order: lower-cased alphanumeric runs of at
    least 3 characters that are not stop words (``a_b`` and ``a-b`` give ``a``, ``b``)."""
    return [w for w in _WORD_RE.findall(text.lower()) if len(w) >= 3 and w not in STOP_WORDS]


def word_set(text: str) -> frozenset[str]:
    """Every lower-cased alphanumeric word of ``text`` (any length): what a question's
    words are looked up in."""
    return frozenset(_WORD_RE.findall(text.lower()))


def overlap(question: str, answer: str | frozenset[str]) -> float | None:
    """Fraction of ``question``'s content words found in ``answer`` (text or a
    :func:`word_set`); ``None`` when the question has no content word."""
    words = content_words(question)
    if not words:
        return None
    vocab = answer if isinstance(answer, frozenset) else word_set(answer)
    return sum(1 for w in words if w in vocab) / len(words)


def shared_words(question: str, answer: str | frozenset[str]) -> list[str]:
    """The content words of ``question`` that occur in ``answer`` (first-seen order)."""
    vocab = answer if isinstance(answer, frozenset) else word_set(answer)
    return list(dict.fromkeys(w for w in content_words(question) if w in vocab))


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the defined values, or ``None`` when there are none."""
    got = [v for v in values if v is not None]
    return sum(got) / len(got) if got else None
