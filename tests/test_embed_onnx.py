"""The ONNX all-MiniLM-L6-v2 embedder (``minilm``): the shipped int8 model, no network."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from memlens.core.embedders.onnx_minilm import (  # noqa: E402
    MINILM_MODEL_DIR,
    OnnxMiniLMEmbedder,
    window_starts,
)
from memlens.core.embedders.registry import (  # noqa: E402
    EmbedderConfigError,
    EmbedderUnavailable,
    make_embedder,
)

LONG_TEXT = " ".join(
    f"Section {i}: the {word} service writes its {word} logs to /var/log/{word}.log and rotates them weekly."
    for i, word in enumerate(["ingest", "search", "watch", "backup", "deploy", "billing", "auth"] * 6)
)


@pytest.fixture(scope="module")
def emb() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder(MINILM_MODEL_DIR)


@pytest.fixture(scope="module")
def emb_truncate() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder(MINILM_MODEL_DIR, pool_windows=False)


def test_shipped_files_match_meta() -> None:
    meta = json.loads((MINILM_MODEL_DIR / "meta.json").read_text(encoding="utf-8"))
    digest = hashlib.sha256((MINILM_MODEL_DIR / "model.onnx").read_bytes()).hexdigest()
    assert meta["model_sha256"] == digest
    assert meta["dim"] == 384
    assert meta["max_seq_length"] == 256
    assert (MINILM_MODEL_DIR / "LICENSE").is_file() and (MINILM_MODEL_DIR / "NOTICE").is_file()
    assert (MINILM_MODEL_DIR / "model.onnx").stat().st_size < 26_000_000


def test_dim_and_unit_norm(emb: OnnxMiniLMEmbedder) -> None:
    assert emb.dim == 384
    vecs = emb.embed_documents(["Run the migrations first.", "def f(x): return x", "", "   "])
    assert vecs.shape == (4, 384) and vecs.dtype == np.float32
    norms = np.linalg.norm(vecs, axis=1)
    np.testing.assert_allclose(norms[:2], 1.0, atol=1e-5)
    assert np.all(vecs[2:] == 0.0)
    q = emb.embed_query("how do I start the server")
    assert q.shape == (384,)
    assert abs(float(np.linalg.norm(q)) - 1.0) < 1e-5


def test_paraphrase_closer_than_unrelated(emb: OnnxMiniLMEmbedder) -> None:
    a, b, c = emb.embed_documents(
        [
            "How do I reset my password?",
            "Steps to recover a forgotten account password",
            "The stock market fell sharply after the interest rate announcement.",
        ]
    )
    assert float(a @ b) > float(a @ c) + 0.2


def test_batch_matches_single(emb: OnnxMiniLMEmbedder) -> None:
    texts = [
        "short",
        "The watcher reconciles missed events with a periodic scan.",
        "SELECT id FROM chunks WHERE hash = ?",
        LONG_TEXT,
        "Kestrel uses React Query for server state and Zustand for local UI state. " * 5,
    ]
    batched = OnnxMiniLMEmbedder(MINILM_MODEL_DIR, batch_size=8)  # all texts padded into one call
    batch = batched.embed_documents(texts)
    single = np.vstack([emb.embed_documents([t])[0] for t in texts])
    cos = (batch * single).sum(axis=1)
    assert float(cos.min()) > 0.999
    np.testing.assert_allclose(emb.embed_query(texts[1]), single[1], atol=1e-5)


def test_deterministic(emb: OnnxMiniLMEmbedder) -> None:
    texts = ["same text, same vector", LONG_TEXT]
    first = emb.embed_documents(texts)
    again = OnnxMiniLMEmbedder(MINILM_MODEL_DIR).embed_documents(texts)
    np.testing.assert_array_equal(first, emb.embed_documents(texts))
    np.testing.assert_allclose(first, again, atol=1e-6)


def test_missing_model_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable) as info:
        make_embedder("minilm", {"path": str(tmp_path)})
    message = str(info.value)
    assert "\n" not in message
    assert "model.onnx" in message and str(tmp_path) in message


def test_missing_onnxruntime_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from memlens.core.embedders import onnx_minilm

    monkeypatch.setattr(onnx_minilm, "_ort_available", lambda: False)
    with pytest.raises(EmbedderUnavailable, match=r"needs onnxruntime: pip install"):
        make_embedder("minilm")


def test_registry_names_and_options() -> None:
    for name in ("minilm", "onnx", "minilm-onnx", "MiniLM"):
        e = make_embedder(name)
        assert e.name == "minilm" and e.dim == 384
    with pytest.raises(EmbedderConfigError):
        make_embedder("minilm", {"batch_size": 0})
    with pytest.raises(EmbedderConfigError):
        make_embedder("minilm", {"nope": 1})


def test_fingerprint_names_pooling(emb: OnnxMiniLMEmbedder, emb_truncate: OnnxMiniLMEmbedder) -> None:
    assert emb.fingerprint() != emb_truncate.fingerprint()
    assert "pool=truncate" in emb_truncate.fingerprint()
    assert emb.fingerprint().startswith("minilm:v1:dim=384:sha256=")
    assert emb.info()["pool_windows"] is True


def test_pooled_windows_differ_from_truncation(
    emb: OnnxMiniLMEmbedder, emb_truncate: OnnxMiniLMEmbedder
) -> None:
    n_tokens = len(emb._tokenizer.encode(LONG_TEXT, add_special_tokens=False).ids)
    assert n_tokens > 256
    pooled = emb.embed_documents([LONG_TEXT])[0]
    truncated = emb_truncate.embed_documents([LONG_TEXT])[0]
    assert float(pooled @ truncated) < 0.9999
    assert float(pooled @ truncated) > 0.5  # the same text either way
    short = "a short text fits in one window"
    np.testing.assert_allclose(emb.embed_query(short), emb_truncate.embed_query(short), atol=1e-6)


def test_window_starts_cover_the_text() -> None:
    assert window_starts(10, 254, 192) == [0]
    assert window_starts(254, 254, 192) == [0]
    starts = window_starts(600, 254, 192)
    assert starts == [0, 192, 346]
    assert starts[-1] + 254 == 600


def test_too_old_onnxruntime_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from memlens.core.embedders import onnx_minilm

    monkeypatch.setattr(onnx_minilm, "_dist_version", lambda dist: "1.20.1")
    with pytest.raises(EmbedderUnavailable, match=r"1\.22 or newer \(found 1\.20\.1\)"):
        make_embedder("minilm")
