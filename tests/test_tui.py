"""Pilot tests of the terminal UI: every user action, over a real service.

Each test runs the app headless over a temporary copy of the bundled corpus with
the hashing embedder and the fixed clock from ``conftest``. A *flaky* embedder
(same vectors, but it refuses texts containing ``FLAKY``) produces a failed and
a stale projection; a deleted file gives a tombstone; a long ``MEMORY.md`` gives
index warnings. The helpers here are shared with ``test_tui_snapshots.py``.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, Select, Static, Switch, TabbedContent

from memlens.core.embedders.registry import EmbeddingError, make_embedder
from memlens.core.service import MemoryService
from memlens.tui.app import MemlensApp, MemlensCommands
from memlens.tui.messages import SearchOutcome, SearchResults
from memlens.tui.screens.rechunk import RechunkDialog
from memlens.tui.screens.search import SearchScreen
from memlens.tui.widgets.chunk_view import ChunkView, build_lines
from memlens.tui.widgets.doc_tree import PAGE
from memlens.tui.widgets.tree_rows import DocData, MoreData
from tests.conftest import CORPUS, Clock

SIZE = (140, 45)
_T = TypeVar("_T")


def async_test(fn: Callable[..., Coroutine[Any, Any, _T]]) -> Callable[..., _T]:
    """Run an async test in its own event loop (no pytest-asyncio needed).

    ``functools.wraps`` keeps the signature, so pytest still injects fixtures.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> _T:
        return asyncio.run(fn(*args, **kwargs))

    return wrapper


LANTERN = "-home-dev-projects-lanternfish"
ORCHARD = "-home-dev-projects-orchard-etl"
TIDEWATER = "-home-dev-projects-tidewater-api"
KESTREL = "-home-dev-work-kestrel-dashboard"
MARK = "FLAKY"


class FlakyEmbedder:
    """The hashing embedder, except that it refuses texts containing ``FLAKY``.

    It keeps the hashing fingerprint, so vectors written before a fault stay valid.
    ``healthy = True`` makes it accept everything (to test a successful retry).
    """

    def __init__(self) -> None:
        self.base = make_embedder("hashing", {"dim": 64})
        self.name = self.base.name
        self.model = self.base.model
        self.metric = self.base.metric
        self.version = self.base.version
        self.healthy = False
        self.query_down = False  # True: queries fail as if the embedding service were down
        # True: the service cannot even say what it is, so stage 1 of a projection fails
        # (since issue 37 the nodes swap in without an embed call; refusing texts fails
        # only their vectors)
        self.down = False

    @property
    def dim(self) -> int:
        return int(self.base.dim)

    def fingerprint(self) -> str:
        if self.down and not self.healthy:
            raise EmbeddingError("the embedding service refused the batch (injected test fault)")
        return str(self.base.fingerprint())

    def embed_query(self, text: str) -> Any:
        if self.query_down:
            raise EmbeddingError("embedding endpoint http://127.0.0.1:9/v1: connection refused")
        return self.base.embed_query(text)

    def embed_documents(self, texts: Any) -> Any:
        if not self.healthy and any(MARK in t for t in texts):
            raise EmbeddingError("the embedding service refused the batch (injected test fault)")
        return self.base.embed_documents(texts)

    def info(self) -> dict[str, object]:
        return dict(self.base.info())


def copy_corpus(dest: Path) -> Path:
    """Copy the bundled corpus's memory folders (not its README or queries)."""
    for project in sorted(CORPUS.iterdir()):
        if (project / "memory").is_dir():
            shutil.copytree(project / "memory", dest / project.name / "memory")
    return dest


def long_index(topics: list[str]) -> str:
    """A MEMORY.md over both limits (200 lines, 25 KB) that still links its topics."""
    lines = ["# Kestrel dashboard — project memory", ""]
    lines += [f"- [{t}]({t}) — notes on {t.removesuffix('.md')}" for t in topics]
    lines.append("- [Old notes](old-notes.md) — moved away last year")
    lines += [f"- {i:03d}: decision log entry about panel layout, query keys, colour tokens "
              f"and the accessibility audit that followed release {i}" for i in range(230)]
    return "\n".join(lines) + "\n"


@dataclass
class Scenario:
    """A service over a corpus copy with every projection state present."""

    service: MemoryService
    clock: Clock
    projects: Path
    embedder: FlakyEmbedder
    roots: list[Any] = field(default_factory=list)

    def doc_id(self, repository: str, path: str) -> int:
        doc = self.service.locate(repository, path)
        assert doc is not None, f"{repository}/{path} not stored"
        return doc.id

    def app(self, **kwargs: Any) -> MemlensApp:
        """An app over this scenario (no startup ingest, no watcher unless asked)."""
        kwargs.setdefault("watch", False)
        kwargs.setdefault("ingest", False)
        return MemlensApp(self.service, clock=self.clock, **kwargs)


def build_scenario(tmp_path: Path, clock: Clock, make_service: Callable[..., Any], *,
                   states: bool = True) -> Scenario:
    """Ingest the corpus copy; with ``states``, also create every interesting state.

    * ``-home-dev-work-kestrel-dashboard/MEMORY.md``: 230+ lines, over 25 KB, a broken link;
    * ``lanternfish/build.md``: an update revision (timeline diff);
    * ``lanternfish/scratch.md``: deleted (tombstoned);
    * ``lanternfish/performance.md``: rechunked into overlapping windows;
    * ``tidewater-api/auth.md``: updated, projection failed, older one served (stale);
    * ``orchard-etl/flaky-notes.md``: new, projection failed (failed);
    * ``orchard-etl/queued-notes.md``: new, stored but not projected (pending).
    """
    projects = copy_corpus(tmp_path / "projects")
    embedder = FlakyEmbedder()
    svc = make_service(embedder=embedder)
    if states:
        kestrel = projects / KESTREL / "memory"
        topics = sorted(p.name for p in kestrel.glob("*.md") if p.name != "MEMORY.md")
        (kestrel / "MEMORY.md").write_text(long_index(topics), encoding="utf-8")
    roots = svc.resolve_roots([projects])
    svc.ingest(roots)
    sc = Scenario(svc, clock, projects, embedder, roots)
    if not states:
        return sc
    clock.advance(3600)
    lantern = projects / LANTERN / "memory"
    with (lantern / "build.md").open("a", encoding="utf-8") as f:
        f.write("\n## Release checklist\n\n- bump the version in Cargo.toml\n- tag and push\n")
    (lantern / "scratch.md").unlink()
    with (projects / TIDEWATER / "memory" / "auth.md").open("a", encoding="utf-8") as f:
        f.write(f"\n## Token rotation\n\nRotate signing keys quarterly. {MARK}\n")
    (projects / ORCHARD / "memory" / "flaky-notes.md").write_text(
        f"# Flaky notes\n\nThe nightly export is {MARK} on Mondays.\n", encoding="utf-8")
    svc.ingest(roots, project=False)
    flaky = [sc.doc_id(TIDEWATER, "auth.md"), sc.doc_id(ORCHARD, "flaky-notes.md")]
    svc.project([d for d in svc.queued_document_ids() if d not in flaky])
    embedder.down = True  # their projection fails as a whole: stale / failed
    svc.project(flaky)
    embedder.down = False
    clock.advance(60)
    (projects / ORCHARD / "memory" / "queued-notes.md").write_text(
        "# Queued notes\n\nStored durably, not projected yet.\n", encoding="utf-8")
    svc.ingest(roots, project=False)
    clock.advance(600)
    from memlens.core.chunking.chunker import ChunkerConfig

    perf = sc.doc_id(LANTERN, "performance.md")
    cfg = ChunkerConfig(strategy="windows", max_tokens=120, overlap_tokens=30)
    svc.rechunk([perf], cfg)
    svc.project([perf])
    return sc


@pytest.fixture
def scenario(tmp_path: Path, clock: Clock, make_service: Callable[..., Any]) -> Scenario:
    """Every state: failed, stale, tombstoned, long index, update, rechunk."""
    return build_scenario(tmp_path, clock, make_service)


async def until(pilot: Pilot[Any], cond: Callable[[], bool], what: str,
                *, timeout: float = 10.0) -> None:
    """Let the app run until ``cond()`` holds (a focus move or a style that follows it
    can land a refresh later on a loaded machine); fail naming ``what`` otherwise."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.02)


async def settle(pilot: Pilot[Any], *, timeout: float = 30.0) -> None:
    """Wait until no debounce is pending and no worker runs (the watcher excepted);
    fail (``TimeoutError``, naming what still runs) if that takes over ``timeout``
    seconds: a test must not go on looking at a screen still changing under it."""
    app = pilot.app
    assert isinstance(app, MemlensApp)
    await pilot.pause()
    deadline = time.monotonic() + timeout
    while True:
        if app.is_idle():
            await pilot.pause()
            if app.is_idle():  # messages handled just now may have started new work
                break
        if time.monotonic() >= deadline:
            raise TimeoutError(f"the app did not settle within {timeout:g} s: {_busy(app)}")
        await pilot.pause(0.02)
    await pilot.pause()
    await pilot.pause()


def _busy(app: MemlensApp) -> str:
    """What keeps the app from being idle (for a timeout message)."""
    from textual.worker import WorkerState

    running = [f"worker {w.name or w.group}" for w in app.workers if w.group != "watcher"
               and w.state in (WorkerState.PENDING, WorkerState.RUNNING)]
    return ", ".join(running) or "a debounce timer is pending"


async def type_text(pilot: Pilot[Any], text: str) -> None:
    """Type text key by key (spaces as ``space``)."""
    await pilot.press(*["space" if c == " " else c for c in text])


def record_notifications(app: MemlensApp) -> list[str]:
    """Every notification as "title: message" (toasts expire, this list does not)."""
    seen: list[str] = []
    original = app.notify

    def notify(message: str, *, title: str = "", **kwargs: Any) -> None:
        seen.append(f"{title}: {message}")
        original(message, title=title, **kwargs)

    app.notify = notify  # type: ignore[method-assign]
    return seen


def static_text(app: MemlensApp, selector: str) -> str:
    """Plain text shown by a Static."""
    widget = app.screen.query_one(selector, Static)
    return str(widget.render())


async def select_doc(pilot: Pilot[Any], doc_id: int) -> None:
    """Put the tree cursor on a document and wait for its detail."""
    app = pilot.app
    assert isinstance(app, MemlensApp)
    assert app.doc_tree.reveal(doc_id), f"document {doc_id} is not listed"
    await settle(pilot)
    assert app.current_doc_id == doc_id
    assert app.detail is not None and app.detail.doc_id == doc_id


# ---------------------------------------------------------------------------
# startup, navigation


@async_test
async def test_startup_ingests_durably_then_projects(tmp_path: Path, clock: Clock,
                                                     make_service: Callable[..., Any]) -> None:
    projects = copy_corpus(tmp_path / "projects")
    svc = make_service()
    roots = svc.resolve_roots([projects])
    app = MemlensApp(svc, clock=clock, roots=roots, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.doc_tree.document_count == 35
        assert app.stats is not None and app.stats.documents == 35
        assert app.stats.queue["ready"] == 35
        assert app.status_bar.job == ""
        assert "35 documents in 4 repositories" in static_text(app, "#filter-info")
        # The first repository is open and its first document (MEMORY.md) is shown.
        assert app.detail is not None and app.detail.document.path == "MEMORY.md"
        assert all(d.status == "ready" for d in svc.list_documents())


@async_test
async def test_navigate_tree_and_tabs(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        first = app.current_doc_id
        await pilot.press("down")
        await settle(pilot)
        assert app.current_doc_id != first
        assert app.detail is not None
        tabs = app.query_one("#tabs", TabbedContent)
        await pilot.press("2")
        assert tabs.active == "tab-timeline"
        revisions = app.query_one("#revisions", OptionList)
        assert revisions.option_count == len(app.detail.history) >= 1
        await pilot.press("3")
        assert tabs.active == "tab-projection"
        assert "current revision" in static_text(app, "#projection-text")
        await pilot.press("1")
        assert tabs.active == "tab-chunks"
        # Collapse the repository with ← twice (to the parent, then collapse), expand with →.
        await pilot.press("left", "left")
        node = app.doc_tree.cursor_node
        assert node is not None and not node.is_expanded
        await pilot.press("right")
        assert node.is_expanded


@async_test
async def test_vim_keys_move_in_tree_and_chunks(scenario: Scenario) -> None:
    perf = scenario.doc_id(LANTERN, "performance.md")
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = app.doc_tree
        assert tree.has_focus
        first = app.current_doc_id
        await pilot.press("j")
        await settle(pilot)
        second = app.current_doc_id
        assert second not in (None, first)
        await pilot.press("k")
        await settle(pilot)
        assert app.current_doc_id == first
        await pilot.press("G")
        await settle(pilot)
        assert tree.cursor_line == tree.last_line > 1
        await pilot.press("g")
        await settle(pilot)
        assert tree.cursor_line == 0
        await select_doc(pilot, perf)
        view = app.query_one("#chunks", ChunkView)
        view.focus()
        await pilot.press("j", "j")
        assert view.selected == 2
        await pilot.press("k")
        assert view.selected == 1
        await pilot.press("G")
        assert view.selected == len(view.chunks) - 1 > 2
        await pilot.press("g")
        assert view.selected == 0
        # In the filter the same keys are just letters.
        await pilot.press("slash", "j", "k", "g", "G")
        assert app.filter_text == "jkgG"


@async_test
async def test_tab_cycles_panes_with_a_focus_ring(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = app.doc_tree
        chunks = app.query_one("#chunks", ChunkView)
        flt = app.query_one("#filter", Input)
        assert tree.has_focus
        ring = tree.styles.border_top[1]
        idle = chunks.styles.border_top[1]
        assert ring != idle, "the focused pane's border stands out"
        await pilot.press("tab")
        await until(pilot, lambda: chunks.has_focus, "tab to the chunks")
        await until(pilot, lambda: chunks.styles.border_top[1] == ring
                    and tree.styles.border_top[1] == idle, "the ring to follow the focus")
        await pilot.press("tab")
        await until(pilot, lambda: flt.has_focus, "tab to the filter")
        await pilot.press("tab")
        await until(pilot, lambda: tree.has_focus, "tab back to the tree")
        await pilot.press("shift+tab")
        await until(pilot, lambda: flt.has_focus, "shift+tab to the filter")
        await pilot.press("shift+tab")
        await until(pilot, lambda: chunks.has_focus, "shift+tab to the chunks")
        # The detail pane is the one of the shown tab (the focus follows a tab switch).
        await pilot.press("2")
        revisions = app.query_one("#revisions", OptionList)
        await until(pilot, lambda: revisions.has_focus, "the timeline to take the focus")
        await pilot.press("tab", "tab", "tab")
        await settle(pilot)
        assert revisions.has_focus
        await pilot.press("3")
        projection = app.query_one("#projection")
        await until(pilot, lambda: app.focused is not None and (
            app.focused is projection or projection in app.focused.ancestors),
            "the projection pane to take the focus")
        await until(pilot, lambda: projection.styles.border_top[1] == ring,
                    "the ring on the projection pane")

@async_test
async def test_ctrl_r_reloads_and_says_so(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        await settle(pilot)
        await pilot.press("ctrl+r")
        await settle(pilot)
        shown = f"reload: reloaded from the database: {app.doc_tree.document_count} documents"
        assert shown in notes, notes


@async_test
async def test_chunk_view_draws_boundaries_and_jumps(scenario: Scenario) -> None:
    perf = scenario.doc_id(LANTERN, "performance.md")
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_doc(pilot, perf)
        view = app.query_one("#chunks", ChunkView)
        assert len(view.chunks) > 3
        assert any(c.overlap_chars > 0 for c in view.chunks), "windows overlap"
        assert view.selected == 0
        await pilot.press("n", "n", "right_square_bracket")
        assert view.selected == 3
        await pilot.press("p", "left_square_bracket")
        assert view.selected == 1
        info = static_text(app, "#chunk-info")
        c = view.chunks[1]
        assert f"#{c.ordinal}/" in info
        assert f"{c.start_char}–{c.end_char}" in info and f"{c.start_byte}–{c.end_byte}" in info
        assert c.hash[:16] in info
        assert "node " in info and "not projected" not in info
        # Every chunk header and the overlap markers are in the layout.
        lines, starts = build_lines(view.chunks, 100, view.max_tokens)
        assert len(starts) == len(view.chunks)
        assert any(ln.gutter == "↑ovl" for ln in lines)
        assert any(role == "overlap" for ln in lines for _, role in ln.parts)


def test_build_lines_keeps_every_character() -> None:
    """The layout never drops or duplicates text inside a chunk (offsets stay exact)."""
    from memlens.core.chunking.chunker import ChunkerConfig, chunk_markdown

    text = (CORPUS / LANTERN / "memory" / "performance.md").read_text(encoding="utf-8")
    chunks = chunk_markdown(text, ChunkerConfig(strategy="windows", max_tokens=80,
                                                overlap_tokens=20)).chunks
    lines, starts = build_lines(chunks, 37, 80)
    for i, c in enumerate(chunks):
        end = starts[i + 1] if i + 1 < len(starts) else len(lines)
        body = lines[starts[i] + 1:end]
        joined = "".join(t for ln in body for t, _ in ln.parts)
        assert joined == c.text.replace("\n", "").replace("\t", " ")
        overlap = "".join(t for ln in body for t, r in ln.parts if r == "overlap")
        assert overlap == c.text[:c.overlap_chars].replace("\n", "")


# ---------------------------------------------------------------------------
# filter and tombstones


@async_test
async def test_fuzzy_filter_as_you_type(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        total = app.doc_tree.document_count
        await pilot.press("slash")
        assert app.query_one("#filter", Input).has_focus
        await type_text(pilot, "cross compile")
        await settle(pilot)
        assert 0 < app.doc_tree.document_count < total
        listed = [app.doc_tree.summary(i) for i in app.doc_tree._docs]
        assert any(d is not None and d.path == "cross-compile.md" for d in listed)
        assert "match" in static_text(app, "#filter-info")
        # The best match is selected and shown.
        assert app.detail is not None and app.detail.document.path == "cross-compile.md"
        await pilot.press("escape")
        assert app.doc_tree.has_focus
        await pilot.press("escape")
        await settle(pilot)
        assert app.filter_text == ""
        assert app.doc_tree.document_count == total


@async_test
async def test_filter_enter_opens_best_match(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        await settle(pilot)
        await pilot.press("slash")
        # A repository's short name narrows the filter; Enter before the debounce fires
        # still opens the best match once it is listed.
        await type_text(pilot, "tidewater testing")
        await pilot.press("enter")
        await settle(pilot)
        assert app.detail is not None
        assert (app.detail.document.repository, app.detail.document.path) == \
            (TIDEWATER, "testing.md")
        assert app.query_one("#chunks", ChunkView).has_focus
        assert app.query_one("#tabs", TabbedContent).active == "tab-chunks"
        assert "tidewater-api/" in static_text(app, "#doc-title")
        # Escape (outside the filter) clears it; then a heading finds its document.
        await pilot.press("escape")
        await settle(pilot)
        assert app.filter_text == ""
        await pilot.press("slash")
        await type_text(pilot, "pagination")
        await settle(pilot)  # listed first: Enter opens it at once
        await pilot.press("enter")
        await settle(pilot)
        assert app.detail is not None and app.detail.document.path == "api-conventions.md"
        assert app.query_one("#chunks", ChunkView).has_focus
        # No match: say so, stay in the filter.
        await pilot.press("escape", "slash")
        await type_text(pilot, "zzqxv")
        await pilot.press("enter")
        await settle(pilot)
        assert any("no document matches 'zzqxv'" in n for n in notes)
        assert app.query_one("#filter", Input).has_focus


@async_test
async def test_toggle_tombstoned(scenario: Scenario) -> None:
    scratch = scenario.doc_id(LANTERN, "scratch.md")
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.doc_tree.summary(scratch) is None, "deleted documents are hidden by default"
        await pilot.press("t")
        await settle(pilot)
        s = app.doc_tree.summary(scratch)
        assert s is not None and s.status == "tombstoned"
        await select_doc(pilot, scratch)
        assert "deleted" in static_text(app, "#doc-title")
        assert app.detail is not None and app.detail.history[0].change_kind == "delete"
        await pilot.press("t")
        await settle(pilot)
        assert app.doc_tree.summary(scratch) is None


def blank_led_runs(plain: str, spans: Any) -> list[str]:
    """Style runs (inside a line) that start with blanks: some SVG renderers drop those
    blanks and glue the run to the text before it ("scratch.md0ch")."""
    keys: list[tuple[str, ...]] = [()] * len(plain)
    for sp in spans:
        for i in range(sp.start, min(sp.end, len(plain))):
            keys[i] = (*keys[i], str(sp.style))
    bad: list[str] = []
    start = 0
    for i in range(1, len(plain) + 1):
        if i == len(plain) or keys[i] != keys[start]:
            run = plain[start:i]
            at_line_start = start == 0 or plain[start - 1] == "\n"
            if run.startswith(" ") and run.strip() and not at_line_start:
                bad.append(run)
            start = i
    return bad


@async_test
async def test_labels_are_never_glued_to_their_values(scenario: Scenario) -> None:
    from rich.style import Style as RichStyle

    from memlens.tui.widgets.status_bar import StatusBar
    from memlens.tui.widgets.timeline import TimelineView

    scratch = scenario.doc_id(LANTERN, "scratch.md")
    perf = scenario.doc_id(LANTERN, "performance.md")
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        await select_doc(pilot, scratch)
        tree = app.doc_tree
        node = tree._doc_nodes[scratch]
        for highlighted in (RichStyle(), RichStyle(bgcolor="blue", color="white", bold=True)):
            row = tree.render_label(node, RichStyle(), highlighted)
            assert blank_led_runs(row.plain, row.spans) == [], row.plain
        assert "scratch.md   " in row.plain and row.plain.rstrip().endswith("0 B")
        timeline = app.query_one("#timeline", TimelineView)
        for r in timeline.history:
            content = timeline._row(r)
            assert blank_led_runs(content.plain, content.spans) == [], content.plain
            assert f"{r.content_hash[:8]}  " in content.plain
        title = app.query_one("#doc-title", Static).render()
        assert blank_led_runs(title.plain, title.spans) == []  # type: ignore[union-attr]
        bar = app.query_one("#status", StatusBar).render()
        assert blank_led_runs(bar.plain, bar.spans) == [], bar.plain
        await select_doc(pilot, perf)
        info = app.query_one("#chunk-info", Static).render()
        plain = info.plain  # type: ignore[union-attr]
        assert blank_led_runs(plain, info.spans) == [], plain  # type: ignore[union-attr]
        assert "  bytes " in plain and "  hash " in plain and "chars " in plain
        await pilot.press("3")
        text = app.query_one("#projection-text", Static).render()
        assert blank_led_runs(text.plain, text.spans) == []  # type: ignore[union-attr]
        assert "current revision #" in text.plain  # type: ignore[union-attr]


@async_test
async def test_index_warnings_on_row_and_in_detail(scenario: Scenario) -> None:
    index = scenario.doc_id(KESTREL, "MEMORY.md")
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        kinds = {w.kind for w in app.doc_tree.warnings(index)}
        assert {"too_long", "too_large", "broken_link"} <= kinds
        await select_doc(pilot, index)
        box = app.query_one("#doc-warnings", Static)
        assert box.has_class("-shown")
        text = static_text(app, "#doc-warnings")
        assert "too long" in text and "line 201" in text and "old-notes.md" in text
        # The chunk view draws where Claude stops reading.
        view = app.query_one("#chunks", ChunkView)
        cuts = [ln for ln in view._lines if ln.gutter == "✂"]
        assert cuts and "line 201" in cuts[0].parts[0][0]
        # A clean document hides the box again.
        await select_doc(pilot, scenario.doc_id(KESTREL, "accessibility.md"))
        assert not box.has_class("-shown")


# ---------------------------------------------------------------------------
# timeline and projection


@async_test
async def test_timeline_shows_revisions_and_coloured_diff(scenario: Scenario) -> None:
    build = scenario.doc_id(LANTERN, "build.md")
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_doc(pilot, build)
        await pilot.press("2")
        await pilot.pause()
        hist = app.detail.history if app.detail else []
        assert [r.change_kind for r in hist] == ["update", "create"]
        text = static_text(app, "#revision-text")
        assert "change from #1" in text and "+## Release checklist" in text
        from memlens.tui.widgets.timeline import HUNK_STYLE, diff_content

        spans = {str(s.style) for s in diff_content("@@ -1 +1 @@\n-a\n+b\n").spans}
        assert {"$text-success", "$text-error", HUNK_STYLE} <= spans
        revisions = app.query_one("#revisions", OptionList)
        revisions.focus()
        await pilot.press("down")
        await pilot.pause()
        assert "first revision" in static_text(app, "#revision-text")


@async_test
async def test_projection_panel_and_retry(scenario: Scenario) -> None:
    failed = scenario.doc_id(ORCHARD, "flaky-notes.md")
    stale = scenario.doc_id(TIDEWATER, "auth.md")
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        await settle(pilot)
        await select_doc(pilot, stale)
        await pilot.press("3")
        text = static_text(app, "#projection-text")
        assert "stale" in text and "differs from current" in text and "injected test fault" in text
        await select_doc(pilot, failed)
        text = static_text(app, "#projection-text")
        assert "failed" in text and "next retry" in text and "attempts         1" in text
        assert "current revision #" in text  # the widest label is not glued to its value
        # Still failing: a notification says why and the attempt count goes up.
        scenario.embedder.down = True  # the service is still down
        await pilot.press("r")
        await settle(pilot)
        assert scenario.service.detail(failed).projection.attempts == 2
        retried = [n for n in notes if n.startswith("retry: failed")]
        assert retried == ["retry: failed: Could not retry the projection. The details are in "
                           "the events pane (E)."], retried
        assert any(e.detail and "Error" in e.detail for e in app.events_log.entries())
        # Healthy again: retry now projects it and the row turns ready.
        scenario.embedder.healthy = True
        await pilot.press("r")
        await settle(pilot)
        row = app.doc_tree.summary(failed)
        assert row is not None and row.status == "ready"
        assert "ready" in static_text(app, "#projection-text")
        assert app.stats is not None and app.stats.queue_failed == 0


# ---------------------------------------------------------------------------
# search


@async_test
async def test_live_search_updates_as_you_type_and_opens_hit(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        await type_text(pilot, "cache key")
        await settle(pilot)
        assert screen.hits, "results appear while typing"
        assert screen.last is not None and screen.last.query == "cache key"
        assert screen.mode == "hybrid"
        top = screen.hits[0]
        assert top.path == "architecture.md"
        assert any(v is not None for v in top.ranks.values())
        # Highlighted spans are drawn in the snippet.
        results = screen.query_one("#search-results", OptionList)
        assert results.option_count == len(screen.hits)
        await type_text(pilot, "s")
        await settle(pilot)
        assert screen.last.query == "cache keys"
        await pilot.press("down")
        second = screen.hits[1]
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, SearchScreen)
        assert app.current_doc_id == second.document_id
        view = app.query_one("#chunks", ChunkView)
        assert view.selected_chunk is not None and view.selected_chunk.ordinal == second.ordinal
        assert view.hit == view.selected
        assert view.has_focus
        assert app.query_one("#tabs", TabbedContent).active == "tab-chunks"
        # The searched words are highlighted in the opened document; n/N step through them.
        assert app.hit_query == "cache keys"
        assert view.terms and view.match_count > 0
        chunk = view.chunks[view.hit]
        words = {chunk.text[a:b].lower() for a, b in view.terms.get(view.hit, [])}
        assert words & {"cache", "caching", "cached", "key", "keys"}
        await pilot.press("n")
        first = view._match_at
        await pilot.press("n")
        assert view._match_at == (first + 1) % view.match_count
        await pilot.press("N")
        assert view._match_at == first


@async_test
async def test_search_drops_stale_results(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        await type_text(pilot, "jemalloc")
        await settle(pilot)
        current = list(screen.hits)
        assert current
        # A slow worker for an older query reports late: it must not overwrite.
        old = scenario.service.search("cache", mode="hybrid", k=20)
        screen.post_message(SearchResults(SearchOutcome("cache", "hybrid", old, 0.5)))
        await settle(pilot)
        assert screen.hits == current
        assert screen.last is not None and screen.last.query == "jemalloc"


@async_test
async def test_search_mode_toggle(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        await type_text(pilot, "musl")
        await settle(pilot)
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert screen.mode == "lexical" and app.search_state.mode == "lexical"
        assert screen.hits and all(h.ranks["vector"] is None for h in screen.hits)
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert screen.mode == "vector"
        assert screen.hits and all(h.ranks["lexical"] is None for h in screen.hits)
        await app.run_action("set_search_mode('hybrid')")
        await settle(pilot)
        assert screen.mode == "hybrid" and screen.last is not None
        assert screen.last.mode == "hybrid"
        await pilot.press("escape")
        assert not isinstance(app.screen, SearchScreen)
        # Reopening keeps the query and the mode.
        await pilot.press("s")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        assert screen.query_text == "musl" and screen.mode == "hybrid" and screen.hits


@async_test
async def test_file_map_follows_the_selected_chunk(scenario: Scenario) -> None:
    """The whole-file map above the chunks marks the selected chunk as it moves."""
    from memlens.tui.widgets.file_map import SELECTED, FileMap, map_cells

    doc = scenario.doc_id(TIDEWATER, "architecture.md")
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_doc(pilot, doc)
        fmap = app.query_one("#file-map", FileMap)
        view = app.query_one("#chunks", ChunkView)
        assert fmap.chunks == view.chunks and fmap.total > 0
        assert fmap.selected == view.selected == 0
        await pilot.press("n")
        await settle(pilot)
        assert fmap.selected == view.selected == 1
        cells = map_cells(fmap.chunks, fmap.total, fmap.size.width, selected=1)
        assert SELECTED in cells


@async_test
async def test_search_history_recall(scenario: Scenario) -> None:
    """A finished search is kept; ``↑`` in an empty box recalls it, ``↓`` clears."""
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await type_text(pilot, "cache key")
        await settle(pilot)
        await pilot.press("enter")  # opens the hit: the search is finished
        await settle(pilot)
        assert scenario.service.recent_searches()[:1] == ["cache key"]
        await pilot.press("s")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        box = screen.query_one("#search-input", Input)
        box.value = ""
        await settle(pilot)
        await pilot.press("up")
        await settle(pilot)
        assert box.value == "cache key" and screen.hits
        await pilot.press("down")
        assert box.value == ""


@async_test
async def test_search_nonsense_presents_no_matches(scenario: Scenario) -> None:
    """A word found nowhere: the hits are closest-by-meaning only, below a divider."""
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        await type_text(pilot, "zebraquokka4711")
        await settle(pilot)
        assert screen.last is not None and screen.last.result is not None
        assert screen.last.result.matches == 0
        assert screen.hits and all(not h.is_match for h in screen.hits)
        info = static_text(app, "#search-info")
        assert info.startswith("no matches") and "closest by meaning" in info
        results = screen.query_one("#search-results", OptionList)
        first = results.get_option_at_index(0)
        assert first.disabled and first.id == "closest-divider"
        assert results.option_count == len(screen.hits) + 1
        assert results.highlighted == 1  # the first hit, not the divider
        await pilot.press("down")
        assert results.highlighted == 2
        await pilot.press("enter")
        await settle(pilot)
        assert app.current_doc_id == screen.hits[1].document_id


@async_test
async def test_search_embedder_down_answers_lexically(scenario: Scenario) -> None:
    """The embedder refuses queries: hybrid shows lexical hits and says why."""
    scenario.embedder.query_down = True
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        await type_text(pilot, "cache key")
        await settle(pilot)
        assert screen.last is not None and screen.last.error is None
        assert screen.hits and all(h.lexical_match for h in screen.hits)
        assert screen.hits[0].path == "architecture.md"
        info = static_text(app, "#search-info")
        assert "embedder unavailable" in info and "connection refused" in info


# ---------------------------------------------------------------------------
# rechunk


async def _open_rechunk(pilot: Pilot[Any], strategy: str, max_tokens: str,
                        overlap: str) -> RechunkDialog:
    app = pilot.app
    await pilot.press("c")
    await settle(pilot)
    dialog = app.screen
    assert isinstance(dialog, RechunkDialog)
    dialog.query_one("#strategy", Select).value = strategy
    dialog.query_one("#max-tokens", Input).value = max_tokens
    dialog.query_one("#overlap", Input).value = overlap
    await settle(pilot)
    return dialog


@async_test
async def test_rechunk_preview_then_apply(scenario: Scenario) -> None:
    doc = scenario.doc_id(TIDEWATER, "architecture.md")
    before = scenario.service.revisions(doc)
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_doc(pilot, doc)
        n_before = len(app.query_one("#chunks", ChunkView).chunks)
        dialog = await _open_rechunk(pilot, "windows", "60", "15")
        head = str(dialog.query_one("#proposed-head", Static).render())
        assert "windows/60/15" in head and "min/median/max" in head
        assert f"{n_before} chunks" in str(dialog.query_one("#current-head", Static).render())
        # Nothing is written by a preview.
        assert len(scenario.service.revisions(doc)) == len(before)
        seen: list[str] = []
        tree = app.doc_tree
        original = tree.update_documents

        def spy(docs: Any, *, processing: bool = False) -> None:
            for d in docs:
                if d.id == doc:
                    seen.append("processing" if processing else d.status)
            original(docs, processing=processing)

        tree.update_documents = spy  # type: ignore[method-assign]
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, RechunkDialog)
        hist = scenario.service.revisions(doc)
        assert hist[0].change_kind == "rechunk"
        assert hist[0].chunker.config.strategy == "windows"
        row = app.doc_tree.summary(doc)
        assert row is not None and row.status == "ready"
        view = app.query_one("#chunks", ChunkView)
        assert len(view.chunks) > n_before and view.max_tokens == 60
        # the row goes pending -> processing -> ready (a refresh that repeats the state it
        # shows, e.g. the ingest's and the projection's both saying pending, is no step)
        steps = [st for i, st in enumerate(seen) if i == 0 or seen[i - 1] != st]
        assert steps[:3] == ["pending", "processing", "ready"], seen


@async_test
async def test_rechunk_in_the_dialog_sticks_and_resets(scenario: Scenario) -> None:
    """A rechunk chosen in the dialog survives an edit of the file and a re-ingest, the
    dialog then shows where the setting comes from, and Reset goes back to settings."""
    doc = scenario.doc_id(TIDEWATER, "architecture.md")
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_doc(pilot, doc)
        await _open_rechunk(pilot, "windows", "60", "15")
        await pilot.press("ctrl+s")
        await settle(pilot)
        # Claude rewrites the file; the next ingest keeps windows/60/15.
        path = scenario.projects / TIDEWATER / "memory" / "architecture.md"
        path.write_text(path.read_text(encoding="utf-8") + "\nOne more note.\n",
                        encoding="utf-8")
        scenario.service.ingest(scenario.roots)
        hist = scenario.service.revisions(doc)
        assert hist[0].change_kind == "update"
        assert hist[0].chunker.config.strategy == "windows"
        await app.run_action("reload")
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, RechunkDialog)
        assert "this document's rechunk" in str(dialog.query_one("#effective", Static).render())
        assert dialog.query_one("#strategy", Select).value == "windows"
        await pilot.click("#reset")
        await settle(pilot)
        assert not isinstance(app.screen, RechunkDialog)
        assert scenario.service.effective_chunker(doc).origin == "settings"
        assert scenario.service.revisions(doc)[0].chunker.config.strategy \
            == "adaptive"


@async_test
async def test_rechunk_preview_shows_effect_on_recent_searches(scenario: Scenario) -> None:
    doc = scenario.doc_id(TIDEWATER, "architecture.md")
    scenario.service.remember_search("cache key format", "hybrid", "tui")
    scenario.service.remember_search("zebraquokka", "hybrid", "tui")
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_doc(pilot, doc)
        dialog = await _open_rechunk(pilot, "whole", "400", "0")
        text = str(dialog.query_one("#effect", Static).render())
        assert "effect on your recent searches" in text
        assert "cache key format" in text and "→" in text and "zebraquokka" in text
        await pilot.press("escape")


@async_test
async def test_rechunk_cancel_writes_nothing(scenario: Scenario) -> None:
    doc = scenario.doc_id(TIDEWATER, "architecture.md")
    before = scenario.service.revisions(doc)
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        await settle(pilot)
        await select_doc(pilot, doc)
        await _open_rechunk(pilot, "headings", "100", "10")
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, RechunkDialog)
        assert scenario.service.revisions(doc) == before
        assert any("nothing written" in n for n in notes)


@async_test
async def test_rechunk_rejects_invalid_config(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        dialog = await _open_rechunk(pilot, "windows", "50", "50")
        assert dialog.query_one("#apply").disabled
        assert "overlap_tokens" in str(dialog.query_one("#error", Static).render())
        await pilot.press("ctrl+s")
        assert isinstance(app.screen, RechunkDialog), "an invalid config cannot be applied"
        dialog.query_one("#overlap", Input).value = "10"
        await settle(pilot)
        assert not dialog.query_one("#apply").disabled


@async_test
async def test_rechunk_all_documents(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await app.run_action("rechunk_all")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, RechunkDialog)
        assert dialog.query_one("#all-docs", Switch).value
        dialog.query_one("#strategy", Select).value = "whole"
        await settle(pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
        live = scenario.service.list_documents()
        for d in live:
            assert scenario.service.revisions(d.id)[0].chunker.config.strategy == "whole"
        statuses = {app.doc_tree.status_of(app.doc_tree.summary(d.id)) for d in live
                    if app.doc_tree.summary(d.id) is not None}
        assert "processing" not in statuses and "pending" not in statuses


# ---------------------------------------------------------------------------
# app-wide


@async_test
async def test_theme_toggle_and_help(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.current_theme.dark
        await pilot.press("d")
        assert not app.current_theme.dark
        await pilot.press("d")
        assert app.current_theme.dark
        await pilot.press("question_mark")
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        assert type(app.screen).__name__ != "HelpScreen"


@async_test
async def test_command_palette_lists_every_action(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        provider = MemlensCommands(app.screen)
        names = {n for n, _, _ in provider._commands()}
        actions = {a.split("(")[0] for _, _, a in provider._commands()}
        for required in ("Search memory", "Filter documents", "Rechunk this document…",
                         "Rechunk all documents…", "Retry projection now", "Show deleted documents",
                         "Search mode: lexical", "Toggle dark / light theme", "Next chunk"):
            assert required in names
        for binding in app.BINDINGS:
            action = binding.action.split("(")[0]  # type: ignore[union-attr]
            if action not in ("escape",):
                assert action in actions | {"cycle_search_mode", "show_tab"}, action
        for action in actions:
            assert hasattr(app, f"action_{action}"), action
        # The palette opens and runs a command.
        await pilot.press("ctrl+p")
        await pilot.pause()
        await type_text(pilot, "show deleted")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await settle(pilot)
        assert app.show_tombstoned


@async_test
async def test_palette_has_one_quit(scenario: Scenario) -> None:
    from textual.command import CommandPalette
    from textual.widgets import OptionList as Options

    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause(0.3)
        await type_text(pilot, "quit")
        await pilot.pause(0.6)
        palette = app.screen
        assert isinstance(palette, CommandPalette)
        options = palette.query_one(Options)
        prompts = [str(options.get_option_at_index(i).prompt)
                   for i in range(options.option_count)]
        assert sum(1 for p in prompts if p.startswith("Quit")) == 1, prompts
        await pilot.press("escape")


@async_test
async def test_worker_errors_become_notifications(scenario: Scenario,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        await settle(pilot)

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("database is on fire")

        monkeypatch.setattr(scenario.service, "list_documents", broken)
        monkeypatch.setattr(scenario.service, "statistics", broken)
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert app.is_running
        errors = [n for n in notes if n.startswith("error: Could not")]
        # What the user tried, as a sentence; never a function name or the exception's
        # text (issue 42): that is the events pane's detail.
        assert "error: Could not list documents. The details are in the events pane (E)." in errors
        assert "error: Could not load statistics. The details are in the events pane (E)." in errors
        assert not any(w in n for n in errors
                       for w in ("load_documents", "load_stats", "RuntimeError", "on fire"))
        details = {e.detail for e in app.events_log.entries()}
        assert "RuntimeError: database is on fire" in details


@async_test
async def test_paging_keeps_big_folders_lazy(tmp_path: Path, clock: Clock,
                                             make_service: Callable[..., Any]) -> None:
    mem = tmp_path / "projects" / "-home-dev-big" / "memory"
    mem.mkdir(parents=True)
    n = PAGE + 40
    for i in range(n):
        (mem / f"note-{i:04d}.md").write_text(f"# Note {i}\n\nbody {i}\n", encoding="utf-8")
    svc = make_service()
    svc.ingest(svc.resolve_roots([tmp_path / "projects"]), project=False)
    app = MemlensApp(svc, clock=clock, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        repo = next(iter(app.doc_tree.root.children))
        kids = list(repo.children)
        assert len(kids) == PAGE + 1 and isinstance(kids[-1].data, MoreData)
        assert all(isinstance(k.data, DocData) for k in kids[:-1])
        last = svc.locate("-home-dev-big", f"note-{n - 1:04d}.md")
        assert last is not None
        assert app.doc_tree.reveal(last.id)
        assert len(list(repo.children)) == n
        # Unprojected documents read as pending.
        assert app.doc_tree.summary(last.id).status == "pending"


@async_test
async def test_watcher_picks_up_changes_and_pauses(tmp_path: Path, clock: Clock,
                                                   make_service: Callable[..., Any]) -> None:
    projects = copy_corpus(tmp_path / "projects")
    svc = make_service(**{"watch.debounce_ms": 20, "watch.stable_ms": 20,
                          "watch.reconcile_seconds": 0})
    roots = svc.resolve_roots([projects])
    app = MemlensApp(svc, clock=clock, roots=roots, scan_paths=[projects], watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for _ in range(100):
            if app.status_bar.watch_state == "watching":
                break
            await pilot.pause(0.05)
        assert app.status_bar.watch_state == "watching"
        new = projects / LANTERN / "memory" / "watched.md"
        new.write_text("# Watched\n\nwritten while the UI was open\n", encoding="utf-8")
        for _ in range(200):
            await pilot.pause(0.05)
            if any(d is not None and d.path == "watched.md"
                   for d in (app.doc_tree.summary(i) for i in app.doc_tree._docs)):
                break
        else:
            pytest.fail("the new file never appeared")
        assert "watched.md" in app.status_bar.watch_last
        await pilot.press("w")
        assert app.status_bar.watch_state == "paused"
        await pilot.press("w")
        assert app.status_bar.watch_state == "watching"
        await app.action_quit()
    assert app._watch_stop.is_set()


@async_test
async def test_watch_key_when_watching_is_off(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        await settle(pilot)
        assert app.status_bar.watch_state == "off"
        await pilot.press("w")
        assert any("watcher is off" in n for n in notes)


# ---------------------------------------------------------------------------
# command line


def test_tui_subcommand_is_registered() -> None:
    from memlens.cli import main as cli
    from memlens.cli import tui as cli_tui

    args = cli.parse_args(["tui", "corpus", "--no-watch", "--db", "x.db"])
    assert args.handler is cli_tui.cmd_tui
    assert args.no_watch and args.paths == [Path("corpus")] and args.db == Path("x.db")
    args = cli.parse_args(["tui", "--demo"])
    assert args.demo and not args.no_watch


class _Ran:
    app: MemlensApp | None = None


@pytest.fixture
def no_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> type[_Ran]:
    """Capture the app ``memlens tui`` builds instead of running it."""
    _Ran.app = None

    def fake_run(self: MemlensApp, *args: Any, **kwargs: Any) -> None:
        _Ran.app = self

    monkeypatch.setattr(MemlensApp, "run", fake_run)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "no-claude"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return _Ran


def test_memlens_tui_opens_demo_copy_without_claude_memory(no_run: type[_Ran],
                                                           tmp_path: Path) -> None:
    from memlens.cli import main as cli

    assert cli.main(["tui", "--no-watch"]) == 0
    app = no_run.app
    assert app is not None and app.demo and "demo" in app.demo_note
    assert not app.watch_enabled
    assert len(app.roots) == 4
    for root in app.roots:
        assert str(root.path).startswith(str(tmp_path)), "the repository corpus is not touched"
    assert str(app.service.db_path).startswith(str(tmp_path / "data"))
    # The banner says where the copy lives (edit it to try the watcher), shortened
    # from the middle when the terminal is narrow.
    folder = app.demo_folder
    assert folder is not None and str(folder).startswith(str(tmp_path))
    assert all(r.path.parent.parent == folder for r in app.roots)
    wide = app.demo_banner(400)
    assert wide == f"DEMO · edit {folder} to try the watcher"
    narrow = app.demo_banner(80)
    assert "…" in narrow and narrow.endswith(f"/{folder.name} to try the watcher")
    assert len(f"{app.title} — {narrow}") <= 80 - 16


def test_demo_folders_are_private(no_run: type[_Ran], tmp_path: Path) -> None:
    """The demo creates the user data folder the real database lands in later: 0700, as
    the database's own folders, whatever the umask (it followed the umask: 0755)."""
    import stat

    from memlens.cli import main as cli

    old = os.umask(0o022)
    try:
        assert cli.main(["tui", "--no-watch"]) == 0
    finally:
        os.umask(old)
    app = no_run.app
    assert app is not None and app.demo and app.demo_folder is not None
    data = tmp_path / "data"
    made = [p for p in [app.demo_folder, *app.demo_folder.parents] if str(p).startswith(str(data))]
    assert data / "memlens" in made and len(made) >= 3
    for folder in made:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_memlens_tui_with_paths(no_run: type[_Ran], tmp_path: Path) -> None:
    from memlens.cli import main as cli

    projects = copy_corpus(tmp_path / "projects")
    db = tmp_path / "x.db"
    assert cli.main(["tui", str(projects), "--db", str(db)]) == 0
    app = no_run.app
    assert app is not None and not app.demo
    assert app.watch_enabled, "watching is on by default"
    assert app.service.db_path == db and len(app.roots) == 4
    assert cli.main(["tui", str(tmp_path / "missing")]) == 2


def test_memlens_without_command_opens_the_tui(no_run: type[_Ran]) -> None:
    """``memlens`` alone behaves like ``memlens tui``."""
    from memlens.cli import main as cli

    assert cli.main([]) == 0
    assert no_run.app is not None and no_run.app.demo


def _tui_fails_cleanly(*args: str) -> str:
    """``memlens tui ARGS`` exits 2 with one stderr line and never draws a screen."""
    from tests.conftest import run_cli

    r = run_cli("tui", "--no-watch", "--no-ingest", *args, timeout=60)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stdout == "", "no Textual screen"
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memlens: "), r.stderr
    return lines[0]


def test_tui_refuses_a_corrupt_database(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database\n" * 200)
    line = _tui_fails_cleanly("--db", str(bad), str(CORPUS))
    assert str(bad) in line and "not a usable SQLite database" in line


def test_tui_refuses_a_newer_schema(tmp_path: Path, make_service: Callable[..., Any]) -> None:
    import sqlite3

    db = tmp_path / "new.db"
    make_service(db=db).open()
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA user_version = 999")
    line = _tui_fails_cleanly("--db", str(db))
    assert "newer" in line


def test_tui_refuses_a_bad_config(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text("[chunker\nmax_tokens = 5\n", encoding="utf-8")
    line = _tui_fails_cleanly("--config", str(cfg), "--db", str(tmp_path / "x.db"))
    assert "config.toml" in line and "TOML" in line
    cfg.write_text("[chunker]\nmax_tokens = -5\n", encoding="utf-8")
    line = _tui_fails_cleanly("--config", str(cfg), "--db", str(tmp_path / "x.db"))
    assert "max_tokens" in line
    assert not (tmp_path / "x.db").exists(), "nothing is created before the checks pass"


def test_memlens_without_command_takes_the_tui_flags(no_run: type[_Ran],
                                                     tmp_path: Path) -> None:
    from memlens.cli import main as cli

    assert cli.main(["--demo", "--no-watch"]) == 0
    app = no_run.app
    assert app is not None and app.demo and not app.watch_enabled
    projects = copy_corpus(tmp_path / "projects")
    db = tmp_path / "x.db"
    assert cli.main([str(projects), "--db", str(db), "--no-watch"]) == 0
    app = no_run.app
    assert app is not None and not app.demo and app.service.db_path == db
    assert len(app.roots) == 4
    # A mistyped command is still an error naming the commands, not a folder to open.
    assert cli.main(["serch", "x"]) == 2


def test_tui_holds_no_sql() -> None:
    """All SQL lives in the core; the UI only calls the façade (core.service)."""
    import re

    root = Path(__file__).resolve().parent.parent / "src" / "memlens" / "tui"
    bad = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE)\s+\w|\.execute\(|\bapsw\b|\.conn\(\)")
    for path in root.rglob("*.py"):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if path.name != "cli.py":  # the CLI module predates this rule and is not the UI
                assert not bad.search(line), f"{path.relative_to(root)}:{n}: {line.strip()}"


@async_test
async def test_large_documents_are_laid_out_off_the_loop(scenario: Scenario,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from memlens.tui.widgets import chunk_view

    monkeypatch.setattr(chunk_view, "LARGE_CHARS", 100)
    perf = scenario.doc_id(LANTERN, "performance.md")
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_doc(pilot, perf)
        view = app.query_one("#chunks", ChunkView)
        assert len(view._starts) == len(view.chunks)
        await pilot.press("n", "n", "n")
        await settle(pilot)
        assert view.selected == 3
        assert view.scroll_y == min(view._starts[3], view.max_scroll_y)


@async_test
async def test_browser_keys_are_off_on_other_screens(scenario: Scenario) -> None:
    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        screen.query_one("#search-results", OptionList).focus()
        await pilot.press("c", "t", "slash")
        await settle(pilot)
        assert app.screen is screen and not app.show_tombstoned
        provider = MemlensCommands(screen)
        actions = {a.split("(")[0] for _, _, a in provider._commands()}
        assert "rechunk" not in actions and "set_search_mode" in actions
