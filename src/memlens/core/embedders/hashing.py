"""The dependency-free hashing embedder."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

from memlens.core.embedders.base import BaseEmbedder, EmbedderConfigError, batched

# --------------------------------------------------------------------------- hashing

_WORD_RE: Final = re.compile(r"\w+(?:[.\-]\w+)*")
_CAMEL_RE: Final = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_SPLIT_RE: Final = re.compile(r"[._\-]+")

_STOPWORDS: Final = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves""".split()
)


class HashingEmbedder(BaseEmbedder):
    """Deterministic feature-hashing embedder (no model, no dependency beyond numpy).

    Each text becomes a sparse bag of features hashed into ``dim`` buckets with a
    stable hash (BLAKE2b, not Python's salted ``hash()``) and a hash-derived sign, so
    vectors are identical across processes, machines and Python versions:

    * **words**: lowercased ``\\w+`` tokens, minus a short English stop-word list
      (kept when a text has nothing else);
    * **identifiers**: a token such as ``busy_timeout``, ``memlens.core.store.records``,
      ``camelCase`` or ``kebab-case`` is kept whole *and* split into its parts
      (``busy`` + ``timeout``), so ``busy_timeout``, ``busyTimeout`` and
      "busy timeout" all share features;
    * **character n-grams** (default 3-grams of each ``<word>``, padded), which
      give partial credit to morphological variants (``index``/``indexing``,
      ``migrate``/``migration``) and to typos.

    Term counts are damped (``1 + ln(tf)``); the word block and the n-gram block are
    each L2-normalised, mixed (n-grams at half weight) and the result normalised.

    What it can match: shared words, shared identifiers and their parts, word-form
    variants and near-spellings. What it cannot: synonyms and paraphrases
    ("DB locked" vs "database busy"), other languages, meaning in general. It is the
    always-available fallback; use a model-based embedder for semantic recall.
    """

    name = "hashing"
    version = "1"
    model = "feature-hashing"

    WORD_WEIGHT: Final = 1.0
    NGRAM_WEIGHT: Final = 0.5
    _CACHE_LIMIT: Final = 1 << 17
    _SLICE: Final = 2048

    def __init__(self, *, dim: int = 384, ngram: int = 3) -> None:
        """Create the embedder.

        Args:
            dim: Number of hash buckets (vector dimension), 8..8192.
            ngram: Character n-gram size, 2..6.

        Raises:
            EmbedderConfigError: If an argument is out of range.
        """
        if not 8 <= dim <= 8192:
            raise EmbedderConfigError(f"hashing embedder: dim must be between 8 and 8192, got {dim}")
        if not 2 <= ngram <= 6:
            raise EmbedderConfigError(f"hashing embedder: ngram must be between 2 and 6, got {ngram}")
        self._dim = dim
        self._ngram = ngram
        self._cache: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {}

    @property
    def dim(self) -> int:
        """Vector dimension (number of hash buckets)."""
        return self._dim

    def fingerprint(self) -> str:
        """Return e.g. ``hashing:v1:dim=384:ngram=3:hash=blake2b64:features=w+id+c:sw=en1``."""
        return (
            f"hashing:v{self.version}:dim={self._dim}:ngram={self._ngram}"
            f":hash=blake2b64:features=w+id+c:sw=en1"
        )

    def _extra_info(self) -> dict[str, object]:
        return {
            "ngram": self._ngram,
            "features": "words, code identifiers and their parts, character n-grams",
            "semantic": False,
        }

    @staticmethod
    def _parts(token: str) -> list[str]:
        parts: list[str] = []
        for piece in _SPLIT_RE.split(token):
            if not piece:
                continue
            if piece.isascii() and not piece.islower() and not piece.isupper():
                parts.extend(m.lower() for m in _CAMEL_RE.findall(piece))
            elif piece.isascii() and any(c.isdigit() for c in piece) and not piece.isdigit():
                parts.extend(m.lower() for m in _CAMEL_RE.findall(piece))
            else:
                parts.append(piece.lower())
        return parts

    def _token_strings(self, token: str) -> tuple[list[str], list[str], list[str]]:
        """Return the (word/identifier, n-gram, stop-word) features of one token."""
        words: list[str] = []
        grams: list[str] = []
        stops: list[str] = []
        n = self._ngram
        parts = self._parts(token)
        if len(parts) > 1:
            words.append("i:" + token.lower())
        for part in parts:
            if part in _STOPWORDS:
                stops.append("w:" + part)
                continue
            words.append("w:" + part)
            padded = f"<{part}>"
            if len(padded) <= n:
                grams.append("c:" + padded)
            else:
                grams.extend("c:" + padded[k : k + n] for k in range(len(padded) - n + 1))
        return words, grams, stops

    @staticmethod
    def _hash(feature: str) -> int:
        return int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")

    def _token_keys(self, token: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        keys = self._cache.get(token)
        if keys is None:
            words, grams, stops = self._token_strings(token)
            h = self._hash
            keys = (tuple(map(h, words)), tuple(map(h, grams)), tuple(map(h, stops)))
            if len(self._cache) >= self._CACHE_LIMIT:
                self._cache.clear()
            self._cache[token] = keys
        return keys

    def features(self, text: str) -> tuple[Counter[str], Counter[str]]:
        """Return the (word/identifier, n-gram) feature counts of a text.

        For tests and for explaining a match; not part of the embedder contract.
        Word features look like ``w:timeout``, identifiers ``i:busy_timeout`` and
        n-grams ``c:<ti``.
        """
        words: Counter[str] = Counter()
        grams: Counter[str] = Counter()
        stops: list[str] = []
        for token in _WORD_RE.findall(text):
            w, g, st = self._token_strings(token)
            words.update(w)
            grams.update(g)
            stops.extend(st)
        if not words and stops:  # a text made only of stop words still gets a vector
            words.update(stops)
        return words, grams

    def _scatter(self, keys: list[int], tf: list[int], rows: list[int], n: int) -> npt.NDArray[np.float64]:
        """Hash features of ``n`` texts into an ``(n, dim)`` matrix with unit-norm rows."""
        import numpy as np

        out = np.zeros((n, self._dim), dtype=np.float64)
        if not keys:
            return out
        k = np.asarray(keys, dtype=np.uint64)
        bucket = (k % np.uint64(self._dim)).astype(np.intp)
        flat = np.asarray(rows, dtype=np.intp) * self._dim + bucket
        sign = np.where((k >> np.uint64(63)) != 0, -1.0, 1.0)
        weights = sign * (1.0 + np.log(np.asarray(tf, dtype=np.float64)))
        out += np.bincount(flat, weights=weights, minlength=n * self._dim).reshape(n, self._dim)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out /= np.where(norms > 0.0, norms, 1.0)
        return out

    def _embed(self, texts: list[str], *, query: bool) -> npt.NDArray[Any]:
        import numpy as np

        if len(texts) > self._SLICE:  # bound the temporary (n, dim) matrices
            return np.vstack([self._embed_slice(part) for part in batched(texts, self._SLICE)])
        return self._embed_slice(texts)

    def _embed_slice(self, texts: list[str]) -> npt.NDArray[np.float64]:
        w_keys: list[int] = []
        w_tf: list[int] = []
        w_rows: list[int] = []
        g_keys: list[int] = []
        g_tf: list[int] = []
        g_rows: list[int] = []
        token_keys = self._token_keys
        for row, text in enumerate(texts):
            w_all: list[int] = []
            g_all: list[int] = []
            stops: list[int] = []
            for token in _WORD_RE.findall(text):
                w, g, st = token_keys(token)
                w_all += w
                g_all += g
                if st:
                    stops += st
            words = Counter(w_all or stops)  # a text of only stop words still gets a vector
            grams = Counter(g_all)
            w_keys.extend(words.keys())
            w_tf.extend(words.values())
            w_rows.extend([row] * len(words))
            g_keys.extend(grams.keys())
            g_tf.extend(grams.values())
            g_rows.extend([row] * len(grams))
        n = len(texts)
        out = self.WORD_WEIGHT * self._scatter(w_keys, w_tf, w_rows, n)
        out += self.NGRAM_WEIGHT * self._scatter(g_keys, g_tf, g_rows, n)
        return out


