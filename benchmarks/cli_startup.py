"""Whole-process cost of short CLI commands, against their floors ``python -c pass`` and
``python -c "import apsw"``.

Builds a small memory folder and database (``memlens ingest``, hashing embedder, own
install key and config), then runs, interleaved, ``--runs`` times each:

* the floor ``python -c pass`` and ``memlens --help``;
* the floor ``python -c "import apsw"``;
* ``memlens search --mode lexical busy_timeout --db X``;
* ``memlens docs --db X``;
* the hybrid floor ``python -c "import apsw, numpy, tokenizers"`` and
  ``memlens search --mode hybrid busy_timeout --db Y --embedder static`` (Y: the same
  memory projected with the shipped static model; installed tree only);

once with ``PYTHONDONTWRITEBYTECODE`` unset and once with it set to 1. Each child's
user+sys CPU comes from ``os.wait4``; wall is measured around it. Two warm-up rounds
come first (they write ``__pycache__`` where allowed). Prints medians as Markdown, each
command's CPU and wall as a multiple of the floor above it.

``--tree LABEL=SRC`` runs the commands with ``PYTHONPATH=SRC`` as well (e.g. a
``git archive`` export of an older commit), to compare before/after in one run.
``--tree LABEL=SRC:pdwb1`` runs that tree only with PYTHONDONTWRITEBYTECODE=1 (a tree
with no ``__pycache__`` then measures compiling every module on every start). The
database is built by the first ``--tree`` (trees must share its schema version);
``--no-current`` leaves out the installed tree (whose schema may be newer).

``--layers`` instead splits a lexical search into what it pays for: interleaved, the floor
plus the standard library a lexical search loads, added layer by layer
(``python -c "import apsw, re, typing, ..."``), then the search itself with
``MEMLENS_EMBEDDER`` unset and set (its value is checked against the embedder registry,
which imports the embedders). Warm ``.pyc``; PYTHONDONTWRITEBYTECODE as inherited.
It also times the least any Python lexical CLI has to do (:data:`MINIMAL_SEARCH`: no
argparse, no memlens module: ``sys.argv``, ``apsw``, ``json``, ``zlib``, one read-only open, the
bm25 statement with snippets, ten rows printed as JSON), a lower bound for a search
written in Python against this floor.

Usage: ``uv run python benchmarks/cli_startup.py [--runs 10] [--tree before=/tmp/old/src]``
or ``uv run python benchmarks/cli_startup.py --layers [--runs 15]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERY = "busy_timeout"


def _memlens() -> list[str]:
    script = Path(sys.executable).with_name("memlens")
    return [str(script)] if script.exists() else [sys.executable, "-m", "memlens.launch"]


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(user+sys CPU seconds, wall seconds) of one child process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read() if p.stderr else b""
    if p.stderr:
        p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {err.decode(errors='replace')[-800:]}")
    return usage.ru_utime + usage.ru_stime, wall


# Cumulative layers of the standard library a lexical search loads (first: what needs it).
LAYERS: list[tuple[str, str]] = [
    ("re", "re"),  # search_query, argparse, json
    ("typing", "typing"),  # every module (TYPE_CHECKING, Any)
    ("dataclasses", "dataclasses"),  # search, search_hits, types, config, sources (inspect, ast, dis)
    ("pathlib", "pathlib"),  # db, config, service, sources (urllib.parse, ipaddress)
    ("json", "json"),  # search_hits, service_reads, cli
    ("threading, zlib", "threading, zlib"),  # db, faults, service_base
    ("click", "click"),  # the full CLI (not the one-shot search)
    ("locale, shutil", "locale, shutil"),  # help formatting (click loads gettext itself)
    ("hashlib, importlib.util", "hashlib, importlib.util"),  # embedders (embedder-name check)
]


# The least a Python lexical search can do: read the query from argv, open the database
# read-only, run the bm25 statement (with FTS5's own snippets) and print JSON. No
# argument parser, no query builder beyond quoting one phrase, no metadata, no history.
MINIMAL_SEARCH = """\
import sys, json, zlib, apsw
q, path = sys.argv[1], sys.argv[2]
c = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
c.create_scalar_function(  # node text is stored deflated; FTS5 reads it through this
    "memlens_inflate", lambda b: zlib.decompress(b).decode() if isinstance(b, bytes) else b,
    1, deterministic=True)
sql = ("SELECT rowid, bm25(knowledge_nodes_fts), snippet(knowledge_nodes_fts, 1, '[', ']',"
       " '...', 24) FROM knowledge_nodes_fts WHERE knowledge_nodes_fts MATCH ?"
       " ORDER BY 2, 1 LIMIT 10")
rows = c.execute(sql, ('"' + q.replace('"', '""') + '"',)).fetchall()
print(json.dumps([{"id": r[0], "score": -r[1], "snippet": r[2]} for r in rows]))
"""


FULL_CLI = "import sys\nfrom memlens.cli.main import main\nsys.exit(main())\n"
"""The full CLI, which the console script (``memlens.launch``) hands every command
line its one-shot lexical search does not take."""


def _layers(runs: int, work: Path, db: str, base: dict[str, str]) -> None:
    env = dict(os.environ, **{k: v for k, v in base.items() if k.startswith("MEMLENS_")})
    env.pop("MEMLENS_EMBEDDER", None)
    rows: list[tuple[str, dict[str, str], list[str]]] = [
        ("floor `python -c 'import apsw'`", env, [sys.executable, "-c", "import apsw"])]
    mods: list[str] = ["apsw"]
    for label, names in LAYERS:
        mods.append(names)
        rows.append((f"+ {label}", env, [sys.executable, "-c", "import " + ", ".join(mods)]))
    rows.append(("minimal Python search (`MINIMAL_SEARCH`: sys, apsw, json, zlib; no memlens)", env,
                 [sys.executable, "-c", MINIMAL_SEARCH, QUERY, db]))
    search = [*_memlens(), "search", "--mode", "lexical", QUERY, "--db", db]
    rows.append(("`memlens search --mode lexical ...`, MEMLENS_EMBEDDER unset", env, search))
    rows.append(("the same, MEMLENS_EMBEDDER=hashing", dict(env, MEMLENS_EMBEDDER="hashing"),
                 search))
    full = [sys.executable, "-c", FULL_CLI, "search", "--mode", "lexical", QUERY, "--db", db]
    rows.append(("the same through the full CLI (`memlens.cli.main.main`: click, façade)",
                 env, full))
    rows.append(("`memlens docs --db X`, MEMLENS_EMBEDDER unset", env,
                 [*_memlens(), "docs", "--db", db]))
    for _ in range(2):
        for _, e, cmd in rows:
            _run(cmd, e)
    cpu: list[list[float]] = [[] for _ in rows]
    wall: list[list[float]] = [[] for _ in rows]
    for _ in range(runs):
        for i, (_, e, cmd) in enumerate(rows):
            c, w = _run(cmd, e)
            cpu[i].append(c)
            wall[i].append(w)
    pdwb = os.environ.get("PYTHONDONTWRITEBYTECODE") or "unset"
    print(f"Medians of {runs} interleaved runs, PYTHONDONTWRITEBYTECODE {pdwb}.\n")
    print("| process | CPU user+sys (ms) | step (ms) | CPU / floor | wall (ms) |")
    print("|---|---:|---:|---:|---:|")
    prev = 0.0
    floor = statistics.median(cpu[0]) * 1000
    for i, (name, _, _) in enumerate(rows):
        med = statistics.median(cpu[i]) * 1000
        step = f"{med - prev:+.1f}" if 0 < i <= len(LAYERS) else ""
        prev = med
        print(f"| {name} | {med:.1f} | {step} | {med / floor:.2f} |"
              f" {statistics.median(wall[i]) * 1000:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--tree", action="append", default=[], metavar="LABEL=SRC")
    ap.add_argument("--no-current", action="store_true", help="only the --tree trees")
    ap.add_argument("--layers", action="store_true",
                    help="split a lexical search into standard-library layers (see above)")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="memlens-startup-"))
    mem = work / "memory"
    mem.mkdir()
    (mem / "MEMORY.md").write_text("# Memory\n\n- [note1](note1.md)\n", encoding="utf-8")
    for i in range(1, 6):
        (mem / f"note{i}.md").write_text(
            f"# Note {i}\n\nThe busy_timeout pragma is set to 5000 ms. Topic {i} about sqlite"
            f" WAL mode and retries.\n\n## Details\n\nMore text about chunking and search {i}.\n",
            encoding="utf-8",
        )
    db = str(work / "bench.db")
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    base.update(MEMLENS_EMBEDDER="hashing", MEMLENS_INSTALL_KEY_FILE=str(work / "install.key"),
                MEMLENS_CONFIG=str(work / "config.toml"), HF_HUB_OFFLINE="1")
    trees: list[tuple[str, str | None, bool]] = [] if args.no_current else [("current", None, False)]
    for spec in args.tree:
        label, _, src = spec.partition("=")
        only_pdwb = src.endswith(":pdwb1")
        trees.append((label, src.removesuffix(":pdwb1"), only_pdwb))
    first = args.tree[0].partition("=")[2].removesuffix(":pdwb1") if args.tree else None
    ingest_env = dict(base, PYTHONPATH=first) if first else base
    if args.tree and args.tree[0].endswith(":pdwb1"):  # leave that tree without bytecode
        ingest_env = dict(ingest_env, PYTHONDONTWRITEBYTECODE="1")
    _run([*_memlens(), "ingest", str(mem), "--repository", "bench", "--db", db], ingest_env)
    if args.layers:
        _layers(args.runs, work, db, base)
        return
    static_db = str(work / "static.db")
    if not args.no_current:
        _run([*_memlens(), "ingest", str(mem), "--repository", "bench", "--db", static_db,
              "--embedder", "static"], base)

    variants: list[tuple[str, str, dict[str, str], list[str]]] = []
    for pdwb in ("unset", "1"):
        env = dict(base)
        if pdwb == "1":
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        variants.append(("floor `python -c pass`", pdwb, env, [sys.executable, "-c", "pass"]))
        for label, src, only_pdwb in trees:
            if only_pdwb and pdwb != "1":
                continue
            tenv = dict(env, PYTHONPATH=src) if src else env
            variants.append((f"{label}: `memlens --help`", pdwb, tenv, [*_memlens(), "--help"]))
        variants.append(("floor `python -c 'import apsw'`", pdwb, env, [sys.executable, "-c", "import apsw"]))
        for label, src, only_pdwb in trees:
            if only_pdwb and pdwb != "1":
                continue
            tenv = dict(env, PYTHONPATH=src) if src else env
            variants.append((f"{label}: `memlens search --mode lexical {QUERY} --db X`", pdwb, tenv,
                             [*_memlens(), "search", "--mode", "lexical", QUERY, "--db", db]))
            variants.append((f"{label}: `memlens docs --db X`", pdwb, tenv,
                             [*_memlens(), "docs", "--db", db]))
        if not args.no_current:
            variants.append(("floor `python -c 'import apsw, numpy, tokenizers'`", pdwb, env,
                             [sys.executable, "-c", "import apsw, numpy, tokenizers"]))
            variants.append(("current: `memlens search --mode hybrid " + QUERY
                             + " --db Y --embedder static`", pdwb, env,
                             [*_memlens(), "search", "--mode", "hybrid", QUERY, "--db",
                              static_db, "--embedder", "static"]))

    for _ in range(2):
        for _, _, env, cmd in variants:
            _run(cmd, env)
    cpu: list[list[float]] = [[] for _ in variants]
    wall: list[list[float]] = [[] for _ in variants]
    for _ in range(args.runs):
        for i, (_, _, env, cmd) in enumerate(variants):
            c, w = _run(cmd, env)
            cpu[i].append(c)
            wall[i].append(w)

    print(f"Medians of {args.runs} interleaved runs.\n")
    print("| command | PYTHONDONTWRITEBYTECODE | CPU user+sys (ms) | wall (ms) | CPU / its floor"
          " | wall / its floor |")
    print("|---|---|---:|---:|---:|---:|")
    floor = floor_wall = 0.0
    for i, (name, pdwb, _, _) in enumerate(variants):
        med, med_wall = statistics.median(cpu[i]), statistics.median(wall[i])
        if name.startswith("floor"):
            floor, floor_wall = med, med_wall
            ratio = ratio_wall = "1.0"
        else:
            ratio = f"{med / floor:.2f}" if floor else "-"
            ratio_wall = f"{med_wall / floor_wall:.2f}" if floor_wall else "-"
        print(f"| {name} | {pdwb} | {med * 1000:.0f} | {med_wall * 1000:.0f} | {ratio} |"
              f" {ratio_wall} |")


if __name__ == "__main__":
    main()
