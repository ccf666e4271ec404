"""Torch-free loader for the static embedding model shipped inside memlens.

The model in ``models/memlens-static-minilm/`` is a model2vec static model
distilled from ``sentence-transformers/all-MiniLM-L6-v2`` by
``tools/distill_static.py``. A static model is one vector per token of the
teacher's WordPiece vocabulary; a text's embedding is the mean of its tokens'
vectors, L2-normalised. This module reproduces model2vec's
``StaticModel.encode`` with only :mod:`tokenizers` and :mod:`numpy`, so memlens
gets semantic recall with no torch, no model2vec, no server and no download.

What is reproduced from model2vec 0.10 (``model2vec/model.py``):

* the text is first cut to ``max_length * median_token_length`` characters,
  where ``median_token_length`` is ``int(median(len(token)))`` over the
  vocabulary, then tokenised with ``add_special_tokens=False`` and truncation at
  ``max_length`` tokens (``max_length`` from ``config.json``, 512 if absent,
  ``null`` for no limit);
* the unknown token is dropped *after* truncation;
* the vectors of the remaining ids are averaged (optionally through the
  ``mapping``/``weights`` tensors of vocabulary-quantised models) and
  L2-normalised with ``norm + 1e-32`` when ``config.json`` says
  ``"normalize": true``; a text with no known token gives a zero row.

One deliberate difference: float16 and int8 weights are widened to float32 at
load and all arithmetic is float32, whereas model2vec averages a float16 model
in float16 and rounds its output to float16. The results therefore agree with
model2vec to float16 resolution (about 1e-3) for a float16 model, and within
1e-5 for a float32 one or when model2vec's matrix is widened the same way.
model2vec's int8 format stores no scale; a global scale cancels out under
normalisation, so none is needed.

The ``model.safetensors`` file is read by a small parser of the safetensors
format (8-byte little-endian header length, JSON header, raw little-endian
data) so the ``safetensors`` package is not needed at run time.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - typing only
    import numpy as np
    from numpy.typing import NDArray
    from tokenizers import Tokenizer

__all__ = [
    "DEFAULT_MAX_LENGTH",
    "MODEL_NAME",
    "StaticModel",
    "StaticModelError",
    "default_model_path",
]

MODEL_NAME = "memlens-static-minilm"
"""Folder name of the model shipped in the package."""

DEFAULT_MAX_LENGTH = 512
"""model2vec's default token limit when ``config.json`` has no ``max_length``."""

_WEIGHTS_FILE = "model.safetensors"
_TOKENIZER_FILE = "tokenizer.json"
_CONFIG_FILE = "config.json"

# safetensors dtype codes this loader accepts, as little-endian numpy dtypes.
_SAFETENSORS_DTYPES: dict[str, str] = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
}
_MAX_HEADER_BYTES = 100 * 1024 * 1024


class StaticModelError(Exception):
    """The model folder is missing, unreadable or not a model2vec static model."""


def default_model_path() -> Path:
    """Return the folder of the static model shipped with memlens.

    Returns:
        ``<package>/models/memlens-static-minilm`` next to this module.
    """
    return Path(__file__).parent / "models" / MODEL_NAME


def _read_safetensors(path: Path) -> dict[str, NDArray[Any]]:
    """Read every tensor of a ``.safetensors`` file into numpy arrays.

    Args:
        path: The file to read.

    Returns:
        Tensor name to array (read-only views on the file's bytes).

    Raises:
        StaticModelError: If the file is not a well-formed safetensors file or
            uses a dtype this loader does not know.
    """
    import numpy as np

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StaticModelError(f"cannot read {path}: {exc}") from exc
    if len(data) < 8:
        raise StaticModelError(f"{path} is too short to be a safetensors file")
    (header_len,) = struct.unpack("<Q", data[:8])
    if header_len > min(_MAX_HEADER_BYTES, len(data) - 8):
        raise StaticModelError(f"{path} has an invalid safetensors header length")
    try:
        header = json.loads(data[8 : 8 + header_len])
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StaticModelError(f"{path} has an unreadable safetensors header: {exc}") from exc
    if not isinstance(header, dict):
        raise StaticModelError(f"{path} has a safetensors header that is not an object")
    body = memoryview(data)[8 + header_len :]
    tensors: dict[str, NDArray[Any]] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        try:
            code = spec["dtype"]
            shape = tuple(int(d) for d in spec["shape"])
            begin, end = (int(o) for o in spec["data_offsets"])
        except (KeyError, TypeError, ValueError) as exc:
            raise StaticModelError(f"{path}: malformed entry for tensor {name!r}") from exc
        if code not in _SAFETENSORS_DTYPES:
            raise StaticModelError(f"{path}: tensor {name!r} has unsupported dtype {code}")
        dtype = np.dtype(_SAFETENSORS_DTYPES[code])
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if not 0 <= begin <= end <= len(body) or end - begin != count * dtype.itemsize:
            raise StaticModelError(f"{path}: tensor {name!r} has inconsistent offsets")
        tensors[name] = np.frombuffer(body[begin:end], dtype=dtype).reshape(shape)
    return tensors


def _unk_token_id(tokenizer: Tokenizer) -> int | None:
    """Return the id of the tokenizer's unknown token, as model2vec finds it.

    Args:
        tokenizer: A loaded ``tokenizers.Tokenizer``.

    Returns:
        The unknown token's id, or ``None`` if the model has none.
    """
    model = tokenizer.model
    if hasattr(model, "unk_token"):
        token = model.unk_token
        if token is None:
            return None
        found = tokenizer.token_to_id(token)
        return None if found is None else int(found)
    unk = json.loads(tokenizer.to_str())["model"].get("unk_id")
    return None if unk is None else int(unk)


class StaticModel:
    """A model2vec static embedding model, loaded without torch or model2vec.

    Use :meth:`load`; the constructor takes already-loaded parts.

    Attributes:
        path: Folder the model was loaded from.
        config: The parsed ``config.json``.
        normalize: Whether :meth:`encode` L2-normalises rows.
        max_length: Token limit per text, or ``None`` for no limit.
    """

    def __init__(
        self,
        *,
        path: Path,
        embeddings: NDArray[np.float32],
        tokenizer: Tokenizer,
        config: dict[str, Any],
        stored_dtype: str,
        weights: NDArray[np.float32] | None = None,
        mapping: NDArray[np.int64] | None = None,
    ) -> None:
        """Assemble a model from loaded parts.

        Args:
            path: Folder the parts came from (reported by :meth:`info`).
            embeddings: The token vectors, float32, shape ``(rows, dim)``.
            tokenizer: The model's tokenizer.
            config: The parsed ``config.json``.
            stored_dtype: numpy name of the dtype the vectors were stored in.
            weights: Per-token weights of a vocabulary-quantised model.
            mapping: Token id to row of ``embeddings`` for such a model.

        Raises:
            StaticModelError: If the parts do not fit together.
        """
        import numpy as np

        vocab = tokenizer.get_vocab()
        if mapping is None and embeddings.shape[0] != len(vocab):
            raise StaticModelError(f"{path}: {len(vocab)} tokens but {embeddings.shape[0]} vectors")
        self.path = path
        self.config = config
        self.normalize = bool(config.get("normalize", False))
        raw_max = config.get("max_length", DEFAULT_MAX_LENGTH)
        self.max_length: int | None = None if raw_max is None else int(raw_max)
        self._embeddings = embeddings
        self._weights = weights
        self._mapping = mapping
        self._stored_dtype = stored_dtype
        self._vocab_size = len(vocab)
        self._median_token_length = int(np.median([len(token) for token in vocab]))
        self._unk_id = _unk_token_id(tokenizer)
        tokenizer.no_padding()
        if self.max_length is None:
            tokenizer.no_truncation()
        else:
            tokenizer.enable_truncation(self.max_length)
        self._tokenizer = tokenizer
        self._sha256: str | None = None

    @classmethod
    def load(cls, path: str | Path | None = None) -> StaticModel:
        """Load a model2vec model folder from local disk (never the network).

        Args:
            path: The folder holding ``model.safetensors``, ``tokenizer.json``
                and ``config.json``; the shipped model if ``None``.

        Returns:
            The loaded model.

        Raises:
            StaticModelError: If the folder or a file in it is missing or
                malformed, or the ``tokenizers`` package is not installed.
        """
        import numpy as np

        folder = default_model_path() if path is None else Path(path)
        for name in (_WEIGHTS_FILE, _TOKENIZER_FILE, _CONFIG_FILE):
            if not (folder / name).is_file():
                raise StaticModelError(f"{folder} is not a static model folder: no {name}")
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - tokenizers is a dependency
            raise StaticModelError(
                "the static model needs the 'tokenizers' package: pip install tokenizers"
            ) from exc
        try:
            config = json.loads((folder / _CONFIG_FILE).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise StaticModelError(f"cannot read {folder / _CONFIG_FILE}: {exc}") from exc
        if not isinstance(config, dict):
            raise StaticModelError(f"{folder / _CONFIG_FILE} is not a JSON object")
        try:
            tokenizer = Tokenizer.from_file(str(folder / _TOKENIZER_FILE))
        except Exception as exc:  # tokenizers raises plain Exception subclasses
            raise StaticModelError(f"cannot load {folder / _TOKENIZER_FILE}: {exc}") from exc

        tensors = _read_safetensors(folder / _WEIGHTS_FILE)
        if "embeddings" not in tensors:
            raise StaticModelError(f"{folder / _WEIGHTS_FILE} has no 'embeddings' tensor")
        raw = tensors["embeddings"]
        if raw.ndim != 2 or raw.dtype.kind not in "fi":
            raise StaticModelError(f"{folder / _WEIGHTS_FILE}: 'embeddings' is not a 2-D matrix")
        embeddings = raw.astype(np.float32)  # always a fresh, writable copy
        weights = tensors.get("weights")
        mapping = tensors.get("mapping")
        return cls(
            path=folder,
            embeddings=embeddings,
            tokenizer=tokenizer,
            config=config,
            stored_dtype=raw.dtype.name,
            weights=None if weights is None else weights.astype(np.float32),
            mapping=None if mapping is None else mapping.astype(np.int64),
        )

    @property
    def dim(self) -> int:
        """Number of dimensions of each embedding."""
        return int(self._embeddings.shape[1])

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Turn texts into the token ids that :meth:`encode` averages.

        Args:
            texts: The texts.

        Returns:
            One list of ids per text: no special tokens, truncated to
            ``max_length``, unknown tokens removed.
        """
        if self.max_length is not None:
            cut = self.max_length * self._median_token_length
            texts = [text[:cut] for text in texts]
        encodings = self._tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
        unk = self._unk_id
        if unk is None:
            return [list(enc.ids) for enc in encodings]
        return [[i for i in enc.ids if i != unk] for enc in encodings]

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed texts as the mean of their token vectors.

        Args:
            texts: The texts to embed (a sequence, not a single string).

        Returns:
            float32 array of shape ``(len(texts), dim)``; rows are L2-normalised
            when the model's config says so (the shipped model does), and a
            text with no known token (e.g. empty) gives a zero row.

        Raises:
            TypeError: If ``texts`` is a single string.
        """
        import numpy as np

        if isinstance(texts, str):
            raise TypeError("encode() takes a sequence of texts, not a single string")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        embeddings, mapping, weights = self._embeddings, self._mapping, self._weights
        for row, id_list in enumerate(self.tokenize(texts)):
            if not id_list:
                continue
            ids = np.asarray(id_list, dtype=np.int64)
            vectors = embeddings[ids if mapping is None else mapping[ids]]
            if weights is not None:
                vectors *= weights[ids][:, None]
            out[row] = vectors.mean(axis=0)
        if self.normalize:
            out /= np.linalg.norm(out, axis=1, keepdims=True) + np.float32(1e-32)
        return out

    def sha256(self) -> str:
        """Return the SHA-256 of ``model.safetensors`` (computed once, then cached).

        Returns:
            Hex digest identifying the exact weights.
        """
        if self._sha256 is None:
            digest = hashlib.sha256()
            with open(self.path / _WEIGHTS_FILE, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            self._sha256 = digest.hexdigest()
        return self._sha256

    def info(self) -> dict[str, object]:
        """Describe the loaded model.

        Returns:
            A JSON-serialisable mapping: ``name``, ``path``, ``dim``,
            ``vocab_size``, ``stored_dtype``, ``normalize``, ``max_length``,
            ``base_model``, ``pca_dims``, ``sif_coefficient``, ``size_bytes``
            (of ``model.safetensors``) and ``sha256``.
        """
        return {
            "name": self.path.name,
            "path": str(self.path),
            "dim": self.dim,
            "vocab_size": self._vocab_size,
            "stored_dtype": self._stored_dtype,
            "normalize": self.normalize,
            "max_length": self.max_length,
            "base_model": self.config.get("base_model", self.config.get("tokenizer_name")),
            "pca_dims": self.config.get("apply_pca"),
            "sif_coefficient": self.config.get("sif_coefficient"),
            "size_bytes": (self.path / _WEIGHTS_FILE).stat().st_size,
            "sha256": self.sha256(),
        }
