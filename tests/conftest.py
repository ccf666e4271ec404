"""Shared fixtures: temp memory folders, a service on a real SQLite file."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SNAPSHOTS = REPO / "snapshots"
"""Where the TUI snapshot SVGs live: ``snapshots/<test module>/``, not syrupy's
``tests/__snapshots__/``. Set here once, for every snapshot test (nothing else may)."""


def _snapshot_dirname(cls: type, *, test_location: Any) -> str:
    """``snapshots/<test module>/``: syrupy's layout, moved to the top-level folder."""
    return str(SNAPSHOTS / test_location.basename)


try:
    import pytest_textual_snapshot as _pts
except ImportError:  # pragma: no cover - the plugin is a dev dependency
    pass
else:
    # syrupy calls ``dirname`` as a classmethod (a plain string attribute breaks snapshot
    # discovery); pytest-textual-snapshot offers no option for the folder.
    _pts.SVGImageExtension.dirname = classmethod(_snapshot_dirname)  # type: ignore[assignment,method-assign]

CORPUS = REPO / "corpus"


def load_benchmark(name: str) -> ModuleType:
    """Import ``benchmarks/<name>.py`` by its path, without putting ``benchmarks/`` on
    ``sys.path``: that folder holds ``static_model.py``, which would hide the installed
    ``static_model`` package (tokenlearn-static-model) from every test module collected
    after it (issue 42: the model2vec tests skipped in the full run)."""
    import importlib.util

    key = f"memlens_benchmark_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, REPO / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module

# Tests never touch the user's real config, key or database.
os.environ.setdefault("MEMLENS_CONFIG", str(REPO / "tests" / "data" / "no-config.toml"))
os.environ["HF_HUB_OFFLINE"] = "1"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", help="run long soak/fuzz/scale tests")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow") or os.environ.get("MEMLENS_RUN_SLOW"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own install key and no user config."""
    d = tmp_path_factory.mktemp("memlens-home")
    monkeypatch.setenv("MEMLENS_INSTALL_KEY_FILE", str(d / "install.key"))
    monkeypatch.setenv("MEMLENS_CONFIG", str(d / "config.toml"))
    monkeypatch.delenv("MEMLENS_DB", raising=False)
    monkeypatch.delenv("MEMLENS_EMBEDDER", raising=False)


class Clock:
    """A controllable clock for deterministic timestamps."""

    def __init__(self, start: float = 1_780_000_000.0) -> None:
        self.t = start

    def __call__(self) -> float:
        self.t += 0.001
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


class MemoryTree:
    """A temp folder laid out like ~/.claude/projects/<slug>/memory."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.projects = base / "projects"
        self.projects.mkdir(parents=True, exist_ok=True)

    def memdir(self, slug: str = "-home-dev-proj") -> Path:
        d = self.projects / slug / "memory"
        d.mkdir(parents=True, exist_ok=True)
        return d

    def write(self, rel: str, text: str | bytes, slug: str = "-home-dev-proj") -> Path:
        p = self.memdir(slug) / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text, encoding="utf-8")
        # distinct mtimes even on coarse clocks
        st = p.stat()
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        return p

    def remove(self, rel: str, slug: str = "-home-dev-proj") -> None:
        (self.memdir(slug) / rel).unlink()

    def rename(self, old: str, new: str, slug: str = "-home-dev-proj") -> None:
        d = self.memdir(slug)
        (d / new).parent.mkdir(parents=True, exist_ok=True)
        (d / old).rename(d / new)


@pytest.fixture
def tree(tmp_path: Path) -> MemoryTree:
    return MemoryTree(tmp_path / "claude")


@pytest.fixture
def make_service(tmp_path: Path, clock: Clock) -> Iterator[Callable[..., object]]:
    from memlens.core.config.settings import load_settings
    from memlens.core.embedders.registry import make_embedder
    from memlens.core.service import MemoryService

    made: list[MemoryService] = []

    def factory(db: Path | None = None, embedder: object | None = None, **overrides: object) -> MemoryService:
        settings = load_settings(
            tmp_path / "none.toml", env={}, overrides={"db": str(db or tmp_path / "memlens.db"), **overrides}
        )
        svc = MemoryService(
            settings,
            clock=clock,
            embedder=embedder or make_embedder("hashing", {"dim": 64}),
            install_key=b"k" * 32,
        )
        made.append(svc)
        return svc

    yield factory
    for s in made:
        s.close()


def load_factor() -> float:
    """How much slower than a quiet machine this one runs now: the 1-minute load average
    per core, at least 1 and at most 8 (issue 42: beside two busy loops on 2 cores,
    bounds measured on a quiet machine were hit by tests that were not wrong)."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # pragma: no cover - no load average on this platform
        return 1.0
    return min(8.0, max(1.0, load / (os.cpu_count() or 1)))


def scaled(seconds: float) -> float:
    """A timeout bound for this machine's load now (:func:`load_factor`): bounds only end
    a run that is stuck, so a busy machine gets proportionally more."""
    return seconds * load_factor()


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the real `memlens` CLI in a subprocess (``timeout`` is scaled by the load)."""
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "memlens.launch", *args],  # what the console script runs
        capture_output=True,
        text=True,
        env=e,
        cwd=cwd or REPO,
        timeout=scaled(timeout),
    )
