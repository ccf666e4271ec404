"""Recall of int8 vector storage against float32 (issue 43).

Usage::

    uv run python benchmarks/vector_int8.py [--chunks 104000] [--embedder static]
        [--queries 300] [--json]

The texts are node texts as the projection embeds them: a generated corpus
(:func:`memlens.bench.generate_corpus`, the real size mix, seed 0) with enough files for
about ``--chunks`` chunks under the default chunker, each chunk with its heading path
(:func:`memlens.core.projection.swap.node_text`). Every text is embedded once with
``--embedder``; queries are :func:`memlens.bench.generate_queries` (seed 1).

Truth: the top 20 by exact cosine of the float32 vectors (float64 sums). Compared, as the
search computes them: **int8** rows (:func:`memlens.core.projection.spaces.quantize_int8`,
one scale per vector) with the query quantized the same way (what sqlite-vec's ``vec0``
and the in-RAM matrix compute on an int8 space), and **float32** rows with a float32 query
(the floor: recall 1 up to ties); also int8 rows asked with a float query (what only an
in-RAM copy could do), int8 after a fixed random rotation (cosine unchanged, the energy
spread over all dimensions) and float16 (which ``vec0`` cannot store). Reported: mean
and minimum recall@20, the share of queries whose top 10 is identical in order, and the
median cosine gap between the 20th and 21st neighbour (how close the ties are). Goal:
int8 recall@20 >= 0.99.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from memlens import bench
from memlens.core.chunking.chunker import DEFAULT_CONFIG, chunk_markdown
from memlens.core.embedders.registry import make_embedder
from memlens.core.projection.swap import node_text

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def quantize_int8(vecs: Any) -> Any:
    """int8 codes of float vectors, one scale per row (its largest absolute component
    becomes 127), as sqlite-vec's ``int8[N]`` column would hold them; cosine does not see
    the scale, so only the rounding to 127 steps is lost. A zero row stays zero."""
    a = np.atleast_2d(np.asarray(vecs, dtype=np.float32))
    peak = np.abs(a).max(axis=1, keepdims=True)
    scale = np.divide(np.float32(127.0), peak, out=np.zeros_like(peak), where=peak > 0)
    q = np.clip(np.rint(a * scale), -127, 127).astype(np.int8)
    return q[0] if np.asarray(vecs).ndim == 1 else q


def rotation(dim: int, seed: int = 0) -> Any:
    """A fixed random orthogonal matrix: rotating spreads a vector's energy over every
    dimension (cosine unchanged), so its int8 codes waste fewer steps on one peak."""
    r, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(dim, dim)))
    return r.astype(np.float32)


def texts(n_chunks: int) -> list[str]:
    """Node texts of a generated corpus of about ``n_chunks`` chunks."""
    from search_latency import chunks_per_file

    files = max(1, round(n_chunks / chunks_per_file()))
    out: list[str] = []
    with tempfile.TemporaryDirectory() as d:
        bench.generate_corpus(Path(d) / "c", files, seed=0)
        for p in sorted((Path(d) / "c").rglob("*.md")):
            for c in chunk_markdown(p.read_text(), DEFAULT_CONFIG, path=p.name).chunks:
                out.append(node_text(c.heading_path, c.text))
    return out


def _unit(a: Any) -> Any:
    a = np.asarray(a, dtype=np.float32)
    n = np.linalg.norm(a, axis=1, keepdims=True)
    return a / np.where(n > 0, n, 1)


def measure(n_chunks: int, embedder_name: str, n_queries: int) -> dict[str, Any]:
    emb = make_embedder(embedder_name, {})
    t0 = time.perf_counter()
    docs = texts(n_chunks)
    t1 = time.perf_counter()
    vecs = np.concatenate([np.asarray(emb.embed_documents(docs[i:i + 2048]), dtype=np.float32)
                           for i in range(0, len(docs), 2048)])
    t2 = time.perf_counter()
    queries = bench.generate_queries(n_queries, seed=1)
    qv = np.asarray([emb.embed_query(q) for q in queries], dtype=np.float32)
    exact = _unit(vecs.astype(np.float64))
    f32 = _unit(vecs)
    i8 = _unit(quantize_int8(vecs).astype(np.float32))
    rot = rotation(vecs.shape[1])
    i8r = _unit(quantize_int8(vecs @ rot).astype(np.float32))
    f16 = _unit(vecs.astype(np.float16).astype(np.float32))
    names = ("float32", "int8", "int8-float-query", "int8-rotated", "float16")
    rec: dict[str, list[float]] = {k: [] for k in names}
    same10: dict[str, int] = dict.fromkeys(names, 0)
    gaps: list[float] = []
    for q in qv:
        if not np.any(q):
            continue
        s = exact @ (q.astype(np.float64) / np.linalg.norm(q))
        truth = np.argsort(-s, kind="stable")[:20]
        gaps.append(float(s[truth[19]] - np.sort(s)[-21]))
        qf = q / np.linalg.norm(q)
        qi = _unit(quantize_int8(q)[None, :].astype(np.float32))[0]
        qr = _unit(quantize_int8(q @ rot)[None, :].astype(np.float32))[0]
        for name, m, qq in (("float32", f32, qf), ("int8", i8, qi),
                            ("int8-float-query", i8, qf), ("int8-rotated", i8r, qr),
                            ("float16", f16, qf)):
            top = np.argsort(-(m @ qq), kind="stable")[:20]
            rec[name].append(len(set(top) & set(truth)) / 20)
            same10[name] += bool(np.array_equal(top[:10], truth[:10]))
    n = len(rec["int8"])
    return {"embedder": embedder_name, "dim": int(vecs.shape[1]), "chunks": len(docs),
            "queries": n, "texts_s": round(t1 - t0, 1), "embed_s": round(t2 - t1, 1),
            "recall_at_20": {k: round(float(np.mean(v)), 4) for k, v in rec.items()},
            "min_recall_at_20": {k: round(float(np.min(v)), 4) for k, v in rec.items()},
            "same_top10_share": {k: round(v / max(1, n), 3) for k, v in same10.items()},
            "median_gap_20th_21st": round(float(np.median(gaps)), 6),
            "bytes_per_vector": {"float32": 4 * int(vecs.shape[1]), "int8": int(vecs.shape[1])}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=104_000)
    ap.add_argument("--embedder", default="static")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    out = measure(a.chunks, a.embedder, a.queries)
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        r = out["recall_at_20"]
        print(f"{out['embedder']} {out['dim']}-d, {out['chunks']} chunks, {out['queries']}"
              f" queries, median 20th/21st gap {out['median_gap_20th_21st']}: recall@20"
              + ", ".join(f" {k} {v}" for k, v in r.items()) + " (goal for int8 >= 0.99)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
