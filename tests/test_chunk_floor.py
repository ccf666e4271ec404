"""The chunk floor (``min_tokens``) and resource bounds on heading-dense input (issue 16).

Heading-dense Markdown (hundreds of thousands of one-line sections) must give about
``estimate / floor`` chunks, not one chunk per section; the floor is a chunker
setting (config file, ``MEMLENS_MIN_TOKENS``); a file that still splits into more
chunks than the per-file cap fails alone with one line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

import pytest

from memlens.core.chunking import chunker as chunking
from memlens.core.chunking.chunker import ChunkerConfig, ChunkerConfigError, chunk_markdown, tiny_tokens
from memlens.core.chunking.tokens import estimate_tokens
from memlens.core.config.settings import ConfigError, load_settings
from tests.conftest import REPO, load_benchmark, run_cli

_pathological = load_benchmark("pathological")
heading_dense, prose = _pathological.heading_dense, _pathological.prose

MIB = 1024 * 1024


def _covered(text: str, chunks: list[chunking.Chunk]) -> None:
    """Every non-whitespace character is inside some chunk, and chunks are exact slices."""
    covered = bytearray(len(text))
    for c in chunks:
        assert text[c.start_char:c.end_char] == c.text
        covered[c.start_char:c.end_char] = b"\x01" * (c.end_char - c.start_char)
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert missing == []


def _sections(text: str) -> int:
    """Sections with a body line (a heading cut off at the very end has none)."""
    return len(re.findall(r"^# h\d+\n[a-z]", text, re.M))


def _bound(text: str, floor: int) -> int:
    return estimate_tokens(text) // floor + 1


# ---------------------------------------------------------------------------
# Heading-dense input is bounded by bytes / floor
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("parse_limit", [chunking.PARSE_LIMIT_CHARS, 1_000])
def test_heading_dense_chunk_count_is_bounded_by_the_floor(
        parse_limit: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """~5,000 one-line sections: markdown-it path and (patched limit) the line scan."""
    monkeypatch.setattr(chunking, "PARSE_LIMIT_CHARS", parse_limit)
    text = heading_dense(60_000)
    sections = _sections(text)
    result = chunk_markdown(text)
    assert result.parser == ("markdown-it" if parse_limit > len(text) else "line-scan")
    floor = tiny_tokens(chunking.DEFAULT_CONFIG)
    assert floor == 50
    assert sections > 4_000
    assert len(result.chunks) <= _bound(text, floor)
    # Only the last chunk may stay under the floor; none exceeds the budget.
    assert all(c.tokens >= floor for c in result.chunks[:-1])
    assert all(c.tokens <= chunking.DEFAULT_CONFIG.max_tokens for c in result.chunks)
    assert all(c.reason.startswith("merged: ") for c in result.chunks)
    assert sum(int(c.reason.split()[1]) for c in result.chunks) == sections
    _covered(text, result.chunks)


@pytest.mark.parametrize(("min_tokens", "max_tokens"), [(10, 400), (50, 400), (100, 1000), (30, 120)])
def test_the_floor_setting_sets_the_bound(min_tokens: int, max_tokens: int) -> None:
    cfg = ChunkerConfig(max_tokens=max_tokens, overlap_tokens=10, min_tokens=min_tokens)
    floor = tiny_tokens(cfg)
    assert floor == min(min_tokens, max(8, max_tokens // 8))
    text = heading_dense(30_000)
    chunks = chunk_markdown(text, cfg).chunks
    assert len(chunks) <= _bound(text, floor)
    assert all(c.tokens >= floor for c in chunks[:-1])
    _covered(text, chunks)


def test_a_higher_floor_gives_fewer_chunks_and_zero_merges_nothing() -> None:
    text = heading_dense(20_000)
    sections = _sections(text)
    counts = [len(chunk_markdown(text, ChunkerConfig(min_tokens=m)).chunks) for m in (0, 8, 25, 50)]
    assert counts[0] == sections  # no floor: one chunk per section
    assert counts == sorted(counts, reverse=True) and len(set(counts)) == 4


def test_floor_is_at_most_an_eighth_of_the_budget() -> None:
    assert tiny_tokens(ChunkerConfig()) == 50
    assert tiny_tokens(ChunkerConfig(max_tokens=120, overlap_tokens=30)) == 15
    assert tiny_tokens(ChunkerConfig(max_tokens=40, overlap_tokens=10)) == 8
    assert tiny_tokens(ChunkerConfig(max_tokens=4000, overlap_tokens=10, min_tokens=200)) == 200
    assert tiny_tokens(ChunkerConfig(min_tokens=0)) == 0


def test_prose_is_not_affected_by_the_floor() -> None:
    """Ordinary paragraphs without headings: the same windows with or without a floor."""
    text = prose(40_000)
    spans = [[(c.start_char, c.end_char) for c in chunk_markdown(text, ChunkerConfig(min_tokens=m)).chunks]
             for m in (0, 50)]
    assert spans[0] == spans[1] and len(spans[0]) > 10


# ---------------------------------------------------------------------------
# How short sections merge
# ---------------------------------------------------------------------------


def _words(n: int, seed: str) -> str:
    return " ".join(f"{seed}{i}" for i in range(n))


def test_adjacent_short_sections_merge_until_the_floor() -> None:
    shorts = "".join(f"## S{i}\n{_words(3, 'w')}\n\n" for i in range(12))  # ~7 tokens each
    text = "# Top\n" + _words(300, "a") + "\n\n" + shorts + "# End\n" + _words(300, "z") + "\n"
    chunks = chunk_markdown(text).chunks
    merged = [c for c in chunks if c.reason.startswith("merged")]
    assert merged, [c.reason for c in chunks]
    assert all(c.tokens >= 50 or c is chunks[-1] for c in chunks)
    assert sum(c.text.count("## S") for c in chunks) == 12


def test_a_short_section_that_cannot_join_the_next_joins_the_previous() -> None:
    cfg = ChunkerConfig(max_tokens=400, overlap_tokens=40)
    big = "x" * 1590  # "# B\n" + this = 399 tokens: the short section cannot join it
    text = f"# A\n{_words(120, 'a')}\n\n# Tiny\nshort note\n\n# B\n{big}\n"
    chunks = chunk_markdown(text, cfg).chunks
    assert [c.reason for c in chunks] == ["merged: 2 short sections", "section"]
    assert chunks[0].text.endswith("short note") and chunks[0].heading_path == ()
    assert chunks[1].heading_path == ("B",)


def test_heading_only_sections_still_join_what_follows() -> None:
    text = "# A\n## B\n### C\n" + _words(250, "c") + "\n\n# D\n" + _words(250, "d") + "\n"
    chunks = chunk_markdown(text).chunks
    assert chunks[0].text.startswith("# A\n## B\n### C") and chunks[0].heading_path == ("A", "B", "C")


# ---------------------------------------------------------------------------
# The setting
# ---------------------------------------------------------------------------


def test_min_tokens_from_file_env_and_default(tmp_path: Path) -> None:
    assert load_settings(tmp_path / "none.toml", env={}).chunker.min_tokens == 50
    cfg = tmp_path / "c.toml"
    cfg.write_text("[chunker]\nmin_tokens = 30\n")
    s = load_settings(cfg, env={})
    assert s.chunker.min_tokens == 30 and s.origins["chunker.min_tokens"] == f"file {cfg}"
    s = load_settings(cfg, env={"MEMLENS_MIN_TOKENS": "12"})
    assert s.chunker.min_tokens == 12 and s.origins["chunker.min_tokens"] == "env MEMLENS_MIN_TOKENS"
    assert ChunkerConfig.from_dict(s.chunker_dict()).min_tokens == 12
    with pytest.raises(ConfigError, match="MEMLENS_MIN_TOKENS"):
        load_settings(cfg, env={"MEMLENS_MIN_TOKENS": "lots"})
    cfg.write_text("[chunker]\nmin_tokens = 2.5\n")
    with pytest.raises(ConfigError, match="c.toml:2: `chunker.min_tokens` must be int"):
        load_settings(cfg, env={})


def test_negative_min_tokens_is_refused_when_the_settings_load(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="MEMLENS_MIN_TOKENS: `chunker.min_tokens` must be an"
                                          " integer >= 0, got -1"):
        load_settings(tmp_path / "none.toml", env={"MEMLENS_MIN_TOKENS": "-1"})
    # The chunker keeps its own check for configs that do not come through the settings
    # (a stored config, a library caller).
    with pytest.raises(ChunkerConfigError) as info:
        ChunkerConfig.from_dict({**ChunkerConfig().to_dict(), "min_tokens": -1})
    assert info.value.field == "min_tokens"
    assert str(info.value) == "invalid chunker config: min_tokens: must be a non-negative integer, got -1"


def test_min_tokens_round_trips_and_is_stored_with_the_config() -> None:
    cfg = ChunkerConfig(min_tokens=20)
    assert json.loads(cfg.canonical_json())["min_tokens"] == 20
    assert ChunkerConfig.from_json(cfg.canonical_json()) == cfg
    # A config stored before the floor existed (no min_tokens key) takes the default.
    old = '{"estimator":"chars4","index_names":["MEMORY.md"],"max_tokens":400,"name":' \
          '"memlens-markdown","overlap_tokens":80,"strategy":"adaptive","version":3}'
    assert ChunkerConfig.from_json(old).min_tokens == 50


def test_cli_reports_a_bad_floor_in_one_line(tmp_path: Path) -> None:
    f = tmp_path / "n.md"
    f.write_text("# A\n\nbody\n")
    proc = run_cli("chunks", str(f), env={"MEMLENS_MIN_TOKENS": "-5"})
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "memlens: environment variable MEMLENS_MIN_TOKENS: `chunker.min_tokens` must be an"
        " integer >= 0, got -5"]
    ok = run_cli("chunks", str(f), "--json", env={"MEMLENS_MIN_TOKENS": "7"})
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["config"]["min_tokens"] == 7


# ---------------------------------------------------------------------------
# The 8 MiB bounds (slow)
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_8mib_heading_dense_chunker_bounds() -> None:
    """At the 8 MiB ingest limit the chunker's own allocations stay a few times the text."""
    text = heading_dense(8 * MIB)
    tracemalloc.start()
    try:
        result = chunk_markdown(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.parser == "line-scan"
    assert text.count("# h") > 650_000
    assert len(result.chunks) <= _bound(text, 50)
    # 8 MiB of chunk texts plus their hashes and spans; was ~180 MiB with one tuple
    # per heading and section held at once.
    assert peak < 64 * MIB, f"traced peak {peak / MIB:.1f} MiB"


@pytest.mark.slow
def test_8mib_heading_dense_file_fails_alone_within_bounds(tmp_path: Path) -> None:
    """With the default cap the file is one failed line (exit 1), a neighbour is stored,
    and the ingest child stays under 300 MB peak RSS."""
    mem = tmp_path / "projects" / "-home-dev-proj" / "memory"
    mem.mkdir(parents=True)
    (mem / "dense.md").write_text(heading_dense(8 * MIB), encoding="ascii")
    (mem / "ok.md").write_text("# Fine\n\nshort\n")
    db = tmp_path / "m.db"
    env = dict(os.environ, MEMLENS_EMBEDDER="hashing")
    env.pop("MEMLENS_MAX_CHUNKS_PER_FILE", None)
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen([sys.executable, "-m", "memlens.cli.main", "ingest",
                                  str(tmp_path / "projects"), "--db", str(db)],
                                 stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=REPO)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak RSS
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode()
    assert child.returncode == 1, stderr
    lines = [ln for ln in stderr.splitlines() if "dense.md" in ln]
    assert len(lines) == 1 and "over the limit of 5,000 per file" in lines[0], stderr
    assert "Traceback" not in stderr
    assert usage.ru_maxrss / 1024 <= 300, f"peak RSS {usage.ru_maxrss / 1024:.0f} MB"
    docs = run_cli("docs", "--db", str(db), "--json", env={"MEMLENS_EMBEDDER": "hashing"})
    assert [d["path"] for d in json.loads(docs.stdout)["documents"]] == ["ok.md"]


def test_min_tokens_flag_through_the_cli(tmp_path: Path) -> None:
    """`--min-tokens` on chunks and ingest sets the floor; a bad value is one line, exit 2."""
    md = tmp_path / "dense.md"
    md.write_text("".join(f"## H{i}\n\nshort note {i}.\n\n" for i in range(40)), encoding="utf-8")

    def count(*flags: str) -> int:
        p = run_cli("chunks", str(md), "--max-tokens", "160", *flags, "--json")
        assert p.returncode == 0, p.stderr
        return len(json.loads(p.stdout)["chunks"])

    off, floor10, default = count("--min-tokens", "0"), count("--min-tokens", "10"), count()
    assert off == 40 and default < floor10 < off, (off, floor10, default)
    bad = run_cli("chunks", str(md), "--min-tokens", "-1")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1, bad.stderr
    assert "min_tokens" in bad.stderr and "Traceback" not in bad.stderr
    db = str(tmp_path / "m.db")
    env = {"MEMLENS_EMBEDDER": "hashing"}
    ing = run_cli("ingest", str(tmp_path), "--repository", "dense", "--max-tokens", "160",
                  "--min-tokens", "0", "--db", db, "--json", env=env)
    assert ing.returncode == 0, ing.stderr
    docs = json.loads(run_cli("docs", "--db", db, "--json", env=env).stdout)["documents"]
    assert docs[0]["chunks"] == 40
