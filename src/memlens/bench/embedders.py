"""The embedders a bench compares: building them, skipping absent ones, timing them."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memlens.core.embedders.registry import Embedder, EmbeddingError, make_embedder

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class TimedEmbedder:
    """Wraps an embedder and adds up the time spent embedding documents and queries."""

    def __init__(self, inner: Embedder) -> None:
        """Wrap ``inner``."""
        self.inner = inner
        self.doc_seconds = 0.0
        self.doc_texts = 0
        self.query_seconds = 0.0
        self.queries = 0

    @property
    def name(self) -> str:
        """The wrapped embedder's name."""
        return self.inner.name

    @property
    def model(self) -> str:
        """The wrapped embedder's model."""
        return self.inner.model

    @property
    def dim(self) -> int:
        """The wrapped embedder's dimension."""
        return self.inner.dim

    @property
    def metric(self) -> str:
        """The wrapped embedder's metric."""
        return self.inner.metric

    @property
    def version(self) -> str:
        """The wrapped embedder's version."""
        return self.inner.version

    def fingerprint(self) -> str:
        """The wrapped embedder's fingerprint (vectors are the same)."""
        return self.inner.fingerprint()

    def info(self) -> dict[str, object]:
        """The wrapped embedder's info."""
        return self.inner.info()

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed documents, timing the call."""
        t = time.perf_counter()
        try:
            return self.inner.embed_documents(texts)
        finally:
            self.doc_seconds += time.perf_counter() - t
            self.doc_texts += len(texts)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Embed a query, timing the call."""
        t = time.perf_counter()
        try:
            return self.inner.embed_query(text)
        finally:
            self.query_seconds += time.perf_counter() - t
            self.queries += 1

    def reset(self) -> None:
        """Zero the counters."""
        self.doc_seconds = self.query_seconds = 0.0
        self.doc_texts = self.queries = 0


DEFAULT_EMBEDDERS: Final = ("hashing", "static", "minilm", "model2vec", "sentence-transformers")
"""Embedders tried by default, in order; unavailable ones are reported as skipped."""


@dataclass
class EmbedderSlot:
    """An embedder requested for a bench, built or skipped."""

    name: str
    embedder: Embedder | None = None
    reason: str | None = None
    load_seconds: float = 0.0
    options: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """Status, fingerprint, dimension, model size and load time."""
        if self.embedder is None:
            return {"name": self.name, "status": "skipped", "reason": self.reason}
        info = self.embedder.info()
        size = info.get("size_bytes")
        return {
            "name": self.name, "status": "ok", "model": self.embedder.model,
            "fingerprint": self.embedder.fingerprint(), "dim": self.embedder.dim,
            "model_bytes": int(size) if isinstance(size, int) else 0,
            "load_seconds": round(self.load_seconds, 4),
        }


def tokenlearn_test_model() -> Path | None:
    """The small model2vec test model of the ``tokenlearn-static-model`` package."""
    try:
        spec = find_spec("static_model")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc) / "model"
        if p.is_dir():
            return p
    return None


def resolve_embedders(names: Sequence[str] | None,
                      options: Mapping[str, Mapping[str, Any]] | None = None
                      ) -> list[EmbedderSlot]:
    """Build the requested embedders (default: every one this machine has).

    ``model2vec`` without a ``path``/``model`` option uses the
    ``tokenlearn-static-model`` test model; ``hashing`` defaults to 384 dimensions.
    With the default list, ``openai`` is listed as skipped (it needs an endpoint).

    Args:
        names: Embedder names, or None for :data:`DEFAULT_EMBEDDERS`.
        options: Per-name options passed to :func:`make_embedder`.

    Returns:
        One slot per name; ``embedder`` is None (with ``reason``) when unavailable.
    """
    opts_by = {k: dict(v) for k, v in (options or {}).items()}
    default = names is None
    if names is None:
        names = DEFAULT_EMBEDDERS
    wanted = list(names)
    out: list[EmbedderSlot] = []
    seen: set[str] = set()
    for raw in wanted:
        name = raw.strip().lower().replace("_", "-")
        if not name or name in seen:
            continue
        seen.add(name)
        opts = dict(opts_by.get(name, {}))
        slot = EmbedderSlot(name, options=opts)
        if name == "model2vec" and "path" not in opts and "model" not in opts:
            model = tokenlearn_test_model()
            if model is None:
                slot.reason = ("no model2vec model: install tokenlearn-static-model or pass a "
                               "model path in the config's [embedder] table")
                out.append(slot)
                continue
            opts["path"] = str(model)
            slot.options = opts
        t = time.perf_counter()
        try:
            slot.embedder = make_embedder(name, opts)
        except EmbeddingError as exc:
            slot.reason = str(exc)
        slot.load_seconds = time.perf_counter() - t
        out.append(slot)
    if default and "openai" not in seen:
        out.append(EmbedderSlot("openai", reason="not tried by default: it needs an endpoint; "
                                "pass --embedder openai with base_url in the config"))
    return out
