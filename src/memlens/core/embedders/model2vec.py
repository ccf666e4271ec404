"""Model2Vec and the bundled static embedder."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy.typing as npt

from memlens.core.embedders.base import (
    _EXTRA_MODEL2VEC,
    STATIC_MODEL_NAME,
    EmbedderUnavailable,
    _dist_version,
    _hf_offline,
    _LocalModelEmbedder,
    _major_minor,
    batched,
)

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


class Model2VecEmbedder(_LocalModelEmbedder):
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
        self._source = source
        self._batch_size = batch_size
        self._model = loaded
        self._normalize = bool(loaded.normalize)
        self._lib_version = _dist_version("model2vec")
        self._set_model_folder(folder, dim=int(loaded.dim), max_length=loaded.max_length)
        self._lock = threading.Lock()

    def fingerprint(self) -> str:
        """Return e.g. ``model2vec:v1:dim=64:sha256=...:maxlen=512:lib=model2vec-0.10``.

        The model is identified by a digest of its files, so moving the folder keeps
        the fingerprint and replacing the weights changes it.
        """
        return f"{self._fingerprint_head()}:lib=model2vec-{_major_minor(self._lib_version)}"

    def _extra_info(self) -> dict[str, object]:
        return {
            **self._folder_info(self._source),
            "vocab_size": len(self._model.tokens),
            "embedding_dtype": str(self._model.embedding.dtype),
            "library": f"model2vec {self._lib_version}",
            "semantic": True,
        }

    def _embed(self, texts: list[str], *, query: bool) -> npt.NDArray[Any]:
        import numpy as np

        try:
            with self._lock:  # model2vec mutates tokenizer truncation state per call
                vectors = self._model.encode(
                    texts,
                    show_progress_bar=False,
                    use_multiprocessing=False,
                    batch_size=self._batch_size,
                )
        except Exception as exc:
            raise self._failed(exc) from exc
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self._dim)


class StaticEmbedder(_LocalModelEmbedder):
    """The distilled static model shipped inside memlens (``models/memlens-static-minilm``).

    Loaded with memlens' own torch-free loader (:mod:`memlens.core.embedders.static_model`:
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
        from memlens.core.embedders import static_model

        try:
            loaded = static_model.StaticModel.load(folder)
        except static_model.StaticModelError as exc:
            raise EmbedderUnavailable(f"the shipped static model cannot be loaded: {exc}") from None
        except Exception as exc:
            raise EmbedderUnavailable(
                f"the shipped static model cannot be loaded: {type(exc).__name__}: {exc}"
            ) from None
        self._model = loaded
        self._batch_size = batch_size
        self._set_model_folder(folder, dim=int(loaded.dim), max_length=loaded.max_length)

    def fingerprint(self) -> str:
        """Return e.g. ``static:v1:dim=256:sha256=...:maxlen=512:loader=memlens``."""
        return f"{self._fingerprint_head()}:loader=memlens"

    def _extra_info(self) -> dict[str, object]:
        details: dict[str, object] = {
            **self._folder_info("bundled"),
            "loader": "memlens.core.embedders.static_model (tokenizers + numpy)",
            "semantic": True,
        }
        model_info = self._model.info()
        for key in ("vocab_size", "stored_dtype", "normalize", "base_model", "pca_dims"):
            if key in model_info:
                details[key] = model_info[key]
        return details

    def _embed(self, texts: list[str], *, query: bool) -> npt.NDArray[Any]:
        import numpy as np

        try:
            parts = [self._model.encode(batch) for batch in batched(texts, self._batch_size)]
        except Exception as exc:
            raise self._failed(exc) from exc
        return np.vstack(parts)


