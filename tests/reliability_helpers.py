"""Shared machinery of the reliability suite (faults, crashes, concurrency, hostile input).

Used by ``tests/test_faults.py``, ``tests/test_crash.py``, ``tests/test_concurrency.py``,
``tests/test_hostile.py`` and by ``benchmarks/reliability.py`` (the long runs), so it
imports nothing from pytest.

Vocabulary:

* a *fragment* is everything the database holds about ONE document, without ids or
  timestamps: the document row (path, tombstone, content), its revisions (seq, kind,
  hash, snapshot/diff), its chunks, its knowledge nodes, how many of them have a
  vector, the FTS rows that match each probe, and what lexical and vector search
  return for each probe. Per-file atomicity means a document's fragment after a
  failure equals its fragment in one of the reference states (before, after the
  durable write, after the projection swap);
* a *canonical dump* is the sorted list of fragments keyed by (repository, path),
  plus per-document projection status; two databases that went through the same
  operations have equal dumps whatever their ids and timestamps;
* a *current dump* keeps only the present state (current revision, active
  projection), so a database that went through many updates can be compared with
  a fresh ingest of the same files.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import textwrap
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from memlens.core import faults
from memlens.core.config.settings import load_settings
from memlens.core.embedders.registry import make_embedder
from memlens.core.ingest.sources import MemoryRoot, roots_for_path
from memlens.core.search import engine as search_mod
from memlens.core.service import MemoryService
from memlens.core.store import db as dbm
from memlens.core.store.schema import DOC_CONTENT_SQL

REPO = Path(__file__).resolve().parent.parent
SLUG = "-home-dev-rel"
PROBES = ("zebraprobe", "alphaold", "alphanew", "betaword", "gammaword", "deltaword",
          "shrinkword", "kites")
EMBED_OPTS = {"dim": 64}
BAD_ERROR_WORDS = ("database is locked", "SQLITE_BUSY", "BusyError", "LockedError",
                   "SchemaChangeError", "SQLITE_SCHEMA", "database schema has changed")


# --------------------------------------------------------------------------- plumbing


class ManualClock:
    """A controllable clock (same behaviour as ``tests.conftest.Clock``)."""

    def __init__(self, start: float = 1_780_000_000.0) -> None:
        self.t = start

    def __call__(self) -> float:
        self.t += 0.001
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def make_svc(db: Path, clock: Callable[[], float] | None = None, embedder: Any = None,
             **overrides: Any) -> MemoryService:
    """A service on ``db`` with the hashing embedder (64d) and a fixed install key.

    ``overrides`` are dotted settings keys, e.g. ``{"chunker.max_tokens": 48}``.
    """
    settings = load_settings(Path(db).parent / "no-such-config.toml", env={},
                             overrides={"db": str(db), **overrides})
    return MemoryService(settings, clock=clock or ManualClock(),
                         embedder=embedder or make_embedder("hashing", dict(EMBED_OPTS)),
                         install_key=b"k" * 32)


def memdir(base: Path, slug: str = SLUG) -> Path:
    """``base/projects/<slug>/memory`` (created)."""
    d = base / "projects" / slug / "memory"
    d.mkdir(parents=True, exist_ok=True)
    return d


def write(folder: Path, rel: str, text: str | bytes) -> Path:
    """Write a file and bump its mtime so coarse clocks still see a change."""
    p = folder / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    return p


def roots_of(base: Path) -> list[MemoryRoot]:
    """Memory roots under ``base/projects``."""
    return roots_for_path(base / "projects")


def close_and_copy(src: Path, dst: Path) -> None:
    """Copy a closed database (checkpointed: no WAL left) to ``dst``."""
    conn = apsw.Connection(str(src))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for suffix in ("-wal", "-shm"):
        w = Path(str(src) + suffix)
        if w.exists() and w.stat().st_size:
            raise AssertionError(f"{w} is not empty; close every connection first")
    dst.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(str(dst) + suffix)
    shutil.copyfile(src, dst)


# --------------------------------------------------------------------------- dumps


def _rows(conn: apsw.Connection, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.execute(sql, params)]


def _spaces(conn: apsw.Connection) -> list[tuple[str, str]]:
    return [(str(r["name"]), str(r["fingerprint"])) for r in dbm.vector_spaces(conn)]


def _search_by_doc(conn: apsw.Connection, probe: str, mode: str, embedder: Any
                   ) -> dict[int, list[tuple[Any, ...]]]:
    res = search_mod.search(conn, probe, mode=mode, embedder=embedder, k=1000, per_document=0)
    out: dict[int, list[tuple[Any, ...]]] = {}
    for h in res.hits:
        out.setdefault(h.document_id, []).append(
            (h.path, h.ordinal, tuple(h.heading_path), h.start_char, h.end_char))
    return {k: sorted(v) for k, v in out.items()}


def doc_key(conn: apsw.Connection, doc_id: int) -> str:
    """A document's identity independent of its row id: repository and first path.

    Row ids depend on which creates happened before (a failed create shifts them);
    the path of the first revision does not, and a rename keeps it.
    """
    r = dbm.row(conn, "SELECT d.repository, r.logical_path FROM memory_documents d"
                " JOIN memory_revisions r ON r.document_id=d.id WHERE d.id=?"
                " ORDER BY r.seq LIMIT 1", (doc_id,))
    return f"{r['repository']}/{r['logical_path']}" if r else f"#{doc_id}"


def doc_fragments(conn: apsw.Connection, embedder: Any = None,
                  probes: Sequence[str] = PROBES) -> dict[str, dict[str, Any]]:
    """Per document identity (:func:`doc_key`): its fragment (see the module docstring)."""
    spaces = _spaces(conn)
    fts: dict[str, dict[int, list[int]]] = {}
    lex: dict[str, dict[int, list[tuple[Any, ...]]]] = {}
    vec: dict[str, dict[int, list[tuple[Any, ...]]]] = {}
    for p in probes:
        hits: dict[int, list[int]] = {}
        for doc_id, ordinal in _rows(
                conn, "SELECT n.document_id, n.ordinal FROM knowledge_nodes_fts f"
                " JOIN knowledge_nodes n ON n.id=f.rowid WHERE knowledge_nodes_fts MATCH ?",
                (f'"{p}"',)):
            hits.setdefault(int(doc_id), []).append(int(ordinal))
        fts[p] = {k: sorted(v) for k, v in hits.items()}
        lex[p] = _search_by_doc(conn, p, "lexical", None)
        if embedder is not None:
            vec[p] = _search_by_doc(conn, p, "vector", embedder)
    out: dict[str, dict[str, Any]] = {}
    for d in dbm.rows(conn, "SELECT d.*, cr.seq AS cur_seq, ar.seq AS act_seq,"
                      f" {DOC_CONTENT_SQL} AS content FROM memory_documents d"
                      " LEFT JOIN memory_revisions cr ON cr.id=d.current_revision_id"
                      " LEFT JOIN memory_revisions ar ON ar.id=d.active_revision_id"):
        did = int(d["id"])
        key = doc_key(conn, did)
        vcount = 0
        for name, _fp in spaces:
            vcount += int(dbm.scalar(
                conn, f"SELECT COUNT(*) FROM {dbm.vec_table_name(name)} WHERE node_id IN"
                " (SELECT id FROM knowledge_nodes WHERE document_id=?)", (did,)) or 0)
        out[key] = {
            "repository": d["repository"], "path": d["logical_path"],
            "tombstoned": d["tombstoned_at"] is not None, "content_hash": d["content_hash"],
            "content": d["content"], "front_matter": d["front_matter"],
            "current_seq": d["cur_seq"], "active_seq": d["act_seq"],
            "revisions": _rows(
                conn, "SELECT seq, change_kind, content_hash, logical_path, previous_path,"
                " snapshot, summary, diff, diff_truncated, chunker_config, chunk_count"
                " FROM memory_revisions WHERE document_id=? ORDER BY seq", (did,)),
            "chunks": _rows(
                conn, "SELECT r.seq, c.ordinal, c.chunk_hash, c.start_char, c.end_char,"
                " c.start_byte, c.end_byte, c.heading_path, c.overlap_chars FROM memory_chunks c"
                " JOIN memory_revisions r ON r.id=c.revision_id WHERE r.document_id=?"
                " ORDER BY r.seq, c.ordinal", (did,)),
            "nodes": _rows(
                conn, "SELECT r.seq, n.ordinal, n.repository, n.logical_path, n.heading, n.text,"
                " n.doc_type, c.chunk_hash FROM knowledge_nodes n"
                " JOIN memory_revisions r ON r.id=n.revision_id"
                " LEFT JOIN knowledge_node_memory_chunks j ON j.node_id=n.id"
                " LEFT JOIN memory_chunks c ON c.id=j.chunk_id"
                " WHERE n.document_id=? ORDER BY n.ordinal", (did,)),
            "vectors": vcount,
            "fts": {p: fts[p].get(did, []) for p in probes},
            "lexical": {p: lex[p].get(did, []) for p in probes},
            "vector": {p: vec[p].get(did, []) for p in probes} if embedder is not None else {},
        }
    return out


def statuses(conn: apsw.Connection) -> dict[str, dict[str, Any]]:
    """Per document identity: projection status, owner and error."""
    out: dict[str, dict[str, Any]] = {}
    for d in dbm.rows(conn, "SELECT id, projection_status, projection_owner, projection_error,"
                      " vector_done, vector_total FROM memory_documents"):
        out[doc_key(conn, int(d["id"]))] = {"status": d["projection_status"], "owner": d["projection_owner"],
                             "error": d["projection_error"],
                             "vectors_pending": d["vector_done"] < d["vector_total"],
                             "vector_done": d["vector_done"]}
    return out


def canonical_dump(conn: apsw.Connection, embedder: Any = None,
                   probes: Sequence[str] = PROBES) -> dict[str, Any]:
    """Fragments keyed by ``repository/path`` plus status, vector and FTS totals."""
    frags = doc_fragments(conn, embedder, probes)
    st = statuses(conn)
    ids = {doc_key(conn, int(r[0])): int(r[0]) for r in conn.execute(
        "SELECT id FROM memory_documents")}
    docs = {}
    for key, f in frags.items():
        docs[f"{f['repository']}/{f['path']}"] = {
            **f, "status": st[key]["status"],
            "embedder_status": _rows(conn, "SELECT seq, embedder_status FROM memory_revisions"
                                     " WHERE document_id=? ORDER BY seq", (ids[key],)),
        }
    return {
        "documents": dict(sorted(docs.items())),
        "vectors": {fp: int(dbm.scalar(conn, f"SELECT COUNT(*) FROM {dbm.vec_table_name(n)}")
                            or 0) for n, fp in _spaces(conn)},
        "nodes": int(dbm.scalar(conn, "SELECT COUNT(*) FROM knowledge_nodes") or 0),
    }


def current_dump(conn: apsw.Connection, probes: Sequence[str] = PROBES) -> dict[str, Any]:
    """The present state only: live documents, current content and chunks, active nodes."""
    out: dict[str, Any] = {}
    for d in dbm.rows(conn, "SELECT d.*, cr.content_hash AS cur_hash, ar.content_hash AS act_hash"
                      " FROM memory_documents d"
                      " LEFT JOIN memory_revisions cr ON cr.id=d.current_revision_id"
                      " LEFT JOIN memory_revisions ar ON ar.id=d.active_revision_id"
                      " WHERE d.tombstoned_at IS NULL"):
        did = int(d["id"])
        out[f"{d['repository']}/{d['logical_path']}"] = {
            "content_hash": d["content_hash"], "current": d["cur_hash"],
            "active": d["act_hash"], "status": d["projection_status"],
            "active_is_current": d["active_revision_id"] == d["current_revision_id"],
            "chunks": _rows(conn, "SELECT ordinal, chunk_hash, start_char, end_char, heading_path"
                            " FROM memory_chunks WHERE revision_id=? ORDER BY ordinal",
                            (d["current_revision_id"],)),
            "nodes": _rows(conn, "SELECT ordinal, heading, text FROM knowledge_nodes"
                           " WHERE document_id=? ORDER BY ordinal", (did,)),
        }
    fts = {p: sorted(_rows(conn, "SELECT n.repository, n.logical_path, n.ordinal"
                          " FROM knowledge_nodes_fts f JOIN knowledge_nodes n ON n.id=f.rowid"
                          " WHERE knowledge_nodes_fts MATCH ?", (f'"{p}"',))) for p in probes}
    return {"documents": dict(sorted(out.items())), "fts": fts,
            "vectors": {fp: int(dbm.scalar(conn, f"SELECT COUNT(*) FROM {dbm.vec_table_name(n)}")
                                or 0) for n, fp in _spaces(conn)}}


def orphan_report(conn: apsw.Connection) -> dict[str, int]:
    """Counts of rows that should not exist; all zero in a healthy database.

    Goes beyond ``memlens doctor``: FTS index rows are read through an ``fts5vocab``
    table in the temp schema, so an FTS row without a node (or a node missing from
    the index) is seen directly.
    """
    rep: dict[str, int] = {}
    for name, _fp in _spaces(conn):
        t = dbm.vec_table_name(name)
        rep[f"vectors_without_node[{name}]"] = int(dbm.scalar(
            conn, f"SELECT COUNT(*) FROM {t} WHERE node_id NOT IN (SELECT id FROM knowledge_nodes)")
            or 0)
        # two stages (issue 37): a node waits for its vector while its document's vector
        # stage is pending; once the document says done, every node has one (no cap here)
        rep[f"nodes_without_vector[{name}]"] = int(dbm.scalar(
            conn, "SELECT COUNT(*) FROM knowledge_nodes k JOIN memory_documents d"
            " ON d.id=k.document_id WHERE k.vector_space=? AND d.vector_done>=d.vector_total"
            f" AND d.vector_capped=0 AND k.id NOT IN (SELECT node_id FROM {t})", (name,)) or 0)
    one = lambda sql: int(dbm.scalar(conn, sql) or 0)  # noqa: E731
    rep["junction_without_node"] = one(
        "SELECT COUNT(*) FROM knowledge_node_memory_chunks WHERE node_id NOT IN"
        " (SELECT id FROM knowledge_nodes)")
    rep["junction_without_chunk"] = one(
        "SELECT COUNT(*) FROM knowledge_node_memory_chunks WHERE chunk_id NOT IN"
        " (SELECT id FROM memory_chunks)")
    rep["nodes_without_junction"] = one(
        "SELECT COUNT(*) FROM knowledge_nodes WHERE id NOT IN"
        " (SELECT node_id FROM knowledge_node_memory_chunks)")
    rep["nodes_of_tombstoned"] = one(
        "SELECT COUNT(*) FROM knowledge_nodes n JOIN memory_documents d ON d.id=n.document_id"
        " WHERE d.tombstoned_at IS NOT NULL")
    rep["nodes_not_active_revision"] = one(
        "SELECT COUNT(*) FROM knowledge_nodes n JOIN memory_documents d ON d.id=n.document_id"
        " WHERE n.revision_id IS NOT d.active_revision_id")
    rep["nodes_without_document"] = one(
        "SELECT COUNT(*) FROM knowledge_nodes WHERE document_id NOT IN"
        " (SELECT id FROM memory_documents)")
    rep["chunks_without_revision"] = one(
        "SELECT COUNT(*) FROM memory_chunks WHERE revision_id NOT IN"
        " (SELECT id FROM memory_revisions)")
    rep["empty_or_blank_nodes"] = one(
        "SELECT COUNT(*) FROM knowledge_nodes WHERE trim(text, ' \n\t\r')=''")
    conn.execute("DROP TABLE IF EXISTS temp.rel_fts_inst")
    conn.execute("CREATE VIRTUAL TABLE temp.rel_fts_inst USING"
                 " fts5vocab(main, knowledge_nodes_fts, instance)")
    try:
        rep["fts_rows_without_node"] = one(
            "SELECT COUNT(DISTINCT doc) FROM temp.rel_fts_inst WHERE doc NOT IN"
            " (SELECT id FROM knowledge_nodes)")
        rep["nodes_missing_from_fts"] = one(
            "SELECT COUNT(*) FROM knowledge_nodes WHERE id NOT IN"
            " (SELECT DISTINCT doc FROM temp.rel_fts_inst)")
    finally:
        conn.execute("DROP TABLE IF EXISTS temp.rel_fts_inst")
    return rep


def problems_of(svc: MemoryService) -> list[str]:
    """Doctor problems plus non-zero orphan counts, as strings."""
    _checks, problems = svc.doctor()
    out = [f"doctor[{p.check}]: {p.message}" for p in problems]
    out += [f"orphan {k}={v}" for k, v in orphan_report(svc.conn()).items() if v]
    return out


# --------------------------------------------------------------------------- fault hooks


class FaultPlan:
    """A ``faults.set_hook`` hook: counts checkpoints, raises at the ``fail_at``-th."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.fail_at = fail_at
        self.count = 0
        self.steps: list[str] = []
        self.fired: str | None = None

    def __call__(self, step: str) -> None:
        self.count += 1
        self.steps.append(step)
        if self.fail_at is not None and self.count == self.fail_at:
            self.fired = step
            raise faults.InjectedFault(f"injected fault at checkpoint #{self.count} ({step})")


@contextlib.contextmanager
def hooked(plan: FaultPlan) -> Iterator[FaultPlan]:
    """Install ``plan`` as the checkpoint hook for the block."""
    faults.set_hook(plan)
    try:
        yield plan
    finally:
        faults.set_hook(None)


class IOPlan:
    """Which file I/O call to fail: counts xRead/xWrite/xSync calls while armed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.armed = False
        self.fail_at: int | None = None
        self.count = 0
        self.fired: str | None = None
        self.kinds: dict[str, int] = {}

    def arm(self, fail_at: int | None) -> None:
        with self.lock:
            self.armed, self.fail_at, self.count, self.fired = True, fail_at, 0, None
            self.kinds = {}

    def disarm(self) -> None:
        with self.lock:
            self.armed = False

    def tick(self, op: str, filename: str) -> None:
        with self.lock:
            if not self.armed:
                return
            self.count += 1
            self.kinds[op] = self.kinds.get(op, 0) + 1
            if self.fail_at is not None and self.count == self.fail_at:
                self.fired = f"{op} #{self.count} on {Path(filename).name}"
                raise apsw.IOError(f"injected I/O error: {self.fired}")


class _FaultFile(apsw.VFSFile):
    def __init__(self, plan: IOPlan, name: Any, flags: list[int]) -> None:
        self._plan = plan
        self._fname = name.filename() if isinstance(name, apsw.URIFilename) else str(name)
        super().__init__("", name, flags)

    def xRead(self, amount: int, offset: int) -> bytes:
        self._plan.tick("xRead", self._fname)
        return super().xRead(amount, offset)

    def xWrite(self, data: bytes, offset: int) -> None:
        self._plan.tick("xWrite", self._fname)
        super().xWrite(data, offset)

    def xSync(self, flags: int) -> None:
        self._plan.tick("xSync", self._fname)
        super().xSync(flags)


class FaultVFS(apsw.VFS):
    """A VFS inheriting from the default one whose files fail the Nth read/write/sync."""

    def __init__(self, name: str, plan: IOPlan) -> None:
        self.plan = plan
        self.vfs_name = name
        super().__init__(name, "")

    def xOpen(self, name: Any, flags: list[int]) -> apsw.VFSFile:
        return _FaultFile(self.plan, name, flags)


_VFS: FaultVFS | None = None


def fault_vfs() -> FaultVFS:
    """The process-wide fault VFS (registered once)."""
    global _VFS
    if _VFS is None:
        _VFS = FaultVFS("memlens-fault-vfs", IOPlan())
    return _VFS


# --------------------------------------------------------------------------- scenarios

# Small files with a probe word in every section, so each has several chunks at
# max_tokens=48 and every generation is findable by ``zebraprobe``.
SMALL_TOKENS: dict[str, Any] = {"chunker.max_tokens": 48, "chunker.overlap_tokens": 8}

ALPHA_OLD = textwrap.dedent("""\
    ---
    name: alpha
    type: project
    ---
    # Alpha

    The alphaold pool uses busy_timeout and WAL mode; zebraprobe marks every file.

    ## Details

    Readers never block writers in alphaold land. More words so the section grows
    past the small chunk limit used by these tests: one two three four five six.

    ## Later

    Final alphaold paragraph with zebraprobe again and a [link](beta.md).
""")
ALPHA_NEW = ALPHA_OLD.replace("alphaold", "alphanew").replace("WAL mode", "kites")
BETA = "# Beta\n\nbetaword deploys run through staging; zebraprobe.\n"
GAMMA = ("# Gamma\n\ngammaword notes about the cache, zebraprobe.\n\n## More\n\n"
         "gammaword second section with enough text to be its own chunk maybe.\n")
DELTA = "# Delta\n\ndeltaword is a new file; zebraprobe.\n"
SHRINK = "# Shrink\n\nshrinkword will become empty; zebraprobe.\n"
INDEX = ("# Memory index\n\n- [Alpha](alpha.md) alphaold summary, zebraprobe\n"
         "- [Beta](beta.md) betaword\n- [Gamma](notes/gamma.md)\n")


def tree_initial(base: Path) -> Path:
    """The starting tree: index, three topic files, an empty file, one to be emptied."""
    d = memdir(base)
    write(d, "MEMORY.md", INDEX)
    write(d, "alpha.md", ALPHA_OLD)
    write(d, "beta.md", BETA)
    write(d, "notes/gamma.md", GAMMA)
    write(d, "empty.md", "")
    write(d, "shrink.md", SHRINK)
    return d


def tree_batch(base: Path) -> None:
    """Update + create + delete + rename (+ a file emptied) in one batch."""
    d = memdir(base)
    write(d, "alpha.md", ALPHA_NEW)
    write(d, "delta.md", DELTA)
    (d / "beta.md").unlink()
    (d / "notes" / "gamma.md").rename(d / "notes" / "gamma-renamed.md")
    write(d, "shrink.md", "")


Op = Callable[[MemoryService], Any]


@dataclass
class Scenario:
    """A write operation to fail at every step.

    ``prepare(workdir)`` builds the pre-state database at ``workdir/pre.db`` (closed)
    and leaves the files as the operation should see them. ``op`` is the operation;
    ``durable_op`` (optional) is its source-only part, whose result is the allowed
    in-between state of a document (new revision stored, old projection served).
    """

    name: str
    prepare: Callable[[Path], None]
    op: Op
    durable_op: Op | None = None
    overrides: dict[str, Any] = field(default_factory=lambda: dict(SMALL_TOKENS))


@dataclass
class ScenarioResult:
    """Outcome of running a scenario with a fault at every step."""

    name: str
    steps: int
    runs: int = 0
    failures: list[str] = field(default_factory=list)
    fired: dict[str, int] = field(default_factory=dict)


def _ingest_op(base: Path) -> Op:
    return lambda svc: svc.ingest(roots_of(base))


def scenarios(workdir: Path) -> list[Scenario]:
    """The hook-fault scenarios: initial ingest, batch, rechunk, projection."""
    from memlens.core.chunking.chunker import ChunkerConfig

    base = workdir / "claude"

    def empty_db(wd: Path) -> None:
        tree_initial(base)
        svc = make_svc(wd / "pre.db", **SMALL_TOKENS)
        svc.conn()
        svc.close()

    def ingested(wd: Path, then: Callable[[], None] | None = None,
                 deferred_batch: bool = False) -> None:
        tree_initial(base)
        svc = make_svc(wd / "pre.db", **SMALL_TOKENS)
        svc.ingest(roots_of(base))
        if then:
            then()
        if deferred_batch:
            svc.ingest(roots_of(base), project=False)
        svc.close()

    rechunk_cfg = ChunkerConfig(max_tokens=30, overlap_tokens=5)

    def rechunk(svc: MemoryService) -> Any:
        svc.rechunk(None, rechunk_cfg)
        return svc.project()

    return [
        Scenario("initial ingest (6 files incl. empty)", empty_db, _ingest_op(base),
                 lambda svc: svc.ingest(roots_of(base), project=False)),
        Scenario("update+create+delete+rename+empty batch",
                 lambda wd: ingested(wd, then=lambda: tree_batch(base)), _ingest_op(base),
                 lambda svc: svc.ingest(roots_of(base), project=False)),
        Scenario("rechunk all documents", ingested, rechunk,
                 lambda svc: svc.rechunk(None, rechunk_cfg)),
        Scenario("projection of a deferred batch",
                 lambda wd: ingested(wd, then=lambda: tree_batch(base), deferred_batch=True),
                 lambda svc: svc.project()),
    ]


def _fresh(workdir: Path, pre: Path, name: str, sc: Scenario,
           clock: ManualClock | None = None) -> tuple[MemoryService, ManualClock]:
    db = workdir / name
    close_and_copy(pre, db)
    clk = clock or ManualClock(1_790_000_000.0)
    return make_svc(db, clk, **sc.overrides), clk


def _diff_keys(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[str]:
    if a is None or b is None:
        return ["<missing>"]
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def check_against_references(frags: dict[str, dict[str, Any]], sts: dict[str, dict[str, Any]],
                             refs: dict[str, dict[str, dict[str, Any]]], *, label: str,
                             allow_processing_owner: str | None = None) -> list[str]:
    """Every document's fragment must equal its fragment in one reference state."""
    problems: list[str] = []
    old, new = refs["before"], refs["after"]
    for did in sorted(set(frags) | set(old) | set(new)):
        got = frags.get(did)
        match = [name for name, ref in refs.items() if ref.get(did) == got]
        if not match and got is not None and sts.get(did, {}).get("vectors_pending"):
            # stage 2 under way: everything but the vectors is a reference state, and the
            # vectors it has are the ones its record counts
            def bare(f: dict[str, Any] | None) -> dict[str, Any] | None:
                return None if f is None else {k: v for k, v in f.items()
                                               if k not in ("vectors", "vector")}
            match = [name for name, ref in refs.items() if bare(ref.get(did)) == bare(got)]
            if match and got["vectors"] != sts[did]["vector_done"]:
                problems.append(f"{label}: {got['path']} has {got['vectors']} vectors, its"
                                f" record says {sts[did]['vector_done']}")
        if not match:
            closest = min(refs, key=lambda n: len(_diff_keys(refs[n].get(did), got)))
            problems.append(f"{label}: document {did} matches no "
                            f"reference state; closest {closest!r} differs in "
                            f"{_diff_keys(refs[closest].get(did), got)}")
            continue
        if got is None:
            continue
        # Searchable before and still live after => never empty now.
        was = old.get(did)
        if was and was["lexical"].get("zebraprobe") and new.get(did) \
                and not new[did]["tombstoned"] and new[did]["lexical"].get("zebraprobe") \
                and not got["lexical"].get("zebraprobe"):
            problems.append(f"{label}: {got['path']} was searchable and now returns nothing")
        st = sts.get(did, {}).get("status")
        if st == "processing" and sts[did].get("owner") != allow_processing_owner:
            problems.append(f"{label}: {got['path']} left 'processing' by a finished run")
        if "after" in match and "before" not in match and not got["tombstoned"] \
                and st != "ready" and refs["after"][did]["current_seq"] == got["active_seq"]:
            problems.append(f"{label}: {got['path']} is fully new but status is {st}")
    return problems


def reference_states(workdir: Path, pre: Path, sc: Scenario
                     ) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, Any], int]:
    """(per-state fragments, canonical dump after a clean run, checkpoint count)."""
    refs: dict[str, dict[str, dict[str, Any]]] = {}
    svc, _ = _fresh(workdir, pre, "ref-before.db", sc)
    refs["before"] = doc_fragments(svc.conn(), svc.embedder)
    svc.close()
    if sc.durable_op is not None:
        svc, _ = _fresh(workdir, pre, "ref-durable.db", sc)
        sc.durable_op(svc)
        refs["durable"] = doc_fragments(svc.conn(), svc.embedder)
        svc.close()
    svc, _ = _fresh(workdir, pre, "ref-after.db", sc)
    with hooked(FaultPlan()) as plan:
        sc.op(svc)
    refs["after"] = doc_fragments(svc.conn(), svc.embedder)
    dump = canonical_dump(svc.conn(), svc.embedder)
    svc.close()
    return refs, dump, plan.count


def run_hook_scenario(sc: Scenario, workdir: Path, *, only: Sequence[int] | None = None
                      ) -> ScenarioResult:
    """Fail checkpoint N for every N (or ``only``) and check each outcome."""
    workdir.mkdir(parents=True, exist_ok=True)
    sc.prepare(workdir)
    pre = workdir / "pre.db"
    refs, clean_dump, total = reference_states(workdir, pre, sc)
    res = ScenarioResult(sc.name, total)
    for n in (only if only is not None else range(1, total + 1)):
        label = f"{sc.name} / fault at checkpoint {n}"
        svc, clk = _fresh(workdir, pre, "run.db", sc)
        try:
            plan = FaultPlan(n)
            with hooked(plan):
                try:
                    sc.op(svc)
                except faults.InjectedFault:
                    pass
            res.runs += 1
            if plan.fired is None:
                res.failures.append(f"{label}: fault did not fire ({plan.count} steps)")
                continue
            res.fired[plan.fired] = res.fired.get(plan.fired, 0) + 1
            res.failures += [f"{label}: {p}" for p in problems_of(svc)]
            res.failures += check_against_references(
                doc_fragments(svc.conn(), svc.embedder), statuses(svc.conn()), refs, label=label)
            clk.advance(10_000)  # past any retry back-off
            sc.op(svc)
            dump = canonical_dump(svc.conn(), svc.embedder)
            if dump != clean_dump:
                res.failures.append(f"{label}: re-run does not converge: "
                                    f"{dump_difference(clean_dump, dump)}")
            res.failures += [f"{label} (re-run): {p}" for p in problems_of(svc)]
        finally:
            svc.close()
    return res


def run_vfs_scenario(sc: Scenario, workdir: Path, *, stride: int = 1,
                     only: Sequence[int] | None = None) -> ScenarioResult:
    """Fail the Nth xRead/xWrite/xSync through :class:`FaultVFS` for every N.

    After each failure the database is reopened WITHOUT the shim and checked like
    the hook scenarios.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    sc.prepare(workdir)
    pre = workdir / "pre.db"
    refs, clean_dump, _ = reference_states(workdir, pre, sc)
    vfs = fault_vfs()
    # dry run through the shim to count I/O calls
    total = _vfs_run(sc, workdir, pre, vfs, None)[0]
    res = ScenarioResult(sc.name + " [VFS I/O errors]", total)
    for n in (only if only is not None else range(1, total + 1, stride)):
        label = f"{sc.name} / I/O error at call {n}"
        _count, fired, err = _vfs_run(sc, workdir, pre, vfs, n)
        res.runs += 1
        if fired is None:
            res.failures.append(f"{label}: fault did not fire")
            continue
        key = fired.split(" ")[0] + (" (raised)" if err else " (absorbed)")
        res.fired[key] = res.fired.get(key, 0) + 1
        svc = make_svc(workdir / "run.db", ManualClock(1_795_000_000.0), **sc.overrides)
        try:
            res.failures += [f"{label} ({fired}): {p}" for p in problems_of(svc)]
            res.failures += check_against_references(
                doc_fragments(svc.conn(), svc.embedder), statuses(svc.conn()), refs,
                label=f"{label} ({fired})", allow_processing_owner=_own_owner())
            sc.op(svc)
            dump = canonical_dump(svc.conn(), svc.embedder)
            if dump != clean_dump:
                res.failures.append(f"{label} ({fired}): re-run does not converge: "
                                    f"{dump_difference(clean_dump, dump)}")
        finally:
            svc.close()
    return res


def _own_owner() -> str:
    from memlens.core.projection.queue import process_owner

    return process_owner()


def _vfs_run(sc: Scenario, workdir: Path, pre: Path, vfs: FaultVFS, fail_at: int | None
             ) -> tuple[int, str | None, str | None]:
    db = workdir / "run.db"
    close_and_copy(pre, db)
    faults.set_vfs(vfs.vfs_name)
    svc = make_svc(db, ManualClock(1_790_000_000.0), **sc.overrides)
    err: str | None = None
    try:
        vfs.plan.arm(fail_at)
        try:
            sc.op(svc)
        except (apsw.Error, dbm.DatabaseError) as exc:
            err = f"{type(exc).__name__}: {exc}"
        finally:
            vfs.plan.disarm()
    finally:
        faults.set_vfs(None)
        svc.close()
    return vfs.plan.count, vfs.plan.fired, err


def dump_difference(a: dict[str, Any], b: dict[str, Any], limit: int = 5) -> str:
    """A short description of how two dumps differ."""
    out: list[str] = []
    da, db_ = a.get("documents", {}), b.get("documents", {})
    for k in sorted(set(da) | set(db_)):
        if da.get(k) != db_.get(k):
            if k not in da or k not in db_:
                out.append(f"{k}: only in {'expected' if k in da else 'actual'}")
            else:
                out.append(f"{k}: {_diff_keys(da[k], db_[k])}")
    for k in sorted(set(a) | set(b)):
        if k != "documents" and a.get(k) != b.get(k):
            out.append(f"{k}: {a.get(k)!r} != {b.get(k)!r}")
    return "; ".join(out[:limit]) + (" ..." if len(out) > limit else "")


# --------------------------------------------------------------------------- crash runs

CRASH_CHILD = r"""
import os, random, sys, time
sys.path.insert(0, sys.argv[4])
from tests.reliability_helpers import crash_child_main
crash_child_main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
"""


class SlowEmbedder:
    """Hashing embedder (same fingerprint and vectors) that takes a little time per batch,
    so a kill often lands while documents are claimed and being embedded."""

    def __init__(self, delay: float = 0.004, rng: Any = None) -> None:
        self.inner = make_embedder("hashing", dict(EMBED_OPTS))
        self.name, self.model, self.dim = self.inner.name, self.inner.model, self.inner.dim
        self.metric, self.version = self.inner.metric, self.inner.version
        self.delay = delay

    def fingerprint(self) -> str:
        return self.inner.fingerprint()

    def embed_documents(self, texts: Sequence[str]) -> Any:
        import time

        time.sleep(self.delay * max(1, len(texts)))
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)

    def info(self) -> dict[str, object]:
        return self.inner.info()


CRASH_FILES = 40


def crash_file_text(i: int, gen: int) -> str:
    """Content of crash-tree file ``i`` at generation ``gen`` (zebraprobe always present)."""
    body = "\n".join(f"Line {k} of file{i} generation {gen}: zebraprobe words here."
                     for k in range(3 + (i * 7 + gen) % 25))
    extra = f"\n\n## Section two\n\nfile{i} gen{gen} more text.\n" if (i + gen) % 3 else ""
    return f"# File {i}\n\n{body}{extra}\n"


def crash_tree(base: Path) -> Path:
    """The initial ~40-file crash tree."""
    d = memdir(base)
    write(d, "MEMORY.md", "# Memory\n\n" + "".join(f"- [f{i}](t{i:02d}.md)\n"
                                                   for i in range(CRASH_FILES)))
    for i in range(CRASH_FILES):
        write(d, f"t{i:02d}.md" if i % 5 else f"sub/t{i:02d}.md", crash_file_text(i, 0))
    return d


def crash_child_main(base_s: str, db_s: str, seed: int) -> None:
    """Loop forever: change files, ingest (sometimes deferring projection), project."""
    import sys
    import time

    base, db = Path(base_s), Path(db_s)
    d = memdir(base)
    rng = __import__("random").Random(seed)
    svc = make_svc(db, time.time, SlowEmbedder(), **{"chunker.max_tokens": 80,
                                                      "chunker.overlap_tokens": 10})
    gen = 0
    print("ready", flush=True)
    while True:
        gen += 1
        files = sorted(p.relative_to(d).as_posix() for p in d.rglob("*.md"))
        for _ in range(rng.randint(1, 8)):
            rel = rng.choice(files)
            if rel == "MEMORY.md":
                continue
            i = int(Path(rel).stem[1:3])
            write(d, rel, crash_file_text(i, gen))
        r = rng.random()
        if r < 0.15 and files:
            victim = rng.choice(files)
            if victim != "MEMORY.md":
                (d / victim).unlink(missing_ok=True)
        elif r < 0.3:
            src = rng.choice(files)
            if src != "MEMORY.md" and (d / src).exists():
                stem = Path(src).stem[:3]
                dst = f"{stem}-r{gen}.md" if "/" not in src else f"sub/{stem}-r{gen}.md"
                (d / src).rename(d / dst)
        elif r < 0.4:
            i = rng.randrange(CRASH_FILES)
            write(d, f"t{i:02d}.md", crash_file_text(i, gen))  # recreate
        svc.ingest(roots_of(base), project=rng.random() < 0.6)
        if rng.random() < 0.5:
            svc.project()
        print(f"gen {gen}", flush=True)
        sys.stdout.flush()


@dataclass
class CrashTrial:
    """One SIGKILL trial."""

    seed: int
    killed_after: float
    generations: int
    processing_left: int
    reclaimed: bool
    problems: list[str]
    vectors_left: int = 0  # documents the kill left waiting for vectors (stage 2)


def crash_trial(workdir: Path, seed: int, *, max_delay: float = 1.2,
                timeout: float = 60.0) -> CrashTrial:
    """Run the child, SIGKILL it at a random moment, then recover and compare."""
    import random
    import signal
    import subprocess
    import sys
    import time

    rng = random.Random(seed)
    base = workdir / "claude"
    crash_tree(base)
    db = workdir / "crash.db"
    child = subprocess.Popen(
        [sys.executable, "-c", CRASH_CHILD, str(base), str(db), str(seed), str(REPO)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    problems: list[str] = []
    assert child.stdout is not None
    line = child.stdout.readline()
    if line.strip() != "ready":
        child.kill()
        _o, err = child.communicate(timeout=timeout)
        return CrashTrial(seed, 0.0, 0, 0, False, [f"child did not start: {line!r} {err[-2000:]}"])
    # The moment is a share of the child's work, not of the wall clock: on a loaded
    # machine the child gets through less per second, so the delay stretches with the
    # load (issue 42: beside two busy loops every kill landed before any projection).
    from tests.conftest import load_factor, scaled

    delay = rng.uniform(0.02, max_delay) * load_factor()
    timeout = scaled(timeout)
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    out, err = child.communicate(timeout=timeout)
    gens = sum(1 for ln in out.splitlines() if ln.startswith("gen "))
    if child.returncode != -signal.SIGKILL:
        problems.append(f"child exited by itself with {child.returncode}: {err[-2000:]}")
    for bad in ("Traceback",) + BAD_ERROR_WORDS:
        if bad in err:
            problems.append(f"child stderr has {bad!r}: {err[-1500:]}")
    # 1. the database as the dead process left it
    svc = make_svc(db, ManualClock(2_000_000_000.0), **{"chunker.max_tokens": 80,
                                                        "chunker.overlap_tokens": 10})
    try:
        problems += [f"after kill: {p}" for p in problems_of(svc)]
        conn = svc.conn()
        stuck = [int(r[0]) for r in conn.execute(
            "SELECT id FROM memory_documents WHERE projection_status='processing'"
            " AND projection_owner LIKE ?", (f"%:{child.pid}",))]
        vec_left = int(dbm.scalar(conn, "SELECT COUNT(*) FROM memory_documents WHERE"
                                  " vector_done < vector_total AND tombstoned_at IS NULL") or 0)
        # 2. recovery: re-ingest + project (claims of the dead pid must be reclaimed)
        svc.ingest(roots_of(base))
        svc.project(force=True)
        conn = svc.conn()
        still = [int(r[0]) for r in conn.execute(
            "SELECT id FROM memory_documents WHERE projection_status<>'ready'"
            " AND tombstoned_at IS NULL")]
        reclaimed = not still
        if still:
            problems.append(f"documents not ready after recovery: {still} "
                            f"(left processing by the dead child: {stuck})")
        waiting = [int(r[0]) for r in conn.execute(
            "SELECT id FROM memory_documents WHERE vector_done < vector_total"
            " AND tombstoned_at IS NULL")]
        if waiting:
            problems.append(f"documents still waiting for vectors after recovery: {waiting}")
        problems += [f"after recovery: {p}" for p in problems_of(svc)]
        recovered = current_dump(conn)
        problems += history_problems(conn)
    finally:
        svc.close()
    # 3. a clean ingest of the same files into a fresh database
    fresh = make_svc(workdir / "fresh.db", ManualClock(), **{"chunker.max_tokens": 80,
                                                             "chunker.overlap_tokens": 10})
    try:
        fresh.ingest(roots_of(base))
        expected = current_dump(fresh.conn())
    finally:
        fresh.close()
    if recovered != expected:
        problems.append("recovered database differs from a fresh ingest: "
                        + dump_difference(expected, recovered))
    return CrashTrial(seed, delay, gens, len(stuck), reclaimed, problems, vec_left)


def history_problems(conn: apsw.Connection) -> list[str]:
    """Revision history must be a strictly increasing seq with a consistent current."""
    out: list[str] = []
    for did, seqs in _rows(conn, "SELECT document_id, group_concat(seq) FROM"
                           " (SELECT document_id, seq FROM memory_revisions ORDER BY document_id, id)"
                           " GROUP BY document_id"):
        s = [int(x) for x in str(seqs).split(",")]
        if s != sorted(set(s)):
            out.append(f"document {did}: revision seqs not strictly increasing: {s}")
    for r in dbm.rows(conn, "SELECT d.id, d.logical_path, d.content_hash, r.content_hash AS rh,"
                      " r.seq, (SELECT MAX(seq) FROM memory_revisions x WHERE x.document_id=d.id)"
                      " AS maxseq FROM memory_documents d JOIN memory_revisions r"
                      " ON r.id=d.current_revision_id"):
        if r["seq"] != r["maxseq"]:
            out.append(f"{r['logical_path']}: current revision is #{r['seq']}, newest #{r['maxseq']}")
        if r["content_hash"] != r["rh"]:
            out.append(f"{r['logical_path']}: document hash differs from its current revision")
    return out


# --------------------------------------------------------------------------- concurrency

CONC_FILES = 8
SENTINEL = "sentinelword"


def conc_text(i: int, gen: int) -> str:
    """File ``i`` at generation ``gen``: always contains the sentinel, grows and shrinks."""
    lines = "\n".join(f"- item {k}: {SENTINEL} file{i} gen{gen} alpha beta gamma"
                      for k in range(2 + (gen * 5 + i) % 30))
    return f"# Conc {i}\n\nGeneration g{gen}x{i} of file {i}.\n\n## List\n\n{lines}\n"


def _proc_script(body: str) -> str:
    return ("import os, sys, json, time, traceback\n"
            "sys.path.insert(0, sys.argv[1])\n"
            "from pathlib import Path\n"
            "from tests import reliability_helpers as H\n" + textwrap.dedent(body))


CONC_INGEST = _proc_script("""
    base, db, stop, log, tag = Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
    share = sys.argv[7]  # all | even | odd: which files this loop owns
    import random
    rng = random.Random(tag)
    svc = H.make_svc(db, time.time, **{"retention.max_revisions": 0})
    d = H.memdir(base)
    gen = 0
    out = open(log, "a")
    while not os.path.exists(stop):
        gen += 1
        i = rng.randrange(H.CONC_FILES)
        if share != "all" and i % 2 != (0 if share == "even" else 1):
            continue
        rel = f"c{i}.md"
        text = H.conc_text(i, gen * 10 + (1 if tag == "b" else 0))
        tmp = d / f".{rel}.{tag}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, d / rel)   # atomic save: readers never see half a file
        # give `memlens watch` a chance to ingest it first (two writers race)
        time.sleep(rng.choice((0.0, 0.0, 0.01, 0.05, 0.15, 0.25)))
        try:
            rep = svc.ingest(H.roots_of(base))
            for c in rep.report.failed:
                print(json.dumps({"kind": "failed", "path": c.path, "error": c.error}), file=out, flush=True)
        except Exception as exc:
            print(json.dumps({"kind": "error", "error": f"{type(exc).__name__}: {exc}",
                              "tb": traceback.format_exc()}), file=out, flush=True)
            continue
        from memlens.core.store.records import content_hash
        print(json.dumps({"kind": "wrote", "path": rel, "hash": content_hash(text)}), file=out, flush=True)
    svc.close()
""")

CONC_SEARCH = _proc_script("""
    db, stop, log = Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    svc = H.make_svc(db, time.time)
    out = open(log, "a")
    n = empty = 0
    modes = ("lexical", "hybrid", "vector")
    while not os.path.exists(stop):
        mode = modes[n % len(modes)]
        n += 1
        try:
            res = svc.search(H.SENTINEL, mode=mode, k=5)
            if not res.hits:
                empty += 1
                print(json.dumps({"kind": "empty", "mode": mode}), file=out, flush=True)
        except Exception as exc:
            print(json.dumps({"kind": "error", "mode": mode, "error": f"{type(exc).__name__}: {exc}",
                              "tb": traceback.format_exc()}), file=out, flush=True)
    print(json.dumps({"kind": "total", "searches": n, "empty": empty}), file=out, flush=True)
    svc.close()
""")

CONC_DOCTOR = _proc_script("""
    db, stop, log = Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    svc = H.make_svc(db, time.time)
    out = open(log, "a")
    n = 0
    while not os.path.exists(stop):
        n += 1
        try:
            _checks, problems = svc.doctor()
            for p in problems:
                print(json.dumps({"kind": "problem", "check": p.check, "message": p.message}),
                      file=out, flush=True)
        except Exception as exc:
            print(json.dumps({"kind": "error", "error": f"{type(exc).__name__}: {exc}",
                              "tb": traceback.format_exc()}), file=out, flush=True)
        time.sleep(0.05)
    print(json.dumps({"kind": "total", "doctor_runs": n}), file=out, flush=True)
    svc.close()
""")


@dataclass
class ConcurrencyResult:
    """Totals of one concurrency run."""

    seconds: float
    processes: list[str]
    writes: int = 0
    searches: int = 0
    empty: dict[str, int] = field(default_factory=dict)
    doctor_runs: int = 0
    doctor_problems: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    watch_events: int = 0
    transient: int = 0  # per-file "changed while being read/ingested" (expected, retried)

    @property
    def failures(self) -> int:
        return (len(self.errors) + len(self.lost) + sum(self.empty.values())
                + len(self.doctor_problems))


def _read_log(p: Path) -> list[dict[str, Any]]:
    if not p.exists():
        return []
    out = []
    for ln in p.read_text(encoding="utf-8", errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            out.append(json.loads(ln))
    return out


def run_concurrency(workdir: Path, seconds: float, *, use_watch: bool = True) -> ConcurrencyResult:
    """Ingest loop(s) + search loop + doctor loop (+ ``memlens watch``) on one database."""
    import subprocess
    import sys
    import time

    base = workdir / "claude"
    d = memdir(base)
    for i in range(CONC_FILES):
        write(d, f"c{i}.md", conc_text(i, 0))
    db = workdir / "conc.db"
    svc = make_svc(db, time.time)
    svc.ingest(roots_of(base))
    svc.close()
    stop = workdir / "STOP"
    logs = workdir / "logs"
    logs.mkdir(exist_ok=True)
    # The watcher (a CLI process) must embed exactly like make_svc (same fingerprint,
    # hence the same vector space) and keep every revision. With another embedder the
    # two writers would re-project each other's documents into different spaces.
    cfg = workdir / "memlens.toml"
    dim = EMBED_OPTS["dim"]
    cfg.write_text(f'[embedder]\nname = "hashing"\ndim = {dim}\n\n[retention]\nmax_revisions = 0\n'
                   '\n[watch]\nstable_ms = 30\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLENS_")}
    env["MEMLENS_CONFIG"] = str(cfg)
    procs: list[tuple[str, subprocess.Popen[str]]] = []

    def spawn(name: str, args: list[str]) -> None:
        procs.append((name, subprocess.Popen(args, cwd=REPO, env=env, text=True,
                                             stdout=open(logs / f"{name}.out", "w"),
                                             stderr=open(logs / f"{name}.err", "w"))))

    py = sys.executable
    watch_cmd = [py, "-m", "memlens.cli.main", "watch", str(base / "projects"), "--db", str(db),
                 "--debounce-ms", "20", "--reconcile-seconds", "2"]
    has_watch = use_watch and subprocess.run(
        [py, "-m", "memlens.cli.main", "watch", "--help"], cwd=REPO, env=env,
        capture_output=True, timeout=60).returncode == 0
    spawn("ingest-a", [py, "-c", CONC_INGEST, str(REPO), str(base), str(db), str(stop),
                       str(logs / "ingest-a.jsonl"), "a", "all" if has_watch else "even"])
    spawn("search", [py, "-c", CONC_SEARCH, str(REPO), str(db), str(stop),
                     str(logs / "search.jsonl")])
    spawn("doctor", [py, "-c", CONC_DOCTOR, str(REPO), str(db), str(stop),
                     str(logs / "doctor.jsonl")])
    if has_watch:
        spawn("watch", watch_cmd)
    else:
        spawn("ingest-b", [py, "-c", CONC_INGEST, str(REPO), str(base), str(db), str(stop),
                           str(logs / "ingest-b.jsonl"), "b", "odd"])
    time.sleep(seconds)
    stop.touch()
    res = ConcurrencyResult(seconds, [n for n, _ in procs])
    for name, p in procs:
        if name == "watch":
            p.send_signal(__import__("signal").SIGTERM)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            res.errors.append(f"{name}: did not stop")
    for name, _p in procs:
        err = (logs / f"{name}.err").read_text(errors="replace")
        for bad in ("Traceback",) + BAD_ERROR_WORDS:
            if bad in err:
                res.errors.append(f"{name} stderr has {bad!r}: {err[-1500:]}")
                break
    wrote: dict[str, list[str]] = {}
    for lg in ("ingest-a", "ingest-b"):
        for e in _read_log(logs / f"{lg}.jsonl"):
            if e["kind"] == "wrote":
                wrote.setdefault(e["path"], []).append(e["hash"])
                res.writes += 1
            elif e["kind"] == "failed" and "while being" in str(e.get("error")):
                res.transient += 1  # the other writer changed the file mid-read: retried
            elif e["kind"] in ("error", "failed"):
                res.errors.append(f"{lg}: {e.get('error')}")
    if has_watch:
        res.watch_events = sum(1 for ln in (logs / "watch.out").read_text(errors="replace")
                               .splitlines() if ln.strip())
    for e in _read_log(logs / "search.jsonl"):
        if e["kind"] == "empty":
            res.empty[e["mode"]] = res.empty.get(e["mode"], 0) + 1
        elif e["kind"] == "error":
            res.errors.append(f"search ({e['mode']}): {e['error']}")
        elif e["kind"] == "total":
            res.searches = int(e["searches"])
    for e in _read_log(logs / "doctor.jsonl"):
        if e["kind"] == "problem":
            res.doctor_problems.append(f"[{e['check']}] {e['message']}")
        elif e["kind"] == "error":
            res.errors.append(f"doctor: {e['error']}")
        elif e["kind"] == "total":
            res.doctor_runs = int(e["doctor_runs"])
    # final state: one more ingest, then every file's content is its current revision
    svc = make_svc(db, time.time)
    try:
        svc.ingest(roots_of(base))
        conn = svc.conn()
        from memlens.core.store.records import content_hash

        for i in range(CONC_FILES):
            rel = f"c{i}.md"
            text = (d / rel).read_text(encoding="utf-8")
            doc = dbm.row(conn, "SELECT d.id, r.content_hash FROM memory_documents d JOIN"
                          " memory_revisions r ON r.id=d.current_revision_id"
                          " WHERE d.logical_path=?", (rel,))
            if doc is None or doc["content_hash"] != content_hash(text):
                res.lost.append(f"{rel}: final content is not the current revision")
                continue
            hist = {r[0] for r in conn.execute(
                "SELECT content_hash FROM memory_revisions WHERE document_id=?", (doc["id"],))}
            # every version an ingest loop wrote AND ingested must be in the history
            # (the loop ingests right after each write, so none can be skipped)
            missing = [h for h in wrote.get(rel, []) if h not in hist]
            if missing:
                res.lost.append(f"{rel}: {len(missing)} written versions missing from history")
        res.lost += history_problems(conn)
        spaces = dbm.vector_spaces(conn)
        if len(spaces) != 1:
            res.errors.append(f"{len(spaces)} vector spaces: the processes embed differently")
        res.doctor_problems += [f"final: {p}" for p in problems_of(svc)]
    finally:
        svc.close()
    return res


# --------------------------------------------------------------------------- upstream canary


def fts5_auto_rollback_repro(workdir: Path, max_calls: int = 80) -> list[str]:
    """Plain APSW + SQLite, no memlens: the FTS5 behaviour behind BUG-1.

    An external-content FTS5 table fed by a trigger; an I/O error is injected at
    the Nth file call of one INSERT transaction (SQLite rolls it back by itself),
    then the SAME connection commits another INSERT. Returns the I/O calls after
    which ``integrity-check`` (rank 1) fails; empty once SQLite is fixed.
    """
    vfs = fault_vfs()
    bad: list[str] = []
    p = str(workdir / "fts5-canary.db")
    for n in range(1, max_calls):
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(p + suffix)
        c = apsw.Connection(p)
        c.execute("PRAGMA journal_mode=WAL")
        c.execute("CREATE TABLE n(id INTEGER PRIMARY KEY, t TEXT);"
                  "CREATE VIRTUAL TABLE f USING fts5(t, content='n', content_rowid='id');"
                  "CREATE TRIGGER ai AFTER INSERT ON n BEGIN"
                  " INSERT INTO f(rowid, t) VALUES (new.id, new.t); END;")
        for i in range(50):
            c.execute("INSERT INTO n(t) VALUES (?)", (f"word{i} " * 200,))
        c.close()
        c = apsw.Connection(p, vfs=vfs.vfs_name)
        vfs.plan.arm(n)
        failed = False
        try:
            c.execute("BEGIN IMMEDIATE")
            c.execute("INSERT INTO n(t) VALUES ('alpha beta gamma')")
            c.execute("COMMIT")
        except apsw.Error:
            failed = True
            if c.in_transaction:
                c.execute("ROLLBACK")
        finally:
            vfs.plan.disarm()
        if not failed:
            c.close()
            break
        fired = vfs.plan.fired
        c.execute("BEGIN IMMEDIATE")
        c.execute("INSERT INTO n(t) VALUES ('delta epsilon')")
        c.execute("COMMIT")
        c.close()
        c = apsw.Connection(p)
        try:
            c.execute("INSERT INTO f(f, rank) VALUES('integrity-check', 1)")
        except apsw.Error as exc:
            bad.append(f"{fired}: {exc}")
        c.close()
    return bad
