"""Machinery shared by the relevance and scale runs.

A fresh database per strategy x embedder (fixed clock, fixed install key), ingest
and projection with counts and timings, index size, and the environment facts
recorded in every report.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw

from memlens.bench.common import FIXED_EPOCH, FIXED_INSTALL_KEY, MODES, BenchError
from memlens.bench.embedders import EmbedderSlot, TimedEmbedder
from memlens.core.chunking.chunker import ChunkerConfig
from memlens.core.embedders.registry import Embedder
from memlens.core.service import MemoryService, load_settings
from memlens.core.types import FUSIONS, IngestDone, MemoryRoot, ProgressEvent, UsageError, roots_for_path


class FixedClock:
    """A deterministic clock: starts at a fixed epoch, +1 ms per call."""

    def __init__(self, start: float = FIXED_EPOCH) -> None:
        """Start the clock at ``start``."""
        self.t = start

    def __call__(self) -> float:
        """Return the next tick."""
        self.t += 0.001
        return self.t


def _scalar(conn: apsw.Connection, sql: str) -> Any:
    row = conn.execute(sql).fetchone()
    return row[0] if row is not None else 0


def index_size(conn: apsw.Connection, db_path: Path) -> dict[str, Any]:
    """Checkpoint the WAL and measure the database.

    Returns:
        ``index_bytes`` (page_count x page_size after a truncating checkpoint),
        ``file_bytes`` (database file + WAL on disk) and ``breakdown`` (bytes per
        part: source, nodes, fts, vectors, embedding_cache, other) when the
        ``dbstat`` table is available.
    """
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = int(_scalar(conn, "PRAGMA page_count"))
    psize = int(_scalar(conn, "PRAGMA page_size"))
    files = 0
    for suffix in ("", "-wal"):
        p = Path(str(db_path) + suffix)
        if p.exists():
            files += p.stat().st_size
    out: dict[str, Any] = {"index_bytes": pages * psize, "file_bytes": files}
    try:
        parts: dict[str, int] = {"source": 0, "nodes": 0, "fts": 0, "vectors": 0,
                                 "embedding_cache": 0, "other": 0}
        for _name, tbl, size in conn.execute(
                "SELECT s.name, COALESCE(m.tbl_name, s.name), SUM(s.pgsize) FROM dbstat s"
                " LEFT JOIN sqlite_schema m ON m.name=s.name GROUP BY s.name"):
            t = str(tbl)
            if t.startswith("vec_nodes_"):
                key = "vectors"
            elif t.startswith("knowledge_nodes_fts"):
                key = "fts"
            elif t in ("knowledge_nodes", "knowledge_node_memory_chunks"):
                key = "nodes"
            elif t.startswith("memory_"):
                key = "source"
            elif t == "embedding_cache":
                key = "embedding_cache"
            else:
                key = "other"
            parts[key] += int(size)
        out["breakdown"] = parts
    except apsw.Error:
        pass
    return out


@contextmanager
def fresh_service(workdir: Path, name: str, config: ChunkerConfig, embedder: Embedder
                  ) -> Iterator[Any]:
    """A ``MemoryService`` over a fresh ``workdir/name.db`` (fixed clock and install key).

    Any earlier database of that name is removed first; the service is closed on exit.
    """
    db = workdir / f"{name}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    d = config.to_dict()
    settings = load_settings(workdir / "no-config.toml", env={}, overrides={
        "db": str(db), "chunker.strategy": d["strategy"], "chunker.max_tokens": d["max_tokens"],
        "chunker.overlap_tokens": d["overlap_tokens"], "chunker.index_names": d["index_names"],
        "chunker.estimator": d["estimator"]})
    svc = MemoryService(settings, clock=FixedClock(), embedder=embedder,
                        install_key=FIXED_INSTALL_KEY)
    try:
        yield svc
    finally:
        svc.close()


def project_all(svc: Any) -> list[Any]:
    """Project until nothing is claimable (``memlens project`` until it finds nothing;
    the benchmark scripts under ``benchmarks/`` use it after a deferred ingest)."""
    outcomes: list[Any] = []
    while True:
        rep = svc.project()
        outcomes.extend(rep.outcomes)
        if not rep.outcomes:
            return outcomes


def ingest_corpus(svc: Any, roots: Sequence[MemoryRoot], timed: TimedEmbedder) -> dict[str, Any]:
    """The door's start-up flow into ``svc`` (ingest, then project the queue, as the CLI
    and the TUI run it); returns counts, sizes and timings (the ingest ends at the flow's
    :class:`~memlens.core.types.IngestDone` event)."""
    timed.reset()
    ingested: list[float] = []

    def on_event(ev: ProgressEvent) -> None:
        if isinstance(ev, IngestDone):
            ingested.append(time.perf_counter())

    t0 = time.perf_counter()
    outcome = svc.start_up(roots, progress=on_event)
    t2 = time.perf_counter()
    t1 = ingested[0] if ingested else t2
    outcomes = outcome.projection.outcomes if outcome.projection is not None else []
    failed = [o for o in outcomes if o.result in ("failed", "stale")]
    conn = svc.conn()
    docs = int(_scalar(conn, "SELECT COUNT(*) FROM memory_documents WHERE tombstoned_at IS NULL"))
    chunks = int(_scalar(conn, "SELECT COUNT(*) FROM knowledge_nodes"))
    src_bytes = int(_scalar(conn, "SELECT COALESCE(SUM(source_size),0) FROM memory_documents"))
    out: dict[str, Any] = {
        "documents": docs, "source_bytes": src_bytes, "chunks": chunks,
        "ingest_failed": [f"{c.repository}/{c.path}: {c.error}" for c in outcome.report.failed],
        "projection_failed": len(failed),
        "ingest_seconds": round(t1 - t0, 4), "project_seconds": round(t2 - t1, 4),
        "total_seconds": round(t2 - t0, 4),
        "embed_seconds": round(timed.doc_seconds, 4), "embedded_texts": timed.doc_texts,
    }
    if failed:
        out["projection_error"] = failed[0].error
    out.update(index_size(conn, svc.db_path))
    return out


def check_modes(modes: Sequence[str]) -> list[str]:
    """The modes, deduplicated in order (``hybrid-rrf`` and the like pick a fusion).

    Raises:
        BenchError: On an unknown mode, or when none is given.
    """
    out: list[str] = []
    for m in modes:
        base, _, fusion = m.partition("-")
        if base not in MODES or (fusion and (base != "hybrid" or fusion not in FUSIONS)):
            raise BenchError(f"unknown search mode {m!r}; use {', '.join(MODES)} or "
                             f"hybrid-<fusion> with fusion in {', '.join(FUSIONS)}")
        if m not in out:
            out.append(m)
    if not out:
        raise BenchError("no search mode given")
    return out


def memory_roots(corpus: Path) -> list[MemoryRoot]:
    """The memory roots under ``corpus`` (a usage error becomes a :class:`BenchError`)."""
    try:
        roots = roots_for_path(corpus)
    except UsageError as exc:
        raise BenchError(str(exc)) from None
    return roots


@contextmanager
def work_folder(path: Path | None) -> Iterator[Path]:
    """``path`` (created if needed and kept), or a fresh temporary folder removed on exit."""
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="memlens-bench-") as d:
        yield Path(d)


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies inside it (for reports)."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return str(path)


def environment(slots: Sequence[EmbedderSlot] = ()) -> dict[str, Any]:
    """Versions and machine facts for the report."""
    def ver(pkg: str) -> str | None:
        try:
            return importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            return None

    vec = None
    try:
        from memlens.core.store.db import connect

        c = connect(":memory:", migrate=False)
        vec = str(_scalar(c, "SELECT vec_version()"))
        c.close()
    except Exception:  # noqa: BLE001 - an environment probe must not fail the bench
        vec = ver("sqlite-vec")
    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor() or None
    return {
        "python": platform.python_version(), "implementation": sys.implementation.name,
        "platform": platform.platform(), "cpu_count": os.cpu_count(), "cpu": cpu,
        "sqlite": apsw.sqlite_lib_version(), "apsw": apsw.apsw_version(),
        "sqlite_vec": vec, "memlens": ver("memlens"), "numpy": ver("numpy"),
        "markdown_it_py": ver("markdown-it-py"), "model2vec": ver("model2vec"),
        "embedders": {s.name: s.embedder.fingerprint() for s in slots if s.embedder is not None},
    }
