"""Projection of a 10k-file store vs its one-transaction floor, plus a dbstat size table.

Usage::

    uv run python benchmarks/projection.py [--files 10000] [--embedder static] [--repeat 3]
        [--cache /tmp/memlens-projection-bench] [--json]
        [--reads 5 [--compare-src OLD/src --compare-db OLD-CACHE/run-memlens.db]]

The corpus is ``benchmarks/chunking.py``'s deterministic generator (first ``--files``
files); it is ingested once (``project=False``) into a base database cached under
``--cache``. Each repeat then copies the base database twice and, interleaved:

* ``memlens``: ``MemoryService.project()`` (claims, batched embed, batched swap);
* ``floor``: the same rows (nodes, vectors, junction rows, document status) written
  in ONE transaction after ONE embed call over every node text.

Wall and CPU (``time.process_time``) are reported as medians with the ratio
memlens / floor of the same repeat. Target: ratio <= 1.3. The last memlens database
is broken down per table with SQLite's ``dbstat`` virtual table. With ``--reads`` it is
then read in child processes (:func:`read_round`), interleaved with the same reads by
another memlens (``--compare-src``) of the database that one projected.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from chunking import generated_corpus  # noqa: E402

from memlens.core.config.settings import load_settings  # noqa: E402
from memlens.core.embedders.registry import Embedder, make_embedder  # noqa: E402
from memlens.core.ingest.sources import roots_for_path  # noqa: E402
from memlens.core.service import MemoryService  # noqa: E402
from memlens.core.store.db import SCHEMA_VERSION  # noqa: E402

TARGET_RATIO = 1.3


class _Clock:
    def __call__(self) -> float:
        return 1_700_000_000.0


def _corpus(cache: Path, files: int) -> tuple[Path, int]:
    folder = cache / f"corpus-{files}"
    marker = folder / ".complete"
    if not marker.exists():
        shutil.rmtree(folder, ignore_errors=True)
        mb = 2.0
        pairs = generated_corpus(mb)
        while len(pairs) < files:
            mb *= 2
            pairs = generated_corpus(mb)
        for rel, text in pairs[:files]:
            p = folder / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        marker.write_text("ok")
    size = sum(p.stat().st_size for p in folder.rglob("*.md"))
    return folder, size


def _service(db: Path, emb: Embedder) -> MemoryService:
    settings = load_settings(db.parent / "none.toml", env={}, overrides={"db": str(db)})
    return MemoryService(settings, clock=_Clock(), embedder=emb, install_key=b"k" * 32)


def _copy(src: Path, dst: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(dst) + suffix).unlink(missing_ok=True)
    shutil.copyfile(src, dst)


def _base(cache: Path, corpus: Path, emb: Embedder) -> Path:
    base = cache / f"base-{corpus.name}-{emb.fingerprint()[:12]}-v{SCHEMA_VERSION}.db"
    if not base.exists():
        tmp = cache / "base-building.db"
        for suffix in ("", "-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        svc = _service(tmp, emb)
        try:
            svc.ingest(roots_for_path(corpus), project=False)
            svc.conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            svc.close()
        tmp.rename(base)
    return base


def run_memlens(db: Path, emb: Embedder) -> tuple[float, float, int]:
    svc = _service(db, emb)
    try:
        w, c = time.perf_counter(), time.process_time()
        rep = svc.project()
        w, c = time.perf_counter() - w, time.process_time() - c
        n = int(svc.conn().execute("SELECT COUNT(*) FROM knowledge_nodes").fetchone()[0])
        if rep.count("ready") == 0:
            raise SystemExit("projection produced nothing")
    finally:
        svc.close()
    return w, c, n


def run_floor(db: Path, emb: Embedder) -> tuple[float, float, int]:
    """The same rows in one transaction after one embed call (no claim, cache or prune)."""
    from memlens.core.projection import swap as proj
    from memlens.core.projection.spaces import ensure_vector_space
    from memlens.core.store.db import pack_text, vec_table_name

    svc = _service(db, emb)
    try:
        conn = svc.conn()
        w, c = time.perf_counter(), time.process_time()
        fp = emb.fingerprint()
        docs = list(conn.execute(
            "SELECT id, current_revision_id, repository, logical_path, doc_type"
            " FROM memory_documents WHERE tombstoned_at IS NULL"))
        chunks: list[tuple[Any, ...]] = []
        texts: list[str] = []
        for d in docs:
            for cid, ordinal, hp, text in conn.execute(
                    "SELECT id, ordinal, heading_path, text FROM memory_chunks WHERE revision_id=?"
                    " ORDER BY ordinal", (d[1],)):
                heads = json.loads(hp)
                chunks.append((d, cid, ordinal, proj.heading_label(heads)))
                texts.append(proj.node_text(heads, text))
        vecs = emb.embed_documents(texts)
        space = ensure_vector_space(conn, fp, emb.dim, emb.metric, _Clock())
        vt = vec_table_name(space)
        conn.execute("BEGIN IMMEDIATE")
        for (d, cid, ordinal, head), text, v in zip(chunks, texts, vecs, strict=True):
            conn.execute(
                "INSERT INTO knowledge_nodes(document_id, revision_id, ordinal, repository,"
                " logical_path, heading, text_z, doc_type, vector_space, created_at)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                (d[0], d[1], ordinal, d[2], d[3], head, pack_text(text), d[4], space, 1.0))
            nid = conn.last_insert_rowid()
            conn.execute(f"INSERT INTO {vt}(node_id, embedding, repository, doc_type)"
                         " VALUES (?,?,?,?)", (nid, v.tobytes(), d[2], d[4] or ""))
            conn.execute("INSERT INTO knowledge_node_memory_chunks(node_id, chunk_id)"
                         " VALUES (?,?)", (nid, cid))
        conn.executemany(
            "UPDATE memory_documents SET active_revision_id=?, projection_status='ready'"
            " WHERE id=?", [(d[1], d[0]) for d in docs])
        conn.execute("COMMIT")
        w, c = time.perf_counter() - w, time.process_time() - c
        n = int(conn.execute("SELECT COUNT(*) FROM knowledge_nodes").fetchone()[0])
    finally:
        svc.close()
    return w, c, n


def dbstat(db: Path, emb: Embedder) -> list[tuple[str, int]]:
    svc = _service(db, emb)
    try:
        conn = svc.conn()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return [(str(r[0]), int(r[1])) for r in conn.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC")]
    finally:
        svc.close()


def read_round(db: Path, corpus: Path, emb: Embedder) -> dict[str, float]:
    """One round of reads of a projected database in a fresh process (wall and CPU
    seconds): a no-op re-ingest of the corpus (every file unchanged), the document list
    (``memlens docs``), the detail with content of every live document (what ``memlens
    search``/the MCP read tool/the TUI show of one) and every document's revisions
    (``memlens history``)."""
    out: dict[str, float] = {}

    def timed(name: str, fn: Any) -> Any:
        w, c = time.perf_counter(), time.process_time()
        res = fn()
        out[f"{name}_wall"] = time.perf_counter() - w
        out[f"{name}_cpu"] = time.process_time() - c
        return res

    svc = _service(db, emb)
    try:
        rep = timed("noop_ingest", lambda: svc.ingest(roots_for_path(corpus)))
        changed = [c for c in rep.report.changes if c.kind != "unchanged"]
        if changed:
            raise SystemExit(f"the re-ingest was not a no-op: {changed[:3]}")
        docs = timed("docs", svc.list_documents)
        ids = [d.id for d in docs]
        chars = timed("detail", lambda: sum(len(svc.detail(i).content) for i in ids))
        timed("history", lambda: sum(len(svc.revisions(i)) for i in ids))
        out["documents"], out["chars"] = len(ids), chars
    finally:
        svc.close()
    return out


def compare_reads(a: argparse.Namespace, db: Path, corpus: Path) -> dict[str, Any]:
    """``--reads`` rounds of :func:`read_round`, each in a child process, interleaved
    with rounds of ``--compare-src`` (another memlens, e.g. the previous schema) on
    ``--compare-db`` (a database it projected from the same corpus)."""
    sides: list[tuple[str, str | None, Path]] = [("this", None, db)]
    if a.compare_src:
        sides.append(("compare", a.compare_src, Path(a.compare_db)))
    got: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in sides}
    for i in range(a.reads):
        for name, src, path in (sides if i % 2 == 0 else sides[::-1]):
            env = dict(os.environ)
            if src:
                env["PYTHONPATH"] = src
            proc = subprocess.run(
                [sys.executable, __file__, "--read-child", str(path), "--files", str(a.files),
                 "--cache", a.cache, "--embedder", a.embedder],
                env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise SystemExit(f"read round ({name}) failed: {proc.stderr[-2000:]}")
            got[name].append(json.loads(proc.stdout))
            if not a.json:
                r = got[name][-1]
                print(f"reads {name}: " + " ".join(
                    f"{k}={v:.3f}" for k, v in r.items() if k.endswith(("_wall", "_cpu"))),
                    flush=True)
    return {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
            for name, rs in got.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--embedder", default="static", help="the default embedder (auto resolves to it)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="projection rounds (0: reuse the last projected database)")
    ap.add_argument("--cache", default="/tmp/memlens-projection-bench")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--reads", type=int, default=0,
                    help="rounds of read latency on the projected database (child processes)")
    ap.add_argument("--compare-src", help="with --reads: interleave rounds of the memlens at"
                    " this src folder (PYTHONPATH), e.g. an older schema")
    ap.add_argument("--compare-db", help="with --compare-src: the database it projected")
    ap.add_argument("--read-child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    cache = Path(a.cache)
    cache.mkdir(parents=True, exist_ok=True)
    emb = make_embedder(a.embedder, {})
    corpus, src_bytes = _corpus(cache, a.files)
    if a.read_child:
        print(json.dumps(read_round(Path(a.read_child), corpus, emb)))
        return 0
    base = _base(cache, corpus, emb)
    runs: list[dict[str, float]] = []
    nodes = 0
    for i in range(a.repeat):
        row: dict[str, float] = {}
        order = ("memlens", "floor") if i % 2 == 0 else ("floor", "memlens")
        for kind in order:
            db = cache / f"run-{kind}.db"
            _copy(base, db)
            w, c, n = (run_memlens if kind == "memlens" else run_floor)(db, emb)
            row[f"{kind}_wall"], row[f"{kind}_cpu"] = w, c
            if kind == "memlens":
                nodes = n
            elif n != nodes and nodes:
                raise SystemExit(f"floor wrote {n} nodes, memlens {nodes}")
        row["ratio_wall"] = row["memlens_wall"] / row["floor_wall"]
        row["ratio_cpu"] = row["memlens_cpu"] / row["floor_cpu"]
        runs.append(row)
        if not a.json:
            print(" ".join(f"{k}={v:.3f}" for k, v in row.items()), flush=True)
    if not runs and not (cache / "run-memlens.db").exists():
        raise SystemExit("--repeat 0 reuses the last projected database: there is none yet")
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]} if runs else {}
    tables = dbstat(cache / "run-memlens.db", emb)
    total = sum(b for _, b in tables)
    report = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                          "python": platform.python_version()},
              "files": a.files, "source_bytes": src_bytes, "nodes": nodes,
              "embedder": emb.fingerprint(), "repeat": a.repeat, "median": med, "runs": runs,
              "db_bytes": total, "db_over_source": total / src_bytes, "dbstat": tables,
              "target_ratio": TARGET_RATIO}
    if a.reads:
        report["reads"] = compare_reads(a, cache / "run-memlens.db", corpus)
    if a.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"files={a.files} source={src_bytes / 1e6:.2f} MB nodes={nodes} "
              f"embedder={emb.fingerprint()}")
        print(" ".join(f"median {k}={v:.3f}" for k, v in med.items()))
        print(f"db={total / 1e6:.2f} MB = {total / src_bytes:.2f}x source")
        for name, b in tables:
            print(f"| {name} | {b / 1e6:.2f} MB | {100 * b / total:.1f} % |")
        for side, med_r in report.get("reads", {}).items():
            print(f"reads {side} (median of {a.reads}): " + " ".join(
                f"{k}={v:.3f}" for k, v in med_r.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
