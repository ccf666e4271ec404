"""Issue 44: redaction rules the user adds in the config file (``[[redact.rules]]``):
checked when settings load, applied by every redaction, shown by ``memlens config``,
tested by ``memlens redact --check``, and removed from what was stored by ``purge``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlens.core.config.settings import ConfigError, load_settings
from memlens.core.redact import user_rules
from memlens.core.redact.engine import redact
from memlens.core.search.history import needs_redaction
from memlens.core.store import db as dbm
from tests.conftest import run_cli

SONAR = "12345678ABCDEFH1234567890ABCDEFH12345678"
NOTE = f"# n\nsonar {SONAR}\n"
RULE = ('[[redact.rules]]\nname = "sonar-token"\npattern = "[0-9A-Za-z]{40}"\n'
        'keywords = ["sonar"]\n')
ENV = {"MEMLENS_EMBEDDER": "hashing"}


@pytest.fixture(autouse=True)
def _no_rules_left() -> Iterator[None]:
    """The rules are process-wide: leave none installed for the next test."""
    yield
    user_rules.install(())


def _rules(*raw: dict[str, object]) -> tuple[user_rules.UserRule, ...]:
    return tuple(user_rules.parse_rule(r) for r in raw)


# -- checked when settings load ------------------------------------------------------------------

def _load(tmp_path: Path, text: str) -> str:
    cfg = tmp_path / "config.toml"
    cfg.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_settings(cfg, env={})
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize(("body", "why"), [
    ('name = "bad"\npattern = "(unclosed"\n', "bad regular expression"),
    ('name = "bad"\n', "missing `pattern`"),
    ('pattern = "x{3}"\n', "missing `name`"),
    ('name = "bad"\npattern = 5\n', "`pattern` must be a string"),
    ('name = "bad"\npattern = "x{3}"\nkeywords = "sonar"\n', "`keywords` must be a list"),
    ('name = "bad"\npattern = "x{3}"\nmin_entropy = "high"\n', "`min_entropy` must be a number"),
    ('name = "bad"\npattern = "x{3}"\nkeyword = ["a"]\n', "unknown key `keyword`"),
    ('name = "Bad Name"\npattern = "x{3}"\n', "`name` must be 1-40"),
    ('name = "github-token"\npattern = "x{3}"\n', "is a built-in kind"),
    ('name = "bad"\npattern = "(a+)+$"\n', "catastrophic backtracking"),
    ('name = "bad"\npattern = "(a|aa)*b"\n', "catastrophic backtracking"),
    ('name = "bad"\npattern = "x*"\n', "matches the empty string"),
    ('name = "bad"\npattern = "' + "x" * 301 + '"\n', "over the limit of 300"),
])
def test_a_bad_rule_is_one_line_naming_file_line_and_rule(tmp_path: Path, body: str,
                                                           why: str) -> None:
    text = f'db = "x.db"\n\n{RULE}\n[[redact.rules]]\n{body}'
    msg = _load(tmp_path, text)
    assert msg.startswith(f"{tmp_path / 'config.toml'}:8: [[redact.rules]] ")  # 2nd rule's header
    assert why in msg, msg
    assert ("rule 'bad'" in msg or "rule 'Bad Name'" in msg or "rule 'github-token'" in msg
            or "rule #2" in msg), msg


def test_unknown_redact_setting_and_duplicate_names(tmp_path: Path) -> None:
    assert "unknown setting `redact.mode`" in _load(tmp_path, '[redact]\nmode = "x"\n')
    assert "used twice" in _load(tmp_path, RULE + "\n" + RULE)


def test_good_rules_load_in_order(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text(RULE + '\n[[redact.rules]]\nname = "acme"\npattern = "acme_([a-z]{12})"\n'
                   "min_entropy = 3\n", encoding="utf-8")
    s = load_settings(cfg, env={})
    assert [r.name for r in s.redact_rules] == ["sonar-token", "acme"]
    assert s.redact_rules[1].min_entropy == 3.0 and s.redact_rules[0].keywords == ("sonar",)
    assert s.as_json()["redact_rules"][0] == {"name": "sonar-token", "pattern": "[0-9A-Za-z]{40}",
                                              "keywords": ["sonar"], "min_entropy": None}


def test_cli_exits_2_on_a_bad_rule(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('[[redact.rules]]\nname = "sonar"\npattern = "[a-z"\n', encoding="utf-8")
    for args in (["ingest", str(tmp_path), "--db", str(tmp_path / "m.db")], ["config"],
                 ["redact", "--check", str(cfg)]):
        p = run_cli(*args, "--config", str(cfg), env=ENV)
        assert p.returncode == 2, (args, p.stderr)
        assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
        assert f"{cfg}:1: [[redact.rules]] rule 'sonar': bad regular expression" in p.stderr


# -- applied by the engine -----------------------------------------------------------------------

def test_keyword_must_be_near() -> None:
    user_rules.install(_rules({"name": "sonar-token", "pattern": "[0-9A-Za-z]{40}",
                               "keywords": ["SONAR"]}))
    assert redact(NOTE).text == "# n\nsonar [REDACTED:sonar-token]\n"
    # (``Sonar_token=`` is a built-in find since issue 44 item 2: the built-in kind names it)
    assert redact(f"Sonar_id={SONAR}").text == "Sonar_id=[REDACTED:sonar-token]"
    assert redact(f"Sonar_token={SONAR}").text == "Sonar_token=[REDACTED:sonarqube-token]"
    assert redact(f"# sonar\n{SONAR}\n").text == f"# sonar\n{SONAR}\n"  # another line
    far = f"sonar {'word ' * 20}{SONAR}"  # 100 characters away on the same line
    assert redact(far).text == far
    user_rules.install(())
    assert redact(NOTE).text == NOTE  # no rule: stored as is (issue 44)


def test_capture_group_entropy_and_idempotence() -> None:
    user_rules.install(_rules({"name": "acme", "pattern": r"acme_key=([a-z0-9]{16})\b",
                               "min_entropy": 3.5}))
    red = redact("x acme_key=q8w7e6r5t4y3u2i1 y").text
    assert red == "x acme_key=[REDACTED:acme] y"
    assert redact(red).text == red
    low = "acme_key=aaaaaaaabbbbbbbb"  # entropy 1.0 < 3.5
    assert redact(low).text == low


def test_a_built_in_kind_names_an_overlap() -> None:
    token = "ghp_" + "Zq7Xk2Lm9Pw4Rt6Yv8Bn3Cd5Fg1Hj0KsQeWa"
    user_rules.install(_rules({"name": "any-40", "pattern": "[0-9A-Za-z_]{40}"}))
    assert redact(f"t {token}").text == "t [REDACTED:github-token]"


def test_history_redacts_plain_words_a_rule_matches() -> None:
    assert not needs_redaction("acme internal")
    user_rules.install(_rules({"name": "acme", "pattern": "internal"}))
    assert needs_redaction("acme internal")


def test_using_does_not_leak_into_other_calls() -> None:
    rules = _rules({"name": "acme", "pattern": "acme[0-9]{6}"})
    with user_rules.using(rules):
        assert redact("acme123456").text == "[REDACTED:acme]"
    assert redact("acme123456").text == "acme123456"


# -- memlens redact --check ----------------------------------------------------------------------

def test_redact_check(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text(RULE, encoding="utf-8")
    note = tmp_path / "n.md"
    note.write_text(NOTE + "gh ghp_Zq7Xk2Lm9Pw4Rt6Yv8Bn3Cd5Fg1Hj0KsQeWa\n", encoding="utf-8")
    p = run_cli("redact", "--check", str(note), "--config", str(cfg), env=ENV)
    assert p.returncode == 1, p.stderr
    assert f"{note}:2:7  [REDACTED:sonar-token]  (user)  1234… (40 chars)" in p.stdout
    assert "[REDACTED:github-token]  (built-in)  ghp_…" in p.stdout
    assert SONAR not in p.stdout and "Zq7Xk2Lm9Pw4" not in p.stdout
    j = run_cli("redact", "--check", "-", "--config", str(cfg), "--json", env=ENV)
    assert j.returncode == 0 and json.loads(j.stdout) == {"file": "-", "count": 0, "findings": []}
    # without the rule the Sonar token is not found
    bare = tmp_path / "bare.md"
    bare.write_text(NOTE, encoding="utf-8")
    none = run_cli("redact", "--check", str(bare), "--config", str(tmp_path / "c2.toml"), env=ENV)
    assert none.returncode == 2  # --config names a file that does not exist
    q = run_cli("redact", "--check", str(bare), env={**ENV, "MEMLENS_CONFIG": str(tmp_path / "no")})
    assert q.returncode == 0 and "nothing would be redacted" in q.stdout, q.stderr
    gone = run_cli("redact", "--check", str(tmp_path / "nope.md"), env=ENV)
    assert gone.returncode == 2 and "cannot read" in gone.stderr


# -- end to end: ingest, config, purge on a real SQLite file -------------------------------------

def _db_files(db: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for s in ("", "-wal", "-shm", "-journal")
            if (f := Path(f"{db}{s}")).exists()}


def _holds(db: Path, needle: str) -> list[str]:
    """DB files and compressed columns that still hold ``needle``."""
    raw = [needle.encode(e) for e in ("utf-8", "utf-16-le", "utf-16-be")]
    out = [n for n, data in _db_files(db).items() if any(r in data for r in raw)]
    conn = dbm.connect(db, readonly=True, migrate=False)
    try:
        for table, col in dbm.PACKED_COLUMNS:
            if any(needle in (dbm.unpack_text(r[0]) or "")
                   for r in conn.execute(f"SELECT {col}_z FROM {table}")):
                out.append(f"{table}.{col}")
    finally:
        conn.close()
    return out


def test_sonar_end_to_end(tmp_path: Path) -> None:
    mem = tmp_path / "proj" / "memory"
    mem.mkdir(parents=True)
    (mem / "n.md").write_text(NOTE, encoding="utf-8")
    cfg = tmp_path / "config.toml"
    cfg.write_text(RULE, encoding="utf-8")
    env = {**ENV, "MEMLENS_INSTALL_KEY_FILE": str(tmp_path / "key"),
           "MEMLENS_CONFIG": str(tmp_path / "none.toml")}

    # with the rule, a fresh ingest stores it redacted: no byte of the token anywhere
    fresh = tmp_path / "fresh.db"
    p = run_cli("ingest", str(mem), "--db", str(fresh), "--config", str(cfg), env=env)
    assert p.returncode == 0, p.stderr
    assert _holds(fresh, SONAR) == []
    s = run_cli("search", "sonar", "--db", str(fresh), "--config", str(cfg), "--json", env=env)
    assert "[REDACTED:sonar-token]" in s.stdout, s.stdout

    # without the rule it is stored as is
    db = tmp_path / "m.db"
    p = run_cli("ingest", str(mem), "--db", str(db), env=env)
    assert p.returncode == 0, p.stderr
    assert _holds(db, SONAR), "stored as is without the rule (test setup)"
    # an edit adds a revision holding the token in its diff and summary too
    (mem / "n.md").write_text(NOTE + "more\n", encoding="utf-8")
    assert run_cli("ingest", str(mem), "--db", str(db), env=env).returncode == 0

    conf = run_cli("config", "--config", str(cfg), "--db", str(db), "--json", env=env)
    assert json.loads(conf.stdout)["redact_rules"][0]["name"] == "sonar-token"
    text = run_cli("config", "--config", str(cfg), "--db", str(db), env=env)
    assert "redact rule sonar-token = '[0-9A-Za-z]{40}', keywords ['sonar']" in text.stdout

    # with the rule, purge leaves no byte of the older copies in the DB, WAL or SHM
    p = run_cli("purge", "--db", str(db), "--config", str(cfg), "--json", env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["changed"] == 1
    assert _holds(db, SONAR) == []
    s = run_cli("search", "sonar", "--db", str(db), "--config", str(cfg), "--json", env=env)
    assert "[REDACTED:sonar-token]" in s.stdout and SONAR not in s.stdout


def test_file_names_follow_the_installed_rules() -> None:
    from memlens.core.ingest.names import stored_folder

    assert stored_folder("acme123456/notes") == "acme123456/notes"  # remembered without a rule
    user_rules.install(_rules({"name": "acme", "pattern": "acme[0-9]{6}"}))
    assert stored_folder("acme123456/notes") == "[REDACTED:acme]/notes"
    user_rules.install(())
    assert stored_folder("acme123456/notes") == "acme123456/notes"


def test_watcher_flow_applies_the_rule(tmp_path: Path) -> None:
    """What the watcher does on a change (ingest of the changed path, then after_change),
    with a service whose settings carry the rule: stored and projected redacted."""
    from memlens.core.embedders.registry import make_embedder
    from memlens.core.service import MemoryService
    from memlens.core.types import FileChange

    cfg = tmp_path / "config.toml"
    cfg.write_text(f'db = "{tmp_path / "w.db"}"\n\n{RULE}', encoding="utf-8")
    mem = tmp_path / "proj" / "memory"
    mem.mkdir(parents=True)
    (mem / "a.md").write_text("# a\n\nnothing here\n", encoding="utf-8")
    svc = MemoryService(load_settings(cfg, env={}), embedder=make_embedder("hashing", {"dim": 64}),
                        install_key=b"k" * 32)
    try:
        roots = svc.resolve_roots([mem])
        svc.ingest(roots, project=False)
        (mem / "n.md").write_text(NOTE, encoding="utf-8")
        changes: list[FileChange] = []
        svc.ingest(roots, project=False, on_change=changes.append,
                   only_paths={roots[0].path: {"n.md"}})
        assert svc.after_change(changes) is not None
        hits = svc.search("sonar", mode="lexical").hits
        assert hits and all(SONAR not in h.snippet for h in hits)
        doc = svc.locate(None, "n.md")
        assert doc is not None and "sonar [REDACTED:sonar-token]" in (doc.content or "")
    finally:
        svc.close()
    assert _holds(tmp_path / "w.db", SONAR) == []
