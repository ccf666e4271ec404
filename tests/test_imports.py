"""Lazy imports: a command imports only what it uses.

The real CLI runs in a fresh interpreter against a database built by ``memlens
ingest``; after the command, the wrapper writes ``sorted(sys.modules)`` to a file.
Commands that need no vectors and no Markdown parsing must not import numpy (which
``import sqlite_vec`` alone would pull in), markdown-it, onnxruntime or tokenizers.
No timing is asserted here; see ``docs/benchmarks.md`` for the numbers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli

ENV = {"MEMLENS_EMBEDDER": "hashing"}
HEAVY = ("numpy", "markdown_it", "onnxruntime", "tokenizers", "sqlite_vec")

_WRAPPER = (
    "import json, sys\n"
    "from memlens.cli.main import main\n"
    "out, args = sys.argv[1], sys.argv[2:]\n"
    "try:\n"
    "    code = main(args)\n"
    "except SystemExit as exc:\n"
    "    code = exc.code\n"
    "with open(out, 'w', encoding='utf-8') as f:\n"
    "    json.dump({'code': code, 'modules': sorted(sys.modules)}, f)\n"
)


@pytest.fixture
def db(tmp_path: Path) -> str:
    base = tmp_path / "imports"
    mem = base / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text("# Memory\n\n- [notes](notes.md)\n", encoding="utf-8")
    (mem / "notes.md").write_text(
        "# Notes\n\nThe busy_timeout pragma is 15000 ms.\n\n## WAL\n\nCheckpoints run on close.\n",
        encoding="utf-8",
    )
    path = str(base / "memlens.db")
    proc = run_cli("ingest", str(mem), "--repository", "demo", "--db", path, env=ENV)
    assert proc.returncode == 0, proc.stderr
    return path


def _modules(tmp_path: Path, *args: str) -> set[str]:
    """Run ``memlens ARGS`` in a fresh interpreter; the modules it had imported at the end."""
    out = tmp_path / "modules.json"
    env = {**os.environ, **ENV}
    proc = subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(out), *args],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["code"] in (0, None), (data["code"], proc.stdout, proc.stderr)
    return set(data["modules"])


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


@pytest.mark.parametrize(
    "args",
    [
        ("search", "--mode", "lexical", "busy_timeout"),
        ("search", "--mode", "lexical", "busy_timeout", "--json"),
        ("docs",),
        ("history", "notes.md", "--repository", "demo"),
    ],
    ids=lambda a: "-".join(x for x in a if not x.startswith("busy")),
)
def test_light_commands_skip_heavy_imports(db: str, tmp_path: Path, args: tuple[str, ...]) -> None:
    mods = _modules(tmp_path, *args, "--db", db)
    assert "memlens.core.service" in mods  # the command really ran through the core
    assert _heavy(mods) == []


def test_config_skips_heavy_imports(tmp_path: Path) -> None:
    assert _heavy(_modules(tmp_path, "config")) == []


def test_vector_search_still_imports_numpy(db: str, tmp_path: Path) -> None:
    """Control: the check above would see numpy if a command imported it."""
    mods = _modules(tmp_path, "search", "--mode", "vector", "busy_timeout", "--db", db)
    assert "numpy" in mods
    assert "sqlite_vec" not in mods  # the extension is loaded from its file, not the package


def test_sqlite_vec_missing_is_a_database_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from memlens.core.store import db as dbm

    monkeypatch.setattr(dbm, "_vec_path", None)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, package=None: None)
    with pytest.raises(dbm.DatabaseError, match="sqlite-vec"):
        dbm._sqlite_vec_path()


def test_sqlite_vec_path_matches_the_package() -> None:
    import sqlite_vec

    from memlens.core.store import db as dbm

    assert os.path.normpath(dbm._sqlite_vec_path()) == os.path.normpath(sqlite_vec.loadable_path())


# The write side of the core: chunker, projection, ingest, purge, preview, in-RAM vectors.
WRITE_SIDE = ("memlens.core.chunking.chunker", "memlens.core.projection.swap", "memlens.core.ingest.pipeline",
              # the rest of what was projection.py: queue, stage 2, a run, vector spaces, reports
              "memlens.core.projection.queue", "memlens.core.projection.vectors",
              "memlens.core.projection.run", "memlens.core.projection.spaces",
              "memlens.core.projection.reports",
              "memlens.core.store.purge", "memlens.core.search.preview", "memlens.core.search.vector_matrix",
              "memlens.core.chunking.choice",
              # the embedder name in MEMLENS_EMBEDDER is checked against embedders/names.py
              # (the package's __init__ is light; the registry is the write side)
              "memlens.core.embedders.registry")


@pytest.mark.parametrize(
    "args",
    [("search", "--mode", "lexical", "busy_timeout"), ("docs",)],
    ids=lambda a: a[0],
)
def test_read_commands_skip_the_write_side(db: str, tmp_path: Path,
                                           args: tuple[str, ...]) -> None:
    """A one-shot read loads the database, config and search code only: the façade
    (``memlens.core.types`` and ``service``) resolves the rest on first use."""
    mods = _modules(tmp_path, *args, "--db", db)
    assert "memlens.core.service" in mods
    assert sorted(m for m in WRITE_SIDE if m in mods) == []
    if args[0] == "docs":  # nothing to redact: the rules are not compiled
        assert "memlens.core.redact.engine" not in mods


def test_ingest_still_loads_the_write_side(tmp_path: Path) -> None:
    """Control: the check above would see the modules if a command used them."""
    mem = tmp_path / "m" / "memory"
    mem.mkdir(parents=True)
    (mem / "notes.md").write_text("# Notes\n\nbody\n", encoding="utf-8")
    mods = _modules(tmp_path, "ingest", str(mem), "--repository", "demo",
                    "--db", str(tmp_path / "x.db"))
    assert {"memlens.core.chunking.chunker", "memlens.core.projection.swap",
            "memlens.core.ingest.pipeline"} <= mods


def test_a_command_loads_only_its_own_module(db: str, tmp_path: Path) -> None:
    """The root group is lazy: `memlens docs` imports the docs command, no other."""
    from memlens.cli.main import COMMANDS

    mods = _modules(tmp_path, "docs", "--db", db)
    assert "memlens.cli.docs" in mods
    others = {f"memlens.cli.{n}" for n in COMMANDS if n != "docs"}
    assert sorted(others & mods) == []


# What a lexical search or `memlens docs` given --db and no config file leaves out (fifth
# round, docs/benchmarks.md): the TOML parser, platformdirs (only a default path needs it),
# the config sections other than [search], the detail values of the façade and shlex
# (only doctor's rebuild hint). datetime, once only `history`'s, now comes with click.
START_UP = ("tomllib", "platformdirs", "memlens.core.config.sections",
            "memlens.core.details", "shlex")


@pytest.mark.parametrize(
    "args",
    [("search", "--mode", "lexical", "busy_timeout"),
     ("search", "--mode", "lexical", "busy_timeout", "--json"), ("docs",), ("docs", "--json")],
    ids=lambda a: "-".join(x for x in a if not x.startswith("busy")),
)
def test_read_commands_skip_start_up_extras(db: str, tmp_path: Path,
                                            args: tuple[str, ...]) -> None:
    assert not Path(os.environ["MEMLENS_CONFIG"]).exists()  # conftest: no config file
    mods = _modules(tmp_path, *args, "--db", db)
    assert "memlens.core.service" in mods
    assert sorted(m for m in START_UP if m in mods) == []


def test_start_up_extras_load_when_used(db: str, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Control: a config file brings tomllib, the default database path platformdirs,
    `history` the revision values and datetime, an embedder the config sections."""
    cfg = tmp_path / "config.toml"
    cfg.write_text("[search]\nhistory = 5\n", encoding="utf-8")
    assert "tomllib" in _modules(tmp_path, "docs", "--db", db, "--config", str(cfg))
    assert "platformdirs" in _modules(tmp_path, "config")
    hist = _modules(tmp_path, "history", "notes.md", "--repository", "demo", "--db", db)
    assert {"memlens.core.details", "datetime"} <= hist
    assert "memlens.core.config.sections" in _modules(
        tmp_path, "search", "--mode", "vector", "busy_timeout", "--db", db)


def test_lazy_names_resolve_to_their_classes() -> None:
    """The names moved out of `types` and `config` are still theirs to import, once."""
    import memlens.core.config.settings as C
    import memlens.core.types as T
    from memlens.core import details as types_reads
    from memlens.core.config import sections as config_sections

    for name in types_reads.__all__:
        assert getattr(T, name) is getattr(types_reads, name)
        assert name in T.__all__
    for name in config_sections.__all__:
        assert getattr(C, name) is getattr(config_sections, name)
    for name in ("ChunkerSettings", "EmbedderSettings", "WatchSettings"):
        assert getattr(T, name) is getattr(config_sections, name)
    with pytest.raises(AttributeError):
        C.NoSuchSettings  # noqa: B018
    s = C.load_settings(None, env={}, overrides={"db": "x.db"})
    assert isinstance(s.chunker, config_sections.ChunkerSettings)
    assert s.retention == config_sections.RetentionSettings(max_revisions=50, max_age_days=0)
