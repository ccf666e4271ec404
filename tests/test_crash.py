"""Crashes: a process that ingests and projects is SIGKILLed at random moments.

The child (``reliability_helpers.crash_child_main``) keeps changing a tree of ~40
memory files (updates, deletes, renames, re-creates), ingesting (sometimes with
the projection deferred) and projecting with a slightly slow embedder, so kills
land in every phase: mid-file-write, mid-transaction, between ingest and
projection, while documents are claimed ``processing``.

After each kill: doctor is clean, there are no orphan vectors, nodes, junction or
FTS rows, history is a strictly increasing seq per document, the dead process's
``processing`` claims are reclaimed, and re-running ingest + project converges to
the same present state as a clean ingest of the same files into a fresh database.
Default: 8 trials; ``--run-slow``: 50 trials with later kill points.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memlens.core.projection import queue as proj
from memlens.core.projection.vectors import vectors_waiting
from memlens.core.store import db as dbm
from tests import reliability_helpers as H


def _trials(tmp_path: Path, seeds: range, max_delay: float) -> list[H.CrashTrial]:
    out = []
    for seed in seeds:
        out.append(H.crash_trial(tmp_path / f"trial{seed}", seed, max_delay=max_delay))
    return out


def _report(trials: list[H.CrashTrial]) -> str:
    return "\n".join(f"seed {t.seed}: killed after {t.killed_after:.2f}s "
                     f"({t.generations} generations): {t.problems[:3]}"
                     for t in trials if t.problems)


def test_sigkill_at_random_moments(tmp_path: Path) -> None:
    """8 kills; each database recovers to exactly what a fresh ingest gives."""
    trials = _trials(tmp_path, range(8), max_delay=1.2)
    assert all(not t.problems for t in trials), _report(trials)
    assert all(t.reclaimed for t in trials)
    # the kills did land while the child was at work: documents claimed (stage 1) or
    # waiting for their vectors (stage 2, where the slow embedder spends its time)
    assert sum(1 for t in trials if t.processing_left or t.vectors_left) >= 1


@pytest.mark.slow
def test_sigkill_soak(tmp_path: Path) -> None:
    """50 kills, some of them after many generations."""
    trials = _trials(tmp_path, range(100, 150), max_delay=4.0)
    assert all(not t.problems for t in trials), _report(trials)
    assert sum(1 for t in trials if t.processing_left or t.vectors_left) >= 5


HANG_CHILD = textwrap.dedent("""
    import sys, time, threading
    sys.path.insert(0, sys.argv[3])
    from pathlib import Path
    from memlens.core import faults
    from tests import reliability_helpers as H

    def hang(step):  # stage 1: claimed, its nodes not swapped in yet
        if step == "projection.embed":
            print("claimed", flush=True)
            time.sleep(3600)

    faults.set_hook(hang)
    svc = H.make_svc(Path(sys.argv[2]), time.time, H.SlowEmbedder())
    svc.ingest(H.roots_of(Path(sys.argv[1])))
""")

HANG_VECTORS_CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[3])
    from pathlib import Path
    from tests import reliability_helpers as H

    class Hang(H.SlowEmbedder):  # stage 2: the second slice never ends
        calls = 0
        def embed_documents(self, texts):
            Hang.calls += 1
            if Hang.calls == 2:
                print("embedding", flush=True)
                time.sleep(3600)
            return super().embed_documents(texts)

    svc = H.make_svc(Path(sys.argv[2]), time.time, Hang())
    svc.ingest(H.roots_of(Path(sys.argv[1])))
""")


def test_dead_claim_is_reclaimed(tmp_path: Path) -> None:
    """A document left ``processing`` by a killed process is claimed again."""
    base = tmp_path / "claude"
    d = H.memdir(base)
    H.write(d, "a.md", "# A\n\nzebraprobe claimed then killed.\n")
    db = tmp_path / "m.db"
    child = subprocess.Popen([sys.executable, "-c", HANG_CHILD, str(base), str(db), str(H.REPO)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=H.REPO)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "claimed", child.stderr.read() if \
            child.stderr else ""
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=30)
    svc = H.make_svc(db, H.ManualClock())
    try:
        row = dbm.row(svc.conn(), "SELECT projection_status s, projection_owner o"
                      " FROM memory_documents WHERE logical_path='a.md'")
        assert row is not None and row["s"] == "processing"
        assert row["o"].endswith(f":{child.pid}")
        assert proj.pending_count(svc.conn())["processing"] == 1
        rep = svc.project()  # not forced: a dead owner's claim is free
        assert [o.result for o in rep.outcomes] == ["ready"]
        assert [h.path for h in svc.search("zebraprobe", mode="lexical").hits] == ["a.md"]
        assert H.problems_of(svc) == []
    finally:
        svc.close()


def test_sigkill_during_the_vector_stage_resumes(tmp_path: Path) -> None:
    """SIGKILL while stage 2 embeds (issue 37): every document is searchable by its words,
    doctor is clean, the slice that was written stays, and the next run embeds only the
    rest (it resumes: the vectors written before the kill are not computed again)."""
    base = tmp_path / "claude"
    d = H.memdir(base)
    # 40 one-chunk documents: more than one slice of stage 2 (VECTOR_SLICE_TEXTS = 32)
    for i in range(40):
        H.write(d, f"n{i:02d}.md", f"# Note {i}\n\nzebraprobe note {i} about kites.\n")
    db = tmp_path / "m.db"
    child = subprocess.Popen([sys.executable, "-c", HANG_VECTORS_CHILD, str(base), str(db),
                              str(H.REPO)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=H.REPO)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "embedding", child.stderr.read() if \
            child.stderr else ""
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=30)

    class Counting(H.SlowEmbedder):
        texts = 0

        def embed_documents(self, texts: list[str]) -> object:
            Counting.texts += len(texts)
            return super().embed_documents(texts)

    svc = H.make_svc(db, H.ManualClock(), Counting(0.0))
    try:
        conn = svc.conn()
        assert proj.pending_count(conn)["ready"] == 40  # stage 1 was complete
        done = int(dbm.scalar(conn, "SELECT SUM(vector_done) FROM memory_documents") or 0)
        total = int(dbm.scalar(conn, "SELECT SUM(vector_total) FROM memory_documents") or 0)
        assert 0 < done < total  # the first slice was committed, the second was not
        assert vectors_waiting(conn) > 0
        assert H.problems_of(svc) == []  # waiting for vectors is normal
        assert len(svc.search("zebraprobe", mode="lexical", k=50).hits) == 40
        notes = svc.search("zebraprobe kites").notes
        assert any("wait for their vectors" in n for n in notes), notes
        rep = svc.project()
        assert rep.vectors is not None and rep.vectors.error is None
        assert Counting.texts == total - done  # resumed: nothing embedded twice
        assert vectors_waiting(conn) == 0
        assert int(dbm.scalar(conn, "SELECT SUM(vector_done) FROM memory_documents")) == total
        assert not any("wait for their vectors" in n
                       for n in svc.search("zebraprobe kites").notes)
        assert H.problems_of(svc) == []
    finally:
        svc.close()


def test_live_claim_is_not_stolen(tmp_path: Path) -> None:
    """A claim whose owner process is alive is left alone (no double projection)."""
    base = tmp_path / "claude"
    H.write(H.memdir(base), "a.md", "# A\n\nzebraprobe\n")
    svc = H.make_svc(tmp_path / "m.db", H.ManualClock())
    try:
        svc.ingest(H.roots_of(base), project=False)
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            owner = f"{proj.process_owner().rpartition(':')[0]}:{sleeper.pid}"
            got = proj.claim(svc.conn(), svc.clock(), owner)
            assert len(got) == 1
            assert svc.project().outcomes == []  # alive: not ours to take
            sleeper.kill()
            sleeper.wait()
            assert [o.result for o in svc.project().outcomes] == ["ready"]
        finally:
            if sleeper.poll() is None:
                sleeper.kill()
                sleeper.wait()
    finally:
        svc.close()
