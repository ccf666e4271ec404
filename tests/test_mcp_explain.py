"""``search_memory(explain=true)`` over the real stdio protocol (issue 45): one compact
``why:`` line per hit, the same hits as without it, nothing added when not asked."""

from __future__ import annotations

from tests.test_mcp import Built, Recorder, assert_no_leaks, built, run, session

__all__ = ["built"]  # the module-scoped database fixture of tests/test_mcp.py


def test_search_memory_explain_adds_one_line_per_hit(built: Built) -> None:
    async def body() -> None:
        async with session(built) as s:
            r = Recorder(s)
            q = {"query": "busy_timeout WAL migrations", "k": 4}
            plain_text, plain = await r.ok("search_memory", q)
            text, data = await r.ok("search_memory", {**q, "explain": True})
            assert "why:" not in plain_text and all("why" not in h for h in plain["hits"])
            keys = [(h["repository"], h["path"], h["ordinal"]) for h in data["hits"]]
            assert keys == [(h["repository"], h["path"], h["ordinal"]) for h in plain["hits"]]
            whys = [line.strip() for line in text.splitlines() if line.strip().startswith("why:")]
            assert len(whys) == len(data["hits"]) == 4
            for h, line in zip(data["hits"], whys, strict=True):
                assert line == f"why: {h['why']}"
                assert h["why"].startswith("score ") and " = words " in h["why"]
                assert "meaning" in h["why"]
            _, lex = await r.ok("search_memory", {**q, "mode": "lexical", "explain": True})
            assert all("bm25" in h["why"] for h in lex["hits"])
            assert_no_leaks(built, r.seen)

    run(body, timeout=120)
