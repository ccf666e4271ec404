"""The default embedder's throughput against a bare onnxruntime floor (issue 37), one run.

Usage::

    uv run python benchmarks/embed_floor.py [--files 165] [--repeat 3] [--threads 2]
        [--batches 1,4,8,16,32] [--json]

The texts are the node texts stage 2 of the projection embeds: a generated corpus of
``--files`` files (:func:`memlens.bench.generate_corpus`, the real size mix) chunked
by the default chunker, each chunk with its heading path
(:func:`memlens.core.projection.swap.node_text`).

* ``memlens``: ``OnnxMiniLMEmbedder.embed_documents(texts)`` as the projection calls it
  (tokenize, cut into 256-wordpiece windows with a 192 stride, run, mean-pool, average
  the windows of a text, normalise);
* ``bare-bN``: a fresh ``onnxruntime.InferenceSession`` on the same model file with
  ``--threads`` intra-op threads (``--memlens-threads`` sets the embedder's) and nothing
  else set, fed exactly the same token
  windows (computed once, outside the timing: the floor does not tokenize), sorted
  by length and run in batches of N padded to the longest of the batch; the output
  is only mean-pooled (no normalising, no averaging).

Runs are interleaved (memlens, bare-b1, bare-b4, ..., memlens, ...) ``--repeat``
times; the median of each is reported with wall and process CPU seconds, chunks/s and
windows/s. ``floor`` is the fastest bare variant; ``ratio`` = memlens chunks/s divided
by floor chunks/s (the issue's target on 10k files: >= 1/1.3 = 0.77).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any


def node_texts(n_files: int) -> list[str]:
    from memlens.bench import generate_corpus
    from memlens.core.chunking.chunker import ChunkerConfig
    from memlens.core.projection.swap import node_text
    from memlens.core.service import chunk_file

    with tempfile.TemporaryDirectory(prefix="memlens-floor-") as d:
        generate_corpus(Path(d), n_files, seed=0)
        texts = []
        for p in sorted(Path(d).rglob("*.md")):
            res, _ = chunk_file(p, ChunkerConfig())
            texts.extend(node_text(c.heading_path, c.text) for c in res.chunks)
    return texts


def bare_session(threads: int) -> Any:
    """A fresh onnxruntime session on the shipped model, ``threads`` intra-op threads."""
    import onnxruntime as ort

    from memlens.core.embedders.onnx_minilm import MINILM_MODEL_DIR

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    return ort.InferenceSession(str(MINILM_MODEL_DIR / "model.onnx"), sess_options=opts,
                                providers=["CPUExecutionProvider"])


def run_bare(session: Any, seqs: list[list[int]], pad: int, batch: int) -> None:
    """Mean-pooled encoder outputs of the token windows, sorted by length, ``batch`` each."""
    import numpy as np

    order = sorted(range(len(seqs)), key=lambda k: len(seqs[k]))
    for start in range(0, len(order), batch):
        part = [seqs[k] for k in order[start:start + batch]]
        longest = max(len(s) for s in part)
        ids = np.full((len(part), longest), pad, dtype=np.int64)
        mask = np.zeros((len(part), longest), dtype=np.int64)
        for r, s in enumerate(part):
            ids[r, :len(s)] = s
            mask[r, :len(s)] = 1
        hidden = session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask,
                                                     "token_type_ids": np.zeros_like(ids)})[0]
        (hidden * mask[..., None]).sum(axis=1)


def main() -> None:
    import onnxruntime as ort

    from memlens.core.embedders.onnx_minilm import MINILM_MODEL_DIR, OnnxMiniLMEmbedder

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--files", type=int, default=165)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--batches", default="1,4,8,16,32")
    ap.add_argument("--memlens-threads", type=int, default=None,
                    help="intra-op threads of the memlens embedder (default: its own)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    texts = node_texts(args.files)
    emb = OnnxMiniLMEmbedder(MINILM_MODEL_DIR, threads=args.memlens_threads)
    emb.embed_documents(texts[:4])  # load the session outside the timing
    seqs, _owners = emb._sequences(texts)
    pad = int(emb._pad)
    bare = bare_session(args.threads)
    variants: dict[str, Any] = {"memlens": lambda: emb.embed_documents(texts)}
    for b in (int(x) for x in args.batches.split(",")):
        variants[f"bare-b{b}"] = (lambda b=b: run_bare(bare, seqs, pad, b))
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
    run_bare(bare, seqs[:16], pad, 8)  # warm the bare session
    for _ in range(args.repeat):
        for name, fn in variants.items():
            w, c = time.perf_counter(), time.process_time()
            fn()
            runs[name].append((time.perf_counter() - w, time.process_time() - c))
    out: dict[str, dict[str, float]] = {}
    for name, rs in runs.items():
        wall = statistics.median(r[0] for r in rs)
        cpu = statistics.median(r[1] for r in rs)
        out[name] = {"wall": round(wall, 3), "cpu": round(cpu, 3),
                     "chunks_per_s": round(len(texts) / wall, 1),
                     "windows_per_s": round(len(seqs) / wall, 1)}
    floor = max((k for k in out if k.startswith("bare")), key=lambda k: out[k]["chunks_per_s"])
    ratio = out["memlens"]["chunks_per_s"] / out[floor]["chunks_per_s"]
    info = {"python": platform.python_version(), "cpus": os.cpu_count(),
            "onnxruntime": ort.__version__, "threads": args.threads,
            "memlens_batch_size": emb._batch_size, "memlens_threads": emb._threads}
    result = {"machine": info, "chunks": len(texts), "windows": len(seqs),
              "tokens": sum(len(s) for s in seqs), "runs": out, "floor": floor,
              "ratio": round(ratio, 3)}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"machine: {info}")
    print(f"{len(texts)} chunks, {len(seqs)} windows, {result['tokens']} tokens;"
          f" median of {args.repeat} interleaved runs")
    for name, r in out.items():
        print(f"  {name:>10}: wall {r['wall']:7.3f} s  CPU {r['cpu']:7.3f} s"
              f"  {r['chunks_per_s']:8.1f} chunks/s  {r['windows_per_s']:8.1f} windows/s")
    print(f"floor = {floor}; ratio memlens/floor = {ratio:.3f}")


if __name__ == "__main__":
    main()
