"""The short commands' start-up path (one command module, lazy imports) answers exactly as
the full path does.

``main`` imports only the named command's module, and a lexical search or ``memlens docs``
leaves tomllib, platformdirs, the config sections, the detail values of
``memlens.core.types``, the embedders and the rest of the core unimported until a step
needs them (``tests/test_imports.py``). Each argv below runs twice through the real CLI
in a fresh interpreter: as shipped, and *eager* — every one of those modules imported and
every lazily re-exported name resolved and every command module imported before
``main``. stdout, stderr and the exit code must be byte-identical, bad input
(missing or wrong ``--db``, unknown flags, bad values, a malformed config) included.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli

_SHIPPED = "import sys\nfrom memlens.cli.main import main\nsys.exit(main())\n"

_EAGER = """\
import importlib, sys
import datetime, json, shlex, tomllib, platformdirs
import memlens.core.types as T
import memlens.core.config.settings as C
for name in sorted(T._LAZY):
    if not T._LAZY[name].startswith(('memlens.bench', 'memlens.watch')):
        getattr(T, name)
for name in sorted(C._SECTIONS):
    getattr(C, name)
for mod in ('embedders.registry', 'redact.engine', 'embedders.names', 'details',
            'config.sections', 'service'):
    importlib.import_module('memlens.core.' + mod)
import memlens.cli.main as cli
for name in cli.COMMANDS:  # every command module, not only the one that runs
    cli.load(name)
sys.exit(cli.main())
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("fastpath")
    mem = base / "memory"
    mem.mkdir()
    (mem / "MEMORY.md").write_text("# Memory\n\n- [notes](notes.md)\n", encoding="utf-8")
    (mem / "notes.md").write_text(
        "# Notes\n\nThe busy_timeout pragma is 15000 ms.\n\n## WAL\n\nCheckpoints run on "
        "close; a busy reader keeps the WAL.\n", encoding="utf-8")
    (mem / "retries.md").write_text(
        "---\nname: Retry policy\ntype: feedback\n---\n# Retries\n\nBack off 5 s, then "
        "double up to an hour.\n", encoding="utf-8")
    db = base / "m.db"
    key = base / "install.key"
    env = {"MEMLENS_EMBEDDER": "hashing", "MEMLENS_INSTALL_KEY_FILE": str(key),
           "MEMLENS_CONFIG": str(base / "none.toml")}
    proc = run_cli("ingest", str(mem), "--repository", "-home-dev-demo", "--db", str(db),
                   env=env)
    assert proc.returncode == 0, proc.stderr
    (base / "good.toml").write_text('[search]\nfusion = "rrf"\nhistory = 5\n', encoding="utf-8")
    (base / "bad.toml").write_text("[search\nfusion = 1\n", encoding="utf-8")
    (base / "badkey.toml").write_text("[search]\nbogus = 1\n", encoding="utf-8")
    (base / "folder.db").mkdir()
    (base / "text.db").write_text("not a database\n", encoding="utf-8")
    return {"base": str(base), "db": str(db), "key": str(key)}


def _cases(w: dict[str, str]) -> list[tuple[list[str], dict[str, str]]]:
    b, db = w["base"], w["db"]
    none = {"MEMLENS_CONFIG": f"{b}/none.toml"}
    lex = ["search", "--mode", "lexical"]
    argvs: list[list[str]] = [
        [*lex, "busy_timeout", "--db", db],
        [*lex, "busy_timeout", "--db", db, "--json"],
        [*lex, "busy timeout WAL", "--db", db, "-k", "1"],
        [*lex, "nothing-matches-this", "--db", db],
        [*lex, "password=hunter2 token", "--db", db],
        [*lex, "busy", "--db", db, "--repository", "demo"],
        [*lex, "busy", "--db", db, "--repository", "-home-dev-demo"],
        [*lex, "busy", "--db", db, "--repository", "nope"],
        [*lex, "busy", "--db", db, "--type", "feedback", "--all-projects"],
        [*lex, "busy", "--db", db, "-k", "0"],
        [*lex, "busy", "--db", db, "-k", "x"],
        [*lex, "busy", "--db", db, "--fusion", "rrf"],
        [*lex, "busy", "--db", db, "--fusion", "nope"],
        [*lex, "--db", db],
        ["search", "--mode", "nope", "busy", "--db", db],
        ["search", "busy", "--mode", "vector", "--db", db],
        [*lex, "busy", "--db", f"{b}/missing/m.db"],
        [*lex, "busy", "--db", f"{b}/folder.db"],
        [*lex, "busy", "--db", f"{b}/text.db"],
        [*lex, "busy", "--db", db, "--bogus"],
        [*lex, "busy", "--db", db, "--config", f"{b}/good.toml"],
        [*lex, "busy", "--db", db, "--config", f"{b}/bad.toml"],
        [*lex, "busy", "--db", db, "--config", f"{b}/badkey.toml"],
        [*lex, "busy", "--db", db, "--config", f"{b}/absent.toml"],
        ["search", "--help"],
        ["search", "-h"],
        ["docs", "--db", db],
        ["docs", "--db", db, "--json"],
        ["docs", "--db", db, "--all", "--repository", "demo"],
        ["docs", "--db", db, "--filter", "retry"],
        ["docs", "--db", db, "--filter", "notse"],
        ["docs", "--db", f"{b}/missing/m.db"],
        ["docs", "--db", f"{b}/text.db"],
        ["docs", "--db", db, "extra"],
        ["docs", "--db", db, "--config", f"{b}/bad.toml"],
        ["docs", "--help"],
        ["history", "notes.md", "--db", db],
        ["history", "notes.md", "--db", db, "--json", "--no-diff"],
        ["history", "absent.md", "--db", db],
        ["config"],
        ["config", "--json", "--db", db],
        ["config", "--config", f"{b}/good.toml"],
        ["config", "--config", f"{b}/badkey.toml"],
        ["doctor", "--db", db],
        ["chunks", f"{b}/memory/notes.md", "--json"],
        ["chunks", f"{b}/memory"],
        ["searchh", "busy"],
        ["--bogus"],
        ["--help"],
        ["-h"],
    ]
    out: list[tuple[list[str], dict[str, str]]] = [(a, none) for a in argvs]
    out += [([*lex, "busy", "--db", db], {**none, "MEMLENS_EMBEDDER": "nope"}),
            (["docs", "--db", db], {**none, "MEMLENS_FUSION": "nope"}),
            (["docs"], {**none, "MEMLENS_DB": db}),
            ([*lex, "busy"], {**none, "MEMLENS_DB": f"{b}/missing/m.db"}),
            (["docs", "--db", db], {"MEMLENS_CONFIG": f"{b}/good.toml"}),
            (["docs", "--db", db], {"MEMLENS_CONFIG": f"{b}/bad.toml"})]
    return out


def _run(code: str, argv: list[str], env: dict[str, str], w: dict[str, str]
         ) -> tuple[int, str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("MEMLENS_")}
    e.update(MEMLENS_EMBEDDER="hashing", MEMLENS_INSTALL_KEY_FILE=w["key"], COLUMNS="100")
    e.update(env)
    p = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, env=e,
                       cwd=REPO, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def test_shipped_path_answers_as_the_eager_full_path(world: dict[str, str]) -> None:
    cases = _cases(world)
    diffs = []
    codes = set()
    for argv, env in cases:
        shipped = _run(_SHIPPED, argv, env, world)
        eager = _run(_EAGER, argv, env, world)
        codes.add(shipped[0])
        if shipped != eager:
            diffs.append(f"{argv} {env}:\n shipped {shipped!r}\n eager   {eager!r}")
    assert diffs == [], "\n".join(diffs)
    assert codes >= {0, 1, 2}  # successes, failures and usage errors were all compared


def test_eager_wrapper_really_loads_what_the_shipped_path_leaves_out(
        world: dict[str, str], tmp_path: Path) -> None:
    """Control: the eager run has the lazy modules and the full parser loaded (else the
    comparison above would compare the shipped path with itself)."""
    probe = _EAGER.replace(
        "sys.exit(cli.main())",
        "code = cli.main()\n"
        f"open({str(tmp_path / 'mods.txt')!r}, 'w').write(' '.join(sorted(sys.modules)))\n"
        "sys.exit(code)")
    code, _, err = _run(probe, ["docs", "--db", world["db"]], {}, world)
    assert code == 0, err
    mods = set((tmp_path / "mods.txt").read_text().split())
    assert {"tomllib", "platformdirs", "memlens.core.details", "memlens.core.config.sections",
            "memlens.core.embedders.registry", "memlens.core.redact.engine", "memlens.cli.bench"} <= mods
