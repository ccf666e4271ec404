"""Structure checks for the held-out validation corpus (corpus_validation/).

The validation set is for reporting only — never tune on it. These tests only
check that it is well formed and that every query label points at something
that exists; they say nothing about search quality.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "corpus_validation"
QUERIES = ROOT / "queries.jsonl"
KEYS = {"id", "query", "kind", "repository", "path", "heading"}
KIND_COUNTS = {"lexical": 30, "paraphrase": 30, "heading": 10, "code": 10}
FRONT_MATTER_KEYS = {"name", "description", "type"}
TYPES = {"user", "feedback", "project", "reference"}
INDEX_LINE = re.compile(r"^- \[([^\]]+)\]\(([^)]+)\) — \S")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


def _projects() -> list[Path]:
    return sorted(p for p in ROOT.iterdir() if p.is_dir())


def _topic_files() -> list[Path]:
    return sorted(f for proj in _projects() for f in (proj / "memory").rglob("*.md") if f.name != "MEMORY.md")


def _queries() -> list[dict]:
    return [json.loads(line) for line in QUERIES.read_text(encoding="utf-8").splitlines() if line.strip()]


def _split_front_matter(text: str) -> tuple[dict[str, str] | None, str]:
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return None, text
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            fm: dict[str, str] = {}
            for raw in lines[1:i]:
                if raw.strip():
                    key, sep, value = raw.partition(":")
                    assert sep, f"front matter line without ':': {raw!r}"
                    fm[key.strip()] = value.strip()
            return fm, "\n".join(lines[i + 1 :])
    return None, text


def headings(text: str) -> list[str]:
    """ATX and setext heading titles outside fenced code blocks."""
    _, body = _split_front_matter(text)
    out: list[str] = []
    fence: str | None = None
    prev = ""
    for line in body.split("\n"):
        m = FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            prev = ""
            continue
        if m:
            fence = m.group(1)
            prev = ""
            continue
        a = ATX.match(line)
        if a:
            out.append(a.group(2).strip())
        elif SETEXT.match(line) and prev.strip() and not prev.lstrip().startswith(("-", "*", "|", ">")):
            out.append(prev.strip())
        prev = line
    return out


def test_layout() -> None:
    projects = _projects()
    assert len(projects) == 4
    for proj in projects:
        assert re.fullmatch(r"-(home|Users)-[a-z]+-[a-z]+-[a-z0-9-]+", proj.name), proj.name
        assert (proj / "memory" / "MEMORY.md").is_file()
    assert (ROOT / "README.md").is_file()
    total = sum(1 for proj in projects for _ in (proj / "memory").rglob("*.md"))
    assert 45 <= total <= 55
    assert any((proj / "memory" / "notes").is_dir() for proj in projects)


def test_queries_parse_with_exact_keys() -> None:
    for n, line in enumerate(QUERIES.read_text(encoding="utf-8").splitlines(), 1):
        assert line.strip(), f"blank line {n}"
        row = json.loads(line)
        assert set(row) == KEYS, f"line {n}: {sorted(row)}"
        assert isinstance(row["query"], str) and row["query"].strip()
        assert row["kind"] in KIND_COUNTS
        assert row["heading"] is None or (isinstance(row["heading"], str) and row["heading"])


def test_ids_unique_and_kind_counts() -> None:
    rows = _queries()
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)) == 80
    assert all(re.fullmatch(r"v\d{3}", i) for i in ids)
    assert Counter(r["kind"] for r in rows) == KIND_COUNTS
    assert len({r["query"] for r in rows}) == 80


@pytest.mark.parametrize("row", _queries(), ids=lambda r: r["id"])
def test_query_target_exists(row: dict) -> None:
    assert "\\" not in row["path"] and not row["path"].startswith("/")
    target = ROOT / row["repository"] / "memory" / row["path"]
    assert target.is_file(), target
    assert target.name != "MEMORY.md"
    text = target.read_text(encoding="utf-8")
    if row["heading"] is not None:
        assert row["heading"] in headings(text), f"{row['heading']!r} not a heading in {target}"
    if row["kind"] == "heading":
        assert row["heading"] is not None
    if row["kind"] == "code":
        assert "```" in text


def test_every_project_is_targeted() -> None:
    assert {r["repository"] for r in _queries()} == {p.name for p in _projects()}


@pytest.mark.parametrize("path", _topic_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_topic_front_matter(path: Path) -> None:
    fm, body = _split_front_matter(path.read_text(encoding="utf-8"))
    assert fm is not None, f"no front matter in {path}"
    assert set(fm) == FRONT_MATTER_KEYS
    assert fm["type"] in TYPES
    assert fm["name"] and fm["description"]
    assert body.strip()


@pytest.mark.parametrize("proj", _projects(), ids=lambda p: p.name)
def test_memory_index_links_resolve(proj: Path) -> None:
    mem = proj / "memory"
    links = []
    for line in (mem / "MEMORY.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("- "):
            m = INDEX_LINE.match(line)
            assert m, f"bad index line: {line!r}"
            links.append(m.group(2))
    assert links
    for link in links:
        assert (mem / link).is_file(), f"{proj.name}: broken link {link}"
    linked = {(mem / link).resolve() for link in links}
    topics = {f.resolve() for f in mem.rglob("*.md") if f.name != "MEMORY.md"}
    assert topics == linked, f"unlinked or missing: {topics ^ linked}"


def test_headings_helper_ignores_fenced_comments() -> None:
    text = "---\nname: a\ndescription: b\ntype: user\n---\n# T\n```bash\n# not a heading\n```\nSub\n---\n"
    assert headings(text) == ["T", "Sub"]
