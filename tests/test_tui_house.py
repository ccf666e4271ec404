"""House rules of the UI package (issue 41), checked on its source and its harness.

* the door's dataclasses reach the widgets: no ``as_dict()`` / ``as_json()`` in
  ``memlens.tui`` (it prints no JSON) and no string-keyed lookup (``x["status"]``,
  ``x.get("queue")``) — door values are read by attribute, so a renamed field fails
  mypy, not the running UI;
* no ``type: ignore`` in ``memlens.tui`` (screens get the service in their
  constructor, not through an untyped ``self.app``);
* no module of ``memlens.tui`` over 600 lines;
* the rechunk dialog reads its settings in a worker, never on the event loop;
* the snapshot folder is set in one place (``tests/conftest.py``);
* ``settle()`` fails when the app does not settle, instead of letting the test look
  at a screen that is still changing.
"""

from __future__ import annotations

import ast
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.test_tui import LANTERN, SIZE, Scenario, async_test, select_doc, settle

TUI = REPO / "src" / "memlens" / "tui"
MAX_LINES = 600

# Lookups by a string key that are not door values: the process environment.
ENVIRONMENT = {"env", "environ", "os.environ"}


def _sources() -> list[Path]:
    return sorted(TUI.rglob("*.py"))


def _receiver(node: ast.expr) -> str:
    return ast.unparse(node)


def string_keyed_lookups(source: str) -> list[tuple[int, str]]:
    """``x["key"]`` and ``x.get("key", ...)`` in ``source`` (line, code), the
    environment's excepted."""
    tree = ast.parse(source)
    # Generic types (``Screen["SearchHit | None"]``) are subscripted by strings too.
    types = {id(n) for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
             for base in c.bases for n in ast.walk(base)}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in types:
            continue
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, str):
            if _receiver(node.value) not in ENVIRONMENT:
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "get" and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            if _receiver(node.func.value) not in ENVIRONMENT:
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_lookup_finder_finds_dict_indexing() -> None:
    code = ('class S(Screen["Hit | None"]):\n    pass\n'
            'a = doc["projection"]["status"]\nb = stats.get("queue", {})\n'
            'c = os.environ.get("EDITOR")\nd = env.get("VISUAL")\ne = styles.get(kind, "")\n')
    assert sorted(line for line, _ in string_keyed_lookups(code)) == [3, 3, 4]


def test_widgets_read_door_values_by_attribute() -> None:
    """No dict form of a door value in the UI: no ``as_dict()`` / ``as_json()`` (the UI
    prints no JSON) and no string-keyed lookup."""
    problems = []
    for path in _sources():
        source = path.read_text(encoding="utf-8")
        rel = path.relative_to(REPO)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Attribute) and node.attr in ("as_dict", "as_json"):
                problems.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
        problems += [f"{rel}:{line}: {code}" for line, code in string_keyed_lookups(source)]
    assert problems == []


def test_no_type_ignore_in_the_ui() -> None:
    hits = [f"{p.relative_to(REPO)}:{n}" for p in _sources()
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if "type: ignore" in line]
    assert hits == []


def test_no_ui_module_over_600_lines() -> None:
    long = {str(p.relative_to(REPO)): n for p in _sources()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_the_snapshot_folder_is_set_once() -> None:
    """Only ``tests/conftest.py`` points the snapshot plugin at ``snapshots/``."""
    setter = re.compile(r"SVGImageExtension\.dirname\s*=")
    setters = [p.name for p in sorted((REPO / "tests").glob("*.py"))
               if setter.search(p.read_text(encoding="utf-8"))]
    assert setters == ["conftest.py"]
    import pytest_textual_snapshot as pts

    location = type("Location", (), {"basename": "test_tui_snapshots"})()
    assert pts.SVGImageExtension.dirname(test_location=location) == \
        str(REPO / "snapshots" / "test_tui_snapshots")


@async_test
async def test_settle_fails_when_the_app_stays_busy(scenario: Scenario) -> None:
    app = scenario.app()
    release = threading.Event()

    def busy() -> None:
        release.wait(10)

    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.run_worker(busy, thread=True, name="stuck", group="test")
        try:
            with pytest.raises(TimeoutError, match="stuck"):
                await settle(pilot, timeout=0.3)
        finally:
            release.set()
        await settle(pilot)  # and settles once the work is done
        assert app.is_idle()


@async_test
async def test_the_rechunk_dialog_reads_its_settings_in_a_worker(scenario: Scenario) -> None:
    """``c`` asks a worker for the document's chunker settings (SQL); the dialog opens
    when they arrive. The service's reads run off the event loop's thread."""
    from memlens.tui.screens.rechunk import RechunkDialog

    svc = scenario.service
    threads: list[str] = []
    reads = {name: getattr(svc, name) for name in ("effective_chunker", "chunker_config")}

    def spy(name: str) -> Any:
        def read(*args: Any, **kwargs: Any) -> Any:
            threads.append(threading.current_thread().name)
            return reads[name](*args, **kwargs)
        return read

    app = scenario.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_doc(pilot, scenario.doc_id(LANTERN, "build.md"))
        for name in reads:
            setattr(svc, name, spy(name))
        loop_thread = threading.current_thread().name
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, RechunkDialog)
        assert app.screen.base.max_tokens == 400 and app.screen.origin == "settings"
        assert threads and loop_thread not in threads


@pytest.fixture
def scenario(tmp_path: Path, clock: Any, make_service: Any) -> Scenario:
    from tests.test_tui import build_scenario

    return build_scenario(tmp_path, clock, make_service, states=False)

