"""Time to the first lexical hit and to the last vector of ``memlens ingest`` (issue 37).

Usage::

    uv run python benchmarks/two_stage.py [--case mix165,large,10k] [--embedder minilm]
        [--poll 0.05] [--json]

For each case it writes a memory folder, starts the real CLI in a child process
(``python -m memlens.launch ingest DIR --db DB``, the default embedder unless
``--embedder`` names another) and, from this process, polls the database file every
``--poll`` seconds through memlens's own read path (``db.connect`` read-only without
migrating, ``search.lexical``, the projection counters):

* ``first_hit``: seconds from the child's start until a lexical search for the probe
  word of ``good.md`` (a one-line file next to the others) returns it;
* ``all_lexical``: until every live document's active revision is its current one
  (every document searchable by its words);
* ``all_vectors``: until, in addition, no document waits for vectors (stage 2 done);
* ``wall`` / ``cpu``: the child's wall time and its user + system CPU (``os.wait4``).

Cases:

* ``mix165``: :func:`memlens.core.bench.generate_corpus` with 165 files (~316 KB, the
  real size mix) + ``good.md``; targets: first hit <= 2 s, all vectors <= 20 s;
* ``large``: three large files (100,000 short lines; 10,000 headings; one 3 MB line)
  + ``good.md``; targets: first hit <= 3 s, everything <= 60 s, no traceback;
* ``10k``: 10,000 generated files (~20 MB) + ``good.md``; target: all lexical <= 60 s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROBE = "quokkaprobe"
GOOD = f"# Good\n\nThe {PROBE} fact lives here.\n"
_WORDS = ("cache", "deploy", "schema", "retry", "token", "queue", "index", "shard",
          "lease", "quota", "audit", "flag", "build", "trace", "merge", "route")


def _large(mem: Path) -> None:
    rng = random.Random(7)
    mem.mkdir(parents=True, exist_ok=True)
    (mem / "lines.md").write_text(
        "# Lines\n\n" + "".join(f"- {rng.choice(_WORDS)} {i} {rng.choice(_WORDS)}\n"
                                for i in range(100_000)), encoding="utf-8")
    (mem / "headings.md").write_text(
        "".join(f"## {rng.choice(_WORDS)} {i}\n\n{rng.choice(_WORDS)}\n\n" for i in range(10_000)),
        encoding="utf-8")
    line: list[str] = []
    size = 0
    while size < 3_000_000:
        w = rng.choice(_WORDS) + str(rng.randrange(1000))
        line.append(w)
        size += len(w) + 1
    (mem / "oneline.md").write_text(" ".join(line) + "\n", encoding="utf-8")


def build(case: str, dest: Path) -> tuple[Path, int]:
    """Write the case's folder; returns (folder to ingest, number of files)."""
    from memlens.core.bench import generate_corpus

    if case == "large":
        mem = dest / "-home-dev-large" / "memory"
        _large(mem)
        (mem / "good.md").write_text(GOOD, encoding="utf-8")
        return dest, 4
    n = {"mix165": 165, "10k": 10_000}[case]
    corpus = generate_corpus(dest, n, seed=0)
    (dest / "-home-dev-gen-p0000" / "memory" / "good.md").write_text(GOOD, encoding="utf-8")
    return dest, corpus.files + 1


def _state(db: Path) -> dict[str, Any] | None:
    """What a reader sees now; None while the file has no current schema yet."""
    from memlens.core import db as dbm
    from memlens.core import search

    if not db.exists():
        return None
    try:
        conn = dbm.connect(db, readonly=True, migrate=False, create=False)
    except Exception:
        return None
    try:
        if dbm.user_version(conn) != dbm.SCHEMA_VERSION:
            return None
        with dbm.read_txn(conn):
            hit = any(h.path == "good.md" for h in search.lexical(conn, PROBE).hits)
            live, lexical, waiting = conn.execute(
                "SELECT COUNT(*), SUM(active_revision_id IS current_revision_id),"
                " SUM(vector_done < vector_total) FROM memory_documents"
                " WHERE tombstoned_at IS NULL").fetchone()
        return {"hit": hit, "live": int(live or 0), "lexical": int(lexical or 0),
                "waiting": int(waiting or 0)}
    except Exception:
        return None
    finally:
        conn.close()


def run_case(case: str, embedder: str | None, poll: float) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"memlens-2stage-{case}-"))
    try:
        folder, files = build(case, work / "claude")
        db = work / "m.db"
        env = {**os.environ, "MEMLENS_DB": str(db)}
        if embedder:
            env["MEMLENS_EMBEDDER"] = embedder
        else:
            env.pop("MEMLENS_EMBEDDER", None)
        out_f, err_f = open(work / "out.txt", "w+"), open(work / "err.txt", "w+")  # noqa: SIM115
        t0 = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "memlens.launch", "ingest", str(folder)],
                                 env=env, cwd=ROOT, stdout=out_f, stderr=err_f, text=True)
        marks: dict[str, float | None] = {"first_hit": None, "all_lexical": None,
                                          "all_vectors": None}
        last: dict[str, Any] | None = None
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            st = _state(db)
            now = time.perf_counter() - t0
            if st is not None:
                last = st
                if st["hit"] and marks["first_hit"] is None:
                    marks["first_hit"] = now
                if st["live"] >= files and st["lexical"] == st["live"]:
                    marks["all_lexical"] = marks["all_lexical"] or now
                    if st["waiting"] == 0:
                        marks["all_vectors"] = marks["all_vectors"] or now
            time.sleep(poll)
        wall = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        out_f.seek(0)
        err_f.seek(0)
        out, err = out_f.read(), err_f.read()
        out_f.close()
        err_f.close()
        end = _state(db)
        for k in marks:  # reached only at the very end (between two polls)
            if marks[k] is None and end is not None and end["lexical"] == end["live"] \
                    and (k != "all_vectors" or end["waiting"] == 0) \
                    and (k != "first_hit" or end["hit"]):
                marks[k] = wall
        cpu = usage.ru_utime + usage.ru_stime
        return {"case": case, "files": files, "exit": child.returncode, "wall": round(wall, 2),
                "cpu": round(cpu, 2),
                **{k: (round(v, 2) if v is not None else None) for k, v in marks.items()},
                "traceback": "Traceback" in err, "stdout": out.strip().splitlines()[-3:],
                "stderr_tail": err.strip().splitlines()[-3:], "last_poll": last, "end": end}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--case", default="mix165,large")
    ap.add_argument("--embedder", default=None, help="MEMLENS_EMBEDDER for the child")
    ap.add_argument("--poll", type=float, default=0.05)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results = [run_case(c.strip(), args.embedder, args.poll) for c in args.case.split(",")]
    info = {"python": platform.python_version(), "cpus": os.cpu_count(),
            "machine": platform.machine()}
    if args.json:
        print(json.dumps({"machine": info, "results": results}, indent=2))
        return
    print(f"machine: {info}")
    for r in results:
        print(f"{r['case']:>7}: {r['files']} files; first lexical hit {r['first_hit']} s;"
              f" all lexical {r['all_lexical']} s; all vectors {r['all_vectors']} s;"
              f" child wall {r['wall']} s, CPU {r['cpu']} s; exit {r['exit']};"
              f" traceback {r['traceback']}")
        for line in r["stdout"]:
            print(f"         | {line}")
        for line in r["stderr_tail"]:
            print(f"         ! {line}")


if __name__ == "__main__":
    main()
