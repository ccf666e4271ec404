"""A manual rechunk sticks: later edits, re-ingests and restarts keep the chosen
chunker settings (document > repository > all documents > settings); reset forgets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memlens.core.chunking.chunker import ChunkerConfig
from memlens.core.ingest.sources import roots_for_path
from tests.conftest import run_cli

WINDOWS = ChunkerConfig.from_dict({"strategy": "windows", "max_tokens": 60, "overlap_tokens": 12})
LONG = "# Notes\n\n" + "\n\n".join(f"Paragraph {i} about the deploy pipeline and its "
                                     f"rollback steps, number {i}." for i in range(40)) + "\n"


def _ingest(svc: Any, tree: Any) -> Any:
    return svc.ingest(roots_for_path(tree.projects))


def _cfg(svc: Any, path: str, repo: str = "-home-dev-proj") -> dict[str, Any]:
    doc = svc.locate(repo, path)
    assert doc is not None
    rev = svc.revisions(doc.id)[0]
    assert rev.chunker.config is not None
    return dict(rev.chunker.config.as_json())


def test_document_choice_survives_an_edit_and_a_restart(make_service: Any, tree: Any) -> None:
    tree.write("a.md", LONG)
    tree.write("b.md", LONG.replace("deploy", "release"))
    svc = make_service()
    _ingest(svc, tree)
    a = svc.locate("-home-dev-proj", "a.md")
    assert a is not None
    out = svc.rechunk_and_project([a.id], WINDOWS)
    assert out.changed == (a.id,)
    eff = svc.effective_chunker(a.id)
    assert eff.origin == "document" and eff.config == WINDOWS
    assert "this document" in eff.label
    # Claude rewrites the file: the update keeps windows/60/12.
    tree.write("a.md", LONG + "\nOne more line.\n")
    _ingest(svc, tree)
    revs = svc.revisions(a.id)
    assert revs[0].change_kind == "update"
    assert _cfg(svc, "a.md")["strategy"] == "windows"
    assert _cfg(svc, "b.md")["strategy"] == "adaptive"  # the other file is untouched
    svc.close()
    # A restart (a new service over the same file) keeps it too.
    svc2 = make_service()
    tree.write("a.md", LONG + "\nTwo more lines.\n")
    _ingest(svc2, tree)
    assert _cfg(svc2, "a.md")["strategy"] == "windows"
    assert svc2.effective_chunker(a.id).origin == "document"
    # Reset: back to the settings, and the document is rechunked with them.
    reset = svc2.reset_chunker(a.id)
    assert reset.changed == (a.id,)
    assert svc2.effective_chunker(a.id).origin == "settings"
    assert _cfg(svc2, "a.md")["strategy"] == "adaptive"
    assert svc2.doctor()[1] == []


def test_scopes_and_precedence(make_service: Any, tree: Any) -> None:
    tree.write("a.md", LONG)
    tree.write("b.md", LONG, slug="-home-dev-other")
    svc = make_service()
    _ingest(svc, tree)
    a = svc.locate("-home-dev-proj", "a.md")
    b = svc.locate("-home-dev-other", "b.md")
    assert a is not None and b is not None
    whole = ChunkerConfig.from_dict({"strategy": "whole"})
    svc.rechunk_and_project(None, whole)  # all documents
    assert svc.effective_chunker(a.id).origin == svc.effective_chunker(b.id).origin == "all"
    svc.rechunk_and_project(None, WINDOWS, repository="-home-dev-other")
    assert svc.effective_chunker(b.id).origin == "repository"
    assert svc.effective_chunker(a.id).config == whole
    svc.rechunk_and_project([a.id], WINDOWS)
    assert svc.effective_chunker(a.id).origin == "document"
    # A broader rechunk replaces the narrower choices it covers.
    svc.rechunk_and_project(None, whole)
    assert svc.effective_chunker(a.id).origin == "all"
    assert svc.effective_chunker(b.id).origin == "all"
    # A new file in any repository picks up the all-documents choice.
    tree.write("c.md", LONG, slug="-home-dev-other")
    _ingest(svc, tree)
    assert _cfg(svc, "c.md", "-home-dev-other")["strategy"] == "whole"
    svc.reset_chunker(None)
    assert svc.effective_chunker(a.id).origin == "settings"
    assert [c[0] for c in svc.chunker_choices()] == []


def test_not_remembered_when_asked(make_service: Any, tree: Any) -> None:
    tree.write("a.md", LONG)
    svc = make_service()
    _ingest(svc, tree)
    a = svc.locate("-home-dev-proj", "a.md")
    assert a is not None
    svc.rechunk_and_project([a.id], WINDOWS, remember=False)
    assert svc.effective_chunker(a.id).origin == "settings"


def test_rechunk_summary_is_labels_not_json(make_service: Any, tree: Any) -> None:
    tree.write("a.md", LONG)
    svc = make_service()
    _ingest(svc, tree)
    a = svc.locate("-home-dev-proj", "a.md")
    assert a is not None
    svc.rechunk_and_project([a.id], WINDOWS)
    before = svc.revisions(a.id)[1]
    assert before.summary == "rechunked: adaptive/400/80 → windows/60/12"


def test_cli_rechunk_sticks_and_resets(tmp_path: Path, tree: Any) -> None:
    env = {"MEMLENS_EMBEDDER": "hashing"}
    tree.write("a.md", LONG)
    db = str(tmp_path / "m.db")
    assert run_cli("ingest", str(tree.projects), "--db", db, env=env).returncode == 0
    r = run_cli("rechunk", "a.md", "--strategy", "windows", "--max-tokens", "60", "--overlap",
                "12", "--db", db, "--json", env=env)
    assert r.returncode == 0, r.stderr
    tree.write("a.md", LONG + "\nEdited.\n")
    assert run_cli("ingest", str(tree.projects), "--db", db, env=env).returncode == 0
    hist = json.loads(run_cli("history", "a.md", "--db", db, "--json", env=env).stdout)
    newest = hist["revisions"][0]
    assert newest["change_kind"] == "update"
    assert newest["chunker"]["config"]["strategy"] == "windows"
    cfg = json.loads(run_cli("config", "--db", db, "--json", env=env).stdout)
    assert [(c["scope"], c["target"]) for c in cfg["chunker_choices"]] == [
        ("document", "-home-dev-proj/a.md")]
    text = run_cli("config", "--db", db, env=env).stdout
    assert "chunker for -home-dev-proj/a.md = windows/60/12" in text
    r = run_cli("rechunk", "a.md", "--reset", "--db", db, "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["rechunked"] == 1
    cfg = json.loads(run_cli("config", "--db", db, "--json", env=env).stdout)
    assert cfg["chunker_choices"] == []


def test_a_broad_reset_forgets_the_narrower_choices_it_covers(make_service: Any, tree: Any) -> None:
    """`rechunk --all --reset` left a repository's remembered choice in place (it forgot
    only the all-documents one, of which there was none) and said "0 rechunked"; a reset
    now covers what the same rechunk would have replaced, as `remember` does."""
    tree.write("a.md", LONG)
    tree.write("b.md", LONG, slug="-home-dev-other")
    tree.write("c.md", LONG, slug="-home-dev-other")
    svc = make_service()
    _ingest(svc, tree)
    a = svc.locate("-home-dev-proj", "a.md")
    b = svc.locate("-home-dev-other", "b.md")
    c = svc.locate("-home-dev-other", "c.md")
    assert a is not None and b is not None and c is not None
    svc.rechunk_and_project(None, WINDOWS, repository="-home-dev-other")
    svc.rechunk_and_project([c.id], ChunkerConfig.from_dict({"strategy": "whole"}))
    svc.rechunk_and_project([a.id], WINDOWS)
    # The repository's reset forgets its documents' choices too, not other repositories'.
    out = svc.reset_chunker(repository="-home-dev-other")
    assert set(out.changed) == {b.id, c.id}
    assert svc.effective_chunker(b.id).origin == svc.effective_chunker(c.id).origin == "settings"
    assert svc.effective_chunker(a.id).origin == "document"
    svc.rechunk_and_project(None, WINDOWS, repository="-home-dev-other")
    every = svc.reset_chunker(None)
    assert set(every.changed) == {a.id, b.id, c.id}
    assert svc.chunker_choices() == []
    assert all(_cfg(svc, p, r)["strategy"] == "adaptive" for p, r in
               (("a.md", "-home-dev-proj"), ("b.md", "-home-dev-other"), ("c.md", "-home-dev-other")))


def test_cli_all_reset_rechunks_what_a_repository_choice_held(tmp_path: Path) -> None:
    mem = tmp_path / "proj" / "memory"
    mem.mkdir(parents=True)
    (mem / "a.md").write_text(LONG)
    db = str(tmp_path / "m.db")
    env = {"MEMLENS_EMBEDDER": "hashing"}
    assert run_cli("ingest", str(tmp_path / "proj"), "--db", db, env=env).returncode == 0
    r = run_cli("rechunk", "--all", "--repository", "proj", "--strategy", "windows",
                "--max-tokens", "60", "--overlap", "12", "--db", db, env=env)
    assert r.returncode == 0, r.stderr
    reset = run_cli("rechunk", "--all", "--reset", "--db", db, "--json", env=env)
    assert reset.returncode == 0, reset.stderr
    assert json.loads(reset.stdout)["rechunked"] == 1
    shown = run_cli("config", "--db", db, env=env).stdout
    assert "chunker for" not in shown
