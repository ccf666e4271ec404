"""The typed door: what MemoryService returns, typed settings, and CLI flags on every command."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from memlens.cli.main import COMMANDS, load
from memlens.core.service import MemoryService, load_settings
from memlens.core.types import (
    ChunkerConfig,
    DocumentDetail,
    DocumentSummary,
    Revision,
    Stats,
)
from memlens.watch.events import WatchEvent
from tests.conftest import MemoryTree, run_cli

ALPHA = "# Alpha\n\nfirst body text about sqlite.\n\n## Beta\n\nsecond part.\n"


def _svc(make_service: Callable[..., object], tree: MemoryTree) -> MemoryService:
    tree.write("a.md", ALPHA)
    svc = make_service()
    assert isinstance(svc, MemoryService)
    svc.start_up(svc.resolve_roots([tree.projects]))
    return svc


def test_typed_values_are_frozen(make_service: Callable[..., object], tree: MemoryTree) -> None:
    svc = _svc(make_service, tree)
    doc = svc.locate(None, "a.md")
    assert isinstance(doc, DocumentDetail)
    assert doc.content == ALPHA and doc.projection.status == "ready"
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.path = "x"  # type: ignore[misc]
    assert svc.locate(None, "a.md") == doc
    revs = svc.revisions(doc.id)
    assert revs and all(isinstance(r, Revision) for r in revs)
    assert svc.revision(revs[0].id) == revs[0]
    st = svc.statistics()
    assert isinstance(st, Stats) and st.documents == 1
    rows = svc.document_summaries([doc.id])
    assert [type(r) for r in rows] == [DocumentSummary]
    assert [d for d, _ in svc.build_filter_index().filter("alpha")] in ([], rows)
    assert svc.queued_document_ids() == []


def test_rechunk_and_project_flow(make_service: Callable[..., object], tree: MemoryTree) -> None:
    svc = _svc(make_service, tree)
    cfg = svc.chunker_config_with({"strategy": "whole"})
    assert isinstance(cfg, ChunkerConfig)
    out = svc.rechunk_and_project(None, cfg)
    assert out.as_json()["rechunked"] == 1 and out.as_json()["projection"]["ready"] == 1
    again = svc.rechunk_and_project(None, cfg).as_json()
    assert again["rechunked"] == 0 and again["unchanged"] == 1


def test_typed_settings_match_dotted_keys(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[chunker]\nmax_tokens = 123\n[watch]\nenabled = false\n"
                   "[embedder]\nname = \"hashing\"\ndim = 32\n", encoding="utf-8")
    s = load_settings(cfg, env={"MEMLENS_MAX_REVISIONS": "7"})
    assert s.chunker.max_tokens == s.values["chunker.max_tokens"] == 123
    assert s.watch.enabled is False and s.retention.max_revisions == 7
    assert s.embedder.name == "hashing" and dict(s.embedder.options) == {"dim": 32}
    assert s.projection.retry_base_seconds == 5.0


def test_every_command_takes_db_and_config() -> None:
    assert "chunks" in COMMANDS and "watch" in COMMANDS and "tui" in COMMANDS
    for name in COMMANDS:
        opts = {o for p in load(name).params for o in p.opts}
        assert {"--db", "--config"} <= opts, name


def test_chunks_accepts_db_and_config(tmp_path: Path) -> None:
    f = tmp_path / "n.md"
    f.write_text(ALPHA, encoding="utf-8")
    cfg = tmp_path / "c.toml"
    cfg.write_text("[chunker]\nstrategy = \"whole\"\n", encoding="utf-8")
    proc = run_cli("chunks", str(f), "--db", str(tmp_path / "x.db"), "--config", str(cfg),
                   "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["config"]["strategy"] == "whole" and len(data["chunks"]) == 1


def test_watch_json_keys_match_docs() -> None:
    """The documented `memlens watch --json` shape (docs/cli.md) has the event's keys, in order."""
    keys = list(WatchEvent(kind="change", time=1.0, change_kind="create").as_json())
    assert keys == ["time", "event", "repository", "path", "change", "result", "message"]
    cli_md = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- shape: watch [^\n]*-->\s*```json\n(.*?)\n```", cli_md, re.S)
    assert block is not None
    assert list(json.loads(block.group(1))) == keys


def test_current_repository_walks_up_and_skips_deleted_projects(
        make_service: Callable[..., object], tree: MemoryTree) -> None:
    """The project of the working directory (or an ancestor) counts only while it has live
    documents: one indexed look-up per ancestor, not a scan of every document."""
    tree.write("a.md", ALPHA, slug="-home-dev-proj")
    tree.write("b.md", ALPHA, slug="-home-dev-proj-other")
    svc = make_service()
    assert isinstance(svc, MemoryService)
    svc.start_up(svc.resolve_roots([tree.projects]))
    assert svc.current_repository(Path("/home/dev/proj")) == "-home-dev-proj"
    assert svc.current_repository(Path("/home/dev/proj/src/deep")) == "-home-dev-proj"
    assert svc.current_repository(Path("/home/dev/proj-other")) == "-home-dev-proj-other"
    assert svc.current_repository(Path("/home/dev")) is None
    tree.remove("a.md", slug="-home-dev-proj")
    svc.start_up(svc.resolve_roots([tree.projects]))
    assert svc.current_repository(Path("/home/dev/proj/src")) is None  # only tombstones left
