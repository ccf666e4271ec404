"""`memlens mcp` end to end: the real CLI builds a database, the real server runs in a
subprocess, and the MCP SDK's stdio client talks to it (no in-process shortcuts)."""

from __future__ import annotations

import json
import os
import random
import shutil
import string
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CORPUS, REPO, run_cli

mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

TOOLS = {"search_memory", "read_memory", "memory_history", "list_memories", "memory_status"}
TIDEWATER = "-home-dev-projects-tidewater-api"
_rng = random.Random(20240611)  # fake credentials, made up at run time
AWS_KEY = "AKIA" + "".join(_rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))
GH_TOKEN = "ghp_" + "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(36))


class Built:
    """A database built by `memlens ingest` over a corpus copy with a planted secret."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.db = root / "m.db"
        self.corpus = root / "corpus"
        self.cwd = root / "elsewhere"  # not a known project: no preference
        self.env = {"MEMLENS_EMBEDDER": "hashing", "HF_HUB_OFFLINE": "1",
                    "MEMLENS_CONFIG": str(root / "none.toml"),
                    "MEMLENS_INSTALL_KEY_FILE": str(root / "install.key")}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    def plant(corpus: Path) -> None:
        (corpus / TIDEWATER / "memory" / "deploy-keys.md").write_text(
            "# Deploy keys\n\nCI deploys with aws_access_key_id = " + AWS_KEY + " and the\n"
            "release bot token " + GH_TOKEN + " (rotate quarterly).\n", encoding="utf-8")

    return build(tmp_path_factory.mktemp("mcp"), plant)


def build(root: Path, plant: Callable[[Path], None] | None = None) -> Built:
    """The bundled corpus copied under ``root`` (``plant`` may add files to the copy) and
    ingested by `memlens ingest`."""
    b = Built(root)
    shutil.copytree(CORPUS, b.corpus, ignore=shutil.ignore_patterns("*.jsonl", "README.md"))
    if plant is not None:
        plant(b.corpus)
    b.cwd.mkdir()
    proc = run_cli("ingest", str(b.corpus), "--db", str(b.db), env=b.env)
    assert proc.returncode == 0, proc.stderr
    return b


@asynccontextmanager
async def session(b: Built, *args: str, cwd: Path | None = None,
                  errlog: Path | None = None) -> AsyncIterator[ClientSession]:
    env = {**os.environ, **b.env}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memlens.cli.main", "mcp", "--db", str(b.db), *args],
        env=env, cwd=str(cwd or b.cwd))
    with open(errlog or b.root / "server.err", "a", encoding="utf-8") as err:
        async with stdio_client(params, errlog=err) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


def run(fn: Callable[[], Awaitable[None]], timeout: float = 60) -> None:
    async def main() -> None:
        with anyio.fail_after(timeout):
            await fn()

    try:
        anyio.run(main)
    except BaseExceptionGroup as group:  # the SDK's task groups wrap a failed assert
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup) and len(leaf.exceptions) == 1:
            leaf = leaf.exceptions[0]
        raise leaf from None


class Recorder:
    """Calls tools and keeps every response for the leak checks."""

    def __init__(self, s: ClientSession) -> None:
        self.s = s
        self.seen: list[str] = []

    async def call(self, name: str, args: dict[str, Any] | None = None) -> Any:
        res = await self.s.call_tool(name, args or {})
        text = "\n".join(c.text for c in res.content if hasattr(c, "text"))
        self.seen.append(text)
        self.seen.append(json.dumps(res.structured_content))
        return res

    async def ok(self, name: str, args: dict[str, Any] | None = None) -> tuple[str, Any]:
        res = await self.call(name, args)
        assert not res.is_error, res.content
        return res.content[0].text, res.structured_content

    async def error(self, name: str, args: dict[str, Any]) -> str:
        res = await self.call(name, args)
        assert res.is_error, res.content
        text = str(res.content[0].text)
        assert "Traceback" not in text
        return text


def assert_no_leaks(b: Built, seen: list[str]) -> None:
    blob = "\n".join(seen)
    assert AWS_KEY not in blob and GH_TOKEN not in blob
    home = os.path.expanduser("~")
    for bad in (str(b.root), str(REPO), "/work/", "/home/", "/tmp/", home + "/", "source_path"):
        assert bad not in blob, bad


def test_tools_over_stdio(built: Built) -> None:
    """The five tools and the resource answer over the protocol, with no paths or secrets."""
    async def body() -> None:
        async with session(built) as s:
            listed = await s.list_tools()
            assert {t.name for t in listed.tools} == TOOLS
            assert all(t.description for t in listed.tools)
            r = Recorder(s)

            text, data = await r.ok("search_memory", {"query": "busy_timeout"})
            assert f"{TIDEWATER}/database.md#" in text and "(lexical)" in text
            first = data["hits"][0]
            assert (first["repository"], first["path"]) == (TIDEWATER, "database.md")
            assert first["match"] == "lexical" and first["uri"].startswith("memory://")
            assert {"heading_path", "ordinal", "start_char", "end_char", "score", "snippet",
                    "lexical_match"} <= set(first)
            assert data["matches"] >= 1

            text, data = await r.ok("search_memory", {"query": "zzqxv flurbleglorp",
                                                      "mode": "hybrid", "k": 3})
            assert data["matches"] == 0 and "closest by meaning only" in text
            assert data["notes"] and all(h["match"] == "closest" for h in data["hits"])

            text, data = await r.ok("read_memory", {"repository": TIDEWATER,
                                                    "path": "database.md"})
            assert "busy_timeout" in data["text"] and data["text"] in text
            spans = data["chunks"]
            assert spans and spans[0]["start_char"] == 0
            assert all(c["end_char"] > c["start_char"] for c in spans)
            assert "Chunks:" in text and "[chars 0-" in text

            text, data = await r.ok("memory_history", {"repository": TIDEWATER,
                                                       "path": "database.md", "limit": 5})
            assert data["total"] >= 1 and data["revisions"][0]["change_kind"] == "create"

            text, data = await r.ok("list_memories", {})
            paths = {(d["repository"], d["path"]) for d in data["documents"]}
            assert (TIDEWATER, "MEMORY.md") in paths and data["count"] >= 25
            assert any(d["index_warnings"] for d in data["documents"]
                       if d["path"] == "MEMORY.md")
            _, only = await r.ok("list_memories", {"repository": TIDEWATER})
            assert {d["repository"] for d in only["documents"]} == {TIDEWATER}

            text, data = await r.ok("memory_status", {})
            assert data["documents"] >= 25 and data["queue"]["ready"] >= 25
            assert data["failed"] == [] and "hashing" in data["embedder"]
            assert "embedder:" in text and "db" not in data

            res = await s.read_resource(f"memory://{TIDEWATER}/database.md")
            r.seen.append(res.contents[0].text)  # type: ignore[union-attr]
            assert "busy_timeout" in res.contents[0].text  # type: ignore[union-attr]
            nested = await s.read_resource(
                "memory://-home-dev-projects-orchard-etl/notes/retro-2024-q3.md")
            assert "retro" in nested.contents[0].text.lower()  # type: ignore[union-attr]
            templates = await s.list_resource_templates()
            assert [t.uri_template for t in templates.resource_templates] == [
                "memory://{repository}/{+path}"]

            # the planted secret's document is served, redacted
            _, keys = await r.ok("read_memory", {"repository": TIDEWATER,
                                                 "path": "deploy-keys.md"})
            assert "Deploy keys" in keys["text"]
            await r.ok("search_memory", {"query": "release bot token deploy", "k": 50})
            assert_no_leaks(built, r.seen)

    run(body)


def test_bad_input_is_a_tool_error(built: Built) -> None:
    """Unknown names get close matches; bad queries and k get a sentence, never a crash."""
    async def body() -> None:
        async with session(built) as s:
            r = Recorder(s)
            msg = await r.error("read_memory", {"repository": "tidewater-api",
                                                "path": "database.md"})
            assert "Unknown repository" in msg and TIDEWATER in msg
            msg = await r.error("read_memory", {"repository": TIDEWATER, "path": "databse.md"})
            assert "Unknown path" in msg and "database.md" in msg
            msg = await r.error("memory_history", {"repository": TIDEWATER, "path": "nope.md"})
            assert "Unknown path" in msg
            assert "query is empty" in await r.error("search_memory", {"query": "  "})
            assert "from 1 to 50" in await r.error("search_memory", {"query": "x", "k": 0})
            assert "from 1 to 50" in await r.error("search_memory", {"query": "x", "k": 51})
            assert "mode" in await r.error("search_memory", {"query": "x", "mode": "fuzzy"})
            msg = await r.error("search_memory", {"query": "x", "repository": "lanternfsh"})
            assert "-home-dev-projects-lanternfish" in msg
            msg = await r.error("list_memories", {"repository": "nope"})
            assert "Unknown repository" in msg and "leave repository out" in msg
            assert "call list_memories" not in msg  # it is list_memories that failed
            assert "call list_memories" in await r.error(
                "search_memory", {"query": "x", "repository": "nope"})
            with pytest.raises(mcp.MCPError, match="Unknown path"):
                await s.read_resource(f"memory://{TIDEWATER}/missing.md")
            # still serving after all that
            _, data = await r.ok("memory_status")
            assert data["documents"] >= 25
            assert_no_leaks(built, r.seen)

    run(body)


def test_current_project_ranks_first(built: Built, tmp_path: Path) -> None:
    """Started inside a project folder, its memory comes first; all_projects turns it off."""
    from memlens.core.ingest.sources import claude_slug

    b = Built(tmp_path)
    for f in built.root.glob("m.db*"):
        shutil.copy(f, tmp_path / f.name)
    proj, mem = tmp_path / "proj", tmp_path / "mem"
    for d in (proj, mem, b.cwd):
        d.mkdir()
    (mem / "db.md").write_text("# Local\n\nWe set busy_timeout to 250 ms here.\n",
                               encoding="utf-8")
    slug = claude_slug(proj.resolve())
    proc = run_cli("ingest", str(mem), f"--repository={slug}", "--db", str(b.db), env=b.env)
    assert proc.returncode == 0, proc.stderr

    async def body() -> None:
        async with session(b, cwd=proj) as s:
            r = Recorder(s)
            _, data = await r.ok("search_memory", {"query": "busy_timeout", "mode": "lexical"})
            assert data["preferred_repository"] == slug
            assert data["hits"][0]["repository"] == slug
            _, data = await r.ok("search_memory", {"query": "busy_timeout", "mode": "lexical",
                                                   "all_projects": True})
            assert data["preferred_repository"] is None

    run(body)


def test_watch_picks_up_new_files(built: Built, tmp_path: Path) -> None:
    """`--watch` ingests a file written while serving; events never reach stdout."""
    mem = tmp_path / "claude" / "projects" / "-home-dev-watched" / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text("# Index\n\n- [first](first.md)\n", encoding="utf-8")
    (mem / "first.md").write_text("# First\n\nNothing special.\n", encoding="utf-8")
    b = Built(tmp_path)
    b.cwd.mkdir()
    errlog = tmp_path / "watch.err"

    async def body() -> None:
        async with session(b, "--watch", str(mem), errlog=errlog) as s:
            r = Recorder(s)
            (mem / "fresh.md").write_text("# Fresh\n\nThe quokkaplasm migration is done.\n",
                                          encoding="utf-8")
            found = None
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                _, data = await r.ok("search_memory", {"query": "quokkaplasm",
                                                       "mode": "lexical"})
                if data["matches"]:
                    found = data["hits"][0]
                    break
                await anyio.sleep(0.2)
            assert found is not None, errlog.read_text(encoding="utf-8")
            assert found["path"] == "fresh.md"
            _, st = await r.ok("memory_status")
            assert st["watch"]["state"] in ("watching", "starting")
            assert_no_leaks(b, r.seen)

    run(body)
    err = errlog.read_text(encoding="utf-8")
    assert "memlens watch:" in err and "Traceback" not in err


def test_without_the_sdk_one_line_and_exit_2(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['mcp'] = None\n"
            "from memlens.cli.main import main\n"
            f"sys.exit(main(['mcp', '--db', {str(tmp_path / 'x.db')!r}]))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == ("memlens mcp needs the MCP SDK: uv sync --extra mcp "
                           "(or pip install 'memlens[mcp]')\n")
    assert not (tmp_path / "x.db").exists()


def test_a_crash_is_a_tool_error_without_paths(make_service: Callable[..., Any]) -> None:
    """An unexpected exception inside a tool becomes an isError result: one sentence, no
    traceback, no absolute path; the service thread keeps working afterwards."""
    from memlens.mcp import server, tools

    app = server.MemlensMCP(make_service())
    try:
        def boom(svc: object) -> tools.ToolOutput:
            raise RuntimeError(f"disk I/O error at {REPO}/secret/place.db")

        res = app.run_tool("memory_status", boom)
        text = res.content[0].text  # type: ignore[union-attr]
        assert res.is_error and "RuntimeError" in text and "<path>" in text
        assert str(REPO) not in text and "Traceback" not in text
        ok = app.run_tool("memory_status", tools.memory_status, None)
        assert not ok.is_error and ok.structured_content["documents"] == 0  # type: ignore[index]
    finally:
        app.close()


def test_stdout_stays_empty_without_a_client(built: Built, tmp_path: Path) -> None:
    """stdin at EOF: the server (watching too) exits 0 and writes nothing to stdout."""
    mem = tmp_path / "memory"
    mem.mkdir()
    (mem / "a.md").write_text("# A\n\ntext\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "memlens.cli.main", "mcp", "--db", str(tmp_path / "w.db"),
         "--watch", str(mem)], stdin=subprocess.DEVNULL, capture_output=True, text=True,
        env={**os.environ, **built.env}, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
