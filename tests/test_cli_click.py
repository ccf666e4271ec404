"""The click command line: lazy commands, arguments that start with ``-``, one-line errors.

Claude slugs all start with ``-`` (``-home-x-proj``), so ``memlens history
-home-x-proj/notes.md`` — the form ``memlens docs`` prints and the README documents — must
read the slug path as the PATH argument, not as options. These run through the installed
console script (``memlens``, i.e. ``memlens.launch``) on a real SQLite file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from memlens.cli import main as cli
from memlens.cli.common import Command, is_dash_path
from tests.conftest import REPO

SLUG = "-home-x-proj"
NOTES = "# Notes\n\nThe busy_timeout pragma is 15000 ms.\n\n## WAL\n\n" + (
    "Checkpoints run on close; a busy reader keeps the WAL. " * 30) + "\n"


def _script() -> list[str]:
    script = Path(sys.executable).with_name("memlens")
    assert script.exists(), "the console script is installed in the environment"
    return [str(script)]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("dash")
    mem = base / "projects" / SLUG / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text("# Memory\n\n- [notes](notes.md)\n", encoding="utf-8")
    (mem / "notes.md").write_text(NOTES, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLENS_")}
    env.update(MEMLENS_EMBEDDER="hashing", MEMLENS_INSTALL_KEY_FILE=str(base / "key"),
               MEMLENS_CONFIG=str(base / "none.toml"), COLUMNS="100")
    db = base / "m.db"
    w = {"base": str(base), "db": str(db), "env": json.dumps(env)}
    p = _memlens(w, "ingest", str(base / "projects"), "--db", str(db))
    assert p.returncode == 0, p.stderr
    return w


def _memlens(w: dict[str, str], *args: str, cwd: str | None = None,
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*_script(), *args], capture_output=True, text=True,
                          env=json.loads(w["env"]), cwd=cwd or REPO, timeout=120)


def test_docs_lists_slug_paths(world: dict[str, str]) -> None:
    p = _memlens(world, "docs", "--db", world["db"])
    assert p.returncode == 0, p.stderr
    assert f"{SLUG}/notes.md" in p.stdout


@pytest.mark.parametrize("where", ["after", "before"])
def test_history_takes_a_slug_path(world: dict[str, str], where: str) -> None:
    args = [f"{SLUG}/notes.md", "--db", world["db"], "--json"]
    if where == "before":  # options first, the slug path last
        args = args[1:] + args[:1]
    p = _memlens(world, "history", *args)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert (data["repository"], data["path"]) == (SLUG, "notes.md")
    assert data["revisions"][0]["change_kind"] == "create"
    # the same document by --repository, whose value may start with "-" too
    q = _memlens(world, "history", "notes.md", "--repository", SLUG, "--db", world["db"],
                 "--json")
    assert q.returncode == 0, q.stderr
    assert json.loads(q.stdout) == data


@pytest.mark.parametrize("path", [f"{SLUG}:notes.md", "x-proj:notes.md"])
def test_history_takes_repository_colon_path(world: dict[str, str], path: str) -> None:
    """``REPOSITORY:PATH``, the repository by its full or a short name."""
    p = _memlens(world, "history", path, "--db", world["db"], "--json")
    assert p.returncode == 0, p.stderr
    assert (json.loads(p.stdout)["repository"], json.loads(p.stdout)["path"]) == (SLUG, "notes.md")
    bad = _memlens(world, "history", "nope:notes.md", "--db", world["db"])
    assert bad.returncode == 2 and bad.stderr.startswith("memlens: no repository 'nope'")


def test_rechunk_takes_a_slug_path(tmp_path: Path, world: dict[str, str]) -> None:
    db = tmp_path / "r.db"
    shutil.copy(world["db"], db)
    p = _memlens(world, "rechunk", f"{SLUG}/notes.md", "--max-tokens", "200", "--db", str(db),
                 "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["rechunked"] == 1
    q = _memlens(world, "rechunk", "--strategy", "windows", "--max-tokens", "100",
                 "--overlap", "20", "--db", str(db), f"{SLUG}/notes.md")
    assert q.returncode == 0, q.stderr
    assert q.stdout.startswith("1 rechunked"), q.stdout
    h = _memlens(world, "history", f"{SLUG}/notes.md", "--db", str(db), "--json")
    configs = [r["chunker"]["config"] for r in json.loads(h.stdout)["revisions"]]
    assert [(c["strategy"], c["max_tokens"]) for c in configs[:2]] == [
        ("windows", 100), ("adaptive", 200)]


def test_chunks_takes_a_relative_path_that_starts_with_dash(world: dict[str, str]) -> None:
    projects = str(Path(world["base"]) / "projects")
    p = _memlens(world, "chunks", f"{SLUG}/memory/notes.md", "--max-tokens", "100", "--json",
                 cwd=projects)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["file"] == f"{SLUG}/memory/notes.md"


def test_an_unknown_slug_path_is_one_line(world: dict[str, str]) -> None:
    p = _memlens(world, "history", "-home-x-nope/notes.md", "--db", world["db"])
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == "memlens: no document '-home-x-nope/notes.md'\n"


def test_an_unknown_option_is_still_an_error() -> None:
    """Only a token with a ``/`` reads as a slug path; ``-x`` stays an unknown option, and a
    real option keeps its meaning wherever it stands."""
    assert is_dash_path("-home-x-proj/notes.md") and is_dash_path("-a/b")
    assert is_dash_path("-home-x-proj:notes.md")
    for token in ("-x", "--db", "--db=a/b", "-k", "-", "--", "-/", "/a", "a/-b", "-k=a/b",
                  "-:a", "--x:y"):
        assert not is_dash_path(token), token
    history = cli.load("history")
    assert history.positionals_last(["-home-x/a.md", "--no-diff"]) == [
        "--no-diff", "--", "-home-x/a.md"]
    assert history.positionals_last(["--repository", "-home-x/a", "a.md"]) == [
        "--repository", "-home-x/a", "a.md"]  # a value, not a positional: unchanged
    assert history.positionals_last(["a.md", "--db", "x/-y.db"]) == ["a.md", "--db", "x/-y.db"]
    with pytest.raises(click.UsageError, match="No such option"):
        cli.parse_args(["history", "a.md", "-x"])


# -- the lazy group ------------------------------------------------------------------

def test_every_command_is_its_module_with_the_listed_help() -> None:
    """``COMMANDS`` (what ``memlens --help`` lists without importing a command) says what
    each command module's own ``short_help`` says."""
    for name, short in cli.COMMANDS.items():
        cmd = cli.load(name)
        assert isinstance(cmd, Command) and cmd.name == name
        assert cmd.short_help == short, name
        assert cmd.help, name


def test_root_help_imports_no_command_module() -> None:
    code = ("import sys\nfrom memlens.cli.main import main\ncode = main(['--help'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('memlens')))\n"
            "sys.exit(code)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=REPO, timeout=60, env={**os.environ, "COLUMNS": "100"})
    assert p.returncode == 0, p.stderr
    assert "Commands:" in p.stdout and "purge" in p.stdout
    mods = p.stdout.strip().splitlines()[-1]
    assert mods == "['memlens', 'memlens.cli', 'memlens.cli.main']"


def test_parse_args_gives_the_handler_and_lists() -> None:
    from memlens.cli import ingest

    args = cli.parse_args(["ingest", "a", "b", "--repository", "-home-x", "--max-tokens", "9"])
    assert args.command == "ingest" and args.handler is ingest.cmd_ingest
    assert args.paths == [Path("a"), Path("b")] and args.repository == "-home-x"
    assert args.max_tokens == 9 and args.db is None and args.json is False
    tui = cli.parse_args(["--demo"])  # the TUI is the default command
    assert tui.command == "tui" and tui.demo


def test_usage_errors_are_one_line_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["docs", "--bogus"]) == 2
    err = capsys.readouterr().err
    assert err == "memlens docs: no such option '--bogus' (see `memlens docs --help`)\n"
    assert cli.main(["search", "q", "--mode", "fuzzy"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("memlens search: invalid value for '--mode'")


# -- `memlens --help` without click ---------------------------------------------------

def _help(code: str, columns: str, *argv: str) -> tuple[str, list[str]]:
    code += ("print('MODULES', ' '.join(sorted(m for m in sys.modules"
             " if m.startswith(('click', 'memlens')))))\n")
    p = subprocess.run([sys.executable, "-c", "import sys\n" + code, *argv], capture_output=True,
                       text=True, cwd=REPO, timeout=60, env={**os.environ, "COLUMNS": columns})
    assert p.returncode == 0 and p.stderr == "", p.stderr
    text, _, mods = p.stdout.rpartition("MODULES ")
    return text, mods.split()


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_root_help_text_is_clicks(flag: str) -> None:
    """The console script prints ``memlens --help`` from ``memlens.cli.root_help`` (no
    click import: start-up); it must be exactly what click renders from the tree, from
    ``COLUMNS`` on. Narrower, click renders it. When this fails, paste ``clicks`` (below)
    into ``root_help.TEXT``."""
    from memlens.cli import root_help

    shipped = "from memlens.launch import main\nmain()\n"
    full = "from memlens.cli.main import main\nmain()\n"
    for columns in (str(root_help.COLUMNS), "200"):
        clicks, _ = _help(full, columns, flag)
        assert clicks == root_help.TEXT, clicks
        text, mods = _help(shipped, columns, flag)
        assert text == clicks
        assert not [m for m in mods if m.startswith("click")], mods
    narrow, _ = _help(full, "60", flag)
    text, mods = _help(shipped, "60", flag)
    assert text == narrow != root_help.TEXT and "click" in mods
