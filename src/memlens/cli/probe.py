"""``memlens doctor --probe``: an end-to-end synthetic probe, through the door only.

A note is written into a temporary repository folder, ingested, found by its words and
by meaning, edited (history shows the update), then deleted (tombstoned, gone from
search and from the listing), each step timed.

Where its rows live: in a separate, temporary database file (deleted afterwards) opened
with the same settings and embedder as the real one, not in the real database. So the
probe's rows can never appear in a search, a listing, the history or the search
history of the real database, with no filter to keep in every reader (a reserved
repository inside the real file would need one in each of them, and a crash in the
middle would leave rows behind). What the real file itself must do (open, take a
write) is the probe's first step, ``database``, checked without writing anything.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlens.core.service import MemoryService, explain_storage_error, load_settings
from memlens.core.types import DatabaseError, StorageError

REPOSITORY = "-memlens-probe"
NOTE = "probe.md"
WORD, EDITED = "zqxprobeheliotrope", "zqxprobemarigold"
TEXT = f"# Probe\n\nThe {WORD} rollout checks that memlens stores and finds a note.\n"
EDIT = TEXT + f"\n## Later\n\nThe {EDITED} follow-up was added by an edit.\n"


@dataclass
class Step:
    """One timed step of the probe."""

    name: str
    ok: bool
    ms: float
    detail: str

    def as_json(self) -> dict[str, Any]:
        """``{"name","ok","ms","detail"}``."""
        return {"name": self.name, "ok": self.ok, "ms": round(self.ms, 1), "detail": self.detail}


@dataclass
class Probe:
    """The steps run, in order; a step after a failed one of the chain is skipped."""

    embedder: str = ""
    steps: list[Step] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.steps)

    @property
    def failed(self) -> list[Step]:
        """The steps that failed (not those skipped after them)."""
        return [s for s in self.steps if not s.ok and not s.detail.startswith("skipped:")]

    def as_json(self) -> dict[str, Any]:
        """``{"ok","embedder","ms","steps":[...]}``."""
        return {"ok": self.ok, "embedder": self.embedder,
                "ms": round(sum(s.ms for s in self.steps), 1),
                "steps": [s.as_json() for s in self.steps]}

    def run(self, name: str, fn: Callable[[], str]) -> bool:
        t0 = time.perf_counter()
        try:
            detail, ok = fn(), True
        except (ProbeFailed, DatabaseError) as exc:
            detail, ok = str(exc), False
        except StorageError as exc:
            detail, ok = explain_storage_error(exc), False
        except Exception as exc:  # the probe reports, it never raises
            detail, ok = f"{type(exc).__name__}: {exc}", False
        self.steps.append(Step(name, ok, (time.perf_counter() - t0) * 1000,
                               " ".join(detail.split())))
        return ok


class ProbeFailed(Exception):
    """A step found something wrong (its message is the step's line)."""


def _expect(cond: bool, message: str) -> None:
    if not cond:
        raise ProbeFailed(message)


def run_probe(real: MemoryService, config: Path | None) -> Probe:
    """The probe against ``real``'s settings; ``real`` is only opened and write-locked."""
    probe = Probe()
    probe.run("database", lambda: _database(real))
    with tempfile.TemporaryDirectory(prefix="memlens-probe-") as tmp:
        root = Path(tmp)
        settings = load_settings(config, overrides={"db": str(root / "probe.db"),
                                                    "roots": [str(root / "projects")]})
        svc = MemoryService(settings, create=True)
        try:
            _chain(probe, svc, root)
        finally:
            svc.close()
    return probe


def _database(real: MemoryService) -> str:
    real.check_writable()
    return f"{real.db_path} opens and takes a write lock (nothing written)"


def _chain(probe: Probe, svc: MemoryService, root: Path) -> None:
    folder = root / "projects" / REPOSITORY / "memory"
    note = folder / NOTE

    def embedder() -> str:
        emb = svc.embedder
        probe.embedder = emb.fingerprint()
        vec = emb.embed_query("probe")
        _expect(len(vec) == emb.dim, f"{emb.name}: a {len(vec)}-number vector, not {emb.dim}")
        return probe.embedder

    def write() -> str:
        folder.mkdir(parents=True)
        note.write_text(TEXT, encoding="utf-8")
        return f"{REPOSITORY}/{NOTE} in a temporary folder"

    def ingest() -> str:
        out = svc.start_up(svc.resolve_roots([root / "projects"]))
        rep = out.as_json()
        _expect(rep["created"] == 1 and rep["projection"]["ready"] == 1,
                f"ingest: {rep['created']} created, projection {rep['projection']}")
        vectors = rep.get("vectors") or {}
        _expect(not vectors.get("error"), f"vectors failed: {vectors.get('error')}")
        return "1 created, searchable, vectors written"

    def lexical() -> str:
        res = svc.search(WORD, mode="lexical", k=3, all_projects=True)
        _expect([h.path for h in res.hits] == [NOTE] and res.matches == 1,
                f"a lexical search for its word found {[h.path for h in res.hits]}")
        return "found by its words"

    def vector() -> str:
        res = svc.search("checks that memlens stores and finds a note", mode="vector", k=3,
                         all_projects=True)
        _expect(bool(res.hits) and res.hits[0].path == NOTE and not res.notes,
                f"a vector search found {[h.path for h in res.hits]} {res.notes}")
        return f"found by meaning (score {res.hits[0].score:.2f})"

    def edit() -> str:
        note.write_text(EDIT, encoding="utf-8")
        out = svc.start_up(svc.resolve_roots([root / "projects"]))
        _expect(out.as_json()["updated"] == 1, "the edit was not stored as an update")
        doc = svc.locate(REPOSITORY, NOTE)
        revs = svc.revisions(doc.id) if doc is not None else []
        _expect([r.change_kind for r in revs] == ["update", "create"],
                f"history shows {[r.change_kind for r in revs]}")
        res = svc.search(EDITED, mode="lexical", k=3, all_projects=True)
        _expect([h.path for h in res.hits] == [NOTE], "the edited words are not found")
        return "history: #2 update, #1 create; the new words are found"

    def delete() -> str:
        note.unlink()
        out = svc.start_up(svc.resolve_roots([root / "projects"]))
        _expect(out.as_json()["deleted"] == 1, "the deletion was not stored")
        doc = svc.locate(REPOSITORY, NOTE)
        _expect(doc is not None and doc.tombstoned, "the note is not tombstoned")
        for word in (WORD, EDITED):
            _expect(not svc.search(word, mode="lexical", all_projects=True).hits,
                    f"a deleted note is still found by {word!r}")
        _expect(not svc.list_documents(), "a deleted note is still listed")
        return "tombstoned, gone from search and from the listing"

    for name, fn in (("embedder", embedder), ("write", write), ("ingest", ingest),
                     ("search_lexical", lexical), ("search_vector", vector), ("edit", edit),
                     ("delete", delete)):
        if not probe.run(name, fn):
            for later in ("write", "ingest", "search_lexical", "search_vector", "edit",
                          "delete"):
                if later not in {s.name for s in probe.steps}:
                    probe.steps.append(Step(later, False, 0.0, f"skipped: {name} failed"))
            return
