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
* ``cpu_at``: the child's CPU seconds (``/proc/PID/stat``) when the first hit and all
  lexical were seen: on a shared machine the child may get a fraction of a core, and
  this says how much work it took to get there (issue 43).

Cases:

* ``mix165``: :func:`memlens.bench.generate_corpus` with 165 files (~316 KB, the
  real size mix) + ``good.md``; targets: first hit <= 2 s, all vectors <= 20 s;
* ``large``: three large files (100,000 short lines; 10,000 headings; one 3 MB line)
  + ``good.md``; targets: first hit <= 3 s, everything <= 60 s, no traceback;
* ``10k``: 10,000 generated files (~20 MB) + ``good.md``; target: all lexical <= 60 s,
  and stage 2's throughput >= 1/1.3 of a bare onnxruntime floor measured in the same run.

Vector throughput: the database's ``SUM(vector_done)`` is sampled at each poll (every
second once every document is searchable by its words, to leave the CPU to the child);
``vectors_per_s`` is the vectors written from the first all-lexical poll to the last
poll, divided by that time. ``--max-seconds`` SIGKILLs the child that long after it
started (a 10k-file stage 2 takes ~20 minutes; the rate is steady long before). With
``--floor`` the script then embeds a sample of the node texts stage 2 embedded in this run
(``--floor-texts``; stage 2 takes the smallest documents first, so the corpus's other
chunks are not the same work) with a bare onnxruntime session (``benchmarks/embed_floor.py``: batch 1, sorted
by length, the same token windows) and with the memlens embedder, interleaved, and prints
``ratio`` = stage-2 vectors/s / bare chunks/s, and the memlens embedder's own ratio.
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
    from memlens.bench import generate_corpus

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
    from memlens.core.search import engine as search
    from memlens.core.store import db as dbm

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
            live, lexical, waiting, done = conn.execute(
                "SELECT COUNT(*), SUM(active_revision_id IS current_revision_id),"
                " SUM(vector_done < vector_total), SUM(vector_done) FROM memory_documents"
                " WHERE tombstoned_at IS NULL").fetchone()
        return {"hit": hit, "live": int(live or 0), "lexical": int(lexical or 0),
                "waiting": int(waiting or 0), "vectors": int(done or 0)}
    except Exception:
        return None
    finally:
        conn.close()


def floor_ratio(db: Path, n_texts: int, vectors_per_s: float | None) -> dict[str, Any]:
    """Bare onnxruntime vs the memlens embedder on ``n_texts`` node texts of ``db``."""
    import statistics

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import embed_floor

    from memlens.core.embedders.onnx_minilm import MINILM_MODEL_DIR, OnnxMiniLMEmbedder
    from memlens.core.store import db as dbm

    conn = dbm.connect(db, readonly=True, migrate=False, create=False)
    # the texts stage 2 embedded (it takes the smallest documents first, whose chunks are
    # not a random sample of the corpus's); every node's if none has a vector yet
    space = conn.execute("SELECT name FROM vector_spaces LIMIT 1").fetchone()
    sample = "SELECT k.text FROM knowledge_nodes k{} ORDER BY (k.id * 2654435761) % 4294967291 LIMIT ?"
    texts: list[str] = []
    if space is not None:
        vt = dbm.vec_table_name(str(space[0]))
        texts = [str(r[0]) for r in conn.execute(sample.format(
            f" WHERE EXISTS (SELECT 1 FROM {vt} v WHERE v.node_id=k.id)"), (n_texts,))]
    if not texts:
        texts = [str(r[0]) for r in conn.execute(sample.format(""), (n_texts,))]
    conn.close()
    emb = OnnxMiniLMEmbedder(MINILM_MODEL_DIR)
    emb.embed_documents(texts[:4])
    seqs, _ = emb._sequences(texts)
    bare = embed_floor.bare_session(min(2, os.cpu_count() or 1))
    embed_floor.run_bare(bare, seqs[:16], int(emb._pad), 1)
    times: dict[str, list[float]] = {"bare": [], "memlens": []}
    for _ in range(2):
        t = time.perf_counter()
        embed_floor.run_bare(bare, seqs, int(emb._pad), 1)
        times["bare"].append(time.perf_counter() - t)
        t = time.perf_counter()
        emb.embed_documents(texts)
        times["memlens"].append(time.perf_counter() - t)
    bare_cps = len(texts) / statistics.median(times["bare"])
    ours_cps = len(texts) / statistics.median(times["memlens"])
    return {"texts": len(texts), "windows": len(seqs), "bare_chunks_per_s": round(bare_cps, 1),
            "embedder_chunks_per_s": round(ours_cps, 1),
            "embedder_ratio": round(ours_cps / bare_cps, 3),
            "stage2_ratio": round(vectors_per_s / bare_cps, 3) if vectors_per_s else None}


def _child_cpu(pid: int) -> float | None:
    """The child's user + system CPU seconds so far (``/proc``; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def run_case(case: str, embedder: str | None, poll: float, max_seconds: float = 0.0,
             floor: bool = False, floor_texts: int = 400) -> dict[str, Any]:
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
        cpu_at: dict[str, float | None] = {"first_hit": None, "all_lexical": None}
        samples: list[tuple[float, int]] = []  # (t, vectors) from the first all-lexical poll
        killed = False
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
                    cpu_at["first_hit"] = _child_cpu(child.pid)
                if st["live"] >= files and st["lexical"] == st["live"]:
                    if marks["all_lexical"] is None:
                        cpu_at["all_lexical"] = _child_cpu(child.pid)
                    marks["all_lexical"] = marks["all_lexical"] or now
                    samples.append((now, st["vectors"]))
                    if st["waiting"] == 0:
                        marks["all_vectors"] = marks["all_vectors"] or now
            if max_seconds and now > max_seconds and not killed:
                child.kill()
                killed = True
            time.sleep(poll if marks["all_lexical"] is None else max(poll, 1.0))
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
        vps = None
        if len(samples) >= 2 and samples[-1][0] > samples[0][0]:
            vps = (samples[-1][1] - samples[0][1]) / (samples[-1][0] - samples[0][0])
        fl = floor_ratio(db, floor_texts, vps) if floor else None
        return {"case": case, "files": files, "exit": child.returncode, "wall": round(wall, 2),
                "cpu": round(cpu, 2), "killed_at_max_seconds": killed,
                "cpu_at": {k: (round(v, 2) if v is not None else None)
                           for k, v in cpu_at.items()},
                "vectors_per_s": round(vps, 1) if vps else None, "floor": fl,
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
    ap.add_argument("--max-seconds", type=float, default=0.0)
    ap.add_argument("--floor", action="store_true")
    ap.add_argument("--floor-texts", type=int, default=400)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results = [run_case(c.strip(), args.embedder, args.poll, args.max_seconds, args.floor,
                        args.floor_texts) for c in args.case.split(",")]
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
              f" child CPU at the first hit {r['cpu_at']['first_hit']} s, at all lexical"
              f" {r['cpu_at']['all_lexical']} s; load average {os.getloadavg()[0]:.2f};"
              f" traceback {r['traceback']}; stage-2 vectors/s {r['vectors_per_s']}"
              + (" (killed at --max-seconds)" if r["killed_at_max_seconds"] else ""))
        if r["floor"]:
            print(f"         floor: {r['floor']}")
        for line in r["stdout"]:
            print(f"         | {line}")
        for line in r["stderr_tail"]:
            print(f"         ! {line}")


if __name__ == "__main__":
    main()
