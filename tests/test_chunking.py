"""Example tests for the Markdown chunker and the token estimators."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from memlens.core.chunking import chunker as chunking
from memlens.core.chunking.chunker import (
    CHUNKER_NAME,
    CHUNKER_VERSION,
    DEFAULT_CONFIG,
    Chunk,
    ChunkerConfig,
    ChunkerConfigError,
    ChunkResult,
    chunk_markdown,
    overlap_cap,
    parse_front_matter,
)
from memlens.core.chunking.tokens import (
    ESTIMATORS,
    Chars4Estimator,
    UnknownEstimatorError,
    estimate_tokens,
    get_estimator,
    register_estimator,
)

SMALL = ChunkerConfig(max_tokens=40, overlap_tokens=10)


def check(text: str, result: ChunkResult, config: ChunkerConfig = DEFAULT_CONFIG) -> list[Chunk]:
    """Assert the invariants every result must satisfy and return its chunks."""
    data = text.encode("utf-8")
    est = get_estimator(config.estimator)
    prev_end = -1
    for i, c in enumerate(result.chunks):
        assert c.ordinal == i
        assert text[c.start_char : c.end_char] == c.text
        assert data[c.start_byte : c.end_byte] == c.text.encode("utf-8")
        assert c.hash == hashlib.sha256(c.text.encode("utf-8")).hexdigest()
        assert c.tokens == est(c.text)
        assert c.overlap_chars == max(0, prev_end - c.start_char)
        assert c.text.strip(), "no blank chunks"
        prev_end = c.end_char
    return result.chunks


def paragraph(words: int, seed: str = "word") -> str:
    return " ".join(f"{seed}{i}" for i in range(words))


# ---------------------------------------------------------------------------
# Small and empty files
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", chunking.STRATEGIES)
@pytest.mark.parametrize("text", ["", " ", "\n\n", "\t \r\n \r", "\ufeff", "\ufeff\n  \n"])
def test_blank_text_gives_no_chunks(text: str, strategy: str) -> None:
    result = chunk_markdown(text, ChunkerConfig(strategy=strategy))
    assert result.chunks == []


def test_small_file_is_one_chunk_of_the_original_markdown() -> None:
    text = "\n\n# Title\n\nShort body.\n\n## Sub\n- a\n- b\n\n"
    (only,) = check(text, chunk_markdown(text))
    assert (only.start_char, only.end_char) == (0, len(text))
    assert only.text == text
    assert only.heading_path == ()
    assert only.overlap_chars == 0


def test_file_just_over_the_limit_is_split() -> None:
    text = "# A\n" + paragraph(30) + "\n# B\n" + paragraph(30) + "\n"
    chunks = check(text, chunk_markdown(text, SMALL), SMALL)
    assert len(chunks) > 1
    assert [c.heading_path for c in chunks][0] == ("A",)


# ---------------------------------------------------------------------------
# What is (not) a heading
# ---------------------------------------------------------------------------


def test_hash_lines_inside_fenced_code_are_not_headings() -> None:
    fence = "```bash\n# install things\nmake install\n## also not\n```\n"
    tilde = "~~~\n# still code\n~~~\n"
    text = "# Setup\n" + paragraph(20) + "\n\n" + fence + tilde + paragraph(20) + "\n# Next\nend\n"
    chunks = check(text, chunk_markdown(text, SMALL), SMALL)
    paths = {c.heading_path for c in chunks}
    assert paths <= {("Setup",), ("Next",)}
    for c in chunks:
        assert not c.text.startswith("# install")
        assert not c.text.startswith("## also")


def test_hash_lines_inside_indented_code_are_not_headings() -> None:
    text = "# Top\n" + paragraph(15) + "\n\n    # indented comment\n    code()\n\n" + paragraph(15) + "\n"
    chunks = check(text, chunk_markdown(text, ChunkerConfig(strategy="headings")))
    assert [c.heading_path for c in chunks] == [("Top",)]


def test_setext_headings_split_and_name_sections() -> None:
    text = (
        "Main Title\n==========\n\n"
        + paragraph(20)
        + "\n\nSecond part\nof the title\n---\n\n"
        + paragraph(20)
        + "\n"
    )
    chunks = check(text, chunk_markdown(text, SMALL), SMALL)
    assert chunks[0].heading_path == ("Main Title",)
    assert chunks[0].text.startswith("Main Title\n===")
    second = [c for c in chunks if c.heading_path == ("Main Title", "Second part of the title")]
    assert second and second[0].text.startswith("Second part\nof the title\n---")


def test_skipped_levels_are_simply_absent_from_the_path() -> None:
    text = "# A\n" + paragraph(10) + "\n### C\n" + paragraph(10) + "\n## B\n" + paragraph(10) + "\n"
    chunks = check(text, chunk_markdown(text, ChunkerConfig(strategy="headings")))
    assert [c.heading_path for c in chunks] == [("A",), ("A", "C"), ("A", "B")]


def test_heading_path_pops_to_the_right_level() -> None:
    text = "# A\nx\n## B\ny\n### C\nz\n## D\nw\n# E\nv\n"
    chunks = chunk_markdown(text, ChunkerConfig(strategy="headings")).chunks
    assert [c.heading_path for c in chunks] == [
        ("A",),
        ("A", "B"),
        ("A", "B", "C"),
        ("A", "D"),
        ("E",),
    ]


def test_heading_titles_drop_closing_hashes_and_keep_inline_source() -> None:
    text = "## Setup ##\nbody\n## C# tips\nbody\n## **Bold** `code`  spaced\nbody\n"
    chunks = chunk_markdown(text, ChunkerConfig(strategy="headings")).chunks
    assert [c.heading_path[-1] for c in chunks] == ["Setup", "C# tips", "**Bold** `code` spaced"]


def test_bare_hash_line_does_not_make_the_next_line_a_heading() -> None:
    text = "# Real\nintro\n#\nNot a heading\n" + paragraph(40) + "\n"
    chunks = check(text, chunk_markdown(text, SMALL), SMALL)
    for c in chunks:
        assert c.heading_path == ("Real",)
        assert "" not in c.heading_path
    # and the empty heading is plain content, it does not cut a chunk either
    headings = chunk_markdown(text, ChunkerConfig(strategy="headings")).chunks
    assert len(headings) == 1 and headings[0].text.startswith("# Real")


def test_document_starting_with_bare_hash() -> None:
    text = "#\nTitle-ish line\n" + paragraph(40)
    chunks = check(text, chunk_markdown(text, SMALL), SMALL)
    assert all(c.heading_path == () for c in chunks)
    assert chunks[0].start_char == 0


def test_headings_inside_lists_and_quotes_do_not_split() -> None:
    text = "# Top\n- # item heading\n- x\n\n> # quoted\n> more\n\nend\n"
    chunks = chunk_markdown(text, ChunkerConfig(strategy="headings")).chunks
    assert [c.heading_path for c in chunks] == [("Top",)]


# ---------------------------------------------------------------------------
# Nothing is dropped; heading-only sections merge
# ---------------------------------------------------------------------------


def test_text_before_first_heading_is_kept_as_preamble() -> None:
    text = "Some intro that matters.\n\n# First\n" + paragraph(40) + "\n"
    chunks = check(text, chunk_markdown(text, SMALL), SMALL)
    assert chunks[0].heading_path == ()
    assert chunks[0].text == "Some intro that matters."
    assert chunks[1].heading_path == ("First",)


def test_front_matter_is_returned_and_belongs_to_the_first_chunk() -> None:
    text = (
        "---\n"
        "name: deploy notes\n"
        "description: 'How we deploy: carefully'\n"
        'type: "project"\n'
        "---\n"
        "# Deploy\n" + paragraph(60) + "\n"
    )
    result = chunk_markdown(text, SMALL)
    chunks = check(text, result, SMALL)
    assert result.front_matter == {
        "name": "deploy notes",
        "description": "How we deploy: carefully",
        "type": "project",
    }
    assert chunks[0].start_char == 0
    assert chunks[0].text.startswith("---\nname: deploy notes")
    # Front matter alone is no chunk: it opens the first section's chunk.
    assert chunks[0].heading_path == ("Deploy",)
    assert "# Deploy" in chunks[0].text
    # The front matter's closing '---' did not make 'type: ...' a setext heading.
    assert all("project" not in "".join(c.heading_path) for c in chunks)


def test_front_matter_returned_for_small_files_too() -> None:
    text = "---\nname: x\n---\nbody\n"
    result = chunk_markdown(text)
    assert result.front_matter == {"name": "x"}
    assert [c.text for c in result.chunks] == [text]


def test_front_matter_shallow_yaml() -> None:
    text = (
        "\ufeff---\r\n"
        "# a comment\r\n"
        "title: Plain value # trailing comment\r\n"
        'quoted: "say \\"hi\\""\r\n'
        "single: 'it''s'\r\n"
        "tags:\r\n"
        "  - one\r\n"
        "  - 'two'\r\n"
        "block: |\r\n"
        "  line 1\r\n"
        "  # not a comment\r\n"
        "folded: >\r\n"
        "  a\r\n"
        "  b\r\n"
        "multi: first\r\n"
        "  second\r\n"
        "empty:\r\n"
        "flow: [a, b]\r\n"
        "---\r\n"
        "body\r\n"
    )
    assert parse_front_matter(text) == {
        "title": "Plain value",
        "quoted": 'say "hi"',
        "single": "it's",
        "tags": "one, two",
        "block": "line 1\n# not a comment",
        "folded": "a b",
        "multi": "first second",
        "empty": "",
        "flow": "[a, b]",
    }


@pytest.mark.parametrize(
    "text",
    [
        "intro\n---\nname: x\n---\n",  # not at the start
        "---\nname: x\n",  # never closed
        "--- \n",  # a lone thematic break
        "----\nname: x\n----\n",  # not exactly three dashes
    ],
)
def test_not_front_matter(text: str) -> None:
    assert chunk_markdown(text).front_matter == {}


def test_headings_with_no_body_merge_into_the_next_section() -> None:
    text = "# A\n## B\ntext under b\n" + paragraph(40) + "\n# C\n" + paragraph(40) + "\n"
    chunks = check(text, chunk_markdown(text, SMALL), SMALL)
    assert chunks[0].text.startswith("# A\n## B\ntext under b")
    assert chunks[0].heading_path == ("A", "B")
    for c in chunks:
        lines = [ln for ln in c.text.splitlines() if ln.strip()]
        assert not all(ln.lstrip().startswith("#") for ln in lines), c.text


def test_trailing_heading_only_sections_join_the_previous_chunk() -> None:
    text = "# A\n" + paragraph(10) + "\n# B\n" + paragraph(10) + "\n## Empty\n\n### Also empty\n"
    chunks = check(text, chunk_markdown(text, ChunkerConfig(strategy="headings")))
    assert [c.heading_path for c in chunks] == [("A",), ("B",)]
    assert chunks[-1].text.endswith("### Also empty")


def test_file_of_only_headings_keeps_all_text() -> None:
    text = "".join(f"## Heading number {i}\n" for i in range(200))
    chunks = check(text, chunk_markdown(text, SMALL), SMALL)
    assert chunks and all(c.tokens <= 40 for c in chunks)
    assert chunks[0].start_char == 0 and chunks[-1].end_char == len(text.rstrip())


# ---------------------------------------------------------------------------
# Windows
# ---------------------------------------------------------------------------


def test_giant_section_is_windowed_with_bounded_overlap() -> None:
    cfg = ChunkerConfig(max_tokens=50, overlap_tokens=12)
    lines = [f"Line {i}: " + paragraph(4, f"w{i}_") for i in range(120)]
    text = "# Big\n" + "\n".join(lines) + "\n"
    chunks = check(text, chunk_markdown(text, cfg), cfg)
    assert len(chunks) > 5
    assert all(c.tokens <= 50 for c in chunks)
    assert all(c.heading_path == ("Big",) for c in chunks)
    for prev, cur in zip(chunks, chunks[1:], strict=False):
        assert cur.overlap_chars > 0
        shared = text[cur.start_char : prev.end_char]
        # At least the overlap, moved back to a line start within the cap.
        assert 12 - 2 <= estimate_tokens(shared) <= overlap_cap(cfg)
        assert cur.text.startswith("Line ")  # overlap snapped to a line start
        assert cur.end_char > prev.end_char
    assert chunks[0].text.startswith("# Big\n")


def test_overlap_is_inside_the_budget_not_added_on_top() -> None:
    cfg = ChunkerConfig(max_tokens=20, overlap_tokens=19)
    text = "# T\n" + "\n".join(paragraph(3) for _ in range(80))
    chunks = check(text, chunk_markdown(text, cfg), cfg)
    assert max(c.tokens for c in chunks) <= 20


def test_zero_overlap_windows_do_not_overlap() -> None:
    cfg = ChunkerConfig(max_tokens=30, overlap_tokens=0)
    text = "\n".join(paragraph(5) for _ in range(100))
    chunks = check(text, chunk_markdown(text, cfg), cfg)
    assert all(c.overlap_chars == 0 for c in chunks)
    assert "".join(c.text for c in chunks).replace("\n", "") == text.replace("\n", "")


def test_one_giant_code_block_is_windowed_and_keeps_its_heading() -> None:
    body = "\n".join(f"# comment {i}\nvalue_{i} = {i}" for i in range(300))
    text = "# Code\n\n```python\n" + body + "\n```\n"
    chunks = check(text, chunk_markdown(text, SMALL), SMALL)
    assert len(chunks) > 10
    assert all(c.heading_path == ("Code",) for c in chunks)
    assert all(c.tokens <= 40 for c in chunks)


def test_one_giant_line_without_spaces_is_still_split() -> None:
    text = "# H\n" + "x" * 10_000
    cfg = ChunkerConfig(max_tokens=100, overlap_tokens=20)
    chunks = check(text, chunk_markdown(text, cfg), cfg)
    assert len(chunks) > 20
    assert all(c.tokens <= 100 for c in chunks)
    assert chunks[0].text.startswith("# H\nxxx")  # no lone heading window
    covered = set()
    for c in chunks:
        covered.update(range(c.start_char, c.end_char))
    assert covered == set(range(len(text)))


def test_giant_line_with_spaces_is_cut_after_whitespace() -> None:
    text = paragraph(2000)
    cfg = ChunkerConfig(max_tokens=60, overlap_tokens=10)
    chunks = check(text, chunk_markdown(text, cfg), cfg)
    for c in chunks:
        assert re.fullmatch(r"(word\d+ ?)+", c.text), c.text


def test_windows_never_split_crlf() -> None:
    text = "".join("ab\r\n" for _ in range(500))
    for max_tokens in (3, 5, 7, 11):
        cfg = ChunkerConfig(strategy="windows", max_tokens=max_tokens, overlap_tokens=1)
        for c in check(text, chunk_markdown(text, cfg), cfg):
            assert not c.text.startswith("\n")
            assert c.start_char == 0 or text[c.start_char - 1 : c.start_char + 1] != "\r\n"
            assert text[c.end_char - 1 : c.end_char + 1] != "\r\n"


def test_tiny_budget_still_terminates() -> None:
    cfg = ChunkerConfig(max_tokens=1, overlap_tokens=0)
    text = "# A\n" + "abc def\r\n" * 20
    chunks = check(text, chunk_markdown(text, cfg), cfg)
    assert all(c.tokens <= 1 for c in chunks)


# ---------------------------------------------------------------------------
# Index files
# ---------------------------------------------------------------------------

LINK = re.compile(r"\[[^\]\n]*\]\([^)\n]*\)")


def memory_index(items: int) -> str:
    lines = ["# Memory index", ""]
    for i in range(items):
        lines.append(f"- [Topic {i}](topics/topic-{i}.md) — what topic {i} is about, briefly")
        if i % 7 == 0:
            lines.append(f"  continued description of topic {i}")
    return "\n".join(lines) + "\n"


def test_small_index_file_is_one_chunk() -> None:
    text = memory_index(5)
    (only,) = chunk_markdown(text, path="proj/memory/MEMORY.md").chunks
    assert only.text == text


def test_large_index_file_splits_only_between_items_with_links_intact() -> None:
    text = memory_index(200)
    cfg = ChunkerConfig(max_tokens=120, overlap_tokens=30)
    chunks = check(text, chunk_markdown(text, cfg, path="memory/MEMORY.md"), cfg)
    assert len(chunks) > 5
    for c in chunks:
        assert c.tokens <= 120
        assert c.start_char == 0 or text[c.start_char - 1] == "\n"
        assert c.text.startswith(("- [", "# ")), c.text[:30]
        for cut in (c.start_char, c.end_char):
            for m in LINK.finditer(text):
                assert not m.start() < cut < m.end()
    # every link appears whole in some chunk
    for m in LINK.finditer(text):
        assert any(c.start_char <= m.start() and m.end() <= c.end_char for c in chunks)


def test_index_detection_uses_the_basename_and_config() -> None:
    text = memory_index(200)
    cfg = ChunkerConfig(max_tokens=120, overlap_tokens=30, index_names=("INDEX.md",))
    as_index = chunk_markdown(text, cfg, path="a\\b\\INDEX.md").chunks
    assert all(c.text.startswith(("- [", "# ")) for c in as_index)
    assert chunk_markdown(text, cfg, path="MEMORY.md") == chunk_markdown(text, cfg)


def test_index_file_giant_line_is_cut_outside_links() -> None:
    text = "# Index\n" + " ".join(f"[topic number {i}](t/{i}.md)" for i in range(300))
    cfg = ChunkerConfig(max_tokens=60, overlap_tokens=15)
    chunks = check(text, chunk_markdown(text, cfg, path="MEMORY.md"), cfg)
    assert all(c.tokens <= 60 for c in chunks)
    for c in chunks:
        for cut in (c.start_char, c.end_char):
            for m in LINK.finditer(text):
                assert not m.start() < cut < m.end()


# ---------------------------------------------------------------------------
# Exact spans
# ---------------------------------------------------------------------------


def test_crlf_spans_are_exact() -> None:
    text = "# A\r\n" + paragraph(30) + "\r\n\r\n## B\r\n" + paragraph(30) + "\r\n```\r\n# x\r\n```\r\n"
    chunks = check(text, chunk_markdown(text, SMALL), SMALL)
    assert [c.heading_path for c in chunks][0] == ("A",)
    assert any(c.heading_path == ("A", "B") and c.text.startswith("## B\r\n") for c in chunks)
    assert all(not c.text.endswith("\r") for c in chunks)


def test_lone_cr_line_endings() -> None:
    text = "# A\r" + paragraph(30) + "\r\r## B\r" + paragraph(30) + "\r"
    chunks = check(text, chunk_markdown(text, SMALL), SMALL)
    assert any(c.text.startswith("## B\r") and c.heading_path == ("A", "B") for c in chunks)


def test_mixed_line_endings() -> None:
    text = "# A\n" + paragraph(20) + "\r\n# B\r" + paragraph(20) + "\n\r# C\r\n" + paragraph(20)
    chunks = check(text, chunk_markdown(text, SMALL), SMALL)
    starts = {c.heading_path[-1]: c.text[:3] for c in chunks if c.heading_path}
    assert starts == {"A": "# A", "B": "# B", "C": "# C"}


def test_leading_bom_is_kept_and_does_not_hide_the_first_heading() -> None:
    text = "\ufeff# Title\n" + paragraph(60) + "\n"
    chunks = check(text, chunk_markdown(text, SMALL), SMALL)
    assert chunks[0].start_char == 0 and chunks[0].start_byte == 0
    assert chunks[0].text.startswith("\ufeff# Title")
    assert chunks[0].heading_path == ("Title",)


def test_bom_with_front_matter() -> None:
    text = "\ufeff---\nname: n\n---\n# T\n" + paragraph(60)
    result = chunk_markdown(text, SMALL)
    assert result.front_matter == {"name": "n"}
    chunks = check(text, result, SMALL)
    assert chunks[0].text.startswith("\ufeff---")


def test_cjk_emoji_tabs_and_nul_keep_exact_byte_spans() -> None:
    line = "記憶の断片 🧠 memória\tçà — 👩‍👩‍👧 \x00 end"
    text = "# 日本語の見出し 🎌\n" + "\n".join(line for _ in range(60)) + "\n## 第二 😀\n" + line
    cfg = ChunkerConfig(max_tokens=30, overlap_tokens=8)
    chunks = check(text, chunk_markdown(text, cfg), cfg)
    assert chunks[0].heading_path == ("日本語の見出し 🎌",)
    assert chunks[-1].heading_path == ("日本語の見出し 🎌", "第二 😀")
    assert any(c.start_byte != c.start_char for c in chunks)


def test_giant_cjk_line_without_spaces() -> None:
    text = "記憶" * 3000
    cfg = ChunkerConfig(max_tokens=50, overlap_tokens=10)
    chunks = check(text, chunk_markdown(text, cfg), cfg)
    assert all(c.tokens <= 50 for c in chunks)
    assert all(c.start_byte % 3 == 0 for c in chunks)


# ---------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------

DOC = (
    "---\nname: doc\n---\nPreamble text.\n\n# One\n"
    + paragraph(50)
    + "\n\n## Two\n"
    + paragraph(200)
    + "\n# Three\nshort\n"
)


def test_whole_strategy() -> None:
    (only,) = check(DOC, chunk_markdown(DOC, ChunkerConfig(strategy="whole")))
    assert only.text == DOC and only.heading_path == ()


def test_headings_strategy_has_no_size_bound() -> None:
    cfg = ChunkerConfig(strategy="headings", max_tokens=20, overlap_tokens=5)
    chunks = check(DOC, chunk_markdown(DOC, cfg), cfg)
    assert [c.heading_path for c in chunks] == [(), ("One",), ("One", "Two"), ("Three",)]
    assert chunks[2].tokens > 20
    assert all(c.overlap_chars == 0 for c in chunks)


def test_windows_strategy_ignores_structure() -> None:
    cfg = ChunkerConfig(strategy="windows", max_tokens=60, overlap_tokens=10)
    result = chunk_markdown(DOC, cfg)
    chunks = check(DOC, result, cfg)
    assert all(c.heading_path == () for c in chunks)
    assert all(c.tokens <= 60 for c in chunks)
    assert result.front_matter == {"name": "doc"}
    assert result.parser == "none"


def test_adaptive_strategy() -> None:
    cfg = ChunkerConfig(max_tokens=120, overlap_tokens=20)
    result = chunk_markdown(DOC, cfg)
    chunks = check(DOC, result, cfg)
    assert result.parser == "markdown-it"
    # Front matter opens the first section's chunk instead of being a chunk of its own.
    assert chunks[0].text.startswith("---\nname: doc") and chunks[0].heading_path != ()
    assert [c.heading_path for c in chunks].count(("One", "Two")) > 1
    assert all(c.tokens <= 120 for c in chunks)


def test_deterministic() -> None:
    cfg = ChunkerConfig(max_tokens=50, overlap_tokens=10)
    assert chunk_markdown(DOC, cfg) == chunk_markdown(DOC, cfg)
    assert chunk_markdown(DOC, cfg) == chunk_markdown(DOC, ChunkerConfig.from_json(cfg.canonical_json()))


def test_words_estimator() -> None:
    cfg = ChunkerConfig(max_tokens=40, overlap_tokens=10, estimator="words")
    chunks = check(DOC, chunk_markdown(DOC, cfg), cfg)
    assert all(c.tokens <= 40 for c in chunks)
    assert len(chunks) > 3


# ---------------------------------------------------------------------------
# Fallback parsing and pathological input
# ---------------------------------------------------------------------------

FALLBACK_DOCS = [
    DOC,
    "# A\n```\n# no\n```\nx\n## B ##\ny\n    # code\n\nSetext\n===\nz\nAlso\nmulti\n---\nw\n",
    "# A\n- item\nlazy\n---\ntext\n\n- item\n===\n\n~~~~\n# in tilde\n~~~\n# still in\n~~~~\n# Out\n",
    "#\nnot heading\n# ###\nx\n####### seven\n#hashtag\n\tTab # x\n   # three spaces\nq\n",
    "```\nunclosed\n# inside\n",
    "a\r\nb\r\n===\r\n# C\rd\r---\r",
    "\ufeff# A\nbody\n# B\nx\n",
    "\ufeffSetext\n===\nbody\n",
    "---\nname: x\n---\nTitle\n---\nbody\n# Two\nmore\n",
]


@pytest.mark.parametrize("text", FALLBACK_DOCS)
def test_line_scan_fallback_agrees_with_markdown_it(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = ChunkerConfig(strategy="headings")
    expected = chunk_markdown(text, cfg)
    monkeypatch.setattr(chunking, "PARSE_LIMIT_CHARS", 0)
    got = chunk_markdown(text, cfg)
    assert got.parser == "line-scan" and expected.parser == "markdown-it"
    assert got.chunks == expected.chunks


def test_recursion_error_falls_back_to_line_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(body: str, offset: int) -> list[tuple[int, int, int, str]]:
        raise RecursionError

    monkeypatch.setattr(chunking, "_headings_markdown_it", boom)
    result = chunk_markdown(DOC, SMALL)
    assert result.parser == "line-scan"
    assert {c.heading_path for c in result.chunks} == {(), ("One",), ("One", "Two"), ("Three",)}


@pytest.mark.parametrize(
    "text",
    [
        "".join("  " * i + "- item\n" for i in range(1000)),
        "".join(">" * i + " quote\n" for i in range(1000)),
        "".join(f"{'#' * (i % 6 + 1)} H{i}\nbody\n" for i in range(10_000)),
        "line of text\n" * 100_000,
        "[" * 50_000 + "]" * 50_000,
        "*" * 100_000,
    ],
    ids=["deep-lists", "deep-quotes", "10k-headings", "100k-lines", "brackets", "stars"],
)
def test_pathological_inputs_finish(text: str) -> None:
    chunks = check(text, chunk_markdown(text))
    assert chunks and all(c.tokens <= 400 for c in chunks)


# ---------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"strategy": "paragraphs"}, "strategy"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": -5}, "max_tokens"),
        ({"max_tokens": 10.5}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"),
        ({"overlap_tokens": -1}, "overlap_tokens"),
        ({"overlap_tokens": 400}, "overlap_tokens"),
        ({"max_tokens": 50, "overlap_tokens": 60}, "overlap_tokens"),
        ({"min_tokens": -1}, "min_tokens"),
        ({"min_tokens": "50"}, "min_tokens"),
        ({"min_tokens": True}, "min_tokens"),
        ({"estimator": "tiktoken"}, "estimator"),
        ({"index_names": ("",)}, "index_names"),
        ({"index_names": "MEMORY.md"}, "index_names"),
        ({"index_names": ("a/MEMORY.md",)}, "index_names"),
    ],
)
def test_invalid_config_names_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ChunkerConfigError) as info:
        ChunkerConfig(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == field
    assert field in str(info.value)
    assert isinstance(info.value, ValueError)


def test_canonical_json_round_trip() -> None:
    cfg = ChunkerConfig(
        strategy="windows", max_tokens=123, overlap_tokens=7, index_names=("MEMORY.md", "INDEX.md")
    )
    js = cfg.canonical_json()
    assert " " not in js
    data = json.loads(js)
    assert list(data) == sorted(data)
    assert data["name"] == CHUNKER_NAME and data["version"] == CHUNKER_VERSION
    assert isinstance(CHUNKER_VERSION, int)
    assert ChunkerConfig.from_json(js) == cfg
    assert ChunkerConfig.from_dict(data) == cfg
    assert ChunkerConfig.from_json(js).canonical_json() == js
    assert DEFAULT_CONFIG.canonical_json() == (
        '{"estimator":"chars4","index_names":["MEMORY.md"],"max_tokens":400,"min_tokens":50,'
        f'"name":"memlens-markdown","overlap_tokens":80,"strategy":"adaptive","version":{CHUNKER_VERSION}}}'
    )
    assert ChunkerConfig.from_dict({}) == DEFAULT_CONFIG
    assert ChunkerConfig(index_names=["A.md"]) == ChunkerConfig(index_names=("A.md",))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("not json", "config"),
        ("[1, 2]", "config"),
        ('{"name": "other-chunker"}', "name"),
        ('{"version": "1"}', "version"),
        ('{"max_tokens": 10, "bogus": 1}', "bogus"),
        ('{"index_names": "MEMORY.md"}', "index_names"),
        ('{"max_tokens": 100, "overlap_tokens": 100}', "overlap_tokens"),
    ],
)
def test_from_json_errors(text: str, field: str) -> None:
    with pytest.raises(ChunkerConfigError) as info:
        ChunkerConfig.from_json(text)
    assert info.value.field == field


def test_config_is_frozen() -> None:
    with pytest.raises(AttributeError):
        DEFAULT_CONFIG.max_tokens = 5  # type: ignore[misc]


def test_text_must_be_str() -> None:
    with pytest.raises(TypeError):
        chunk_markdown(b"# bytes")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# Token estimators
# ---------------------------------------------------------------------------


def test_chars4_estimator() -> None:
    est = get_estimator("chars4")
    assert [est(x) for x in ("", "a", "abcd", "abcde", "x" * 400)] == [0, 1, 1, 2, 100]
    assert estimate_tokens("abcdefgh") == 2
    assert "not model tokenization" in (Chars4Estimator.__doc__ or "").lower()


def test_words_estimator_values() -> None:
    est = get_estimator("words")
    assert [est(x) for x in ("", "   ", "one", "one two", "a b c d e f g h i j")] == [0, 0, 2, 3, 13]


def test_unknown_estimator() -> None:
    with pytest.raises(UnknownEstimatorError, match="chars4"):
        get_estimator("nope")


def test_register_estimator() -> None:
    class Double(Chars4Estimator):
        name = "test-double"

        def __call__(self, text: str) -> int:
            return 2 * super().__call__(text)

        def span_cost(self, text: str):  # type: ignore[no-untyped-def]
            return super(Chars4Estimator, self).span_cost(text)  # generic slice-based costs

    register_estimator(Double())
    try:
        with pytest.raises(ValueError):
            register_estimator(Double())
        cfg = ChunkerConfig(estimator="test-double", max_tokens=30, overlap_tokens=5)
        chunks = check(DOC, chunk_markdown(DOC, cfg), cfg)
        assert all(c.tokens <= 30 for c in chunks)
    finally:
        ESTIMATORS.pop("test-double", None)


# ---------------------------------------------------------------------------
# The bundled corpus: windows overlap, no front-matter-only or heading-only chunk
# ---------------------------------------------------------------------------

_CORPUS = Path(__file__).resolve().parent.parent / "corpus"
_CORPUS_FILES = sorted(p for p in _CORPUS.glob("*/memory/**/*.md"))


@pytest.mark.parametrize(("max_tokens", "overlap"), [(120, 24), (400, 80)])
def test_corpus_windows_overlap_and_no_empty_chunks(max_tokens: int, overlap: int) -> None:
    assert len(_CORPUS_FILES) > 30
    cfg = ChunkerConfig(max_tokens=max_tokens, overlap_tokens=overlap)
    windows = 0
    for f in _CORPUS_FILES:
        text = f.read_text(encoding="utf-8")
        res = chunk_markdown(text, cfg, path=f.name)
        for prev, cur in zip(res.chunks, res.chunks[1:], strict=False):
            if cur.reason.startswith("window ") and not cur.reason.startswith("window 1/"):
                windows += 1
                assert cur.overlap_chars > 0, (f.name, cur.ordinal)
                assert estimate_tokens(text[cur.start_char:prev.end_char]) >= overlap - 2
        for c in res.chunks:
            body = [ln for ln in c.text.splitlines() if ln.strip()]
            fm = c.text.startswith("---") and c.text.rstrip().endswith("---")
            assert not fm, f"{f.name} #{c.ordinal} is front matter alone"
            assert not all(ln.lstrip().startswith("#") for ln in body), \
                f"{f.name} #{c.ordinal} is headings only"
            assert c.reason, (f.name, c.ordinal)
    assert windows > 0  # the corpus has over-long sections at these budgets


def test_overlap_close_to_the_budget_never_exceeds_it() -> None:
    """An overlap of 30 of 31 tokens left the next window no room for new text; it used
    to take one more character anyway (a 32-token window starting inside a word, found by
    hypothesis). Now it repeats less instead."""
    text = "# alpha\n" + "ab " * 24 + "\n"
    cfg = ChunkerConfig(strategy="adaptive", max_tokens=31, overlap_tokens=30,
                        estimator="words")
    for path in (None, "memory/MEMORY.md"):
        chunks = chunk_markdown(text, cfg, path=path).chunks
        assert chunks and all(c.tokens <= 31 for c in chunks)
        assert chunks[-1].end_char >= len(text.rstrip())
        starts = [c.start_char for c in chunks]
        assert starts == sorted(set(starts))
