"""Cheap, named, swappable token *estimators*.

None of these is model tokenization. They exist so the chunker can bound chunk
sizes without loading a tokenizer: an estimate is a deterministic, fast,
monotone function of the text ("more text never costs fewer tokens"). Real
tokenizers differ by model; treat every figure here as an approximation.

Registered estimators (see :data:`ESTIMATORS`):

* ``chars4`` (default) -- ``ceil(len(text) / 4)``: one token per four code
  points, at least 1 for non-empty text, 0 for the empty string. Close to
  BPE tokenizers on English prose and Markdown; it *under*-estimates CJK text
  (where one character is often a whole token) and over-estimates long runs
  of whitespace.
* ``words`` -- ``ceil(1.3 * words)`` where a word is a maximal run of
  non-whitespace characters (``str.split()``). Ignores word length, so a long
  identifier or URL counts as one word.

Besides the plain ``estimator(text) -> int`` call, each estimator can build a
:class:`SpanCost` for one text: exact estimates of arbitrary slices
``text[start:end]`` without copying them, plus searches for the longest slice
that fits a budget. The chunker uses those to cut windows in linear time.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from array import array
from bisect import bisect_left
from collections.abc import Callable

__all__ = [
    "DEFAULT_ESTIMATOR",
    "ESTIMATORS",
    "Chars4Estimator",
    "Estimator",
    "SpanCost",
    "UnknownEstimatorError",
    "WordsEstimator",
    "estimate_tokens",
    "get_estimator",
    "register_estimator",
]

DEFAULT_ESTIMATOR = "chars4"


class UnknownEstimatorError(ValueError):
    """Raised by :func:`get_estimator` for a name that is not registered."""


class SpanCost(ABC):
    """Token estimates for slices of one fixed text.

    ``cost(start, end)`` must equal ``estimator(text[start:end])`` exactly and
    be monotone: widening a slice never lowers its cost.
    """

    @abstractmethod
    def cost(self, start: int, end: int) -> int:
        """Return the estimate of ``text[start:end]``.

        Args:
            start: Slice start (character index).
            end: Slice end (character index, exclusive).

        Returns:
            The estimated token count of the slice (0 when ``end <= start``).
        """

    def max_end(self, start: int, budget: int, limit: int) -> int:
        """Return the largest ``end`` in ``[start, limit]`` with ``cost(start, end) <= budget``.

        The default is an exponential then binary search: ``O(log n)`` cost calls
        over slices at most about twice as long as the answer.

        Args:
            start: Fixed slice start.
            budget: Token budget.
            limit: Largest allowed ``end``.

        Returns:
            The furthest end that fits; ``start`` when not even one character fits.
        """
        lo, step = start, 1
        # Exponential probing keeps the work proportional to the answer, not to `limit`.
        while True:
            probe = lo + step
            if probe >= limit:
                if self.cost(start, limit) <= budget:
                    return limit
                hi = limit
                break
            if self.cost(start, probe) > budget:
                hi = probe
                break
            lo, step = probe, step * 2
        while hi - lo > 1:  # cost(start, lo) <= budget < cost(start, hi), or lo == start
            mid = (lo + hi) // 2
            if self.cost(start, mid) <= budget:
                lo = mid
            else:
                hi = mid
        return lo

    def min_start(self, end: int, budget: int, floor: int) -> int:
        """Return the smallest ``start`` in ``[floor, end]`` with ``cost(start, end) <= budget``.

        Args:
            end: Fixed slice end.
            budget: Token budget.
            floor: Smallest allowed ``start``.

        Returns:
            The earliest start that fits; ``end`` when nothing fits.
        """
        if floor >= end:
            return end
        hi, step = end, 1
        while True:
            probe = hi - step
            if probe <= floor:
                if self.cost(floor, end) <= budget:
                    return floor
                lo = floor
                break
            if self.cost(probe, end) > budget:
                lo = probe
                break
            hi, step = probe, step * 2
        while hi - lo > 1:  # cost(hi, end) <= budget < cost(lo, end), or hi == end
            mid = (lo + hi) // 2
            if self.cost(mid, end) <= budget:
                hi = mid
            else:
                lo = mid
        return hi


class Estimator(ABC):
    """A named token estimator: ``estimator(text) -> int``.

    Subclasses set :attr:`name` and :attr:`description`, implement
    :meth:`__call__` and, for speed, override :meth:`span_cost`.
    """

    name: str = ""
    description: str = ""

    @abstractmethod
    def __call__(self, text: str) -> int:
        """Return the estimated token count of ``text`` (0 for ``""``)."""

    def span_cost(self, text: str) -> SpanCost:
        """Build a :class:`SpanCost` for ``text``.

        The generic implementation re-estimates slices, which is correct for any
        monotone estimator but costs ``O(len(slice))`` per query.

        Args:
            text: The text whose slices will be estimated.

        Returns:
            A span cost bound to ``text``.
        """
        return _SliceSpanCost(text, self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class _SliceSpanCost(SpanCost):
    def __init__(self, text: str, estimator: Callable[[str], int]) -> None:
        self._text = text
        self._estimator = estimator

    def cost(self, start: int, end: int) -> int:
        if end <= start:
            return 0
        return self._estimator(self._text[start:end])


class Chars4Estimator(Estimator):
    """``ceil(len(text) / 4)`` -- one token per four characters (not model tokenization)."""

    name = "chars4"
    description = "ceil(characters / 4); 0 for empty text. Not model tokenization."

    def __call__(self, text: str) -> int:
        """Return ``ceil(len(text) / 4)``."""
        return (len(text) + 3) // 4

    def span_cost(self, text: str) -> SpanCost:
        """Return an ``O(1)`` span cost: the estimate depends only on the slice length."""
        return _Chars4SpanCost()


class _Chars4SpanCost(SpanCost):
    def cost(self, start: int, end: int) -> int:
        return (end - start + 3) // 4 if end > start else 0

    def max_end(self, start: int, budget: int, limit: int) -> int:
        return max(start, min(limit, start + 4 * max(budget, 0)))

    def min_start(self, end: int, budget: int, floor: int) -> int:
        return min(end, max(floor, end - 4 * max(budget, 0)))


_WORD = re.compile(r"\S+")


def _words_to_tokens(words: int) -> int:
    return (words * 13 + 9) // 10  # ceil(1.3 * words) in integer arithmetic


class WordsEstimator(Estimator):
    """``ceil(1.3 * words)``, words being whitespace-separated runs (not model tokenization)."""

    name = "words"
    description = "ceil(1.3 x whitespace-separated words). Not model tokenization."

    def __call__(self, text: str) -> int:
        """Return ``ceil(1.3 * len(text.split()))``."""
        return _words_to_tokens(len(text.split()))

    def span_cost(self, text: str) -> SpanCost:
        """Return a span cost backed by the sorted word-start offsets (``O(log n)`` per query)."""
        return _WordsSpanCost(text)


class _WordsSpanCost(SpanCost):
    def __init__(self, text: str) -> None:
        self._text = text
        self._starts = array("q", (m.start() for m in _WORD.finditer(text)))

    def _words(self, start: int, end: int) -> int:
        if end <= start:
            return 0
        n = bisect_left(self._starts, end) - bisect_left(self._starts, start)
        text = self._text
        if start > 0 and not text[start].isspace() and not text[start - 1].isspace():
            n += 1  # the slice begins inside a word that started earlier
        return n

    def cost(self, start: int, end: int) -> int:
        return _words_to_tokens(self._words(start, end))


ESTIMATORS: dict[str, Estimator] = {}
"""Registry of estimators by name. Use :func:`register_estimator` to add one."""


def register_estimator(estimator: Estimator, *, replace: bool = False) -> None:
    """Register ``estimator`` under ``estimator.name``.

    Args:
        estimator: The estimator instance.
        replace: Allow replacing an estimator already registered under that name.

    Raises:
        ValueError: If the name is empty or already taken and ``replace`` is false.
    """
    if not estimator.name:
        raise ValueError("estimator has an empty name")
    if estimator.name in ESTIMATORS and not replace:
        raise ValueError(f"estimator {estimator.name!r} is already registered")
    ESTIMATORS[estimator.name] = estimator


def get_estimator(name: str) -> Estimator:
    """Return the registered estimator called ``name``.

    Args:
        name: Registry name, e.g. ``"chars4"``.

    Returns:
        The estimator; it is callable as ``estimator(text) -> int``.

    Raises:
        UnknownEstimatorError: If no estimator has that name.
    """
    try:
        return ESTIMATORS[name]
    except (KeyError, TypeError):
        known = ", ".join(sorted(ESTIMATORS))
        raise UnknownEstimatorError(f"unknown token estimator {name!r}; known: {known}") from None


register_estimator(Chars4Estimator())
register_estimator(WordsEstimator())


def estimate_tokens(text: str) -> int:
    """Estimate tokens with the default ``chars4`` estimator: ``ceil(len(text) / 4)``.

    This is a cheap approximation, not model tokenization.

    Args:
        text: Any text.

    Returns:
        0 for ``""``, else ``ceil(len(text) / 4)`` (at least 1).
    """
    return (len(text) + 3) // 4
