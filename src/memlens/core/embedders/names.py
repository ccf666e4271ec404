"""The embedder names the configuration accepts, without importing any embedder.

:mod:`memlens.core.embedders.registry` registers one factory per name in :data:`EMBEDDER_NAMES`
(``tests/test_embedding.py`` checks the two agree); the config check of ``[embedder]
name`` / ``MEMLENS_EMBEDDER`` only needs the names, so a lexical search does not load the
embedder backends to validate them.
"""

from __future__ import annotations

TYPE_CHECKING = False  # no `typing` import at run time (a one-shot search checks names)
if TYPE_CHECKING:
    from typing import Final

EMBEDDER_NAMES: Final[tuple[str, ...]] = (
    "hashing",
    "minilm",
    "model2vec",
    "openai",
    "sentence-transformers",
    "static",
)

ALIASES: Final[dict[str, str]] = {
    "hash": "hashing",
    "sentence_transformers": "sentence-transformers",
    "sentencetransformers": "sentence-transformers",
    "st": "sentence-transformers",
    "openai-compatible": "openai",
    "ollama": "openai",
    "onnx": "minilm",
    "minilm-onnx": "minilm",
}


def known_embedder(name: str) -> bool:
    """Whether ``name`` is ``auto``, a registered embedder or one of its aliases."""
    key = name.strip().lower()
    return key == "auto" or key in EMBEDDER_NAMES or key in ALIASES
