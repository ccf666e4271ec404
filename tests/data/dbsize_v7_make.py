"""Make ``dbsize_v7.db`` and ``dbsize_v7.json`` for tests/test_dbsize.py: a real schema-7
database (documents, an edit, a rename, a tombstone, a rechunk, a projection) and what
memlens read from it at schema 7: every document's content, its revision history and
chunks, the node texts and the hits of lexical, vector and hybrid searches. The v8
upgrade must read back the same.

Run with memlens at schema 7 (before v8 dropped ``memory_documents.content``), e.g.::

    git archive 1357b22 src | tar -x -C /tmp/memlens7
    PYTHONPATH=/tmp/memlens7/src uv run python tests/data/dbsize_v7_make.py
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from memlens.core.chunking.chunker import ChunkerConfig
from memlens.core.config.settings import load_settings
from memlens.core.embedders.registry import make_embedder
from memlens.core.ingest.sources import roots_for_path
from memlens.core.service import MemoryService
from memlens.core.store import db as dbm

OUT = Path(__file__).resolve().parent
QUERIES = ["busy_timeout", "checkpoints background", "embedding cache", "ünïcode",
           "deleted later", "second version", "rename moved"]


def read_back(svc: Any) -> dict[str, Any]:
    """What the service reads from a database; the same function checks the upgrade."""
    docs = svc.list_documents(include_tombstoned=True)
    out: dict[str, Any] = {"documents": {}, "search": {}}
    for d in docs:
        det = svc.detail(d.id)
        out["documents"][f"{d.repository}/{d.path}"] = {
            "id": det.id, "content": det.content, "content_hash": det.content_hash,
            "tombstoned": det.tombstoned, "front_matter": det.front_matter,
            "current": det.current_revision_id, "active": det.active_revision_id,
            "revisions": [[r.id, r.number, r.change_kind, r.content_hash, r.path,
                           r.previous_path, r.snapshot, r.summary, r.diff, r.diff_truncated,
                           r.has_snapshot, r.size, r.chunker.name, r.chunker.version,
                           r.chunker.config.as_json() if r.chunker.config else None,
                           r.chunks, r.embedder, r.embedder_status]
                          for r in svc.revisions(d.id)],
            "chunks": [[c.ordinal, c.text, c.start_char, c.end_char, c.hash]
                       for c in svc.chunks(d.id)],
        }
    conn = svc.conn()
    out["nodes"] = [list(r) for r in conn.execute(
        "SELECT id, document_id, ordinal, heading, text FROM knowledge_nodes ORDER BY id")]
    for q in QUERIES:
        for mode in ("lexical", "vector", "hybrid"):
            res = svc.search(q, mode=mode, k=10, all_projects=True)
            out["search"][f"{mode}:{q}"] = [h.as_json() for h in res.hits]
    return out


def main() -> int:
    assert dbm.SCHEMA_VERSION == 7, "run this against memlens at schema version 7"
    tmp = Path(tempfile.mkdtemp())
    mem = tmp / "projects" / "-home-dev-proj" / "memory"
    mem.mkdir(parents=True)
    db = tmp / "v7.db"
    settings = load_settings(tmp / "none.toml", env={}, overrides={"db": str(db)})
    svc = MemoryService(settings, clock=lambda: 1_700_000_000.0,
                        embedder=make_embedder("hashing", {"dim": 64}), install_key=b"k" * 32)

    def write(name: str, text: str) -> None:
        p = mem / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        st = p.stat()
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))

    write("alpha.md", "# Alpha\n\nWAL mode and busy_timeout keep readers going.\n\n"
          "## Détails\n\nCheckpoints run in the background — ünïcode stays.\n")
    write("beta.md", "---\nname: beta\ntype: reference\n---\n# Beta\n\n"
          "The embedding cache avoids embedding unchanged text.\n")
    write("gamma.md", "# Gamma\n\nThis file is deleted later.\n")
    write("moved.md", "# Moved\n\nA note to rename moved around.\n")
    write("empty.md", "")
    svc.ingest(roots_for_path(tmp / "projects"), project=True)
    write("alpha.md", "# Alpha\n\nWAL mode and busy_timeout keep readers going.\n\n"
          "## Détails\n\nCheckpoints run in the background — ünïcode stays.\n\n"
          "## Added\n\nA second version adds a section.\n")
    (mem / "gamma.md").unlink()
    (mem / "sub").mkdir()
    (mem / "moved.md").rename(mem / "sub" / "moved.md")
    svc.ingest(roots_for_path(tmp / "projects"), project=True)
    beta = next(d.id for d in svc.list_documents() if d.path == "beta.md")
    svc.rechunk([beta], ChunkerConfig(strategy="windows", max_tokens=8, overlap_tokens=0))
    svc.project()
    expect = read_back(svc)
    svc.conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    svc.close()
    shutil.copyfile(db, OUT / "dbsize_v7.db")
    (OUT / "dbsize_v7.json").write_text(json.dumps(expect, ensure_ascii=False, indent=1) + "\n",
                                        encoding="utf-8")
    shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
