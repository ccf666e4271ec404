"""Ingest throughput: cold ingest + projection, and the unchanged rescan.

Usage::

    uv run python benchmarks/ingest.py [--files 10000] [--embedder hashing,static]
        [--repeat 3] [--profile] [--json]

Corpora:

* ``bundled``: the 35-file demo corpus (``corpus/``);
* ``real-mix-165``: a generated corpus of 165 files with the real size mix (the
  spike's scan: 165 files, 316 KB; median 1.5 KB, p90 4 KB, max 14 KB);
* ``generated-N``: a generated corpus of ``--files`` files (default 10,000) with
  the same mix.

For each corpus and embedder (384-d ``hashing``; the shipped ``static`` model when
it loads) it measures, through ``MemoryService`` with a fixed clock and key:

* ``cold``: ingest (scan, read, redact, hash, chunk, durable write) then projection
  (embedding, FTS, vectors) into a fresh database; median of ``--repeat`` runs
  (one run for the large corpus);
* ``rescan``: a second ingest of the unchanged folder (the stat fast path: no file
  is read); median of ``--repeat`` runs.

Targets: ``real-mix-165`` cold < 1 s; rescan >= 5,000 files/s. ``--profile``
prints the cProfile hotspots (top functions by own time) of a cold run of the
largest corpus.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memlens import bench
from memlens.core.config.settings import load_settings
from memlens.core.embedders.registry import Embedder, EmbeddingError, make_embedder
from memlens.core.ingest.sources import roots_for_path
from memlens.core.service import MemoryService

ROOT = Path(__file__).resolve().parent.parent
TARGET_COLD_165_S = 1.0
TARGET_RESCAN_FPS = 5000.0


def _service(db: Path, emb: Embedder) -> MemoryService:
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    settings = load_settings(db.parent / "none.toml", env={}, overrides={"db": str(db)})
    return MemoryService(settings, clock=bench.FixedClock(), embedder=emb,
                         install_key=bench.FIXED_INSTALL_KEY)


def _bytes(corpus: Path) -> tuple[int, int]:
    files = [p for p in corpus.rglob("*.md") if p.parent.name != corpus.name]
    return len(files), sum(p.stat().st_size for p in files)


def cold_and_rescan(corpus: Path, emb: Embedder, work: Path, repeat: int) -> dict[str, Any]:
    """Median cold ingest+project and unchanged-rescan times over ``repeat`` runs."""
    roots = roots_for_path(corpus)
    ingest, project, total, rescan = [], [], [], []
    chunks = docs = 0
    for i in range(repeat):
        svc = _service(work / f"ingest-{i}.db", emb)
        try:
            t0 = time.perf_counter()
            out = svc.ingest(roots, project=False)
            t1 = time.perf_counter()
            bench.project_all(svc)
            t2 = time.perf_counter()
            if out.report.failed:
                raise SystemExit(f"ingest failures: {[c.error for c in out.report.failed][:3]}")
            r = []
            for _ in range(max(1, repeat)):
                t = time.perf_counter()
                again = svc.ingest(roots)
                r.append(time.perf_counter() - t)
                if again.report.counts()["unchanged"] != len(again.report.changes):
                    raise SystemExit("rescan found changes in an unchanged folder")
            conn = svc.conn()
            chunks = int(conn.execute("SELECT COUNT(*) FROM knowledge_nodes").fetchone()[0])
            docs = int(conn.execute("SELECT COUNT(*) FROM memory_documents").fetchone()[0])
        finally:
            svc.close()
        ingest.append(t1 - t0)
        project.append(t2 - t1)
        total.append(t2 - t0)
        rescan.append(statistics.median(r))
    n, size = _bytes(corpus)
    cold = statistics.median(total)
    re_s = statistics.median(rescan)
    return {"files": n, "bytes": size, "documents": docs, "chunks": chunks,
            "ingest_seconds": round(statistics.median(ingest), 4),
            "project_seconds": round(statistics.median(project), 4),
            "cold_seconds": round(cold, 4), "cold_files_per_s": round(n / cold, 1),
            "cold_mb_per_s": round(size / 1e6 / cold, 3),
            "rescan_seconds": round(re_s, 4), "rescan_files_per_s": round(n / re_s, 1),
            "runs": repeat}


def profile(corpus: Path, emb: Embedder, work: Path, top: int = 25) -> str:
    """cProfile of one cold ingest+projection; the top functions by own time."""
    svc = _service(work / "profile.db", emb)
    roots = roots_for_path(corpus)
    pr = cProfile.Profile()
    pr.enable()
    svc.ingest(roots, project=False)
    bench.project_all(svc)
    pr.disable()
    svc.close()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(top)
    return s.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=10_000, help="size of the large generated corpus")
    ap.add_argument("--embedder", default="hashing,static")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memlens-ingest-") as d:
        work = Path(d)
        corpora = {"bundled": ROOT / "corpus"}
        t = time.perf_counter()
        bench.generate_corpus(work / "real-mix-165", 165, seed=0)
        corpora["real-mix-165"] = work / "real-mix-165"
        bench.generate_corpus(work / f"generated-{a.files}", a.files, seed=0)
        corpora[f"generated-{a.files}"] = work / f"generated-{a.files}"
        gen_s = time.perf_counter() - t
        for name in bench.split_list(a.embedder):
            try:
                emb = make_embedder(name, {"dim": 384} if name == "hashing" else {})
            except EmbeddingError as exc:
                print(f"skipping {name}: {exc}", file=sys.stderr)
                continue
            for cname, path in corpora.items():
                rep = 1 if cname.startswith("generated") else a.repeat
                row = {"corpus": cname, "embedder": name, "fingerprint": emb.fingerprint(),
                       **cold_and_rescan(path, emb, work, rep)}
                rows.append(row)
                if not a.json:
                    print(f"| {cname} | {row['files']} | {row['bytes'] / 1e6:.2f} MB | {name} | "
                          f"{row['chunks']} | {row['ingest_seconds']:.3f} | "
                          f"{row['project_seconds']:.3f} | {row['cold_seconds']:.3f} | "
                          f"{row['cold_files_per_s']:.0f} | {row['cold_mb_per_s']:.2f} | "
                          f"{row['rescan_seconds'] * 1000:.1f} ms | "
                          f"{row['rescan_files_per_s']:.0f} |", flush=True)
        prof = None
        if a.profile:
            emb = make_embedder("hashing", {"dim": 384})
            prof = profile(corpora[f"generated-{a.files}"], emb, work)
    checks = []
    for r in rows:
        if r["corpus"] == "real-mix-165":
            checks.append({"target": f"real-mix-165 cold < {TARGET_COLD_165_S} s ({r['embedder']})",
                           "value": r["cold_seconds"], "ok": r["cold_seconds"] < TARGET_COLD_165_S})
        checks.append({"target": f"{r['corpus']} rescan >= {TARGET_RESCAN_FPS:.0f} files/s "
                       f"({r['embedder']})", "value": r["rescan_files_per_s"],
                       "ok": r["rescan_files_per_s"] >= TARGET_RESCAN_FPS})
    report = {"cpu_count": os.cpu_count(), "generate_seconds": round(gen_s, 2), "rows": rows,
              "checks": checks}
    if a.json:
        print(json.dumps(report, indent=2))
    else:
        for c in checks:
            print(f"{'PASS' if c['ok'] else 'MISS'} {c['target']}: {c['value']}")
    if prof:
        print(prof, file=sys.stderr if a.json else sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
