"""The store pass of an ingest against its floor without a database (issue 43).

Usage::

    uv run python benchmarks/store_pass.py [--files 3900] [--repeat 3] [--profile]

On a corpus from :func:`memlens.bench.generate_corpus` (``--files`` files, the real
size mix), interleaved, ``--repeat`` times each:

* ``floor``: what an ingest must do without a database: scan every memory folder
  (:func:`memlens.core.ingest.pipeline.scan_stored`), then read, decode, redact, hash and
  chunk every file (:func:`memlens.core.ingest.pipeline.prepare_file`);
* ``store``: ``MemoryService.ingest(roots, project=False)`` into a fresh database: the
  same work plus the durable writes (documents, revisions, chunks) and retention.

Prints wall and CPU seconds (``time.process_time``) of each, medians, and the ratio
store / floor of both. ``--profile`` adds a cProfile of one store pass grouped by where
the time goes (parse, redaction, DB writes, the rest). Run it with ``PYTHONPATH`` set to
another source tree (``git archive REV src``) for a before/after.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memlens import bench
from memlens.core.config.settings import load_settings
from memlens.core.embedders.registry import make_embedder
from memlens.core.ingest import pipeline
from memlens.core.ingest.sources import roots_for_path
from memlens.core.service import MemoryService


def _service(db: Path) -> MemoryService:
    settings = load_settings(db.parent / "none.toml", env={}, overrides={"db": str(db)})
    return MemoryService(settings, clock=bench.FixedClock(),
                         embedder=make_embedder("hashing", {"dim": 64}),
                         install_key=bench.FIXED_INSTALL_KEY)


def floor(corpus: Path, svc: MemoryService) -> tuple[float, float, int]:
    """Scan + prepare every file, no database; (wall, cpu, files)."""
    cfg = svc.chunker_config()
    key = bench.FIXED_INSTALL_KEY
    limits = svc.settings.limits
    t0, c0 = time.perf_counter(), time.process_time()
    n = 0
    for root in roots_for_path(corpus):
        files, _ = pipeline.scan_stored(root, key)
        for sf in files:
            pipeline.prepare_file(sf, cfg, key, limits.max_file_bytes,
                                  limits.max_chunks_per_file)
            n += 1
    return time.perf_counter() - t0, time.process_time() - c0, n


def store(corpus: Path, db: Path) -> tuple[float, float, int]:
    """A cold ``ingest(project=False)`` into a fresh database; (wall, cpu, files)."""
    svc = _service(db)
    try:
        roots = roots_for_path(corpus)
        svc.conn()  # open and migrate outside the measurement
        t0, c0 = time.perf_counter(), time.process_time()
        out = svc.ingest(roots, project=False)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        svc.close()
    if out.report.failed:
        raise SystemExit(f"ingest failures: {[c.error for c in out.report.failed][:3]}")
    return wall, cpu, len(out.report.changes)


def profile(corpus: Path, db: Path) -> str:
    """Where one store pass spends its time, by cumulative time of the parts named."""
    svc = _service(db)
    roots = roots_for_path(corpus)
    svc.conn()
    pr = cProfile.Profile()
    pr.enable()
    svc.ingest(roots, project=False)
    pr.disable()
    svc.close()
    st = pstats.Stats(pr)
    total = max(v[3] for v in st.stats.values())  # type: ignore[attr-defined]
    parts = {"prepare_file (read+redact+chunk)": "prepare_file", "markdown-it parse": "parse",
             "redact": "redact", "write_create (DB)": "write_create",
             "find_document (DB read)": "find_document", "scan_stored": "scan_stored",
             "commits (write_batch/write_txn)": "write_batch",
             "retention": "_retention", "live_documents_under": "live_documents_under"}
    lines = [f"store pass under cProfile: {total:.2f} s"]
    for label, fn in parts.items():
        cum = sum(v[3] for k, v in st.stats.items()  # type: ignore[attr-defined]
                  if k[2] == fn)
        lines.append(f"  {label:<36} {cum:7.2f} s  {100 * cum / total:5.1f} %")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=3900)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memlens-storepass-"))
    try:
        corpus = work / "claude"
        bench.generate_corpus(corpus, args.files, seed=0)
        warm = _service(work / "warm.db")
        floor(corpus, warm)  # warm the page cache and the lazy imports once
        res: dict[str, list[tuple[float, float, int]]] = {"floor": [], "store": []}
        for i in range(args.repeat):
            res["floor"].append(floor(corpus, warm))
            res["store"].append(store(corpus, work / f"s{i}.db"))
        warm.close()
        med: dict[str, Any] = {k: (statistics.median(w for w, _, _ in v),
                                   statistics.median(c for _, c, _ in v), v[0][2])
                               for k, v in res.items()}
        print(f"corpus: {args.files} generated files; {args.repeat} interleaved runs; "
              f"load average {os.getloadavg()[0]:.2f}")
        for k, (w, c, n) in med.items():
            print(f"{k:>6}: wall {w:7.2f} s  CPU {c:7.2f} s  ({n} files)")
        print(f" ratio store / floor: wall {med['store'][0] / med['floor'][0]:.2f}x  "
              f"CPU {med['store'][1] / med['floor'][1]:.2f}x")
        if args.profile:
            print(profile(corpus, work / "profile.db"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
