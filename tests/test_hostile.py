"""Hostile input: bad files, names and Markdown; fuzzing; privacy of absolute paths.

Every bad-input class is ingested next to a good file and (where the class is a
file's content) over a path that already holds a good stored version. Each case
must give either a clear per-file error (the message names the problem) or sane
chunks (exact character and byte spans, ordinals 0..n-1), in bounded time
(``signal.alarm`` guard; measured) and bounded memory (``tracemalloc`` peak),
and must affect no other file: the good file is stored and searchable, and the
previously stored version of a file that turned bad is kept and still searchable.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import resource
import signal
import stat
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlens.core.chunking.chunker import STRATEGIES, ChunkerConfig, chunk_markdown
from memlens.core.ingest import pipeline as ingest_mod
from memlens.core.ingest import sources
from memlens.core.ingest.sources import SourceError, decode_markdown
from memlens.core.redact.engine import redact
from memlens.core.store import db as dbm
from memlens.core.store.schema import DOC_CONTENT_SQL
from tests import reliability_helpers as H
from tests.conftest import run_cli

GOOD = "# Good\n\ngoodword lives here next to the hostile file.\n"
VICTIM_OLD = "# Victim\n\nvictimword: the last good version of this file.\n"
MB = 1024 * 1024


@dataclass
class Case:
    """One bad-input class.

    ``make(folder, ctx)`` creates the bad entry and returns its logical path (as the
    ingest report names it). ``expect``: ``error`` (a failed entry whose message
    mentions one of ``words``), ``ok`` (stored with sane chunks; ``find`` is
    searchable when given) or ``absent`` (neither stored nor reported).
    """

    name: str
    make: Callable[[Path, Any], str]
    expect: str
    words: tuple[str, ...] = ()
    victim: bool = True
    find: str | None = None
    seconds: float = 5.0
    chunks: int | None = None
    also_failed: tuple[str, ...] = ()
    bug: str | None = None  # known core bug: the case is xfail(strict) until it is fixed


def _bytes(data: bytes) -> Callable[[Path, Any], str]:
    def make(d: Path, _ctx: Any) -> str:
        H.write(d, "victim.md", data)
        return "victim.md"
    return make


def _text(text: str) -> Callable[[Path, Any], str]:
    return _bytes(text.encode("utf-8"))


def _symlink_loop(d: Path, _ctx: Any) -> str:
    (d / "victim.md").unlink()
    os.symlink("loop2.md", d / "victim.md")
    os.symlink("victim.md", d / "loop2.md")
    return "victim.md"


def _symlink_outside(d: Path, ctx: Any) -> str:
    outside = ctx.tmp / "outside-secret.md"
    outside.write_text("# Outside\n\noutsideword must never be stored\n", encoding="utf-8")
    (d / "victim.md").unlink()
    os.symlink(outside, d / "victim.md")
    return "victim.md"


def _fifo(d: Path, _ctx: Any) -> str:
    (d / "victim.md").unlink()
    os.mkfifo(d / "victim.md")
    return "victim.md"


def _unreadable(d: Path, _ctx: Any) -> str:
    p = H.write(d, "victim.md", "# Victim\n\nnew unreadable version\n")
    p.chmod(0)
    try:
        with open(p, "rb"):
            pass
    except PermissionError:
        return "victim.md"
    p.chmod(stat.S_IRUSR | stat.S_IWUSR)
    pytest.skip("running as root: chmod 000 does not stop reads, nothing to test")


def _vanishes(d: Path, ctx: Any) -> str:
    """The file is listed by the scan, then deleted right before it is opened."""
    H.write(d, "victim.md", "# Victim\n\nnew version that vanishes\n")
    real = ingest_mod.read_file

    def read_file(path: Path, max_bytes: int = sources.DEFAULT_MAX_FILE_BYTES) -> Any:
        if Path(path).name == "victim.md":
            Path(path).unlink(missing_ok=True)
        return real(path, max_bytes)

    ctx.monkeypatch.setattr(ingest_mod, "read_file", read_file)
    return "victim.md"


class _GrowingOs:
    """``os`` as seen by ``sources``: the first read of victim.md appends to the file."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._done = False

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def read(self, fd: int, n: int) -> bytes:
        data = os.read(fd, n)
        if not self._done and os.fstat(fd).st_ino == os.stat(self._path).st_ino:
            self._done = True
            with open(self._path, "ab") as f:
                f.write(b"\nappended while being read\n")
            st = os.stat(self._path)
            os.utime(self._path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        return data


def _grows(d: Path, ctx: Any) -> str:
    p = H.write(d, "victim.md", "# Victim\n\n" + "growing file line\n" * 1000)
    ctx.monkeypatch.setattr(sources, "os", _GrowingOs(p))
    return "victim.md"


def _newline_name(d: Path, _ctx: Any) -> str:
    H.write(d, "bad\nname.md", "# X\n\nnewline name\n")
    return "bad\\nname.md"


def _non_utf8_name(d: Path, _ctx: Any) -> str:
    with open(os.path.join(os.fsencode(d), b"bad\xffname.md"), "wb") as f:
        f.write(b"# X\n\nlatin-1 name\n")
    return "bad\ufffdname.md"


def _dir_named_md(d: Path, _ctx: Any) -> str:
    (d / "x.md").mkdir()
    H.write(d, "x.md/inner.md", "# Inner\n\ninnerword inside a folder named x.md\n")
    return "x.md"


def _sparse(size: int) -> Callable[[Path, Any], str]:
    def make(d: Path, _ctx: Any) -> str:
        p = d / "victim.md"
        with open(p, "r+b") as f:
            f.truncate(size)
        return "victim.md"
    return make


def _index_links(d: Path, _ctx: Any) -> str:
    lines = "".join(f"- [Topic {i}](topic{i}.md) linkword {i}\n" for i in range(10_000))
    H.write(d, "MEMORY.md", "# Memory\n\n" + lines)
    return "MEMORY.md"


TEXT = "The quick zebraprobe jumps over the lazy dog. "
CASES: list[Case] = [
    Case("binary (PNG header)", _bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 40),
         "error", ("binary",)),
    Case("NUL bytes in text", _bytes(b"# T\n\nsome text\x00more text\n"), "error", ("binary", "nul")),
    Case("invalid UTF-8 (latin-1)", _bytes("# Café\n\nolé\n".encode("latin-1")), "error", ("utf-8",)),
    Case("UTF-8 encoded surrogate", _bytes(b"# T\n\n\xed\xa0\x80 surrogate\n"), "error", ("utf-8",)),
    Case("UTF-16 LE with BOM", _bytes("# Titel\n\nhallo\n".encode("utf-16")), "error", ("utf-16",)),
    Case("UTF-16 BE with BOM", _bytes(codecs.BOM_UTF16_BE + "# T\n\nx\n".encode("utf-16-be")),
         "error", ("utf-16",)),
    Case("UTF-16 LE without BOM", _bytes("# Titel\n\nhallo\n".encode("utf-16-le")), "error",
         ("utf-16", "binary")),
    Case("UTF-32 with BOM", _bytes("# T\n\nx\n".encode("utf-32")), "error",
         ("utf-16", "utf-32", "binary")),
    Case("50 MB file", _sparse(50 * MB), "error", ("limit",)),
    Case("100k-line file", _text("".join(f"{i} zebraprobe\n" for i in range(100_000))), "ok",
         find="zebraprobe", seconds=15.0),
    Case("10k headings", _text("".join(f"# H{i}\nzebraprobe\n" for i in range(10_000))),
         "ok", find="zebraprobe", seconds=15.0),
    Case("1,000-deep nested list", _text("".join("  " * i + f"- item {i} zebraprobe\n"
                                                  for i in range(1000))), "ok", find="zebraprobe"),
    Case("1,000-deep block quote", _text("".join(">" * i + f" quote {i} zebraprobe\n"
                                                  for i in range(1, 1001))), "ok", find="zebraprobe"),
    Case("1,000-deep list, one line", _text("- " * 1000 + "zebraprobe\n"), "ok", find="zebraprobe"),
    Case("unterminated fence", _text("# A\n\n```python\n# not a heading\n" + TEXT * 400 + "\n"),
         "ok", find="zebraprobe"),
    Case("symlink loop", _symlink_loop, "error", ("symlink", "loop"), also_failed=("loop2.md",)),
    Case("symlink outside the root", _symlink_outside, "error", ("outside",)),
    Case("FIFO", _fifo, "error", ("regular file", "fifo")),
    Case("unreadable (chmod 000)", _unreadable, "error", ("permission",)),
    Case("deleted between scan and read", _vanishes, "error", ("vanished",)),
    Case("grows while being read", _grows, "error", ("changed while being read",)),
    Case("name with a newline", _newline_name, "error", ("line break",), victim=False),
    Case("non-UTF-8 file name", _non_utf8_name, "error", ("utf-8",), victim=False),
    Case("directory named x.md", _dir_named_md, "absent", victim=False),
    Case("zero-byte file", _text(""), "ok", chunks=0),
    Case("whitespace only", _text(" \n\t\n   \r\n\n"), "ok", chunks=0),
    Case("only front matter", _text("---\nname: fm\ntype: user\ndescription: zebraprobe\n---\n"),
         "ok", find="zebraprobe", chunks=1),
    Case("1 MB single line", _text(("zebraprobe " + "x" * 20 + " ") * (MB // 32)), "ok",
         find="zebraprobe", seconds=15.0),
    Case("CRLF + lone CR mix", _text(("# A\r\n\r\nzebraprobe text\rmore\r\n## B\rline\n" + TEXT + "\r")
                                     * 300), "ok", find="zebraprobe"),
    Case("only '#' lines", _text("#\n" * 5000), "ok"),
    Case("BOM in the middle", _text("# A\n\nzebraprobe\ufeffmiddle\n\ufeff# B\n\ufefftext\n" * 50),
         "ok", find="zebraprobe"),
    Case("emoji and CJK heavy", _text(("# 見出し 😀\n\n漢字かな交じり文 zebraprobe 🎉👩‍👩‍👧‍👦 한국어 "
                                       "\U0001f9ea\u0301\u200d\n\n") * 800), "ok", find="zebraprobe"),
    Case("40k-char heading", _text("# " + "verylongheading " * 2500 + "\n\nzebraprobe body\n"),
         "ok", find="zebraprobe"),
    Case("10k nested HTML divs", _text("<div>" * 10_000 + "zebraprobe" + "</div>" * 10_000 + "\n"),
         "ok", find="zebraprobe"),
    Case("huge table (20k rows)", _text("| a | b | c |\n|---|---|---|\n" + "".join(
        f"| {i} | zebraprobe | {TEXT} |\n" for i in range(20_000))), "ok", find="zebraprobe",
         seconds=15.0),
    Case("C0 control characters", _text("# C\n\n" + "".join(chr(i) for i in range(1, 32)
                                                               if i not in (0,)) * 200
                                        + "\nzebraprobe\n"), "ok", find="zebraprobe"),
    Case("Unicode line separators", _text("# U\u2028\n\nzebraprobe\u2029para\x85nel\x0bvt\x0cff\n"
                                          * 500), "ok", find="zebraprobe"),
    Case("MEMORY.md with 10k links", _index_links, "ok", find="linkword", victim=False,
         seconds=15.0),
    Case("setext underline storm", _text("Title\n" + "=" * 100_000 + "\n" + "-\n" * 5000
                                         + "zebraprobe\n"), "ok", find="zebraprobe"),
]


class _Ctx:
    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tmp = tmp
        self.monkeypatch = monkeypatch


@pytest.fixture
def alarm() -> Iterator[Callable[[int], object]]:
    """Hard wall-clock guard: raise TimeoutError if the block runs too long."""
    def handler(_sig: int, _frm: Any) -> None:
        raise TimeoutError("hostile input took too long")

    old = signal.signal(signal.SIGALRM, handler)
    yield lambda s: signal.alarm(s)
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def assert_sane_chunks(conn: Any, doc_id: int) -> int:
    """Stored chunks of the current revision are exact slices with exact byte spans."""
    doc = dbm.row(conn, f"SELECT {DOC_CONTENT_SQL} AS content, current_revision_id"
                  " FROM memory_documents d WHERE id=?", (doc_id,))
    assert doc is not None
    text = doc["content"] or ""
    chunks = dbm.rows(conn, "SELECT * FROM memory_chunks WHERE revision_id=? ORDER BY ordinal",
                      (doc["current_revision_id"],))
    prev_start = -1
    char_pos = byte_pos = 0  # walk forward: linear in the text, even for 50 MB files
    for i, c in enumerate(chunks):
        assert c["ordinal"] == i
        assert c["start_char"] >= prev_start and c["start_char"] < c["end_char"]
        assert text[c["start_char"]:c["end_char"]] == c["text"]
        byte_pos += len(text[char_pos:c["start_char"]].encode("utf-8"))
        char_pos = c["start_char"]
        assert c["start_byte"] == byte_pos
        assert c["end_byte"] - c["start_byte"] == len(c["text"].encode("utf-8"))
        assert c["chunk_hash"] == hashlib.sha256(c["text"].encode("utf-8")).hexdigest()
        prev_start = c["start_char"]
    assert byte_pos + len(text[char_pos:].encode("utf-8")) == len(text.encode("utf-8"))
    return len(chunks)


timings: dict[str, tuple[float, int]] = {}


def _params() -> list[Any]:
    return [pytest.param(c, id=c.name, marks=[pytest.mark.xfail(strict=True, reason=c.bug)]
                         if c.bug else []) for c in CASES]


@pytest.mark.parametrize("case", _params())
def test_hostile_input(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       alarm: Callable[[int], object]) -> None:
    """Per-file error or sane chunks; bounded time; nothing else affected."""
    run_case(case, tmp_path, monkeypatch, alarm, trace_memory=False)


@pytest.mark.slow
@pytest.mark.parametrize("case", _params())
def test_hostile_input_memory(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              alarm: Callable[[int], object]) -> None:
    """The same cases with ``tracemalloc``: peak Python allocation is bounded."""
    run_case(case, tmp_path, monkeypatch, alarm, trace_memory=True)


def run_case(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             alarm: Callable[[int], object], *, trace_memory: bool) -> None:
    """Ingest a good file and a victim, turn the victim bad, ingest, check."""
    base = tmp_path / "claude"
    d = H.memdir(base)
    H.write(d, "good.md", GOOD)
    if case.victim:
        H.write(d, "victim.md", VICTIM_OLD)
    svc = H.make_svc(tmp_path / "m.db", H.ManualClock())
    try:
        svc.ingest(H.roots_of(base))
        rel = case.make(d, _Ctx(tmp_path, monkeypatch))
        H.write(d, "good.md", GOOD + "\nstill goodword after the hostile file arrived\n")
        alarm(60)
        if trace_memory:
            tracemalloc.start()
        t0 = time.perf_counter()
        out = svc.ingest(H.roots_of(base))
        elapsed = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1] if trace_memory else 0
        tracemalloc.stop()
        alarm(0)
        monkeypatch.undo()
        rep = out.as_json()
        failed = {f["path"]: f["error"] for f in rep["failed"]}
        docs = {x.path: x for x in svc.list_documents()}

        # bounded time and memory
        timings[case.name] = (elapsed, peak)
        if not trace_memory:  # tracemalloc slows allocation-heavy code several times
            assert elapsed < case.seconds, f"{case.name}: {elapsed:.1f}s"
        size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file() and not p.is_symlink()
                   and stat.S_ISREG(p.stat().st_mode))
        assert peak < 150 * MB + 40 * min(size, 8 * MB), f"{case.name}: peak {peak / MB:.0f} MB"
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        assert rss < 3 * 1024 * MB, f"{case.name}: process max RSS {rss / MB:.0f} MB"

        # no other file affected: the good file is updated and searchable
        assert "good.md" not in failed
        assert "good.md" in [h.path for h in svc.search("goodword", mode="lexical").hits]
        assert "still goodword" in svc.locate(None, "good.md").content

        if case.expect == "error":
            assert rel in failed, f"{case.name}: no per-file error; report: {rep}"
            msg = failed[rel]
            assert any(w in msg.lower() for w in case.words), f"{case.name}: unclear error {msg!r}"
            assert "Traceback" not in msg and str(tmp_path) not in msg
            assert set(failed) == {rel, *case.also_failed}, failed
            if case.victim:  # the stored version is kept, current and searchable
                v = svc.locate(None, "victim.md")
                assert v is not None and not v.tombstoned and v.content == VICTIM_OLD
                assert "victim.md" in [h.path for h in svc.search("victimword",
                                                                  mode="lexical").hits]
            assert "outsideword" not in json.dumps([d.as_dict() for x in docs.values()
                                                  if (d := svc.detail(x.id)) is not None])
        elif case.expect == "ok":
            assert failed == {}, f"{case.name}: {failed}"
            assert rel in docs
            n = assert_sane_chunks(svc.conn(), docs[rel].id)
            if case.chunks is not None:
                assert n == case.chunks
            nodes = dbm.scalar(svc.conn(), "SELECT COUNT(*) FROM knowledge_nodes"
                               " WHERE document_id=?", (docs[rel].id,))
            assert nodes == n
            node_bytes = dbm.scalar(svc.conn(), "SELECT COALESCE(SUM(length(text)), 0)"
                                    " FROM knowledge_nodes WHERE document_id=?", (docs[rel].id,))
            content_len = len(svc.locate(None, rel).content)
            assert node_bytes <= 3 * content_len + 4096, \
                f"{case.name}: node text {node_bytes} for {content_len} chars of content"
            head_bytes = dbm.scalar(svc.conn(), "SELECT COALESCE(SUM(length(heading_path)), 0)"
                                    " FROM memory_chunks c JOIN memory_documents d"
                                    " ON d.current_revision_id=c.revision_id WHERE d.id=?",
                                    (docs[rel].id,))
            assert head_bytes <= 2 * content_len + 4096, \
                f"{case.name}: chunk heading paths {head_bytes} for {content_len} chars"
            if case.find:
                assert rel in [h.path for h in svc.search(case.find, mode="lexical", k=50).hits]
        else:  # absent
            assert rel not in failed and rel not in docs
            assert "x.md/inner.md" in docs
        assert H.problems_of(svc) == []
    finally:
        tracemalloc.stop()
        svc.close()


def test_vanished_file_is_tombstoned_on_the_next_run(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that vanished mid-read is kept for that run and tombstoned on the next."""
    base = tmp_path / "claude"
    d = H.memdir(base)
    H.write(d, "victim.md", VICTIM_OLD)
    svc = H.make_svc(tmp_path / "m.db", H.ManualClock())
    try:
        svc.ingest(H.roots_of(base))
        _vanishes(d, _Ctx(tmp_path, monkeypatch))
        assert [f["path"] for f in svc.ingest(H.roots_of(base)).as_json()["failed"]] == [
            "victim.md"]
        monkeypatch.undo()
        assert not svc.locate(None, "victim.md").tombstoned
        assert svc.ingest(H.roots_of(base)).as_json()["deleted"] == 1
        assert svc.search("victimword", mode="lexical").hits == []
    finally:
        svc.close()


@pytest.mark.slow
def test_50mb_markdown_with_raised_limit(tmp_path: Path,
                                         alarm: Callable[[int], object]) -> None:
    """With ``[limits]`` raised, a real 50 MB file (~54k chunks) ingests in bounded time.
    (``make_svc`` reads no environment, so the limits are settings here: the test set
    MEMLENS_MAX_FILE_BYTES and, with the 8 MB default still applied — and the later
    5,000-chunk limit — failed on its first assertion; the variables themselves are tested
    in test_limits_config.py.)"""
    base = tmp_path / "claude"
    d = H.memdir(base)
    H.write(d, "good.md", GOOD)
    section = "## Section {i}\n\n" + TEXT * 20 + "\n\n- a list item\n- another zebraprobe\n\n"
    body = "".join(section.format(i=i) for i in range(50 * MB // len(section)))
    H.write(d, "huge.md", "# Huge\n\n" + body)
    svc = H.make_svc(tmp_path / "m.db", H.ManualClock(), **{
        "limits.max_file_bytes": 64 * MB, "limits.max_chunks_per_file": 100_000})
    try:
        alarm(900)
        t0 = time.perf_counter()
        out = svc.ingest(H.roots_of(base))
        elapsed = time.perf_counter() - t0
        alarm(0)
        assert out.as_json()["failed"] == []
        assert elapsed < 600, f"{elapsed:.0f}s"
        assert assert_sane_chunks(svc.conn(), svc.locate(None, "huge.md").id) > 1000
        assert H.problems_of(svc) == []
    finally:
        svc.close()


# --------------------------------------------------------------------------- fuzzing

MD_PIECES = st.sampled_from([
    "# ", "## ", "###### ", "#", "\n", "\r\n", "\r", "\n\n", "```", "~~~", "```python\n", "---\n",
    "===\n", "- ", "* ", "1. ", "> ", "    ", "\t", "[a](b.md)", "<div>", "</div>", "|a|b|\n",
    "|-|-|\n", "\ufeff", "\u2028", "\x85", "\x0b", "\x0c", "\x00", "\x1f", "😀", "漢字", "e\u0301",
    "\u200d", "word ", "zebraprobe ", "name: x\n", "AKIAABCDEFGHIJKLMNOP", "-----BEGIN ",
])
FUZZ_TEXT = st.lists(st.one_of(MD_PIECES, st.text(
    alphabet=st.characters(codec="utf-8"), max_size=30)), max_size=60).map("".join)


@st.composite
def fuzz_configs(draw: st.DrawFn) -> ChunkerConfig:
    mx = draw(st.integers(1, 120))
    return ChunkerConfig(strategy=draw(st.sampled_from(STRATEGIES)), max_tokens=mx,
                         overlap_tokens=draw(st.integers(0, mx - 1)))


def check_chunk_invariants(text: str, cfg: ChunkerConfig) -> None:
    res = chunk_markdown(text, cfg, path="MEMORY.md" if len(text) % 2 else "topic.md")
    covered = [False] * len(text)
    prev_end = -1
    prev_start = -1
    for i, c in enumerate(res.chunks):
        assert c.ordinal == i
        assert 0 <= c.start_char < c.end_char <= len(text)
        assert c.start_char >= prev_start
        assert text[c.start_char:c.end_char] == c.text
        assert c.start_byte == len(text[:c.start_char].encode("utf-8"))
        assert c.end_byte == c.start_byte + len(c.text.encode("utf-8"))
        assert c.hash == hashlib.sha256(c.text.encode("utf-8")).hexdigest()
        assert c.overlap_chars == max(0, prev_end - c.start_char)
        for k in range(c.start_char, c.end_char):
            covered[k] = True
        prev_end, prev_start = c.end_char, c.start_char
    # nothing dropped: every character that is not whitespace (or a BOM) is in a chunk
    lost = [ch for ch, cov in zip(text, covered, strict=True)
            if not cov and not ch.isspace() and ch != "\ufeff"]
    assert not lost, f"dropped {''.join(lost)[:50]!r}"


FUZZ = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(FUZZ_TEXT, fuzz_configs())
def test_fuzz_chunker_spans(text: str, cfg: ChunkerConfig) -> None:
    """Random Markdown-ish text with control characters: no crash, exact spans, no loss."""
    check_chunk_invariants(text, cfg)


@FUZZ
@given(st.binary(max_size=400) | FUZZ_TEXT.map(lambda s: s.encode("utf-8", "surrogatepass")))
def test_fuzz_decode_redact_chunk(data: bytes) -> None:
    """The whole per-file pipeline on arbitrary bytes: a SourceError or sane chunks."""
    try:
        text = decode_markdown(data)
    except SourceError as exc:
        assert str(exc) and "Traceback" not in str(exc)
        return
    red = redact(text).text
    check_chunk_invariants(red, ChunkerConfig(max_tokens=16, overlap_tokens=4))


@pytest.mark.slow
@settings(max_examples=5000, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(FUZZ_TEXT, fuzz_configs())
def test_fuzz_chunker_spans_long(text: str, cfg: ChunkerConfig) -> None:
    check_chunk_invariants(text, cfg)


def test_atheris_not_installed_note() -> None:
    """atheris (coverage-guided fuzzing) is optional; hypothesis covers the default run."""
    try:
        import atheris  # noqa: F401
    except ImportError:
        pytest.skip("atheris is not installed; coverage-guided fuzzing not run")


# --------------------------------------------------------------------------- privacy


def test_absolute_paths_stay_private(tmp_path: Path) -> None:
    """A username-like path component never reaches search output, FTS text or any
    JSON output of the CLI; only the private source-path columns hold it."""
    home = tmp_path / "alice-secret-user" / ".claude"
    d = H.memdir(home, slug="-work-proj")
    H.write(d, "MEMORY.md", "# Memory\n\n- [Topic](topic.md) zebraprobe index\n")
    H.write(d, "topic.md", "# Topic\n\nzebraprobe notes about the pool.\n")
    H.write(d, "sub/deep.md", "# Deep\n\nzebraprobe deeper.\n")
    db = tmp_path / "m.db"
    env = {"MEMLENS_EMBEDDER": "hashing", "MEMLENS_DB": str(db)}
    r = run_cli("ingest", str(home / "projects"), "--json", env=env)
    assert r.returncode == 0, r.stderr
    H.write(d, "topic.md", "# Topic\n\nzebraprobe notes about the pool, updated.\n")
    r2 = run_cli("ingest", str(home / "projects"), "--json", env=env)
    outputs = {"ingest": r.stdout + r.stderr, "ingest2": r2.stdout + r2.stderr}
    for name, args in {
        "search-alice": ("search", "alice", "--json"),
        "search-alice-lexical": ("search", "alice", "--mode", "lexical", "--json"),
        "search-hit": ("search", "zebraprobe", "--json", "-k", "20"),
        "docs": ("docs", "--json", "--all"),
        "docs-filter": ("docs", "--filter", "alice", "--json"),
        "history": ("history", "topic.md", "--json"),
    }.items():
        res = run_cli(*args, env=env)
        assert res.returncode == 0, f"{name}: {res.stderr}"
        data = json.loads(res.stdout)
        if isinstance(data, dict):
            data.pop("query", None)  # the search echoes what was asked
        outputs[name] = json.dumps(data, ensure_ascii=False) + res.stderr
    for name, text in outputs.items():
        assert "alice" not in text.lower(), f"{name} leaks the path: {text[:500]}"
        assert str(tmp_path) not in text, name
    assert json.loads(outputs["search-alice-lexical"])["hits"] == []
    assert len(json.loads(outputs["search-hit"])["hits"]) == 3

    svc = H.make_svc(db, H.ManualClock())
    try:
        conn = svc.conn()
        conn.execute("CREATE VIRTUAL TABLE temp.priv_vocab USING fts5vocab(main, knowledge_nodes_fts,"
                     " row)")
        terms = {t for (t,) in conn.execute("SELECT term FROM temp.priv_vocab")}
        assert any(t.startswith("zebraprob") for t in terms)  # porter-stemmed
        assert not {t for t in terms if "alice" in t or "secret" in t}, terms
        for table, cols in {
            "knowledge_nodes": ("text", "heading", "logical_path", "repository"),
            "memory_chunks": ("text", "heading_path"),
            "memory_revisions": ("snapshot", "summary", "diff", "logical_path", "previous_path"),
            "memory_documents": (DOC_CONTENT_SQL, "logical_path", "repository", "front_matter"),
        }.items():
            for col in cols:
                n = dbm.scalar(conn, f"SELECT COUNT(*) FROM {table} d WHERE {col} LIKE '%alice%'")
                assert n == 0, f"{table}.{col} holds the path"
        # the private columns are where the path lives (and only there)
        assert dbm.scalar(conn, "SELECT COUNT(*) FROM memory_documents WHERE source_path LIKE"
                          " '%alice-secret-user%'") == 3
    finally:
        svc.close()


def test_wide_encodings_are_named() -> None:
    """The error names the encoding the file really has."""
    msgs = {}
    for name, data in {"utf-32": "# T\nx\n".encode("utf-32"),
                       "utf-16": "# Titel\nhallo\n".encode("utf-16-le")}.items():
        with pytest.raises(SourceError) as exc:
            decode_markdown(data)
        msgs[name] = str(exc.value)
    assert "UTF-32" in msgs["utf-32"], msgs
    assert "UTF-16" in msgs["utf-16"], msgs
