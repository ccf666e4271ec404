"""Snippets are built on a TEMP FTS5 copy of the hits' rows (core/search.py,
``attach_snippets``): the text and highlight spans must equal what ``snippet()``
gives on the main index, and the TEMP table must be left empty."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memlens.core.search import engine as S
from memlens.core.search import rows as R

DOCS = {
    "deploy.md": "# Deploying\n\nWe deploy the api with a blue green rollout. Deployment keys"
                 " rotate weekly; the deployer runs `make ship`.\n\n## Rollback\n\nRoll back by"
                 " redeploying the previous tag. Deploys are logged.\n",
    "cache.md": "# Caching\n\nThe cache invalidation job runs nightly. Cached pages expire"
                " after an hour; caching headers are set by the edge.\n",
    "notes/auth.md": "# Auth\n\nTokens are refreshed by the auth worker. The deploy pipeline"
                     " needs the auth token too.\n\n" + "filler words here. " * 60 + "\nlast"
                     " deploy note at the end of a long section.\n",
}
QUERIES = ["deploy", "deploy rollback", "cach", "auth token", "SQLITE_BUSY", "pipeline deploy*",
           "nothing-matches-this", "\"quoted\" OR AND NEAR"]


def _service(tree: Any, make_service: Any) -> Any:
    for rel, text in DOCS.items():
        tree.write(rel, text)
    svc = make_service()
    svc.ingest(svc.resolve_roots([tree.projects]))
    return svc


def test_temp_snippets_equal_main_index_snippets(tree: Any, make_service: Any) -> None:
    svc = _service(tree, make_service)
    conn = svc.conn()
    compared = 0
    for q in QUERIES:
        fts = S.build_fts_query(q)
        assert fts is not None
        ids = [int(r[0]) for r in conn.execute(
            "SELECT rowid FROM knowledge_nodes_fts WHERE knowledge_nodes_fts MATCH ?", (fts,))]
        main = R.main_snippets(conn, fts, ids)
        temp = R.temp_snippets(conn, fts, ids)
        assert temp == main, q
        compared += len(ids)
        assert conn.execute(f"SELECT count(*) FROM {R.SNIP_TABLE}").fetchone()[0] == 0
    assert compared >= 6  # the queries really matched something


def test_search_hits_carry_highlights_on_a_read_only_database(tree: Any, make_service: Any,
                                                              tmp_path: Path) -> None:
    from memlens.core.store import db as dbm

    svc = _service(tree, make_service)
    svc.close()
    conn = dbm.connect(tmp_path / "memlens.db", readonly=True)
    try:
        res = S.search(conn, "deploy rollback", mode="lexical", k=5)
        assert res.hits
        for h in res.hits:
            assert h.highlights, h.snippet
            for a, b in h.highlights:
                assert h.snippet[a:b].lower().startswith(("deploy", "redeploy", "roll"))
    finally:
        conn.close()
