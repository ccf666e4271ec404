"""Make ``dbsize_v6.db`` and ``dbsize_v6.json`` for tests/test_dbsize.py: a real schema-6
database (documents, history, a tombstone, a rechunk, a projection, cached vectors) and
every stored text and cached vector, to check that the v7 upgrade loses nothing.

Run with memlens at schema 6 (before the v7 compressed columns), e.g.::

    git archive 6059026 src | tar -x -C /tmp/memlens6
    PYTHONPATH=/tmp/memlens6/src uv run python tests/data/dbsize_v6_make.py
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from memlens.core.chunking.chunker import ChunkerConfig
from memlens.core.config.settings import load_settings
from memlens.core.embedders.registry import make_embedder
from memlens.core.ingest.sources import roots_for_path
from memlens.core.service import MemoryService
from memlens.core.store import db as dbm

OUT = Path(__file__).resolve().parent


def main() -> int:
    assert dbm.SCHEMA_VERSION == 6, "run this against memlens at schema version 6"
    tmp = Path(tempfile.mkdtemp())
    mem = tmp / "projects" / "-home-dev-proj" / "memory"
    mem.mkdir(parents=True)
    db = tmp / "v6.db"
    settings = load_settings(tmp / "none.toml", env={}, overrides={"db": str(db)})
    svc = MemoryService(settings, clock=lambda: 1_700_000_000.0,
                        embedder=make_embedder("hashing", {"dim": 64}), install_key=b"k" * 32)

    def write(name: str, text: str) -> None:
        p = mem / name
        p.write_text(text, encoding="utf-8")
        st = p.stat()
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))

    write("alpha.md", "# Alpha\n\nWAL mode and busy_timeout keep readers going.\n\n"
          "## Détails\n\nCheckpoints run in the background — ünïcode stays.\n")
    write("beta.md", "# Beta\n\nThe embedding cache avoids embedding unchanged text.\n")
    write("gamma.md", "# Gamma\n\nThis file is deleted later.\n")
    svc.ingest(roots_for_path(tmp / "projects"), project=True)
    write("alpha.md", "# Alpha\n\nWAL mode and busy_timeout keep readers going.\n\n"
          "## Détails\n\nCheckpoints run in the background — ünïcode stays.\n\n"
          "## Added\n\nA second version adds a section.\n")
    (mem / "gamma.md").unlink()
    svc.ingest(roots_for_path(tmp / "projects"), project=True)
    beta = next(d.id for d in svc.list_documents() if d.path == "beta.md")
    svc.rechunk([beta], ChunkerConfig(strategy="windows", max_tokens=8, overlap_tokens=0))
    svc.project()
    conn = svc.conn()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def q(sql: str) -> list[list[object]]:
        return [list(r) for r in conn.execute(sql)]

    expect = {
        "documents": q("SELECT id, content FROM memory_documents ORDER BY id"),
        "revisions": q("SELECT id, snapshot, diff, summary FROM memory_revisions ORDER BY id"),
        "chunks": q("SELECT id, text FROM memory_chunks ORDER BY id"),
        "nodes": q("SELECT id, text FROM knowledge_nodes ORDER BY id"),
        "cache": q("SELECT chunk_hash, fingerprint, hex(vector) FROM embedding_cache"
                   " ORDER BY chunk_hash, fingerprint"),
    }
    svc.close()
    shutil.copyfile(db, OUT / "dbsize_v6.db")
    (OUT / "dbsize_v6.json").write_text(json.dumps(expect, ensure_ascii=False, indent=1) + "\n",
                                        encoding="utf-8")
    shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
