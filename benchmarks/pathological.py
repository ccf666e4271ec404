"""Resource bounds on heading-dense files: peak RSS and database bytes per input byte.

Usage::

    uv run python benchmarks/pathological.py [--sizes 3.5M,8M] [--embedder static]
        [--cap 1000000] [--workdir DIR] [--json] [--trace]

For each size it writes one Markdown file into a fresh memory folder and runs the
real CLI (``python -m memlens.cli.main ingest FOLDER --db DB --json``: read, redact, chunk,
store, then project: embed, FTS, vectors) in a child process, then reads the
child's own resource usage (``os.wait4``: ``ru_maxrss``, user + system CPU):

* ``headings``: heading-dense Markdown, one ATX heading and one short body line
  per section, about 11.6 bytes a section (the issue's 300,000 headings in 3.5 MB;
  ``8M`` is exactly the 8 MiB ingest limit, ~720,000 headings);
* ``prose``: the same number of bytes as ordinary paragraphs (the floor: what a
  file of that size costs when it is not pathological).

Both run with the per-file chunk cap lifted to ``--cap`` (default 1,000,000) so
the whole file is stored and the database can be measured; one more run per size
(``headings@cap``) keeps the default cap (5,000) and checks that the file fails
alone with one line and exit code 1 while a small neighbour file still ingests.

Reported per run: input bytes, stored chunks, database bytes (main file + WAL +
SHM after the child exits) and their ratio to the input, peak RSS of the child,
child CPU seconds and wall seconds. Targets (issue 16): <= 20 database bytes per
input byte on heading-dense input; peak RSS <= 300 MB on the 8 MiB file.
``--trace`` additionally runs the chunker alone under ``tracemalloc`` in a child
and prints its traced peak and top allocation sites.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET_DB_PER_BYTE = 20.0
TARGET_RSS_MB_8MIB = 300.0
MIB = 1024 * 1024
DEFAULT_CAP = 5000  # memlens.core.ingest.pipeline.DEFAULT_MAX_CHUNKS_PER_FILE
_WORDS = ("cache", "deploy", "schema", "retry", "token", "queue", "index", "shard",
          "lease", "quota", "audit", "flag", "build", "trace", "merge", "route")
_SHORT = ("node", "port", "user", "host", "path", "mode", "size", "role")


def parse_size(text: str) -> int:
    """``3.5M`` -> 3,500,000 bytes; ``8M`` -> 8 MiB exactly (the ingest limit); ``200k``."""
    t = text.strip().lower()
    if t == "8m":
        return 8 * MIB
    mult = {"k": 1000, "m": 1_000_000}.get(t[-1:], 1)
    return int(float(t.rstrip("km")) * mult)


def heading_dense(n_bytes: int) -> str:
    """Exactly ``n_bytes`` of ASCII Markdown: ``# hN`` then one four-letter word line,
    repeated (~11.6 bytes a section; 3.5 MB holds about 300,000 headings)."""
    parts: list[str] = []
    size = i = 0
    while size < n_bytes:
        s = f"# h{i % 300}\n{_SHORT[i % 8]}\n"
        parts.append(s)
        size += len(s)
        i += 1
    return _fit("".join(parts), n_bytes)


def prose(n_bytes: int) -> str:
    """Exactly ``n_bytes`` of ordinary paragraphs (five sentences each, blank line between)."""
    parts: list[str] = []
    size = i = 0
    while size < n_bytes:
        words = [_WORDS[(i * 7 + k * 3) % 16] for k in range(60)]
        sentences = [" ".join(words[k:k + 12]).capitalize() + "." for k in range(0, 60, 12)]
        s = f"Note {i}: " + " ".join(sentences) + "\n\n"
        parts.append(s)
        size += len(s)
        i += 1
    return _fit("".join(parts), n_bytes)


def _fit(text: str, n_bytes: int) -> str:
    text = text[:n_bytes]
    return text[:-1] + "\n" if text and not text.endswith("\n") else text


def _db_bytes(db: Path) -> int:
    return sum(p.stat().st_size for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists())


def _run_child(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run a child; its exit code, stdout/stderr, own peak RSS (MB) and CPU seconds."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(args, stdout=out, stderr=err, env=env, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
    return {"rc": proc.returncode, "stdout": stdout, "stderr": stderr,
            "rss_mb": round(usage.ru_maxrss / 1024, 1),  # Linux: kilobytes
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2), "wall_s": round(wall, 2)}


def _env(embedder: str, cap: int | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLENS_")}
    env["MEMLENS_EMBEDDER"] = embedder
    env["MEMLENS_CONFIG"] = os.devnull + ".none.toml"  # no user config file
    if cap is not None:
        env["MEMLENS_MAX_CHUNKS_PER_FILE"] = str(cap)
    return env


def run_case(work: Path, kind: str, n_bytes: int, embedder: str, cap: int | None,
             neighbour: bool = False) -> dict[str, Any]:
    """Ingest + project one generated file into a fresh database in a child process."""
    case = work / f"{kind}-{n_bytes}-{'cap' if cap is None else 'nocap'}"
    shutil.rmtree(case, ignore_errors=True)
    mem = case / "projects" / "-home-dev-bench" / "memory"
    mem.mkdir(parents=True)
    text = heading_dense(n_bytes) if kind == "headings" else prose(n_bytes)
    (mem / "dense.md").write_text(text, encoding="ascii")
    headings = text.count("\n# ") + text.startswith("# ")
    del text
    if neighbour:
        (mem / "ok.md").write_text("# Fine\n\nA small neighbour file.\n", encoding="ascii")
    db = case / "m.db"
    res = _run_child([sys.executable, "-m", "memlens.cli.main", "ingest", str(case / "projects"),
                      "--db", str(db), "--json"], _env(embedder, cap))
    row: dict[str, Any] = {"kind": kind if cap is not None else f"{kind}@cap", "input_bytes": n_bytes,
                           "headings": headings, "rc": res["rc"], "rss_mb": res["rss_mb"],
                           "cpu_s": res["cpu_s"], "wall_s": res["wall_s"]}
    try:
        report = json.loads(res["stdout"])
    except ValueError:
        report = {}
    row["failed"] = [f"{f['path']}: {f['error']}" for f in report.get("failed", [])]
    row["created"] = report.get("created")
    row["stderr"] = res["stderr"].strip().splitlines()[-3:]
    row["chunks"], row["tables"] = _db_facts(db) if db.exists() else (0, [])
    row["db_bytes"] = _db_bytes(db)
    row["db_per_input_byte"] = round(row["db_bytes"] / n_bytes, 2)
    shutil.rmtree(case, ignore_errors=True)
    return row


def _db_facts(db: Path) -> tuple[int, list[tuple[str, int]]]:
    """Stored chunks, and the largest tables/indexes by bytes (SQLite ``dbstat``)."""
    code = ("import sys, json, apsw; c = apsw.Connection(sys.argv[1], flags=apsw.SQLITE_OPEN_READONLY);"
            "n = c.execute('SELECT count(*) FROM memory_chunks').fetchone()[0];"
            "t = c.execute('SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
            " LIMIT 6').fetchall();"
            "print(json.dumps([n, t]))")
    proc = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True,
                          check=False)
    try:
        n, tables = json.loads(proc.stdout)
    except ValueError:
        return 0, []
    return int(n), [(str(a), int(b)) for a, b in tables]


_TRACE = r'''
import sys, tracemalloc, resource
sys.path.insert(0, sys.argv[2])
from pathological import heading_dense
from memlens.core.chunking.chunker import chunk_markdown
text = heading_dense(int(sys.argv[1]))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
tracemalloc.start(8)
result = chunk_markdown(text)
peak = tracemalloc.get_traced_memory()[1]
snap = tracemalloc.take_snapshot()
tracemalloc.stop()
held = sum(s.size for s in snap.statistics("filename")) / 2**20
print(f"chunker alone: {len(result.chunks):,} chunks from {len(text):,} chars; traced peak "
      f"{peak / 2**20:.1f} MiB (held after: {held:.1f} MiB)")
for stat in snap.statistics("lineno")[:6]:
    print(f"  {stat.size / 2**20:7.1f} MiB  {stat.traceback[0]}")
'''


def trace_chunker(n_bytes: int) -> str:
    """The chunker alone under tracemalloc, in a child (its figures as text)."""
    proc = subprocess.run([sys.executable, "-c", _TRACE, str(n_bytes), str(Path(__file__).parent)],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    return (proc.stdout + proc.stderr).rstrip()


def _table(rows: list[dict[str, Any]]) -> str:
    head = (f"{'run':<14}{'input':>11}{'headings':>10}{'chunks':>9}{'db bytes':>13}{'db/in':>7}"
            f"{'peak RSS':>10}{'CPU s':>7}{'wall s':>8}  rc")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['kind']:<14}{r['input_bytes']:>11,}{r['headings']:>10,}{r['chunks']:>9,}"
                     f"{r['db_bytes']:>13,}{r['db_per_input_byte']:>7.2f}{r['rss_mb']:>8.1f}MB"
                     f"{r['cpu_s']:>7.2f}{r['wall_s']:>8.2f}  {r['rc']}")
    return "\n".join(lines)


def verdicts(rows: list[dict[str, Any]]) -> list[str]:
    """One line per target: met or not, with the figure."""
    out: list[str] = []
    for r in rows:
        if r["kind"] in ("headings", "prose") and (r["rc"] != 0 or not r["chunks"]):
            out.append(f"FAIL {r['kind']} {r['input_bytes']:,} B: the run failed (exit {r['rc']}, "
                       f"{r['chunks']} chunks stored): {' | '.join(r['failed'] or r['stderr'])}")
            continue
        if r["kind"] == "headings":
            ok = r["db_per_input_byte"] <= TARGET_DB_PER_BYTE
            out.append(f"{'OK  ' if ok else 'OVER'} headings {r['input_bytes']:,} B: "
                       f"{r['db_per_input_byte']:.2f} DB bytes per input byte (target <= "
                       f"{TARGET_DB_PER_BYTE:g})")
            if r["input_bytes"] == 8 * MIB:
                ok = r["rss_mb"] <= TARGET_RSS_MB_8MIB
                out.append(f"{'OK  ' if ok else 'OVER'} headings 8 MiB: peak RSS {r['rss_mb']:.1f} MB "
                           f"(target <= {TARGET_RSS_MB_8MIB:g} MB)")
        if r["kind"] == "headings@cap" and r["rc"] == 0 and r["chunks"] <= DEFAULT_CAP:
            out.append(f"n/a  default cap, {r['input_bytes']:,} B: {r['chunks']:,} chunks fit the cap")
        elif r["kind"] == "headings@cap":
            ok = r["rc"] == 1 and r["created"] == 1 and len(r["failed"]) == 1
            out.append(f"{'OK  ' if ok else 'FAIL'} default cap, {r['input_bytes']:,} B: exit "
                       f"{r['rc']}, neighbour stored: {r['created'] == 1}, "
                       f"error: {r['failed'][0] if r['failed'] else '-'}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="3.5M,8M", help="comma list; 8M = the 8 MiB limit")
    p.add_argument("--embedder", default="static", help="static (shipped model) or hashing")
    p.add_argument("--cap", type=int, default=1_000_000, help="chunk cap for the measured runs")
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--json", action="store_true")
    p.add_argument("--trace", action="store_true", help="tracemalloc the chunker alone")
    p.add_argument("--no-cap-check", action="store_true", help="skip the default-cap runs")
    args = p.parse_args(argv)
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    work = args.workdir or Path(tempfile.mkdtemp(prefix="memlens-patho-"))
    work.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for n in sizes:  # interleaved: pathological, its floor, then the capped run
        rows.append(run_case(work, "headings", n, args.embedder, args.cap))
        rows.append(run_case(work, "prose", n, args.embedder, args.cap))
        if not args.no_cap_check:
            rows.append(run_case(work, "headings", n, args.embedder, None, neighbour=True))
    traces = [trace_chunker(n) for n in sizes] if args.trace else []
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    machine = {"python": platform.python_version(), "platform": platform.platform(),
               "cpus": os.cpu_count(), "embedder": args.embedder}
    if args.json:
        print(json.dumps({"machine": machine, "runs": rows, "verdicts": verdicts(rows),
                          "traces": traces}, indent=2))
        return 0
    print(f"memlens pathological bench; {machine}")
    print(_table(rows))
    for r in rows:
        if r["rc"] not in (0, 1) or (r["rc"] == 1 and not r["failed"]):
            print(f"  {r['kind']} {r['input_bytes']:,}: unexpected exit {r['rc']}: {r['stderr']}")
    print("\n".join(verdicts(rows)))
    for r in rows:
        if r["kind"] in ("headings", "prose"):
            floor = next((f for f in rows if f["kind"] == "prose" and f["input_bytes"] == r["input_bytes"]),
                         None)
            if r["kind"] == "headings" and floor and floor["db_bytes"]:
                print(f"headings vs prose floor at {r['input_bytes']:,} B: DB x"
                      f"{r['db_bytes'] / floor['db_bytes']:.2f}, RSS x{r['rss_mb'] / floor['rss_mb']:.2f}, "
                      f"CPU x{r['cpu_s'] / max(floor['cpu_s'], 0.01):.2f}")
    for r in rows:
        if r["kind"] == "headings" and r["tables"]:
            print(f"largest tables, headings {r['input_bytes']:,} B: " + ", ".join(
                f"{name} {size / 1e6:.1f} MB" for name, size in r["tables"]))
    for t in traces:
        print(t)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
