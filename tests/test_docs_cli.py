"""docs/cli.md is checked against the real CLI (sqlite-utils style), and the docs' links resolve.

Every JSON block under a ``<!-- shape: NAME -->`` marker in docs/cli.md is compared with the
real ``--json`` output of the command, run in a subprocess through the console script's
entry point against a real SQLite file built from the bundled corpus: the keys must be the
same at every level and each value of the documented type (string, number, bool, null,
list, object), so a renamed, added or removed field fails here. Conventions (also written
in docs/cli.md, "How to read the shapes"): the first element of a documented list is the
shape of every element; a key ``<like-this>`` stands for every key of a map; the marker's
``nullable=`` and ``any=`` name the fields that may be null or of any type, and
``optional=`` those printed only with a flag (they must still be printed by some run).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CORPUS, REPO, run_cli

CLI_MD = REPO / "docs" / "cli.md"
REPOSITORY = "-home-dev-projects-tidewater-api"
MARKER = re.compile(r"<!-- shape: (?P<name>[a-z-]+)(?P<attrs>[^\n]*?)\s*-->\s*\n```json\n(?P<body>.*?)\n```",
                    re.S)
# The commands of `memlens --help`; each one whose --help offers --json needs a shape.
COMMANDS = ("ingest", "project", "search", "docs", "history", "chunks", "rechunk", "doctor",
            "config", "watch", "bench", "mcp", "tui", "purge", "redact")


@dataclass
class Shape:
    name: str
    doc: Any
    nullable: frozenset[str]
    any_type: frozenset[str]
    covered: set[str] = field(default_factory=set)
    optional: frozenset[str] = frozenset()


def parse_shapes(text: str) -> dict[str, Shape]:
    shapes: dict[str, Shape] = {}
    for m in MARKER.finditer(text):
        attrs = dict(a.split("=", 1) for a in m["attrs"].split())
        unknown = set(attrs) - {"nullable", "any", "optional"}
        assert not unknown, f"shape {m['name']}: unknown marker attributes {unknown}"
        assert m["name"] not in shapes, f"two shapes named {m['name']}"
        shapes[m["name"]] = Shape(
            m["name"], json.loads(m["body"]),
            frozenset(filter(None, attrs.get("nullable", "").split(","))),
            frozenset(filter(None, attrs.get("any", "").split(","))),
            optional=frozenset(filter(None, attrs.get("optional", "").split(","))))
    return shapes


def _kind(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    assert isinstance(v, dict), type(v)
    return "object"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _map_key(doc: dict[str, Any]) -> str | None:
    keys = [k for k in doc if k.startswith("<") and k.endswith(">")]
    if keys:
        assert len(doc) == 1, f"a map <key> must be the object's only key: {list(doc)}"
        return keys[0]
    return None


def doc_paths(doc: Any, path: str = "") -> dict[str, str]:
    """Every path of a documented shape -> its kind ('list[]' / 'map' mark elements to cover)."""
    out = {path: _kind(doc)}
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.update(doc_paths(v, _join(path, k)))
    elif isinstance(doc, list) and doc:
        out.update(doc_paths(doc[0], f"{path}[]"))
    return out


def compare(shape: Shape, doc: Any, real: Any, path: str, errors: list[str]) -> None:
    if path in shape.any_type or (real is None and path in shape.nullable):
        return
    kd, kr = _kind(doc), _kind(real)
    if kd != kr:
        errors.append(f"{path or '<root>'}: documented {kd}, the command printed {kr} ({real!r:.60})")
        return
    if isinstance(doc, dict):
        key = _map_key(doc)
        if key is not None:
            for v in real.values():
                compare(shape, doc[key], v, _join(path, key), errors)
            if real:
                shape.covered.add(_join(path, key))
            return
        missing = {k for k in set(doc) - set(real) if _join(path, k) not in shape.optional}
        extra = set(real) - set(doc)
        if missing:
            errors.append(f"{path or '<root>'}: documented but not printed: {sorted(missing)}")
        if extra:
            errors.append(f"{path or '<root>'}: printed but not documented: {sorted(extra)}")
        for k in set(doc) & set(real):
            compare(shape, doc[k], real[k], _join(path, k), errors)
    elif isinstance(doc, list):
        if not doc:
            if real:
                errors.append(f"{path}: documented as an empty list, printed {real[0]!r:.80}")
            return
        for v in real:
            compare(shape, doc[0], v, f"{path}[]", errors)
        if real:
            shape.covered.add(f"{path}[]")


# -- the real outputs ---------------------------------------------------------------------------

def _out(proc: subprocess.CompletedProcess[str], code: int = 0) -> Any:
    assert proc.returncode == code, (proc.args, proc.returncode, proc.stderr)
    return json.loads(proc.stdout)


def _watch_lines(tmp: Path, env: dict[str, str]) -> list[Any]:
    """`memlens watch --json` until it says it is watching (its start-up reconcile printed
    the change and projection events of a file already there), then SIGTERM."""
    mem = tmp / "watched" / "-home-x-proj" / "memory"
    mem.mkdir(parents=True)
    (mem / "a.md").write_text("# A note\n\nwatched text\n", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "memlens.launch", "watch", str(tmp / "watched"),
         "--db", str(tmp / "w.db"), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    killer = threading.Timer(90, proc.kill)
    killer.start()
    lines: list[Any] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(json.loads(line))
            if lines[-1]["event"] == "state" and lines[-1]["message"].startswith("watching"):
                proc.terminate()
                break
        rest, err = proc.communicate(timeout=60)
    finally:
        killer.cancel()
    lines += [json.loads(x) for x in rest.splitlines() if x.strip()]
    assert proc.returncode == 0, err
    assert any(x["event"] == "change" for x in lines), lines
    return lines


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    """Run every documented command on a database built from the bundled corpus."""
    import os

    tmp = tmp_path_factory.mktemp("docs-cli")
    env = {"MEMLENS_EMBEDDER": "hashing", "MEMLENS_INSTALL_KEY_FILE": str(tmp / "install.key"),
           "MEMLENS_CONFIG": str(tmp / "no-config.toml")}
    full_env = {**os.environ, **env}
    full_env.pop("MEMLENS_DB", None)
    corpus = tmp / "corpus"
    shutil.copytree(CORPUS, corpus, ignore=shutil.ignore_patterns("*.jsonl", "README.md"))
    db = str(tmp / "m.db")
    out: dict[str, list[Any]] = {}

    def run(name: str, *args: str, code: int = 0) -> Any:
        data = _out(run_cli(*args, env=env), code)
        out.setdefault(name, []).append(data)
        return data

    run("ingest", "ingest", str(corpus), "--db", db, "--json")
    # A file that cannot be read: `failed` has an element (exit 1).
    bad = tmp / "bad" / "-home-x-bad" / "memory"
    bad.mkdir(parents=True)
    (bad / "bad.md").write_bytes(b"\xff\xfe b\x00a\x00d\x00")
    (bad / "ok.md").write_text("# ok\n\nfine\n", encoding="utf-8")
    bdb = str(tmp / "b.db")
    assert run("ingest", "ingest", str(tmp / "bad"), "--db", bdb, "--json", code=1)["failed"]
    # Stored but not projected: doctor has a notice, project projects it.
    late = tmp / "late" / "-home-x-late" / "memory"
    late.mkdir(parents=True)
    (late / "late.md").write_text("# Late\n\nprojected later\n", encoding="utf-8")
    _out(run_cli("ingest", str(tmp / "late"), "--db", bdb, "--defer-projection", "--json", env=env))
    assert run("doctor", "doctor", "--db", bdb, "--json")["notices"]
    # --pending: the stored, unprojected late.md is named as not searchable yet.
    late_search = run("search", "search", "fine", "--pending", "--fusion", "adaptive", "--db", bdb,
                      "--json")
    assert late_search["pending"]["documents"][0]["path"] == "late.md"
    assert run("project", "project", "--db", bdb, "--json")["projected"] == 1

    # An edit, then a rechunk: history has create / rechunk / update revisions.
    target = corpus / REPOSITORY / "memory" / "database.md"
    target.write_text(target.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    assert run("ingest", "ingest", str(corpus), "--db", db, "--json")["updated"] == 1
    run("rechunk", "rechunk", "database.md", "--repository", REPOSITORY, "--strategy", "windows",
        "--max-tokens", "120", "--overlap", "30", "--db", db, "--json")
    run("history", "history", "database.md", "--repository", REPOSITORY, "--db", db, "--json")

    for args in (["busy_timeout WAL migrations", "-k", "6", "--fusion", "adaptive"],
                 ["busy_timeout", "--mode", "lexical", "-k", "3"],
                 ["zzqqxx", "-k", "2", "--fusion", "adaptive"]):
        run("search", "search", *args, "--db", db, "--json")
    for args in (["busy_timeout WAL migrations", "-k", "3", "--explain"],
                 ["busy_timeout", "--mode", "lexical", "-k", "2", "--explain"]):
        run("search-explain", "search", *args, "--db", db, "--json")
    run("search-why-not", "search", "busy_timeout WAL migrations", "-k", "3", "--why-not",
        f"{REPOSITORY}/performance.md", "--db", db, "--json")
    run("search-why-not", "search", "busy_timeout", "-k", "2", "--why-not",
        "-home-dev-projects-lanternfish/build.md#0", "--db", db, "--json")
    run("docs", "docs", "--db", db, "--json")
    run("chunks", "chunks", str(target), "--json")
    run("doctor", "doctor", "--db", db, "--json")
    assert run("doctor", "doctor", "--probe", "--db", db, "--json")["probe"]["ok"]
    cfg = tmp / "config.toml"
    cfg.write_text('[embedder]\nname = "hashing"\ndim = 64\n\n[[redact.rules]]\nname = "sonar-token"\n'
                   'pattern = "[0-9A-Za-z]{40}"\nkeywords = ["sonar"]\nmin_entropy = 3.0\n',
                   encoding="utf-8")
    run("config", "config", "--db", db, "--json")
    run("config", "config", "--db", db, "--config", str(cfg), "--json")
    note = tmp / "sonar.md"
    note.write_text("# n\nsonar 12345678ABCDEFH1234567890ABCDEFH12345678\n", encoding="utf-8")
    run("redact", "redact", "--check", str(note), "--config", str(cfg), "--json", code=1)
    run("redact", "redact", "--check", str(target), "--json")
    run("bench", "bench", "--corpus", str(corpus), "--queries", str(CORPUS / "queries.jsonl"),
        "--strategies", "whole", "--modes", "lexical", "--embedder", "hashing", "--json")
    out["watch"] = _watch_lines(tmp, full_env)
    run("purge", "purge", "--db", db, "--json")  # last: it rewrites what the others read
    return out


SHAPES = parse_shapes(CLI_MD.read_text(encoding="utf-8"))
# shapes of a command's other JSON forms (a flag that changes the output) -> the command
SHAPE_COMMAND = {"search-explain": "search", "search-why-not": "search"}


def test_every_json_command_has_a_documented_shape() -> None:
    with_json = set()
    for cmd in COMMANDS:
        proc = run_cli(cmd, "--help")
        assert proc.returncode == 0, proc.stderr
        if "--json" in proc.stdout:
            with_json.add(cmd)
    commands = {SHAPE_COMMAND.get(name, name) for name in SHAPES}
    assert with_json == commands, "docs/cli.md shapes vs commands with --json"


def test_every_shape_is_run(outputs: dict[str, list[Any]]) -> None:
    assert set(outputs) == set(SHAPES)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_documented_shape_matches_real_output(name: str, outputs: dict[str, list[Any]]) -> None:
    shape = SHAPES[name]
    paths = doc_paths(shape.doc)
    for p in shape.nullable | shape.any_type | shape.optional:
        assert p in paths, f"shape {name}: marker names {p!r}, which the shape does not have"
    errors: list[str] = []
    for real in outputs[name]:
        compare(shape, shape.doc, real, "", errors)
    assert not errors, f"docs/cli.md shape {name!r} differs from the real output:\n" + "\n".join(
        dict.fromkeys(errors))
    # Each documented list element and map entry was compared with a real one at least once.
    want = {p for p in paths if p.endswith("[]") or p.endswith(">")}
    want = {p for p in want if not any(p.startswith(a) for a in shape.any_type)}
    assert want <= shape.covered, f"shape {name}: never exercised: {sorted(want - shape.covered)}"


def test_shape_checker_catches_drift() -> None:
    """The comparison fails on a renamed, added or retyped field (the checker can fail)."""
    shape = Shape("t", {"a": 1, "b": [{"c": "x"}], "m": {"<k>": True}}, frozenset({"a"}), frozenset())
    for real, expect in [
        ({"a": 2, "b": [{"c": "y"}], "m": {"z": False}}, []),
        ({"a": None, "b": [], "m": {}}, []),
        ({"a": 2, "b": [{"d": "y"}], "m": {}}, ["not printed", "not documented"]),
        ({"a": 2, "b": [{"c": 3}], "m": {}, "e": 1}, ["documented string", "not documented"]),
        ({"a": "2", "b": [], "m": {"z": 1}}, ["documented number", "documented bool"]),
    ]:
        errors: list[str] = []
        compare(shape, shape.doc, real, "", errors)
        assert len(errors) == len(expect) and all(e in " ".join(errors) for e in expect), errors


# -- links between the docs ---------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(md: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    in_code = False
    for line in md.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            base = _slug(line.lstrip("#"))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def _links(md: Path) -> list[str]:
    out, in_code = [], False
    for line in md.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code:
            out += LINK.findall(re.sub(r"`[^`]*`", "", line))
    return out


DOC_PAGES = [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("md", DOC_PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_resolve(md: Path) -> None:
    broken = []
    for target in _links(md):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file, _, anchor = target.partition("#")
        dest = (md.parent / file).resolve() if file else md
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{md.name}: " + "; ".join(broken)


# -- the configuration pages ----------------------------------------------------------------------

def _toml_block(md: Path) -> str:
    m = re.search(r"```toml\n(.*?)\n```", md.read_text(encoding="utf-8"), re.S)
    assert m is not None, f"{md.name} has no toml block"
    return m.group(1)


def _flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in table.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


EXAMPLES = {"db", "roots", "repository"}  # documented with an example value, not the default


@pytest.mark.parametrize("md", [REPO / "docs" / "configuration.md", REPO / "README.md"],
                         ids=["configuration.md", "README.md"])
def test_documented_config_file_is_real(md: Path, tmp_path: Path) -> None:
    """The config file shown loads as it is; its keys are settings with their real defaults,
    each `# MEMLENS_X` comment names the variable that sets that key, and the configuration
    page lists every setting there is."""
    import tomllib

    from memlens.core.config.settings import load_settings

    text = _toml_block(md)
    cfg = tmp_path / "config.toml"
    cfg.write_text(text, encoding="utf-8")
    load_settings(cfg, env={})  # raises on an unknown key or a bad value
    defaults = load_settings(tmp_path / "none.toml", env={})
    documented = {k: v for k, v in _flatten(tomllib.loads(text)).items()
                  if not k.startswith("embedder.") or k == "embedder.name"}
    assert set(documented) <= set(defaults.origins)
    if md.name == "configuration.md":
        assert set(documented) == set(defaults.origins), "settings missing from the page"
    for key, value in documented.items():
        if key not in EXAMPLES:
            assert value == defaults.values[key], f"{md.name}: {key} = {value!r} is not the default"
    section = ""
    for line in text.splitlines():
        if m := re.match(r"\[(\w+)\]", line):
            section = m.group(1) + "."
        m = re.match(r"(\w+)\s*=.*#\s*(MEMLENS_[A-Z_]+)", line)
        if m:
            key = m.group(1) if m.group(1) in EXAMPLES else section + m.group(1)
            value = documented[key]
            raw = (value[0] if isinstance(value, list) else
                   str(value).lower() if isinstance(value, bool) else str(value))
            s = load_settings(tmp_path / "none.toml", env={m.group(2): raw})
            assert m.group(2) in s.origins[key], f"{md.name}: {m.group(2)} does not set {key}"


# -- the README's key table -------------------------------------------------------------------------

KEY_NAMES = {"/": "slash", "?": "question_mark", "<": "less_than_sign", ">": "greater_than_sign",
             "]": "right_square_bracket", "[": "left_square_bracket", "↑": "up", "↓": "down",
             "→": "right", "←": "left"}


def _bound_keys() -> set[str]:
    """Every key bound anywhere in the TUI (the first argument of each Binding), plus the
    command palette's own key."""
    from textual.app import App

    keys = {App.COMMAND_PALETTE_BINDING}
    for py in (REPO / "src" / "memlens" / "tui").rglob("*.py"):
        for group in re.findall(r"Binding\(\s*\"([^\"]+)\"", py.read_text(encoding="utf-8")):
            keys.update(group.split(","))
    return keys


def test_readme_keys_are_bound() -> None:
    """Each key in the README's TUI key table is bound in the TUI."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The terminal UI", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert len(rows) >= 15
    bound = _bound_keys()
    missing = []
    for row in rows:
        for key in re.findall(r"`([^`]+)`", row.split("|")[1]):
            name = KEY_NAMES.get(key, key)
            name = name.lower() if len(name) > 1 else name  # Ctrl+R -> ctrl+r; E stays E
            if name not in bound:
                missing.append(key)
    assert not missing, f"README keys not bound in the TUI: {missing}"
