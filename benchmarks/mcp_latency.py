"""MCP server latency: start-up, and search through the protocol vs in process.

A database is built from a copy of the bundled corpus with the real CLI
(``memlens ingest``), then:

* start-up: ``memlens mcp`` is spawned through the MCP SDK's stdio client and
  timed from spawn until ``initialize`` returns (``--starts`` samples), plus the
  first ``search_memory`` call (which loads the embedder);
* protocol search: the 96 corpus queries (``corpus/queries.jsonl``) are sent as
  ``search_memory`` calls over one session (``--rounds`` passes, after a warm-up);
* in-process search: the same queries through ``MemoryService.search`` on the same
  database, with the same ``k`` and mode.

CPU time is reported beside wall time: the client's ``time.process_time()`` and
the server's (the children's ``getrusage`` after the session ends, minus a
start-and-stop-only session).

Run::

    uv run python benchmarks/mcp_latency.py                       # hashing embedder
    uv run python benchmarks/mcp_latency.py --embedder auto --rounds 3 --json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from memlens.core.service import MemoryService, load_settings

ROOT = Path(__file__).resolve().parent.parent


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def build_db(work: Path, env: dict[str, str]) -> Path:
    corpus = work / "corpus"
    shutil.copytree(ROOT / "corpus", corpus, ignore=shutil.ignore_patterns("*.jsonl", "README.md"))
    db = work / "bench.db"
    subprocess.run([sys.executable, "-m", "memlens.cli.main", "ingest", str(corpus), "--db",
                    str(db)], env=env, check=True, capture_output=True, cwd=work)
    return db


def _params(db: Path, env: dict[str, str], cwd: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "memlens.cli.main", "mcp", "--db", str(db)],
                                 env=env, cwd=str(cwd))


async def time_startups(db: Path, env: dict[str, str], cwd: Path, n: int) -> dict[str, Any]:
    """Spawn → initialize, and the first search (embedder load), ``n`` times."""
    init: list[float] = []
    first: list[float] = []
    cpu: list[float] = []
    with open(os.devnull, "w") as err:
        for _ in range(n):
            c0 = _children_cpu()
            t0 = time.perf_counter()
            async with stdio_client(_params(db, env, cwd), errlog=err) as (r, w):
                async with ClientSession(r, w) as s:
                    await s.initialize()
                    t1 = time.perf_counter()
                    await s.call_tool("search_memory", {"query": "warm up", "k": 1})
                    t2 = time.perf_counter()
            init.append(t1 - t0)
            first.append(t2 - t1)
            cpu.append(_children_cpu() - c0)
    return {"initialize_s": init, "first_search_s": first, "server_cpu_s": cpu}


async def time_protocol(db: Path, env: dict[str, str], cwd: Path, queries: list[str],
                        rounds: int, k: int, mode: str) -> dict[str, Any]:
    """search_memory over one session: wall per call, client CPU, server CPU."""
    walls: list[float] = []
    with open(os.devnull, "w") as err:
        c0 = _children_cpu()
        async with stdio_client(_params(db, env, cwd), errlog=err) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                for q in queries[:10]:  # warm-up
                    await s.call_tool("search_memory", {"query": q, "k": k, "mode": mode})
                p0 = time.process_time()
                for _ in range(rounds):
                    for q in queries:
                        t0 = time.perf_counter()
                        res = await s.call_tool("search_memory",
                                                {"query": q, "k": k, "mode": mode})
                        walls.append(time.perf_counter() - t0)
                        assert not res.is_error, res.content
                client_cpu = time.process_time() - p0
        server_cpu = _children_cpu() - c0
    return {"wall_s": walls, "client_cpu_s": client_cpu, "server_cpu_session_s": server_cpu}


def time_in_process(db: Path, queries: list[str], rounds: int, k: int,
                    mode: str) -> dict[str, Any]:
    svc = MemoryService(load_settings(overrides={"db": str(db)}))
    try:
        for q in queries[:10]:
            svc.search(q, mode=mode, k=k)
        walls: list[float] = []
        p0 = time.process_time()
        for _ in range(rounds):
            for q in queries:
                t0 = time.perf_counter()
                svc.search(q, mode=mode, k=k)
                walls.append(time.perf_counter() - t0)
        cpu = time.process_time() - p0
    finally:
        svc.close()
    return {"wall_s": walls, "cpu_s": cpu}


def _row(name: str, xs: list[float], cpu_per: float | None) -> str:
    ms = [x * 1000 for x in xs]
    cpu = f"{cpu_per * 1000:9.2f}" if cpu_per is not None else f"{'-':>9}"
    return (f"{name:<28} {len(ms):>5} {_pct(ms, 50):9.2f} {_pct(ms, 95):9.2f} "
            f"{statistics.fmean(ms):9.2f} {cpu}")


def report(start: dict[str, Any], proto: dict[str, Any], local: dict[str, Any],
           startup_cpu: float) -> str:
    n = len(proto["wall_s"])
    server_search_cpu = max(0.0, proto["server_cpu_session_s"] - startup_cpu) / n
    client_cpu = proto["client_cpu_s"] / n
    lines = [f"{'measure (ms)':<28} {'n':>5} {'p50':>9} {'p95':>9} {'mean':>9} {'cpu/op':>9}",
             _row("start-up: spawn→initialize", start["initialize_s"],
                  statistics.fmean(start["server_cpu_s"])),
             _row("first search_memory", start["first_search_s"], None),
             _row("search_memory (protocol)", proto["wall_s"], server_search_cpu + client_cpu),
             _row("MemoryService.search", local["wall_s"], local["cpu_s"] / len(local["wall_s"])),
             "",
             f"protocol cpu/op = server {server_search_cpu * 1000:.2f} ms + client "
             f"{client_cpu * 1000:.2f} ms; start-up cpu/op is the server's whole "
             "start-search-stop session."]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedder", default="hashing", help="embedder name (default hashing)")
    ap.add_argument("--starts", type=int, default=5, help="start-up samples (5)")
    ap.add_argument("--rounds", type=int, default=3, help="passes over the 96 queries (3)")
    ap.add_argument("-k", type=int, default=8)
    ap.add_argument("--mode", default="hybrid", choices=["lexical", "vector", "hybrid"])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    queries = [json.loads(ln)["query"] for ln in
               (ROOT / "corpus" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
               if ln.strip()]
    with tempfile.TemporaryDirectory(prefix="memlens-mcp-bench-") as d:
        work = Path(d)
        env = {**os.environ, "MEMLENS_EMBEDDER": a.embedder, "HF_HUB_OFFLINE": "1",
               "MEMLENS_CONFIG": str(work / "none.toml"),
               "MEMLENS_INSTALL_KEY_FILE": str(work / "install.key")}
        os.environ.update({k: env[k] for k in ("MEMLENS_EMBEDDER", "MEMLENS_CONFIG",
                                                "MEMLENS_INSTALL_KEY_FILE", "HF_HUB_OFFLINE")})
        db = build_db(work, env)
        start = anyio.run(time_startups, db, env, work, a.starts)
        proto = anyio.run(time_protocol, db, env, work, queries, a.rounds, a.k, a.mode)
        local = time_in_process(db, queries, a.rounds, a.k, a.mode)
    startup_cpu = statistics.fmean(start["server_cpu_s"])
    if a.json:
        print(json.dumps({"embedder": a.embedder, "mode": a.mode, "k": a.k, "startup": start,
                          "protocol": proto, "in_process": local}, indent=2))
    else:
        print(f"embedder {a.embedder}, mode {a.mode}, k={a.k}, {len(queries)} queries × "
              f"{a.rounds} rounds, {a.starts} start-ups")
        print(report(start, proto, local, startup_cpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
