"""The one-shot lexical search (``memlens.core.search.quick`` behind ``memlens.launch``, the
console script) answers exactly as the full CLI does, and only when it can.

Every case runs twice through a real interpreter on a real database file built from the
bundled corpus: once through the console script's module (which takes the short path
when it may) and once through ``memlens.cli.main.main`` (the full path, always). stdout,
stderr, the exit code and the search history written must be the same; each case also
says whether the short path must have answered, and the run records whether it did (the
full CLI module was never imported). In-process, hypothesis compares
``quick.lexical_search`` with ``MemoryService.search`` on generated queries, and the
launcher's argument reading with click's on generated command lines; a fresh
interpreter pins the short path's import budget.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlens import launch
from memlens.core.config.settings import _ENV, SearchSettings
from memlens.core.search import quick
from memlens.core.search import rows as search_rows
from memlens.core.search.engine import VEC_K_MAX
from memlens.core.search.engine import search as full_search
from memlens.core.search.hits import SearchHit
from memlens.core.service import MemoryService, load_settings
from tests.conftest import CORPUS, REPO, run_cli

_FAST = """\
import os, sys
from memlens.launch import main
try:
    code = main()
except SystemExit as exc:  # an exit from deeper down
    code = exc.code
with open(os.environ["QUICK_MARK"], "a") as f:
    f.write("full\\n" if "memlens.cli.main" in sys.modules else "short\\n")
sys.exit(code)
"""
_FULL = "import sys\nfrom memlens.cli.main import main\nsys.exit(main())\n"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The corpus in one database, plus one project whose Claude slug is a folder here
    (so a search run from that folder ranks its memory first)."""
    base = tmp_path_factory.mktemp("quick")
    work = (base / "work" / "tidewater").resolve()
    (work / "sub").mkdir(parents=True)
    projects = base / "projects"
    projects.mkdir()
    for p in CORPUS.iterdir():
        if p.is_dir():
            shutil.copytree(p, projects / p.name)
    slug = search_rows.claude_slug(str(work))
    shutil.copytree(CORPUS / "-home-dev-projects-tidewater-api", projects / slug)
    db = base / "pristine.db"
    env = {"MEMLENS_EMBEDDER": "hashing", "MEMLENS_INSTALL_KEY_FILE": str(base / "key"),
           "MEMLENS_CONFIG": str(base / "none.toml")}
    proc = run_cli("ingest", str(projects), "--db", str(db), env=env)
    assert proc.returncode == 0, proc.stderr
    (base / "good.toml").write_text('[search]\nhistory = 5\n', encoding="utf-8")
    (base / "folder.db").mkdir()
    (base / "text.db").write_text("not a database\n", encoding="utf-8")
    old = base / "old.db"
    shutil.copy(db, old)
    c = apsw.Connection(str(old))
    c.execute("PRAGMA user_version=99")
    c.close()
    bad = base / "bad.db"  # node text whose deflated blobs do not inflate
    shutil.copy(db, bad)
    c = apsw.Connection(str(bad))
    c.create_scalar_function("memlens_inflate", lambda *a: "", 1, deterministic=True)
    c.execute("DROP TRIGGER knowledge_nodes_au")  # leave the FTS index as it was
    c.execute("UPDATE knowledge_nodes SET text_z = x'789cdeadbeef'")
    c.close()
    return {"base": base, "db": db, "work": work, "slug": slug, "key": base / "key"}


def _history(db: Path) -> list[tuple[str, str, str]]:
    c = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [tuple(r) for r in c.execute(
            "SELECT query, mode, source FROM search_history ORDER BY id")]
    finally:
        c.close()


LEX = ["search", "--mode", "lexical"]
# (argv with {db}/{base} placeholders, extra environment, cwd: "work"/"sub"/"repo", short?)
CASES: list[tuple[list[str], dict[str, str], str, bool]] = [
    ([*LEX, "busy timeout", "--db", "{db}", "--json"], {}, "repo", True),
    ([*LEX, "busy timeout", "--db", "{db}"], {}, "repo", True),
    (["search", "WAL checkpoint", "--json", "--db={db}", "--mode=lexical"], {}, "repo", True),
    ([*LEX, "SQLITE_BUSY", "--db", "{db}", "-k", "3", "--json"], {}, "repo", True),
    ([*LEX, "foo.bar() path/to/file.md", "--db", "{db}", "--json"], {}, "repo", True),
    ([*LEX, "migrations", "--db", "{db}", "-k1"], {}, "repo", False),  # not its grammar
    ([*LEX, "the", "--db", "{db}", "-k", "5000", "--json"], {}, "repo", True),
    ([*LEX, "retry backoff", "--db", "{db}", "--json"], {}, "work", True),
    ([*LEX, "retry backoff", "--db", "{db}"], {}, "sub", True),
    ([*LEX, "retry backoff", "--db", "{db}", "--all-projects", "--json"], {}, "sub", True),
    ([*LEX, "zzqx nothing matches", "--db", "{db}"], {}, "repo", True),
    ([*LEX, "", "--db", "{db}", "--json"], {}, "repo", True),
    ([*LEX, "AND OR NOT NEAR * \" ( )", "--db", "{db}", "--json"], {}, "repo", True),
    ([*LEX, "password=hunter2 token", "--db", "{db}", "--json"], {}, "repo", True),
    ([*LEX, "Ünïcödé café naïve", "--db", "{db}", "--json"], {}, "repo", True),
    ([*LEX, "deploy", "--json"], {"MEMLENS_DB": "{db}"}, "repo", True),
    ([*LEX, "deploy", "--db", "", "--json"], {"MEMLENS_DB": "{db}"}, "repo", False),
    ([*LEX, "deploy", "--db", "{db}"], {"MEMLENS_EMBEDDER": "hashing"}, "repo", True),
    ([*LEX, "deploy", "--db", "{db}"], {"MEMLENS_DARK": "1"}, "repo", True),
    # what the short path leaves to the full CLI
    ([*LEX, "deploy", "--db", "{db}"], {"MEMLENS_EMBEDDER": "nope"}, "repo", False),
    ([*LEX, "deploy", "--db", "{db}"], {"MEMLENS_FUSION": "nope"}, "repo", False),
    ([*LEX, "deploy", "--db", "{db}"], {"MEMLENS_MAX_TOKENS": "x"}, "repo", False),
    ([*LEX, "deploy", "--db", "{db}"], {"MEMLENS_CONFIG": "{base}/good.toml"}, "repo", False),
    ([*LEX, "deploy", "--db", "{db}", "--config", "{base}/good.toml"], {}, "repo", False),
    ([*LEX, "deploy", "--db", "{db}", "--repository", "tidewater-api"], {}, "repo", False),
    ([*LEX, "deploy", "--db", "{db}", "--type", "feedback"], {}, "repo", False),
    ([*LEX, "deploy", "--db", "{db}", "--fusion", "rrf"], {}, "repo", False),
    ([*LEX, "deploy", "--db", "{db}", "-k", "0"], {}, "repo", False),
    ([*LEX, "deploy", "--db", "{db}", "-k", "-2"], {}, "repo", False),
    ([*LEX, "deploy", "--db", "{db}", "-k", "02"], {}, "repo", False),
    ([*LEX, "deploy", "--db", "{db}", "--json", "--json"], {}, "repo", False),
    ([*LEX, "deploy", "--db", "{db}", "--js"], {}, "repo", False),
    ([*LEX, "deploy", "--db", "{db}", "--bogus"], {}, "repo", False),
    ([*LEX, "deploy", "extra", "--db", "{db}"], {}, "repo", False),
    ([*LEX, "-deploy", "--db", "{db}"], {}, "repo", False),
    ([*LEX, "deploy", "--db", "{base}/missing/m.db"], {}, "repo", False),
    ([*LEX, "deploy", "--db", "{base}/absent.db"], {}, "repo", False),
    ([*LEX, "deploy", "--db", "{base}/folder.db"], {}, "repo", False),
    ([*LEX, "deploy", "--db", "{base}/text.db"], {}, "repo", False),
    ([*LEX, "deploy", "--db", "{base}/old.db"], {}, "repo", False),
    ([*LEX, "deploy", "--db", "{base}/bad.db", "--json"], {}, "repo", False),
    ([*LEX, "--db", "{db}"], {}, "repo", False),
    (["search", "deploy", "--db", "{db}"], {}, "repo", False),
    (["search", "deploy", "--mode", "vector", "--db", "{db}"], {"MEMLENS_EMBEDDER": "hashing"},
     "repo", False),
    (["search", "--help"], {}, "repo", False),
    (["docs", "--db", "{db}"], {}, "repo", False),
]


def _run(code: str, argv: list[str], extra: dict[str, str], cwd: Path, w: dict[str, Any],
         mark: Path) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLENS_")}
    env.update(MEMLENS_INSTALL_KEY_FILE=str(w["key"]),
               MEMLENS_CONFIG=str(w["base"] / "none.toml"), QUICK_MARK=str(mark),
               COLUMNS="100", HOME=str(w["base"] / "home"))
    env.update(extra)
    p = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, env=env,
                       cwd=cwd, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def test_short_path_answers_as_the_full_cli(world: dict[str, Any], tmp_path: Path) -> None:
    dbs = {"fast": tmp_path / "fast.db", "full": tmp_path / "full.db"}
    for p in dbs.values():
        shutil.copy(world["db"], p)
    cwds = {"repo": REPO, "work": world["work"], "sub": world["work"] / "sub"}
    diffs, wrong_path = [], []
    for argv, env, where, short in CASES:
        runs = {}
        for side, code in (("fast", _FAST), ("full", _FULL)):
            sub = {"{db}": str(dbs[side]), "{base}": str(world["base"])}

            def fill(s: str, sub: dict[str, str] = sub) -> str:
                for k, v in sub.items():
                    s = s.replace(k, v)
                return s

            mark = tmp_path / f"{side}.mark"
            mark.unlink(missing_ok=True)
            runs[side] = _run(code, [fill(a) for a in argv],
                              {k: fill(v) for k, v in env.items()}, cwds[where], world, mark)
            if side == "fast":
                took = mark.read_text().strip()
                if took != ("short" if short else "full"):
                    wrong_path.append(f"{argv} {env}: took the {took} path")
        fast, full = runs["fast"], runs["full"]
        fast = (fast[0], fast[1].replace(str(dbs["fast"]), "DB"), fast[2].replace(str(dbs["fast"]), "DB"))
        full = (full[0], full[1].replace(str(dbs["full"]), "DB"), full[2].replace(str(dbs["full"]), "DB"))
        if fast != full:
            diffs.append(f"{argv} {env} ({where}):\n fast {fast!r}\n full {full!r}")
        if "Traceback" in fast[2] or "Traceback" in full[2]:
            diffs.append(f"{argv} {env}: a traceback\n{fast[2]}")
    assert diffs == [], "\n".join(diffs)
    assert wrong_path == [], "\n".join(wrong_path)
    assert _history(dbs["fast"]) == _history(dbs["full"])
    assert ("password=[REDACTED] token", "lexical", "cli") in _history(dbs["fast"]) or \
        not any("hunter2" in q for q, _, _ in _history(dbs["fast"]))


def test_cases_cover_the_preferred_project_and_every_exit_code(world: dict[str, Any]) -> None:
    """Control for the comparison above: run from the project folder, the short path
    really prefers its memory (so the cwd cases compare something)."""
    res = quick.lexical_search(str(world["db"]), "retry backoff", k=5, cwd=str(world["work"]),
                               now=0.0)
    assert res is not None and res["preferred_repository"] == world["slug"]
    assert res["hits"] and res["hits"][0]["repository"] == world["slug"]
    away = quick.lexical_search(str(world["db"]), "retry backoff", k=5, all_projects=True)
    assert away is not None and away["preferred_repository"] is None
    assert {code for _, _, _, short in CASES for code in [short]} == {True, False}


def test_console_script_is_the_launcher() -> None:
    """The installed ``memlens`` script runs ``launch.main`` (pyproject's entry point)."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'memlens = "memlens.launch:main"' in text
    script = Path(sys.executable).with_name("memlens")
    if script.exists():
        assert "memlens.launch" in script.read_text(encoding="utf-8")


# -- in process: generated queries -------------------------------------------------

_WORDS = ["busy", "timeout", "WAL", "sqlite", "deploy", "retry", "backoff", "the", "cache",
          "SQLITE_BUSY", "foo.bar()", "migrations", "token", "a", "zzqx", "pipeline", "test"]


@pytest.fixture(scope="module")
def pair(world: dict[str, Any], tmp_path_factory: pytest.TempPathFactory,
         ) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("pair")
    a, b = d / "quick.db", d / "service.db"
    shutil.copy(world["db"], a)
    shutil.copy(world["db"], b)
    svc = MemoryService(load_settings(overrides={"db": str(b)}), create=False,
                        clock=lambda: 1234.5)
    yield {"quick": a, "service": b, "svc": svc, "cwd": world["work"]}
    svc.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.one_of(st.sampled_from(_WORDS),
                                st.text(alphabet=st.characters(codec="utf-8"), max_size=6)),
                      max_size=4),
       k=st.integers(1, 60), here=st.booleans())
def test_quick_equals_the_service(pair: dict[str, Any], words: list[str], k: int,
                                  here: bool) -> None:
    query = " ".join(words)
    cwd = str(pair["cwd"]) if here else "/"
    got = quick.lexical_search(str(pair["quick"]), query, k=k, cwd=cwd, now=1234.5)
    svc: MemoryService = pair["svc"]
    prefer = svc.current_repository(Path(cwd))
    want = svc.search(query, mode="lexical", k=k, prefer_repository=prefer,
                      all_projects=prefer is None)
    svc.remember_search(query, "lexical", "cli")
    if got is None:  # only a query FTS5 refuses goes to the full CLI; it notes that
        assert want.notes, query
        return
    assert got == want.as_json()
    assert json.dumps(got) == json.dumps(want.as_json())
    assert _history(pair["quick"])[-1:] == _history(pair["service"])[-1:]


# -- in process: what the launcher reads from argv ---------------------------------

_TOKENS = ["search", "--mode", "lexical", "hybrid", "--mode=lexical", "-k", "3", "-k7", "0",
           "--json", "--db", "x.db", "--db=y.db", "--all-projects", "--repository", "r",
           "--js", "busy", "timeout", "-", "--", "-x", "", "--type", "t"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=8))
def test_launcher_reads_argv_as_click_does(argv: list[str]) -> None:
    import click

    from memlens.cli.main import parse_args

    req = launch._request(argv)
    if req is None:
        return
    try:
        args = parse_args(argv)
    except click.UsageError as exc:  # pragma: no cover - the assertion below names the argv
        raise AssertionError(f"short path accepted {argv}, click refused it") from exc
    assert (args.command, args.mode, args.query, args.k, args.json, args.db or None,
            args.all_projects) == ("search", "lexical", req["query"], req["k"], req["json"],
                                   req["db"] and Path(req["db"]), req["all"])
    assert (args.repository, args.doc_type, args.fusion, args.embedder) == (None,) * 4
    assert getattr(args, "config", None) is None


def test_launcher_request_examples() -> None:
    r = launch._request(["search", "q w", "-k", "4", "--mode", "lexical", "--json"])
    assert r == {"k": 4, "json": True, "db": None, "all": False, "query": "q w"}
    assert launch._request(["search", "q", "--mode", "hybrid"]) is None
    assert launch._request(["search", "q"]) is None  # hybrid is the default mode
    assert launch._request(["docs"]) is None
    # forms click reads the same way go the full way: the short path has its own grammar
    assert launch._request(["search", "q", "--mode", "lexical", "-k3"]) is None
    assert launch._request(["search", "q", "--mode=lexical", "--json=1"]) is None


# -- paths, constants and variables the short path assumes -------------------------

_ABS = st.sampled_from(["/h", "/home/u/", "/x//y", "/"])
_ANY = st.one_of(_ABS, st.sampled_from(["", "rel/dir", "~", "./a"]), st.none())


def _put_env(values: dict[str, str | None]) -> dict[str, str | None]:
    """Set (None: remove) these variables of this process; returns what they were."""
    was = {k: os.environ.get(k) for k in values}
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    return was


@settings(max_examples=120, deadline=None)
@given(home=_ANY, xdg_config=_ANY, xdg_data=_ANY)
def test_default_paths_are_platformdirs(home: str | None, xdg_config: str | None,
                                        xdg_data: str | None) -> None:
    import platformdirs

    new = {"HOME": home, "XDG_CONFIG_HOME": xdg_config, "XDG_DATA_HOME": xdg_data}
    old = _put_env(new)
    try:
        got = quick.default_paths()
        if got is None:
            assert sys.platform != "linux" or not (home or "").startswith("/")
            return
        want = (platformdirs.user_config_path("memlens") / "config.toml",
                platformdirs.user_data_path("memlens") / "memlens.db")
    finally:
        _put_env(old)
    assert (Path(got[0]), Path(got[1])) == want


def test_defaults_agree_with_the_settings_and_the_search() -> None:
    s = SearchSettings()
    assert (quick.HISTORY, quick.CANDIDATES) == (s.history, s.candidates)
    assert s.prefer_current_project is True
    assert quick.PER_DOCUMENT == inspect.signature(full_search).parameters["per_document"].default
    assert quick.K_MAX == VEC_K_MAX
    assert search_rows.HIT_KEYS == tuple(f.name for f in dataclasses.fields(SearchHit))


def test_ignored_variables_are_not_settings() -> None:
    assert launch.IGNORED_VARIABLES.isdisjoint(_ENV)
    assert {"MEMLENS_DB", "MEMLENS_EMBEDDER"} <= set(_ENV)
    assert "MEMLENS_CONFIG" not in launch.IGNORED_VARIABLES


# -- what the short path loads ---------------------------------------------------

_MODULES = """\
import json, os, sys
from memlens.launch import main
code = main()
open(os.environ["QUICK_MODULES"], "w").write(json.dumps(sorted(sys.modules)))
sys.exit(code)
"""
HEAVY = ("typing", "dataclasses", "pathlib", "argparse", "click", "inspect", "threading", "tomllib",
         "platformdirs", "memlens.core.service", "memlens.core.types", "memlens.core.store.db",
         "memlens.core.config.settings", "memlens.cli.main")


def _loaded(world: dict[str, Any], tmp_path: Path, *argv: str) -> set[str]:
    out = tmp_path / "mods.json"
    code, _, err = _run(_MODULES, list(argv), {"QUICK_MODULES": str(out)}, REPO, world,
                        tmp_path / "mark")
    assert code == 0, err
    return set(json.loads(out.read_text()))


def test_short_path_loads_no_facade_and_no_heavy_stdlib(world: dict[str, Any],
                                                          tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    shutil.copy(world["db"], db)
    mods = _loaded(world, tmp_path, *LEX, "busy timeout", "--db", str(db), "--json")
    assert "memlens.core.search.quick" in mods
    assert sorted(m for m in HEAVY if m in mods) == []
    # control: the same search in hybrid mode goes the full way and loads them
    full = _loaded(world, tmp_path, "search", "busy timeout", "--db", str(db), "--json",
                   "--embedder", "hashing")
    assert {"typing", "dataclasses", "pathlib", "click", "memlens.core.service"} <= full


_BUDGET = """\
import json, os, sys
before = set(sys.modules)
from memlens.launch import main
code = main()
new = sorted(set(sys.modules) - before)
open(os.environ["QUICK_MODULES"], "w").write(json.dumps(new))
sys.exit(code)
"""

SHORT_PATH_BUDGET = {
    "apsw",
    "memlens", "memlens.launch", "memlens.cli", "memlens.cli.search_text",
    "memlens.core", "memlens.core.embedders", "memlens.core.embedders.names",
    "memlens.core.search", "memlens.core.search.history", "memlens.core.search.query",
    "memlens.core.search.quick", "memlens.core.search.rows",
    "memlens.core.store", "memlens.core.store.rows",
}
"""Every memlens and third-party module the one-shot lexical search may import (the
contract in ``memlens.launch``'s docstring): a new import on this path is a decision,
made here."""


@pytest.mark.parametrize("extra", [(), ("--json", "-k", "3", "--all-projects")])
def test_short_path_import_budget(world: dict[str, Any], tmp_path: Path,
                                  extra: tuple[str, ...]) -> None:
    """The contract: in a fresh interpreter the short path imports exactly the memlens and
    third-party modules of ``SHORT_PATH_BUDGET`` (standard library aside), and never click."""
    db = tmp_path / "m.db"
    shutil.copy(world["db"], db)
    out = tmp_path / "mods.json"
    code, stdout, err = _run(_BUDGET, [*LEX, "busy timeout", "--db", str(db), *extra],
                             {"QUICK_MODULES": str(out)}, REPO, world, tmp_path / "mark")
    assert code == 0 and stdout, err
    new = set(json.loads(out.read_text()))
    outside_stdlib = {m for m in new if m.split(".")[0] not in sys.stdlib_module_names}
    assert outside_stdlib == SHORT_PATH_BUDGET
    assert not {m for m in new if m == "click" or m.startswith("click.")}
    assert {"typing", "dataclasses", "pathlib", "argparse", "inspect"}.isdisjoint(new)


# -- damaged stored text -------------------------------------------------------------

def test_a_blob_that_does_not_inflate_is_database_damage() -> None:
    from memlens.core.store.rows import pack_text, unpack_text

    assert unpack_text(pack_text("ok ✓")) == "ok ✓"
    for blob in (b"\x78\x9c\xde\xad\xbe\xef", b"\x00\x00 not zlib", pack_text("x")[:-3],  # type: ignore[index]
                 __import__("zlib").compress(b"\xff\xfe not utf-8")):
        with pytest.raises(apsw.CorruptError, match="does not inflate"):
            unpack_text(blob)


def test_damaged_text_is_one_line_from_search_and_doctor(world: dict[str, Any],
                                                         tmp_path: Path) -> None:
    """A node whose stored text does not inflate: search and doctor say so in one line
    each (exit 1), no traceback (both were zlib tracebacks before)."""
    bad = str(world["base"] / "bad.db")
    code, out, err = _run(_FAST, [*LEX, "deploy", "--db", bad], {}, REPO, world,
                          tmp_path / "mark")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and "is damaged" in err and "memlens doctor" in err, err
    proc = run_cli("doctor", "--db", bad, env={"MEMLENS_CONFIG": str(world["base"] / "none.toml")})
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "does not inflate" in proc.stdout + proc.stderr


# -- the labelled queries of both corpora, on the validation corpus too ----------------

@pytest.fixture(scope="module")
def validation_pair(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """corpus_validation/ (never tuned on) in two databases: one for each path."""
    d = tmp_path_factory.mktemp("vpair")
    env = {"MEMLENS_EMBEDDER": "hashing", "MEMLENS_INSTALL_KEY_FILE": str(d / "key"),
           "MEMLENS_CONFIG": str(d / "none.toml")}
    a = d / "quick.db"
    proc = run_cli("ingest", str(REPO / "corpus_validation"), "--db", str(a), env=env)
    assert proc.returncode == 0, proc.stderr
    b = d / "service.db"
    shutil.copy(a, b)
    svc = MemoryService(load_settings(overrides={"db": str(b)}), create=False,
                        clock=lambda: 1234.5)
    yield {"quick": a, "service": b, "svc": svc}
    svc.close()


def _labelled_queries() -> list[str]:
    out = []
    for f in (CORPUS / "queries.jsonl", REPO / "corpus_validation" / "queries.jsonl"):
        out += [json.loads(line)["query"] for line in f.read_text(encoding="utf-8").splitlines()
                if line.strip()]
    return out


@pytest.mark.parametrize("k", [1, 10])
def test_every_labelled_query_answers_alike_on_the_validation_corpus(
        validation_pair: dict[str, Any], k: int) -> None:
    """176 real queries (dev and validation sets), on the corpus that was never tuned on."""
    svc: MemoryService = validation_pair["svc"]
    queries = _labelled_queries()
    assert len(queries) >= 150
    answered = 0
    for q in queries:
        got = quick.lexical_search(str(validation_pair["quick"]), q, k=k, all_projects=True,
                                   now=1234.5)
        want = svc.search(q, mode="lexical", k=k, all_projects=True)
        svc.remember_search(q, "lexical", "cli")
        assert got is not None, q  # every labelled query parses
        assert got == want.as_json(), q
        answered += bool(got["hits"])
    assert answered >= len(queries) // 2  # the comparison compared hits, not empty lists
    assert _history(validation_pair["quick"]) == _history(validation_pair["service"])
