"""The document filter: the sidebar's fuzzy finder over repository, path, name and
headings (:class:`FilterIndex`, re-exported by :mod:`memlens.core.types`)."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memlens.core.details import _Keys
    from memlens.core.types import DocumentSummary


_SEPARATORS = re.compile(r"[\s_-]+")
_WORDS = re.compile(r"[a-z0-9]+")


def _norm(text: str) -> str:
    """Lower case, with runs of blanks, ``-`` and ``_`` as one space (``/`` and ``.`` kept)."""
    return _SEPARATORS.sub(" ", text.lower()).strip()


def _keys(d: DocumentSummary) -> _Keys:
    from memlens.core.details import _Keys  # built when the finder first ranks (not at import)

    path = d.path
    stem = path[:-3] if path.lower().endswith(".md") else path
    base = posixpath.basename(path)
    base_stem = posixpath.basename(stem)
    repo = d.repository
    exact = {_norm(x) for x in (base, base_stem, path, stem, f"{repo}/{path}", f"{repo}/{stem}")}
    labels: list[str] = []
    for text in [d.name or "", *d.headings]:
        for part in text.split(" > "):
            n = _norm(part)
            if n and n not in labels:
                labels.append(n)
    return _Keys(repository=repo, exact=frozenset(exact), base=_norm(base), path=_norm(path),
                 labels=tuple(labels), label_text="\n" + "\n".join(labels),
                 words=" " + " ".join(_WORDS.findall(path.lower())),
                 label_words=" " + " ".join(w for lab in labels for w in _WORDS.findall(lab)))


def _words_prefix(query_words: list[str], words: str) -> bool:
    return bool(query_words) and all(f" {q}" in words for q in query_words)


def _cover(query: str, text: str) -> float:
    return len(query) / max(len(text), len(query), 1)


# Score bands (the best band decides; within a band, the closer fit ranks first).
EXACT = 100.0  # the basename or path, with or without ".md" and the repository
EXACT_LABEL = 96.0  # the front-matter name or a heading
PREFIX_BASE = 90.0  # ..93: the basename starts with the query
PREFIX_PATH = 88.0  # ..90: the path ("notes/ret")
PREFIX_LABEL = 84.0  # ..86: the name or a heading
WORDS_PATH = 81.0  # ..82: every query word starts a word of the path ("api conv")
WORDS_LABEL = 80.0  # ..81: every query word starts a word of the name or headings
FUZZY_TOP = 79.0  # fuzzy scores are scaled into 0..79
FUZZY_CUTOFF = 60.0
"""Fuzzy matches below this mix score are left out. On the finder table plus 14
typo queries: 45 keeps 58/59 top-1 but lists 19 documents for "testing" and 12
for "eror handling"; 60 keeps 58/59 and lists 2 for each; 65 drops to 55/59."""

FUZZY_WRATIO_FLOOR = 48.0
"""...and WRatio itself must reach this: partial_ratio alone is lenient with short
queries ("perf" gets 75, WRatio 45, against every lanternfish document). Measured
as for the cutoff: floor 45 lists 14 documents for "perf"; 48 lists 2 and keeps
58/59 top-1; 50 loses "datquality"; 55 keeps only 54/59."""

FUZZY_WRATIO = 0.5
"""Weight of WRatio in the fuzzy mix (the rest is partial_ratio). Measured on the
finder table of ``tests/test_finder.py`` (45 queries) and 14 more typo queries,
top-1: WRatio alone 43/45 and 11/14; 0.75: 45/45, 13/14 (MRR .946); 0.5 and 0.25:
45/45, 13/14 (MRR .952); partial_ratio alone 45/45, 12/14."""


def tier_score(query: str, keys: _Keys, qwords: list[str] | None = None) -> float | None:
    """The exact/prefix score of a normalised ``query`` for one candidate (None: neither).

    ``qwords`` are the words of ``query`` (computed once by the caller).
    """
    if query in keys.exact:
        return EXACT
    if query in keys.labels:
        return EXACT_LABEL
    if keys.base.startswith(query):
        return PREFIX_BASE + 3 * _cover(query, keys.base)
    if keys.path.startswith(query):
        return PREFIX_PATH + 2 * _cover(query, keys.path)
    if "\n" + query in keys.label_text:
        best = max(_cover(query, lab) for lab in keys.labels if lab.startswith(query))
        return PREFIX_LABEL + 2 * best
    if qwords is None:
        qwords = _WORDS.findall(query)
    if _words_prefix(qwords, keys.words):
        return WORDS_PATH + _cover(query, keys.path)
    if _words_prefix(qwords, keys.label_words):
        return WORDS_LABEL + 1 / (1 + len(keys.labels))
    return None


@dataclass
class FilterIndex:
    """A cached candidate list for the fuzzy "go to document" filter.

    :meth:`MemoryService.filter_documents` re-reads every document and every
    heading on each call; a UI filtering as the user types builds this once per
    data change (:meth:`MemoryService.build_filter_index`) and then only ranks;
    it is the only implementation of the filter (the TUI's ``/`` box and
    ``memlens docs --filter``).

    Ranking, best band first (see the constants above): an exact basename or
    path; an exact front-matter name or heading; a prefix of the basename, the
    path, the name or a heading; every query word starting a word of the path,
    name or headings; then fuzzy: a mix of rapidfuzz WRatio and partial_ratio
    over repository, path, name and headings (``choices``), cutoff 60 (and WRatio
    at least 48). A query
    word naming exactly one repository (``tidewater`` for
    ``-home-dev-projects-tidewater-api``, see :meth:`match_repository`), or a
    leading ``repository/`` segment, narrows the search to it. Ties keep
    document order (repository, then path). The scan runs in slices so a thread
    doing it gives the interpreter lock back between slices.
    """

    include_tombstoned: bool
    candidates: list[DocumentSummary] = field(default_factory=list)
    choices: list[str] = field(default_factory=list)
    _keys: list[_Keys] | None = field(default=None, repr=False, compare=False)

    SLICE = 1000

    @staticmethod
    def match_repository(name: str, repositories: Iterable[str]) -> list[str]:
        """Repositories ``name`` may mean, best kind of match only.

        The full name (any case), else those whose name *ends* with ``name`` on a
        ``-`` boundary (``tidewater-api``), else those containing it on ``-``
        boundaries (``tidewater``). A path (``/home/dev/app``) is turned into its
        Claude slug first. Sorted; empty when nothing matches.
        """
        repos = sorted(set(repositories))
        raw = name.strip()
        if not raw:
            return []
        if raw in repos:
            return [raw]
        if raw.startswith(("/", "~")):
            from memlens.core.ingest.sources import claude_slug

            slug = claude_slug(os.path.expanduser(raw).rstrip("/") or "/")
            if slug in repos:
                return [slug]
        key = re.sub(r"[^a-z0-9]+", "-", raw.lower()).strip("-")
        if not key:
            return []
        lowered = [(r, "-" + r.lower().strip("-") + "-") for r in repos]
        same = [r for r, low in lowered if low == f"-{key}-"]
        if same:
            return same
        suffix = [r for r, low in lowered if low.endswith(f"-{key}-")]
        if suffix:
            return suffix
        return [r for r, low in lowered if f"-{key}-" in low]

    def prepare(self) -> FilterIndex:
        """Normalise every candidate's fields now (else the first :meth:`filter` does)."""
        if self._keys is None:
            self._keys = [_keys(c) for c in self.candidates]
        return self

    def _repository_hint(self, text: str) -> tuple[str, str] | None:
        """(repository, the rest of the query) when a word of ``text`` names one repository."""
        repos = {c.repository for c in self.candidates}
        words = text.split()
        for i, word in enumerate(words):
            head, sep, tail = word.partition("/")
            for token, rest in ((word, ""), (head, tail)) if sep else ((word, ""),):
                if len(token.strip("-")) < 3:
                    continue
                found = self.match_repository(token, repos)
                if len(found) == 1:
                    return found[0], " ".join([*words[:i], *([rest] if rest else []),
                                               *words[i + 1:]])
        return None

    def filter(self, text: str, *, limit: int = 200,
               cutoff: float = FUZZY_CUTOFF) -> list[tuple[DocumentSummary, float]]:
        """Documents matching ``text``, best first, with their score (0-100]."""
        if not text.strip():
            return [(c, 100.0) for c in self.candidates[:limit]]
        self.prepare()
        hint = self._repository_hint(text)
        if hint is not None:
            repo, rest = hint
            allowed = [i for i, k in enumerate(self._keys or []) if k.repository == repo]
            if not rest.strip():
                return [(self.candidates[i], 100.0) for i in allowed[:limit]]
            found = self._rank(rest, allowed, limit, cutoff)
            if found:
                return found
        return self._rank(text, None, limit, cutoff)

    def _rank(self, text: str, allowed: list[int] | None, limit: int,
              cutoff: float) -> list[tuple[DocumentSummary, float]]:
        import time

        from rapidfuzz import fuzz, process, utils

        keys = self._keys or []
        query = _norm(text)
        fuzzy_query = utils.default_process(text)
        order = allowed if allowed is not None else list(range(len(keys)))
        qwords = _WORDS.findall(query)
        scored: list[tuple[float, int]] = []
        rest: list[int] = []
        for start in range(0, len(order), self.SLICE):
            part = order[start:start + self.SLICE]
            for i in part:
                s = tier_score(query, keys[i], qwords)
                if s is None:
                    rest.append(i)
                else:
                    scored.append((s, i))
            time.sleep(0)  # let other threads (the event loop) run between slices
        if fuzzy_query:
            # Only what can pass is scored in full: WRatio below its floor is dropped
            # (rapidfuzz returns 0 under score_cutoff and the exact score above it), and
            # partial_ratio is computed for the rest only, from the least that can still
            # reach ``cutoff`` with WRatio at 100. Same scores, same list; at 10,000
            # documents about a third of the time (``tests/test_finder.py``).
            floor_b = max(0.0, (cutoff - FUZZY_WRATIO * 100.0) / (1 - FUZZY_WRATIO))
            for start in range(0, len(rest), self.SLICE):
                part = rest[start:start + self.SLICE]
                w = process.cdist([fuzzy_query], [self.choices[i] for i in part],
                                  scorer=fuzz.WRatio, processor=None, workers=1,
                                  score_cutoff=FUZZY_WRATIO_FLOOR)[0]
                kept = [(i, float(a)) for i, a in zip(part, w, strict=True)
                        if a >= FUZZY_WRATIO_FLOOR]
                if kept:
                    p = process.cdist([fuzzy_query], [self.choices[i] for i, _ in kept],
                                      scorer=fuzz.partial_ratio, processor=None,
                                      workers=1, score_cutoff=floor_b)[0]
                    for (i, a), b in zip(kept, p, strict=True):
                        mix = FUZZY_WRATIO * a + (1 - FUZZY_WRATIO) * float(b)
                        if mix >= cutoff:
                            scored.append((mix * FUZZY_TOP / 100.0, i))
                time.sleep(0)
        # Best score first; ties keep document order.
        scored.sort(key=lambda si: (-si[0], si[1]))
        return [(self.candidates[i], round(score, 3)) for score, i in scored[:limit]]
