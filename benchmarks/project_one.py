"""Fixed cost of one small projection at scale: ``MemoryService.retry`` of single documents.

Every projection (a watched save's, a retry, each ``project_queue`` batch) starts with the
embedder check (``projection.queue_other_embedder``) and claims its documents; this times
that path for one already-projected document at a time, on a copy of a database you give
(the 10k-document TUI benchmark's: ``benchmarks/tui.py`` builds it under its ``--cache``).

Usage::

    uv run python benchmarks/project_one.py --db /tmp/memlens-tui-bench/tui-10000-...db \
        [--docs 15] [--embedder-dim 384]
    PYTHONPATH=/tmp/old/src uv run python benchmarks/project_one.py --db ...   # another tree

Prints the median wall and CPU time per ``retry`` (ms). The copy is deleted afterwards.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--docs", type=int, default=15)
    ap.add_argument("--embedder-dim", type=int, default=384, help="hashing embedder dimension")
    a = ap.parse_args()
    from memlens.core.config.settings import load_settings
    from memlens.core.embedders.registry import make_embedder
    from memlens.core.service import MemoryService

    with tempfile.TemporaryDirectory(prefix="memlens-project-one-") as tmp:
        db = Path(tmp) / a.db.name
        shutil.copyfile(a.db, db)
        settings = load_settings(Path(tmp) / "none.toml", env={}, overrides={"db": str(db)})
        svc = MemoryService(settings, embedder=make_embedder("hashing", {"dim": a.embedder_dim}),
                            install_key="memlens-bench-project-one")
        ids = [d.id for d in svc.list_documents()][: a.docs]
        wall: list[float] = []
        cpu: list[float] = []
        for doc in ids:
            t, c = time.perf_counter(), time.process_time()
            svc.retry(doc)
            wall.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
        docs = len(svc.list_documents())
        svc.close()
    print(f"{docs} documents: retry of one document, median of {len(ids)}: "
          f"wall {statistics.median(wall):.1f} ms, CPU {statistics.median(cpu):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
