"""The ONNX all-MiniLM-L6-v2 embedder: a transformer encoder without torch.

memlens ships ``core/embedders/models/minilm-l6-v2-int8/``: the BERT encoder of
``sentence-transformers/all-MiniLM-L6-v2`` exported to ONNX and quantised to int8
(``tools/export_minilm_onnx.py``), with the model's ``tokenizer.json``. It runs on
``onnxruntime`` (CPU) and ``tokenizers``; mean pooling over the attention mask and L2
normalisation -- what sentence-transformers adds after the encoder for this model --
happen in numpy. ``onnxruntime`` is imported only when the first text is embedded, so
building the embedder (and starting the CLI) stays cheap.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

from memlens.core.embedders.base import (
    EmbedderConfigError,
    EmbedderUnavailable,
    _dist_version,
    _LocalModelEmbedder,
    _major_minor,
    files_digest,
)

MINILM_MODEL_NAME: Final = "minilm-l6-v2-int8"
"""Folder name of the shipped model under ``core/embedders/models/``."""

MINILM_MODEL_DIR: Final[Path] = Path(__file__).resolve().parent / "models" / MINILM_MODEL_NAME
"""Where the shipped ONNX model lives."""

MINILM_DEFAULT_POOL_WINDOWS: Final = True
"""Whether documents longer than the model's window are embedded window by window.

Measured on the dev corpus (docs/research/onnx-minilm.md): pooled windows gave a
higher vector-mode Hit@1 than truncation for every chunking strategy that has chunks
over 256 wordpieces (equal for the others, hybrid unchanged), so it is the default;
it costs more embedding time on such chunks.
"""

MINILM_DEFAULT_BATCH_SIZE: Final = 1
"""Sequences per onnxruntime call.

On 2 shared cores, one sequence per call used the least CPU time and memory when
projecting the dev corpus (no padding is computed; larger batches grow the attention
tensors): batch 1 about 6.5 s CPU and 144 MB peak RSS, batch 4 7.1 s / 204 MB, batch 8
8.5 s / 273 MB, batch 32 9.8 s / 452 MB (docs/research/onnx-minilm.md).
"""

_MODEL_FILE: Final = "model.onnx"
_TOKENIZER_FILE: Final = "tokenizer.json"
_META_FILE: Final = "meta.json"
_DEFAULT_DIM: Final = 384
_DEFAULT_MAX_LENGTH: Final = 256
_WINDOW_STRIDE: Final = 192
_ORT_MIN: Final = (1, 22)
"""8-bit ``MatMulNBits`` (the shipped model's weights) has a CPU kernel from onnxruntime 1.22."""
_ORT_HINT: Final = "pip install 'onnxruntime>=1.22'"
_INPUTS: Final = ("input_ids", "attention_mask", "token_type_ids")


def _ort_available() -> bool:
    try:
        return find_spec("onnxruntime") is not None
    except (ImportError, ValueError):
        return False


def _version_tuple(version: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def _import_onnxruntime() -> Any:
    try:
        return importlib.import_module("onnxruntime")
    except ImportError:
        raise EmbedderUnavailable(f"the minilm embedder needs onnxruntime: {_ORT_HINT}") from None
    except Exception as exc:  # a broken install should not leak a traceback
        raise EmbedderUnavailable(
            f"the minilm embedder could not import onnxruntime ({exc}); reinstall it with {_ORT_HINT}"
        ) from None


def _read_meta(folder: Path) -> dict[str, Any]:
    path = folder / _META_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbedderUnavailable(f"the minilm embedder cannot read {path}: {exc}") from None
    return data if isinstance(data, dict) else {}


def _meta_int(meta: dict[str, Any], key: str, default: int) -> int:
    value = meta.get(key, default)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def window_starts(n_tokens: int, width: int, stride: int) -> list[int]:
    """Start offsets of overlapping windows of ``width`` tokens covering ``n_tokens``.

    The last window ends exactly at the last token, so nothing at the end is dropped
    and no window is shorter than ``width`` (when ``n_tokens >= width``).

    Args:
        n_tokens: Number of content tokens.
        width: Tokens per window (at least 1).
        stride: Distance between window starts (1 to ``width``).

    Returns:
        ``[0]`` when the text fits in one window, else the sorted start offsets.
    """
    if n_tokens <= width:
        return [0]
    starts = list(range(0, n_tokens - width, stride))
    starts.append(n_tokens - width)
    return starts


class OnnxMiniLMEmbedder(_LocalModelEmbedder):
    """all-MiniLM-L6-v2 as an int8 ONNX model, run by onnxruntime on the CPU.

    Texts are tokenised with the model's WordPiece tokenizer and cut at
    ``max_length`` wordpieces ([CLS] and [SEP] included, 256 for this model). With
    ``pool_windows`` a longer document is instead embedded in overlapping windows
    (``max_length`` wordpieces, a new one every 192 content wordpieces) whose unit
    vectors are averaged; queries are treated the same way. With ``batch_size`` above
    1, sequences are batched sorted by length, so little padding is computed. The
    model quantises only weights (activations stay per row), so a text's vector does
    not depend on the other texts of its batch.
    """

    name = "minilm"
    version = "1"
    model = MINILM_MODEL_NAME

    def __init__(
        self,
        folder: Path,
        *,
        batch_size: int = MINILM_DEFAULT_BATCH_SIZE,
        pool_windows: bool = MINILM_DEFAULT_POOL_WINDOWS,
        threads: int | None = None,
        source: str = "bundled",
    ) -> None:
        """Check the model files and load the tokenizer (the ONNX session loads lazily).

        Args:
            folder: A folder with ``model.onnx`` and ``tokenizer.json`` (normally
                :data:`MINILM_MODEL_DIR`); ``meta.json`` is optional.
            batch_size: Sequences per onnxruntime call.
            pool_windows: Embed long documents window by window and average them,
                instead of truncating them at ``max_length`` wordpieces.
            threads: onnxruntime intra-op threads (default ``min(2, cpu count)``).
            source: How the folder was found (``bundled`` or ``path``), for info().

        Raises:
            EmbedderUnavailable: If onnxruntime is not installed or the model files
                are missing or unreadable.
            EmbedderConfigError: If ``batch_size`` or ``threads`` is below 1.
        """
        if batch_size < 1:
            raise EmbedderConfigError(f"minilm embedder: batch_size must be at least 1, got {batch_size}")
        if threads is not None and threads < 1:
            raise EmbedderConfigError(f"minilm embedder: threads must be at least 1, got {threads}")
        if not _ort_available():
            raise EmbedderUnavailable(f"the minilm embedder needs onnxruntime: {_ORT_HINT}")
        missing = [n for n in (_MODEL_FILE, _TOKENIZER_FILE) if not (folder / n).is_file()]
        if missing:
            where = "this installation" if source == "bundled" else "the folder given as 'path'"
            raise EmbedderUnavailable(
                f"the minilm embedder's model files ({', '.join(missing)}) are missing from {where} "
                f"(expected in {folder}); reinstall memlens, or use the static embedder"
            )
        meta = _read_meta(folder)
        dim = _meta_int(meta, "dim", _DEFAULT_DIM)
        max_length = _meta_int(meta, "max_seq_length", _DEFAULT_MAX_LENGTH)
        if max_length < 3:
            raise EmbedderUnavailable(
                f"the minilm embedder: max_seq_length {max_length} in meta.json is too small"
            )
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(folder / _TOKENIZER_FILE))
        except Exception as exc:
            raise EmbedderUnavailable(
                f"the minilm embedder cannot load {folder / _TOKENIZER_FILE}: {type(exc).__name__}: {exc}"
            ) from None
        tokenizer.no_padding()
        tokenizer.no_truncation()
        cls_id = tokenizer.token_to_id("[CLS]")
        sep_id = tokenizer.token_to_id("[SEP]")
        pad_id = tokenizer.token_to_id("[PAD]")
        if cls_id is None or sep_id is None:
            raise EmbedderUnavailable(
                f"the minilm embedder needs a BERT WordPiece tokenizer with [CLS] and [SEP]: {folder}"
            )
        self._tokenizer = tokenizer
        self._cls = int(cls_id)
        self._sep = int(sep_id)
        self._pad = int(pad_id) if pad_id is not None else 0
        self._seq_length = max_length
        self._batch_size = batch_size
        self._pool_windows = pool_windows
        self._threads = threads if threads is not None else min(2, os.cpu_count() or 1)
        self._source = source
        self._quantization = str(meta.get("quantization", "unknown"))
        self._lib_version = _dist_version("onnxruntime")
        found = _version_tuple(self._lib_version)
        if found and found < _ORT_MIN:
            raise EmbedderUnavailable(
                f"the minilm embedder needs onnxruntime 1.22 or newer (found {self._lib_version}): "
                f"{_ORT_HINT}"
            )
        self._session: Any = None
        self._lock = threading.Lock()
        self._folder = folder
        self._dim = dim
        self._max_length = max_length
        # Only what changes the vectors: editing NOTICE or meta.json does not change
        # the fingerprint (and re-project everything).
        self._digest, self._size = files_digest(folder, (_MODEL_FILE, _TOKENIZER_FILE))

    # ------------------------------------------------------------------ identity

    @property
    def pool_windows(self) -> bool:
        """Whether long documents are embedded in pooled windows (else truncated)."""
        return self._pool_windows

    def _pool_tag(self) -> str:
        if not self._pool_windows:
            return "truncate"
        return f"windows-{self._seq_length}-{_WINDOW_STRIDE}"

    def fingerprint(self) -> str:
        """Return e.g. ``minilm:v1:dim=384:sha256=...:maxlen=256:pool=windows-256-192:lib=onnxruntime-1.32``.

        The model is identified by a digest of model.onnx and tokenizer.json, so
        replacing the weights or the quantisation changes it (moving the folder or
        editing NOTICE/meta.json does not); so does switching ``pool_windows``.
        """
        lib = f"onnxruntime-{_major_minor(self._lib_version)}"
        return f"{self._fingerprint_head()}:pool={self._pool_tag()}:lib={lib}"

    def _extra_info(self) -> dict[str, object]:
        return {
            **self._folder_info(self._source),
            "pool_windows": self._pool_windows,
            "quantization": self._quantization,
            "threads": self._threads,
            "batch_size": self._batch_size,
            "library": f"onnxruntime {self._lib_version}",
            "semantic": True,
        }

    # ------------------------------------------------------------------ running

    def _get_session(self) -> Any:
        with self._lock:
            if self._session is not None:
                return self._session
            ort = _import_onnxruntime()
            try:
                opts = ort.SessionOptions()
                opts.intra_op_num_threads = self._threads
                opts.inter_op_num_threads = 1
                opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                opts.log_severity_level = 3
                # Do not busy-wait between calls: the CPU is shared with the UI and the watcher.
                opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                session = ort.InferenceSession(
                    str(self._folder / _MODEL_FILE), sess_options=opts, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:
                where = self._folder / _MODEL_FILE
                raise EmbedderUnavailable(
                    f"the minilm embedder cannot load {where}: {type(exc).__name__}: {exc}"
                ) from None
            names = {i.name for i in session.get_inputs()}
            missing = [n for n in _INPUTS if n not in names]
            if missing:
                raise EmbedderUnavailable(
                    f"the minilm embedder's ONNX model lacks the input(s) {', '.join(missing)}"
                )
            self._session = session
            return session

    def _sequences(self, texts: list[str]) -> tuple[list[list[int]], list[int]]:
        """Token id sequences ([CLS] ... [SEP]) and, for each, the index of its text."""
        width = self._seq_length - 2
        seqs: list[list[int]] = []
        owners: list[int] = []
        for i, enc in enumerate(self._tokenizer.encode_batch(texts, add_special_tokens=False)):
            ids = list(enc.ids)
            starts = window_starts(len(ids), width, _WINDOW_STRIDE) if self._pool_windows else [0]
            for start in starts:
                seqs.append([self._cls, *ids[start : start + width], self._sep])
                owners.append(i)
        return seqs, owners

    def _run(self, session: Any, seqs: Sequence[list[int]]) -> npt.NDArray[np.float32]:
        """Mean-pooled, L2-normalised vectors of equal-length-padded sequences."""
        import numpy as np

        longest = max(len(s) for s in seqs)
        ids = np.full((len(seqs), longest), self._pad, dtype=np.int64)
        mask = np.zeros((len(seqs), longest), dtype=np.int64)
        for row, seq in enumerate(seqs):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = np.asarray(session.run(["last_hidden_state"], feeds)[0], dtype=np.float32)
        if hidden.ndim != 3 or hidden.shape[:2] != ids.shape or hidden.shape[2] != self._dim:
            raise RuntimeError(f"unexpected output shape {hidden.shape} for input {ids.shape}")
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out: npt.NDArray[np.float32] = (pooled / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        return out

    def _embed(self, texts: list[str], *, query: bool) -> npt.NDArray[Any]:
        import numpy as np

        session = self._get_session()
        try:
            seqs, owners = self._sequences(texts)
            vectors = np.zeros((len(seqs), self._dim), dtype=np.float32)
            order = sorted(range(len(seqs)), key=lambda k: len(seqs[k]))
            for start in range(0, len(order), self._batch_size):
                chunk = order[start : start + self._batch_size]
                vectors[chunk] = self._run(session, [seqs[k] for k in chunk])
        except Exception as exc:
            raise self._failed(exc) from exc
        out = np.zeros((len(texts), self._dim), dtype=np.float64)
        np.add.at(out, np.asarray(owners, dtype=np.intp), vectors)
        return out
