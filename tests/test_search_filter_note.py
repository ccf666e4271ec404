"""Issue 42, item 6: `memlens search retry --type feedback` said "no word of the query
occurs in memory" though the word occurs, only not in that type. Under a filter the note
says where it looked: "in the documents this filter keeps"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli

HASHING = {"MEMLENS_EMBEDDER": "hashing"}
FILTERED = "no word of the query occurs in the documents this filter keeps"
ANYWHERE = "no word of the query occurs in memory"


@pytest.fixture
def db(tmp_path: Path) -> str:
    """`retry` occurs in alpha's project note only; beta holds a feedback note."""
    projects = tmp_path / "projects"
    for repo, name, text in (
            ("-home-dev-alpha", "workers.md",
             "---\ntype: project\n---\n# Workers\n\nA failed job goes to retry with back-off.\n"),
            ("-home-dev-beta", "feedback.md",
             "---\ntype: feedback\n---\n# Feedback\n\nThe user wants shorter answers.\n")):
        mem = projects / repo / "memory"
        mem.mkdir(parents=True)
        (mem / name).write_text(text, encoding="utf-8")
    path = str(tmp_path / "m.db")
    proc = run_cli("ingest", str(projects), "--db", path, env=HASHING)
    assert proc.returncode == 0, proc.stderr
    return path


def _search(db: str, *args: str) -> tuple[dict[str, Any], str]:
    as_json = run_cli("search", "retry", "--db", db, "--json", *args, env=HASHING)
    assert as_json.returncode == 0, as_json.stderr
    text = run_cli("search", "retry", "--db", db, *args, env=HASHING)
    assert text.returncode == 0, text.stderr
    return json.loads(as_json.stdout), text.stderr


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
@pytest.mark.parametrize("scope", [("--type", "feedback"), ("--repository", "-home-dev-beta")])
def test_a_filtered_search_says_where_no_word_occurs(db: str, mode: str,
                                                     scope: tuple[str, str]) -> None:
    res, stderr = _search(db, "--mode", mode, *scope)
    assert res["matches"] == 0 and res["hits"]
    assert any(n.startswith(FILTERED) for n in res["notes"]), res["notes"]
    assert not any(ANYWHERE in n for n in res["notes"])
    assert FILTERED in stderr and ANYWHERE not in stderr


def test_without_a_filter_the_word_is_found(db: str) -> None:
    res, _ = _search(db)
    assert res["matches"] >= 1
    nothing = run_cli("search", "zebraquokka", "--db", db, "--json", env=HASHING)
    notes = json.loads(nothing.stdout)["notes"]
    assert any(n.startswith(ANYWHERE) for n in notes), notes
