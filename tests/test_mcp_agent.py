"""Issue 42, item 7: MCP for an agent, through the MCP SDK's stdio client against the
real `memlens mcp`. Every echo of a caller's value is capped (a 100,000-character query
came back in full); a wrong argument type is one sentence, not pydantic's report; tool
descriptions carry no source indentation; `read_memory` of a deleted note says deleted;
the two `claude mcp add` lines of the README and docs/mcp.md start a server that
answers `initialize` and `tools/list`."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli
from tests.test_mcp import TIDEWATER, TOOLS, Built, Recorder, assert_no_leaks, build, run, session

mcp = pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build(tmp_path_factory.mktemp("mcp-agent"))


def _size(res: object) -> int:
    text = "\n".join(c.text for c in res.content if hasattr(c, "text"))  # type: ignore[attr-defined]
    return len(text) + len(json.dumps(res.structured_content))  # type: ignore[attr-defined]


def test_every_echo_is_capped(built: Built) -> None:
    """A 100,000-character query, repository, path or mode is echoed cut, with its length."""
    big = "x" * 100_000

    async def body() -> None:
        async with session(built) as s:
            r = Recorder(s)
            for mode in ("hybrid", "lexical"):
                res = await r.call("search_memory", {"query": big, "mode": mode})
                assert not res.is_error, res.content
                assert _size(res) < 20_000, _size(res)  # 8 snippets; the query was 200,000
                assert "x" * 1_000 not in r.seen[-1] + r.seen[-2]
                assert "(100,000 chars)" in res.content[0].text
                assert len(res.structured_content["query"]) < 200
            for args in ({"query": "x", "repository": "r" * 100_000},
                         {"query": "x", "mode": "m" * 100_000},
                         {"query": "x", "k": "9" * 100_000}):
                res = await r.call("search_memory", args)
                assert res.is_error and _size(res) < 2_000, _size(res)
                assert "100,000 chars" in res.content[0].text
            res = await r.call("read_memory", {"repository": TIDEWATER, "path": "p" * 100_000})
            assert res.is_error and _size(res) < 2_000 and "100,000 chars" in res.content[0].text
            res = await r.call("memory_history", {"repository": "q" * 100_000, "path": "a.md"})
            assert res.is_error and _size(res) < 2_000
            res = await r.call("list_memories", {"repository": "z" * 100_000})
            assert res.is_error and _size(res) < 2_000

    run(body)


WRONG_TYPES = [
    ("search_memory", {"query": "retry", "k": "five"},
     "search_memory: k must be a whole number from 1 to 50; got 'five'."),
    ("search_memory", {"query": "retry", "k": 2.5},
     "search_memory: k must be a whole number from 1 to 50; got 2.5."),
    ("search_memory", {"query": "retry", "all_projects": "maybe"},
     "search_memory: all_projects must be true or false; got 'maybe'."),
    ("search_memory", {"query": 42},
     "search_memory: query must be a string: a few words or a question; got 42."),
    ("search_memory", {"k": 3},
     "search_memory: query is required: a few words or a question."),
    ("memory_history", {"repository": TIDEWATER, "path": "database.md", "limit": "all"},
     "memory_history: limit must be a whole number from 1 to 100; got 'all'."),
    ("read_memory", {"repository": ["a"], "path": "MEMORY.md"},
     "read_memory: repository must be a string: a project slug from list_memories; got ['a']."),
]


def test_a_wrong_argument_type_is_one_sentence(built: Built) -> None:
    """`k: "five"` and friends: the sentence the range errors use, no pydantic report."""
    async def body() -> None:
        async with session(built) as s:
            r = Recorder(s)
            for tool, args, want in WRONG_TYPES:
                msg = await r.error(tool, args)
                assert msg == want, (tool, args, msg)
                for word in ("validation error", "pydantic", "type=", "Input should"):
                    assert word not in msg
            _, data = await r.ok("search_memory", {"query": "busy_timeout", "k": 3})
            assert data["hits"]  # still serving

    run(body)


def test_tool_descriptions_are_dedented(built: Built) -> None:
    async def body() -> None:
        async with session(built) as s:
            listed = await s.list_tools()
            assert {t.name for t in listed.tools} == TOOLS
            for t in listed.tools:
                assert t.description and t.description == t.description.strip()
                assert not re.search(r"\n[ \t]", t.description), (t.name, t.description)
                assert "  " not in t.description, (t.name, t.description)

    run(body)


def test_read_memory_of_a_deleted_note_says_deleted(tmp_path: Path) -> None:
    b = Built(tmp_path)
    b.cwd.mkdir()
    mem = b.corpus / "-home-dev-gone" / "memory"
    mem.mkdir(parents=True)
    (mem / "keep.md").write_text("# Keep\n\nstays\n", encoding="utf-8")
    (mem / "gone.md").write_text("# Gone\n\nThe heliotrope rollout notes.\n", encoding="utf-8")
    for step in ("write", "delete"):
        if step == "delete":
            (mem / "gone.md").unlink()
        proc = run_cli("ingest", str(b.corpus), "--db", str(b.db), env=b.env)
        assert proc.returncode == 0, proc.stderr

    async def body() -> None:
        async with session(b) as s:
            r = Recorder(s)
            text, data = await r.ok("read_memory", {"repository": "-home-dev-gone",
                                                    "path": "gone.md"})
            first = text.splitlines()[0]
            assert "deleted at" in first and "not searchable" in first, first
            assert "projection ready" not in text and "ready" not in first
            assert data["state"] == "deleted" and data["projection_status"] == "deleted"
            assert data["deleted_at"] and "heliotrope" in data["text"]
            text, data = await r.ok("read_memory", {"repository": "-home-dev-gone",
                                                    "path": "keep.md"})
            assert data["projection_status"] == "ready" and data["deleted_at"] is None
            assert "live" in text.splitlines()[0]
            assert_no_leaks(b, r.seen)

    run(body)


def _add_lines(doc: Path) -> list[str]:
    """The server part (after `--`) of each `claude mcp add memlens -- …` line of ``doc``."""
    found = re.findall(r"^claude mcp add memlens -- (.+)$", doc.read_text(encoding="utf-8"),
                       flags=re.MULTILINE)
    return [line.strip() for line in found]


def test_the_docs_give_the_same_two_claude_mcp_add_lines() -> None:
    readme, mcp_doc = _add_lines(REPO / "README.md"), _add_lines(REPO / "docs" / "mcp.md")
    assert readme == mcp_doc, (readme, mcp_doc)
    assert readme == ["uv run --project /path/to/memlens memlens mcp --watch",
                      "memlens mcp --watch"]


@pytest.mark.parametrize("which", ["checkout", "installed"])
def test_each_claude_mcp_add_line_starts_the_server(which: str, tmp_path: Path) -> None:
    """The exact command of each documented line (the checkout path filled in) answers
    `initialize` and `tools/list`. The installed line runs the `memlens` console script
    of this environment, found on PATH as an installed tool's would be."""
    lines = dict(zip(("checkout", "installed"), _add_lines(REPO / "README.md"), strict=True))
    argv = shlex.split(lines[which].replace("/path/to/memlens", str(REPO)))
    bindir = Path(sys.executable).parent
    if argv[0] == "uv" and shutil.which("uv") is None:
        pytest.skip("uv is not on PATH")
    project = tmp_path / "some-project"  # Claude Code starts the server in the project
    projects = tmp_path / "claude" / "projects"
    (projects / "-home-dev-x" / "memory").mkdir(parents=True)
    project.mkdir()
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
           "MEMLENS_DB": str(tmp_path / "m.db"), "MEMLENS_ROOTS": str(projects),
           "MEMLENS_EMBEDDER": "hashing", "UV_OFFLINE": "1",
           "MEMLENS_CONFIG": str(tmp_path / "none.toml")}
    env.pop("VIRTUAL_ENV", None)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=str(project))

    async def body() -> None:
        with open(tmp_path / "server.err", "w", encoding="utf-8") as err:
            async with stdio_client(params, errlog=err) as (read, write):
                async with ClientSession(read, write) as s:
                    init = await s.initialize()
                    assert init.server_info.name == "memlens"
                    listed = await s.list_tools()
                    assert {t.name for t in listed.tools} == TOOLS

    run(body, timeout=120)
    assert "Traceback" not in (tmp_path / "server.err").read_text(encoding="utf-8")
