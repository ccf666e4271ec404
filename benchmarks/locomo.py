"""LoCoMo retrieval benchmark (issue 46): recall@k and MRR of ``memlens search`` on conversations.

Usage::

    uv run python benchmarks/locomo.py DATA_DIR [--subset all|q300] [--seed 42]
        [--conversations 0-4] [--modes lexical,vector,hybrid] [--fusions adaptive,rrf,...]
        [--embedder minilm] [--rebuild] [--json] [--per-question]

``DATA_DIR`` holds the public data, fetched by you and never committed (CC BY-NC 4.0):
``locomo10.json`` (``snap-research/LoCoMo``, ``data/locomo10.json``) and
``audit/errors_conv_0.json`` … ``errors_conv_9.json`` (``dial481/locomo-audit``). The
database is built once and cached in ``DATA_DIR/cache/`` under a key made of the corpus
hash, the embedder and the source of the code that builds the index (chunking, ingest,
projection, store, redaction); a change of the search code reuses it.

The method is basic-memory's (``basicmachines-co/basic-memory``, ``benchmarks/src/
basic_memory_benchmarks/``: ``converters/locomo_to_corpus.py``, ``scoring/retrieval.py``,
``datasets/locomo_audit.py``), written here again:

* one Markdown note per session (272 notes, all ten conversations in one memory folder
  ``<tmp>/-locomo/memory/``, ingested by the door's start-up flow like any Claude Code
  project), titled with the session's date, one bullet per turn ``- **Speaker:** text``;
* ground truth of a question: the session notes named by its evidence ids
  (``D<session>:<turn>``), after the answer-key corrections of the audit (matched by
  question id and cross-checked by question text); adversarial questions (category 5)
  are left out: 1,540 questions;
* hits: ``MemoryService.search(query, mode=..., k=10)``, the call ``memlens search``
  makes, with ``[search] fusion`` set as ``--fusion`` sets it. A hit is the note its
  chunk belongs to. **As returned**: the ten hits in order, so two chunks of one note
  (the engine keeps at most two per note) take two places. **Collapsed**: the same ten
  hits reduced to distinct notes (first place kept) before the cut at k;
* recall@k = share of the ground-truth notes among the first k hits; MRR = 1 / rank of
  the first hit that is a ground-truth note within the ten (0 if none). A question with
  no usable evidence id keeps recall 0 (as in basic-memory).

Subsets: ``q300`` is stratified by LoCoMo category in proportion, each category's count
being round-half-up(n x 300 / 1,540) = 55 / 63 / 19 / 164 (categories 1/2/3/4: 301
questions), drawn with ``random.Random(seed)`` from the questions sorted by id.
``--conversations 0-4`` ("choose") and ``5-9`` ("report") split by conversation, applied
after the subset is drawn from all ten.

LoCoMo's own category ids: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
5 adversarial. basic-memory names them single_hop, multi_hop, temporal, open_domain,
adversarial (shifted: its "multi_hop" is LoCoMo's temporal set).

Importable (``sys.path.insert(0, "benchmarks"); import locomo``)::

    corpus = locomo.load_corpus(Path(DATA_DIR))
    db, _ = locomo.cached_database(corpus, Path(DATA_DIR))
    choose = locomo.select(corpus, "all", 42, locomo.parse_conversations("0-4"))
    r = locomo.evaluate(db, choose, "hybrid", "adaptive", overrides={"search.lexical_weight": 0.5})
    r["as_returned"]["all"]["recall@5"], r["collapsed"]["by_category"]["3"]["mrr"]

(``evaluate`` also takes an open ``MemoryService``; with a fusion or overrides it opens a
second one on the same database that shares its embedder.)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlens.core.service import MemoryService, load_settings
from memlens.core.types import FUSIONS, roots_for_path

REPOSITORY = "-locomo"
CUTOFF = 10  # hits asked of the search (top 10), as basic-memory scores them
KS = (1, 3, 5, 10)
Q300 = 300
DEFAULT_SEED = 42
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
BM_CATEGORY_NAMES = {1: "single_hop", 2: "multi_hop", 3: "temporal", 4: "open_domain", 5: "adversarial"}
EXPECTED_QUESTIONS = 1540
EXPECTED_NOTES = 272
INSTALL_KEY = b"locomo-benchmark-install-key-046"  # fixed, so two builds store the same bytes
INDEX_CODE = ("chunking", "ingest", "projection", "store", "redact")  # core packages that shape the index
_EVIDENCE = re.compile(r"^D(\d+):")
_AUDIT_KEYS = {"question_id", "question", "error_type", "correct_answer"}


class LocomoError(Exception):
    """Bad input: missing or malformed data files, an audit that does not match."""


@dataclass(frozen=True)
class Question:
    """One non-adversarial question and its ground-truth notes."""

    id: str  # the audit's id: locomo_<conversation>_qa<index>
    conversation: int
    index: int
    question: str
    category: int  # LoCoMo's id (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop)
    truth: tuple[str, ...]  # note names (file stems), sorted
    answer: str
    corrected: bool = False


@dataclass
class Corpus:
    """The converted notes (name -> Markdown) and the questions."""

    notes: dict[str, str]
    questions: list[Question]
    adversarial: int = 0
    corrected: int = 0
    no_truth: int = 0
    conversations: int = 0

    def sha256(self) -> str:
        """Hash of every note (name and text), in name order."""
        h = hashlib.sha256()
        for name in sorted(self.notes):
            h.update(name.encode() + b"\0" + self.notes[name].encode() + b"\0")
        return h.hexdigest()

    def write(self, projects: Path) -> Path:
        """Write the notes as ``projects/-locomo/memory/<name>.md``; returns the memory folder."""
        mem = projects / REPOSITORY / "memory"
        mem.mkdir(parents=True, exist_ok=True)
        for name, text in self.notes.items():
            (mem / f"{name}.md").write_text(text, encoding="utf-8")
        return mem


def note_name(conversation: int, session: int) -> str:
    """``locomo-c00-s01``: the note of a session (its file stem)."""
    return f"locomo-c{conversation:02d}-s{session:02d}"


def _sessions(blob: Mapping[str, Any]) -> list[int]:
    return sorted(int(k.split("_")[1]) for k, v in blob.items()
                  if re.fullmatch(r"session_\d+", k) and isinstance(v, list))


def session_note(conversation: int, session: int, date: str, turns: Iterable[Mapping[str, Any]]) -> str:
    """One session as a Markdown note: front matter, dated title, one bullet per turn."""
    name = note_name(conversation, session)
    lines = ["---", f"title: {name} ({date})" if date else f"title: {name}", "type: note",
             f"conversation: locomo-c{conversation:02d}", f"session: {session}"]
    if date:
        lines.append(f"date: {date}")
    lines += ["---", "", f"# Chat session at {date}" if date else f"# {name}", "", "## Conversation"]
    for turn in turns:
        text = str(turn.get("text", "")).strip()
        if text:
            lines.append(f"- **{turn.get('speaker', 'unknown')}:** {text}")
    return "\n".join(lines) + "\n"


def load_corrections(audit_dir: Path) -> dict[str, dict[str, Any]]:
    """The audit's corrections (``errors_conv_*.json``) keyed by question id.

    Raises:
        LocomoError: no file, a file that is not a list of records with the audit's keys,
            or one id corrected twice.
    """
    files = sorted(audit_dir.glob("errors_conv_*.json"))
    if not files:
        raise LocomoError(f"{audit_dir}: no audit/errors_conv_*.json (fetch dial481/locomo-audit)")
    out: dict[str, dict[str, Any]] = {}
    for f in files:
        try:
            records = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise LocomoError(f"{f}: cannot read ({exc})") from None
        if not isinstance(records, list):
            raise LocomoError(f"{f}: not a list of corrections")
        for r in records:
            if not isinstance(r, dict) or not _AUDIT_KEYS <= set(r):
                raise LocomoError(f"{f}: a correction lacks {sorted(_AUDIT_KEYS)}")
            qid = str(r["question_id"])
            if qid in out:
                raise LocomoError(f"{f}: {qid} corrected twice")
            out[qid] = r
    return out


def convert(dataset: Sequence[Mapping[str, Any]], corrections: Mapping[str, Mapping[str, Any]]) -> Corpus:
    """The notes and non-adversarial questions of ``dataset`` with ``corrections`` applied.

    Raises:
        LocomoError: a correction whose question text differs from the dataset's.
    """
    corpus = Corpus(notes={}, questions=[], conversations=len(dataset))
    for ci, conv in enumerate(dataset):
        blob = conv.get("conversation", {})
        known: set[int] = set()
        for s in _sessions(blob):
            date = str(blob.get(f"session_{s}_date_time", "")).strip()
            corpus.notes[note_name(ci, s)] = session_note(ci, s, date, blob[f"session_{s}"])
            known.add(s)
        for qi, qa in enumerate(conv.get("qa", [])):
            qid = f"locomo_{ci}_qa{qi}"
            category = int(qa.get("category", 0))
            text = str(qa.get("question", "")).strip()
            answer = qa.get("answer", qa.get("adversarial_answer", ""))
            evidence = list(qa.get("evidence") or [])
            fix = corrections.get(qid)
            if fix is not None:
                if str(fix.get("question", "")).strip() != text:
                    raise LocomoError(f"audit {qid} is about {fix.get('question')!r}, "
                                      f"the dataset asks {text!r}")
                answer = fix["correct_answer"]
                evidence = list(fix.get("correct_evidence") or evidence)
            if category == 5:
                corpus.adversarial += 1
                continue
            truth = sorted({note_name(ci, int(m.group(1))) for e in evidence
                            if isinstance(e, str) and (m := _EVIDENCE.match(e))
                            and int(m.group(1)) in known})
            corpus.corrected += fix is not None
            corpus.no_truth += not truth
            corpus.questions.append(Question(id=qid, conversation=ci, index=qi, question=text,
                                             category=category, truth=tuple(truth),
                                             answer=str(answer), corrected=fix is not None))
    return corpus


def load_corpus(data_dir: Path) -> Corpus:
    """Read ``data_dir/locomo10.json`` and ``data_dir/audit/`` and convert them.

    Raises:
        LocomoError: a missing or malformed file.
    """
    path = data_dir / "locomo10.json"
    try:
        dataset = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LocomoError(f"{path}: not found (fetch snap-research/LoCoMo data/locomo10.json)") from None
    except (OSError, ValueError) as exc:
        raise LocomoError(f"{path}: cannot read ({exc})") from None
    if not isinstance(dataset, list):
        raise LocomoError(f"{path}: not a list of conversations")
    return convert(dataset, load_corrections(data_dir / "audit"))


def stratified(questions: Sequence[Question], size: int = Q300, seed: int = DEFAULT_SEED
               ) -> list[Question]:
    """A subset stratified by category in proportion: round-half-up(n x size / total) per
    category, drawn with ``random.Random(seed)`` from each category sorted by id."""
    rng = random.Random(seed)
    by_cat: dict[int, list[Question]] = {}
    for q in sorted(questions, key=lambda q: (q.conversation, q.index)):
        by_cat.setdefault(q.category, []).append(q)
    out: list[Question] = []
    for cat in sorted(by_cat):
        members = by_cat[cat]
        take = min(len(members), int(len(members) * size / len(questions) + 0.5))
        out.extend(rng.sample(members, take))
    return sorted(out, key=lambda q: (q.conversation, q.index))


def parse_conversations(spec: str) -> set[int]:
    """``0-4`` or ``0,2,5-7`` as a set of conversation indexes.

    Raises:
        LocomoError: not of that form.
    """
    out: set[int] = set()
    for part in spec.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            raise LocomoError(f"--conversations {spec!r}: use a range like 0-4 or a list like 0,2,5")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise LocomoError(f"--conversations {spec!r}: {lo}-{hi} is empty")
        out.update(range(lo, hi + 1))
    return out


# -- scoring ------------------------------------------------------------------------------

def collapse(hits: Sequence[str]) -> list[str]:
    """Distinct notes in order of first appearance."""
    return list(dict.fromkeys(hits))


def recall_at(hits: Sequence[str], truth: Iterable[str], k: int) -> float:
    """Share of the ground-truth notes among the first ``k`` hits (0 without ground truth)."""
    want = set(truth)
    return len(want & set(hits[:k])) / len(want) if want else 0.0


def reciprocal_rank(hits: Sequence[str], truth: Iterable[str], cutoff: int = CUTOFF) -> float:
    """1 / rank of the first hit that is a ground-truth note within ``cutoff`` (0 if none)."""
    want = set(truth)
    for i, h in enumerate(hits[:cutoff], start=1):
        if h in want:
            return 1.0 / i
    return 0.0


def score_hits(hits: Sequence[str], truth: Iterable[str], ks: Sequence[int] = KS) -> dict[str, float]:
    """``recall@k`` for each k and ``mrr`` of one hit list (note names in order)."""
    t = tuple(truth)
    out = {f"recall@{k}": recall_at(hits, t, k) for k in ks}
    out["mrr"] = reciprocal_rank(hits, t)
    return out


def _mean(rows: Sequence[Mapping[str, float]], keys: Sequence[str]) -> dict[str, float]:
    return {k: round(sum(r[k] for r in rows) / len(rows), 4) if rows else 0.0 for k in keys}


def aggregate(per: Sequence[Mapping[str, Any]], view: str, ks: Sequence[int] = KS) -> dict[str, Any]:
    """Means of ``view`` (``as_returned`` or ``collapsed``) over all and per category."""
    keys = [*(f"recall@{k}" for k in ks), "mrr"]
    out: dict[str, Any] = {"all": {"n": len(per), **_mean([p[view] for p in per], keys)},
                           "by_category": {}}
    for cat in sorted({int(p["category"]) for p in per}):
        rows = [p[view] for p in per if p["category"] == cat]
        out["by_category"][str(cat)] = {"name": CATEGORY_NAMES.get(cat, f"cat{cat}"), "n": len(rows),
                                        **_mean(rows, keys)}
    return out


# -- the database and the door -------------------------------------------------------------

def _code_hash() -> str:
    import memlens.core.service as door

    core = Path(door.__file__).resolve().parent
    h = hashlib.sha256()
    for pkg in INDEX_CODE:
        for f in sorted((core / pkg).rglob("*.py")):
            h.update(f.relative_to(core).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def _settings_overrides(db: Path, embedder: str, fusion: str | None,
                        overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    ov: dict[str, Any] = {"db": str(db), "embedder.name": embedder, "search.history": 0,
                          **(overrides or {})}
    if fusion is not None:
        ov["search.fusion"] = fusion
    return ov


def open_service(db: Path, *, embedder: str = "minilm", fusion: str | None = None,
                 overrides: Mapping[str, Any] | None = None, share_embedder: MemoryService | None = None,
                 create: bool = False) -> MemoryService:
    """A ``MemoryService`` on ``db`` with no config file or environment, ``[search] fusion``
    = ``fusion`` (``None``: the default, ``auto``) and further dotted ``overrides``;
    ``share_embedder`` lends its loaded embedder (no second model load)."""
    settings = load_settings(db.parent / "no-config.toml", env={},
                             overrides=_settings_overrides(db, embedder, fusion, overrides))
    return MemoryService(settings, embedder=share_embedder.embedder if share_embedder else None,
                         install_key=INSTALL_KEY, create=create)


def build_database(corpus: Corpus, db: Path, *, embedder: str = "minilm") -> dict[str, Any]:
    """Write the notes to a temporary projects folder and run the door's start-up flow
    into a fresh ``db``; returns counts and timings (wall and CPU)."""
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    db.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="memlens-locomo-") as tmp:
        corpus.write(Path(tmp))
        svc = open_service(db, embedder=embedder, create=True)
        try:
            w0, c0 = time.perf_counter(), time.process_time()
            outcome = svc.start_up(roots_for_path(Path(tmp)))
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            stats = svc.statistics()
        finally:
            svc.close()
    failed = [f"{c.path}: {c.error}" for c in outcome.report.failed]
    if failed or stats.documents != len(corpus.notes) or stats.vectors_waiting or stats.queue_pending:
        raise LocomoError(f"build of {db} incomplete: {stats.documents}/{len(corpus.notes)} notes, "
                          f"{stats.vectors_waiting} waiting for vectors, failed: {failed[:3]}")
    return {"documents": stats.documents, "chunks": stats.chunks, "embedder": stats.embedder,
            "wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2)}


def cached_database(corpus: Corpus, data_dir: Path, *, embedder: str = "minilm",
                    rebuild: bool = False) -> tuple[Path, dict[str, Any]]:
    """The database of ``corpus`` in ``data_dir/cache/``, built when its key (corpus hash,
    embedder, index code) has none yet or ``rebuild``; returns its path and build facts."""
    key = hashlib.sha256(f"{corpus.sha256()}|{embedder}|{_code_hash()}".encode()).hexdigest()[:16]
    db = data_dir / "cache" / f"locomo-{embedder}-{key}.db"
    marker = db.with_suffix(".json")
    if not rebuild and db.exists() and marker.exists():
        facts: dict[str, Any] = json.loads(marker.read_text())
        return db, {**facts, "cached": True}
    # Built under a name of this process, then renamed: two runs building at once (the
    # fusion work and a report, say) each finish their own file, and a reader never opens
    # a half-built one.
    building = db.with_name(f"{db.stem}.{os.getpid()}.building.db")
    facts = {"corpus_sha256": corpus.sha256(), "key": key,
             **build_database(corpus, building, embedder=embedder)}
    if any(Path(f"{building}{s}").exists() for s in ("-wal", "-shm")):
        raise LocomoError(f"{building}: its WAL was left after the build; not renamed")
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    os.replace(building, db)
    tmp_marker = marker.with_name(f"{marker.name}.{os.getpid()}")
    tmp_marker.write_text(json.dumps(facts, indent=1))
    os.replace(tmp_marker, marker)
    return db, {**facts, "cached": False}


def hit_notes(svc: MemoryService, query: str, mode: str, k: int = CUTOFF) -> list[str]:
    """The note (file stem) of each hit of ``svc.search(query, mode=mode, k=k)``, in order."""
    return _search(svc, query, mode, k)[0]


def _search(svc: MemoryService, query: str, mode: str, k: int) -> tuple[list[str], str | None]:
    res = svc.search(query, mode=mode, k=k)
    method = res.fusion.get("method") if res.fusion else None
    return [Path(h.path).stem for h in res.hits], None if method is None else str(method)


def evaluate(target: MemoryService | Path, questions: Sequence[Question], mode: str = "hybrid",
             fusion: str | None = None, k: int = CUTOFF, *, embedder: str = "minilm",
             overrides: Mapping[str, Any] | None = None, per_question: bool = False) -> dict[str, Any]:
    """Recall@k and MRR of ``mode`` (and, for hybrid, ``fusion``) over ``questions``.

    ``target`` is a database path (a service is opened on it with ``embedder``) or a
    ``MemoryService``; with ``fusion`` or ``overrides`` a second service is opened on the
    same database, sharing the first one's embedder. ``k`` hits are asked of each search.

    Returns:
        ``mode``, ``fusion`` (``None`` = the configured default), ``fusion_used`` (the
        method each search reports, with its count of questions), ``n``, ``as_returned``
        and ``collapsed`` (each ``all`` and ``by_category``: ``n``, ``recall@1/3/5/10``,
        ``mrr``), ``wall_seconds``, ``cpu_seconds``, and with ``per_question`` the
        ``questions`` (id, category, truth, hits, both views' scores).
    """
    own: MemoryService | None = None
    if isinstance(target, MemoryService):
        svc = target
        if fusion is not None or overrides:
            base = {k_: v for k_, v in target.settings.values.items()
                    if k_.startswith("search.") and v is not None}
            own = svc = open_service(target.db_path, embedder=target.settings.embedder.name,
                                     fusion=fusion, overrides={**base, **(overrides or {})},
                                     share_embedder=target)
    else:
        own = svc = open_service(Path(target), embedder=embedder, fusion=fusion, overrides=overrides)
    per: list[dict[str, Any]] = []
    used: dict[str | None, int] = {}  # fusion method the search reports -> questions
    try:
        w0, c0 = time.perf_counter(), time.process_time()
        for q in questions:
            hits, method = _search(svc, q.question, mode, k)
            used[method] = used.get(method, 0) + 1
            per.append({"id": q.id, "category": q.category, "question": q.question,
                        "truth": list(q.truth), "hits": hits,
                        "as_returned": score_hits(hits, q.truth),
                        "collapsed": score_hits(collapse(hits), q.truth)})
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    finally:
        if own is not None:
            own.close()
    out: dict[str, Any] = {"mode": mode, "fusion": fusion if mode == "hybrid" else None,
                           "fusion_used": {str(m): n for m, n in used.items()},
                           "n": len(per), "as_returned": aggregate(per, "as_returned"),
                           "collapsed": aggregate(per, "collapsed"),
                           "wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2)}
    if per_question:
        out["questions"] = per
    return out


# -- the command ----------------------------------------------------------------------------

def configurations(modes: Sequence[str], fusions: Sequence[str]) -> list[tuple[str, str | None]]:
    """(mode, fusion) pairs to run: each mode (hybrid with the default fusion), then hybrid
    with each of ``fusions``.

    Raises:
        LocomoError: an unknown mode or fusion.
    """
    out: list[tuple[str, str | None]] = []
    for m in modes:
        if m not in ("lexical", "vector", "hybrid"):
            raise LocomoError(f"unknown mode {m!r}; use lexical, vector, hybrid")
        out.append((m, None))
    for f in fusions:
        if f not in ("auto", *FUSIONS):
            raise LocomoError(f"unknown fusion {f!r}; use {', '.join(('auto', *FUSIONS))}")
        out.append(("hybrid", f))
    return out


def select(corpus: Corpus, subset: str, seed: int, conversations: set[int] | None) -> list[Question]:
    """The questions of ``subset`` (``all`` or ``q300``), then of ``conversations``."""
    qs = corpus.questions if subset == "all" else stratified(corpus.questions, Q300, seed)
    return [q for q in qs if conversations is None or q.conversation in conversations]


def _label(r: Mapping[str, Any]) -> str:
    return r["mode"] if r["fusion"] is None else f"hybrid --fusion {r['fusion']}"


def table(results: Sequence[Mapping[str, Any]], view: str) -> str:
    """A Markdown table of ``view``: recall@5 / MRR over all and per category, times."""
    cats = sorted({c for r in results for c in r[view]["by_category"]}, key=int)
    first = results[0][view]["by_category"] if results else {}
    head = ["config", "R@5 all", "MRR all", "R@10 all",
            *(f"R@5 c{c} {first[c]['name']} ({first[c]['n']})" for c in cats), "wall s", "CPU s"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for r in results:
        a, bc = r[view]["all"], r[view]["by_category"]
        cells = [_label(r), f"{a['recall@5']:.3f}", f"{a['mrr']:.3f}", f"{a['recall@10']:.3f}",
                 *(f"{bc[c]['recall@5']:.3f}" for c in cats), f"{r['wall_seconds']:.1f}",
                 f"{r['cpu_seconds']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; exit 0, or 2 with one line on bad input."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("data_dir", type=Path, help="holds locomo10.json and audit/errors_conv_*.json")
    ap.add_argument("--subset", choices=("all", "q300"), default="all")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="q300 draw (default 42)")
    ap.add_argument("--conversations", help="e.g. 0-4 (choose) or 5-9 (report); default all ten")
    ap.add_argument("--modes", default="lexical,vector,hybrid")
    ap.add_argument("--fusions", default=",".join(FUSIONS),
                    help=f"hybrid runs with --fusion each of these (default {','.join(FUSIONS)};"
                    " empty for none)")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--rebuild", action="store_true", help="build the cached database again")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--per-question", action="store_true", help="with --json: every question's hits")
    a = ap.parse_args(argv)
    try:
        corpus = load_corpus(a.data_dir)
        convs = parse_conversations(a.conversations) if a.conversations else None
        configs = configurations([m for m in a.modes.split(",") if m],
                                 [f for f in a.fusions.split(",") if f])
        questions = select(corpus, a.subset, a.seed, convs)
        if not questions:
            raise LocomoError("no question selected")
        log = sys.stderr if a.json else sys.stdout
        cats = sorted({q.category for q in questions})
        counts = {str(c): sum(q.category == c for q in questions) for c in cats}
        print(f"LoCoMo: {len(corpus.notes)} notes, {len(corpus.questions)} non-adversarial questions "
              f"({corpus.adversarial} adversarial left out, {corpus.corrected} corrected by the audit, "
              f"{corpus.no_truth} without usable evidence)", file=log)
        if len(corpus.notes) != EXPECTED_NOTES or len(corpus.questions) != EXPECTED_QUESTIONS:
            print(f"warning: expected {EXPECTED_NOTES} notes and {EXPECTED_QUESTIONS} questions",
                  file=log)
        print(f"subset {a.subset} (seed {a.seed}), conversations {a.conversations or '0-9'}: "
              f"{len(questions)} questions, per category {counts}", file=log)
        print(f"load before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}",
              file=log)
        db, build = cached_database(corpus, a.data_dir, embedder=a.embedder, rebuild=a.rebuild)
        print(f"database {db} ({'cached' if build['cached'] else 'built'}: {build['documents']} notes, "
              f"{build['chunks']} chunks, build {build['wall_seconds']} s wall / "
              f"{build['cpu_seconds']} s CPU)",
              file=log)
        results: list[dict[str, Any]] = []
        base = open_service(db, embedder=a.embedder)
        try:
            for mode, fusion in configs:
                r = evaluate(base, questions, mode, fusion, per_question=a.per_question)
                results.append(r)
                print(f"  {_label(r)}: R@5 {r['as_returned']['all']['recall@5']:.3f} "
                      f"MRR {r['as_returned']['all']['mrr']:.3f} ({r['wall_seconds']} s)", file=log)
        finally:
            base.close()
    except LocomoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    load = os.getloadavg()
    if a.json:
        json.dump({"notes": len(corpus.notes), "questions": len(questions), "subset": a.subset,
                   "seed": a.seed, "conversations": a.conversations or "0-9", "per_category": counts,
                   "embedder": a.embedder, "database": build, "load_after": list(load),
                   "results": results}, sys.stdout, indent=1)
        print()
        return 0
    print(f"load after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for view, what in (("as_returned", "hits as returned"),
                       ("collapsed", "collapsed to distinct notes before the cut")):
        print(f"\n## {what} (k = {CUTOFF} asked)\n")
        print(table(results, view))
    return 0


if __name__ == "__main__":
    sys.exit(main())
