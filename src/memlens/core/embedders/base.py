"""Shared pieces of the embedders: errors, the protocol, helpers and the base class."""

from __future__ import annotations

import hashlib
import json
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, runtime_checkable

from memlens.core.embedders.names import EMBEDDER_NAMES as EMBEDDER_NAMES

if TYPE_CHECKING:  # numpy is imported where vectors are made (it costs ~50-170 ms)
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float32]
    """A float32 numpy array (a matrix of shape ``(n, dim)`` or a vector of shape ``(dim,)``)."""

METRIC: Final = "cosine"

STATIC_MODEL_NAME: Final = "memlens-static-minilm"
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
    import numpy as np

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


def _prefix_tag(document_prefix: str, query_prefix: str) -> str:
    """The fingerprint part naming the text prefixes: ``:prefix=<digest>``, or "" if none."""
    if not (query_prefix or document_prefix):
        return ""
    return f":prefix={_short_digest(document_prefix + chr(0) + query_prefix, 8)}"


def _dist_version(dist: str) -> str:
    import importlib.metadata  # ~10 ms; only embedders that report a library version need it

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


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
    names = sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file()
        and p.name not in _DIGEST_SKIP_NAMES
        and not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(folder).parts)
    )
    return files_digest(folder, names)


def files_digest(folder: Path, names: Sequence[str]) -> tuple[str, int]:
    """Hash the named files of ``folder`` (names and contents, in the order given).

    Hashing a model takes tens of milliseconds on every start of a process that embeds,
    so the result is remembered in the user cache folder, keyed by each file's path, size
    and modification time (the same trust as ingest's stat fast path); a cache that
    cannot be read or written is simply not used.

    Returns:
        A 16-hex-digit digest and the total size in bytes of the hashed files.
    """
    try:
        stats = [(folder / n).stat() for n in names]
    except OSError:
        stats = []
    key = json.dumps([str(folder.resolve()), [[n, st.st_size, st.st_mtime_ns]
                                               for n, st in zip(names, stats, strict=False)]])
    cache = _digest_cache_path()
    known = _read_digest_cache(cache) if stats else {}
    if key in known:
        digest, total = known[key]
        return str(digest), int(total)
    h = hashlib.sha256()
    total = 0
    for name in names:
        h.update(name.encode("utf-8") + b"\0")
        with (folder / name).open("rb") as fh:
            while block := fh.read(1 << 20):
                h.update(block)
                total += len(block)
        h.update(b"\0")
    digest = h.hexdigest()[:16]
    if stats:
        known[key] = [digest, total]
        _write_digest_cache(cache, known)
    return digest, total


def _digest_cache_path() -> Path:
    env = os.environ.get("MEMLENS_CACHE_DIR")
    if env:
        return Path(env).expanduser() / "model-digests.json"
    import platformdirs

    return platformdirs.user_cache_path("memlens") / "model-digests.json"


def _read_digest_cache(path: Path) -> dict[str, list[Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, list) and len(v) == 2} \
        if isinstance(data, dict) else {}


def _write_digest_cache(path: Path, data: dict[str, list[Any]]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(dict(list(data.items())[-32:])), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


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
        import numpy as np

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


class _LocalModelEmbedder(BaseEmbedder):
    """A model loaded from a local folder: a fixed dimension and a digest of its files.

    Subclasses call :meth:`_set_model_folder` once the model is loaded; the digest
    identifies the model, so moving the folder keeps the fingerprint and replacing
    the weights changes it.
    """

    _folder: Path
    _dim: int
    _max_length: int | None
    _digest: str
    _size: int

    def _set_model_folder(self, folder: Path, *, dim: int, max_length: int | None) -> None:
        self._folder = folder
        self._dim = dim
        self._max_length = max_length
        self._digest, self._size = _folder_digest(folder)

    @property
    def dim(self) -> int:
        """Model dimension."""
        return self._dim

    def _folder_info(self, source: str) -> dict[str, object]:
        """The ``info()`` fields every folder-loaded model shares."""
        return {"path": str(self._folder), "source": source, "size_bytes": self._size,
                "max_length": self._max_length}

    def _fingerprint_head(self) -> str:
        """``<name>:v<version>:dim=...:sha256=...:maxlen=...``: what every folder model shares."""
        return (
            f"{self.name}:v{self.version}:dim={self._dim}:sha256={self._digest}"
            f":maxlen={self._max_length}"
        )

    def _failed(self, exc: Exception) -> EmbeddingError:
        """The error for an exception the model's library raised while encoding."""
        return EmbeddingError(f"the {self.name} embedder failed: {type(exc).__name__}: {exc}")
