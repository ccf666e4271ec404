"""Issue 44: the redaction fingerprint. A database remembers the rules (built-in and
``[[redact.rules]]``) it was last redacted with; when they change, the next ``ingest``
redacts everything stored again, wipes the old text from the file, its WAL and SHM (also
inside compressed columns), and reads every file again although its mtime, size and hash
are unchanged."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlens.core.projection.changes import redaction_mark, set_redaction_mark
from memlens.core.redact import fingerprint, user_rules
from memlens.core.store import db as dbm
from tests.conftest import run_cli
from tests.test_user_rules import _holds  # DB, WAL, SHM and every compressed column

# A token no built-in rule knows (the Sonar example).
TOKEN = "12345678ABCDEFH1234567890ABCDEFH12345678"
NOTE = f"# n\nsonar {TOKEN}\n"
RULE = ('[[redact.rules]]\nname = "sonar-token"\npattern = "[0-9A-Za-z]{40}"\n'
        'keywords = ["sonar"]\n')


@pytest.fixture(autouse=True)
def _no_rules_left() -> Iterator[None]:
    yield
    user_rules.install(())


def _mark(db: Path) -> str | None:
    conn = dbm.connect(db, readonly=True, migrate=False)
    try:
        return redaction_mark(conn)
    finally:
        conn.close()


def _settle(mem: Path) -> None:
    """Date the files a minute back: a file changed within the last 2 s is re-read by
    every scan anyway (racy mtime), which would hide what these tests look for."""
    for f in mem.iterdir():
        st = f.stat()
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns - 60_000_000_000))


def _setup(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str]]:
    mem = tmp_path / "proj" / "memory"
    mem.mkdir(parents=True)
    (mem / "n.md").write_text(NOTE, encoding="utf-8")
    (mem / "other.md").write_text("# other\nnothing secret\n", encoding="utf-8")
    _settle(mem)
    cfg = tmp_path / "config.toml"
    cfg.write_text(RULE, encoding="utf-8")
    env = {"MEMLENS_EMBEDDER": "hashing", "MEMLENS_INSTALL_KEY_FILE": str(tmp_path / "key"),
           "MEMLENS_CONFIG": str(tmp_path / "none.toml")}
    return mem, cfg, tmp_path / "m.db", env


def _ingest(mem: Path, db: Path, env: dict[str, str], *cfg: str) -> dict[str, object]:
    p = run_cli("ingest", str(mem), "--db", str(db), "--json", *cfg, env=env)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert isinstance(out, dict)
    return out


def test_fingerprint_names_built_in_and_user_rules() -> None:
    base = fingerprint.current()
    assert base == f"rules={fingerprint.builtin()}" and len(fingerprint.builtin()) == 16
    rule = user_rules.parse_rule({"name": "acme", "pattern": "acme[0-9]{6}"})
    with user_rules.using([rule]):
        one = fingerprint.current()
    changed = user_rules.parse_rule({"name": "acme", "pattern": "acme[0-9]{8}"})
    with user_rules.using([changed]):
        other = fingerprint.current()
    assert one.startswith(base + ";user=") and other.startswith(base + ";user=")
    assert len({base, one, other}) == 3
    assert fingerprint.current() == base


def test_ingest_follows_an_added_rule(tmp_path: Path) -> None:
    mem, cfg, db, env = _setup(tmp_path)
    # stored without the rule, edited once (the token sits in two revisions, a diff, a
    # summary, chunks, nodes and the FTS index)
    first = _ingest(mem, db, env)
    assert first["created"] == 2
    (mem / "n.md").write_text(NOTE + "more\n", encoding="utf-8")
    _settle(mem)
    _ingest(mem, db, env)
    assert _holds(db, TOKEN), "stored as is without the rule (test setup)"
    plain = _mark(db)
    assert plain is not None and ";user=" not in plain
    again = _ingest(mem, db, env)
    assert again["unchanged"] == 2 and "warnings" not in again  # same rules: no pass

    # the rule is added; the files are untouched (same mtime, size and hash): ingest alone
    # redacts what was stored and leaves no byte of the token in the DB, WAL or SHM
    out = _ingest(mem, db, env, "--config", str(cfg))
    assert _holds(db, TOKEN) == []
    warnings = out.get("warnings")
    assert isinstance(warnings, list) and any("redaction rules changed: 1 stored" in w
                                              for w in warnings), out
    mark = _mark(db)
    assert mark is not None and mark.startswith(plain + ";user=")
    s = run_cli("search", "sonar", "--db", str(db), "--config", str(cfg), "--json", env=env)
    assert "[REDACTED:sonar-token]" in s.stdout and TOKEN not in s.stdout

    # the rule stays: no second pass, the stat fast path again
    steady = _ingest(mem, db, env, "--config", str(cfg))
    assert steady["unchanged"] == 2 and "warnings" not in steady


def test_every_file_is_read_again_after_a_rule_change(tmp_path: Path) -> None:
    """The marked files are re-read (mtime -1, then the real one again): a rule change is
    not trusted to the stored text alone."""
    mem, cfg, db, env = _setup(tmp_path)
    _ingest(mem, db, env)
    conn = dbm.connect(db)
    try:
        before = {r[0]: r[1] for r in conn.execute(
            "SELECT logical_path, observed_at FROM memory_documents")}
    finally:
        conn.close()
    _ingest(mem, db, env, "--config", str(cfg))
    conn = dbm.connect(db)
    try:
        after = {r[0]: (r[1], r[2]) for r in conn.execute(
            "SELECT logical_path, observed_at, source_mtime_ns FROM memory_documents")}
    finally:
        conn.close()
    for path, (observed, mtime) in after.items():
        assert observed > before[path], path  # read again (the unchanged one too)
        assert mtime != -1  # and trusted again from now on


def test_an_older_built_in_rule_set_is_followed(tmp_path: Path) -> None:
    """A database redacted by an older release (another built-in fingerprint) is redacted
    again by the first ingest of this one; a purge records the fingerprint too."""
    mem, _, db, env = _setup(tmp_path)
    _ingest(mem, db, env)
    conn = dbm.connect(db)
    try:
        set_redaction_mark(conn, "rules=0000000000000000")
    finally:
        conn.close()
    out = _ingest(mem, db, env)
    assert "warnings" not in out  # nothing more found, so nothing to say
    assert _mark(db) == fingerprint.current()
    conn = dbm.connect(db)
    try:
        set_redaction_mark(conn, "rules=0000000000000000")
    finally:
        conn.close()
    assert run_cli("purge", "--db", str(db), env=env).returncode == 0
    assert _mark(db) == fingerprint.current()


def test_a_reader_elsewhere_leaves_a_purge_to_do(tmp_path: Path) -> None:
    """Another connection reading an old snapshot keeps the WAL: the ingest says so
    (run purge later), and the purge then leaves no byte."""
    from memlens.core.config.settings import load_settings
    from memlens.core.embedders.registry import make_embedder
    from memlens.core.service import MemoryService

    mem, rule_cfg, db, _ = _setup(tmp_path)
    plain = tmp_path / "plain.toml"
    plain.write_text(f'db = "{db}"\n', encoding="utf-8")
    ruled = tmp_path / "ruled.toml"
    ruled.write_text(f'db = "{db}"\n\n{rule_cfg.read_text(encoding="utf-8")}', encoding="utf-8")

    def service(cfg: Path) -> MemoryService:
        return MemoryService(load_settings(cfg, env={}),
                             embedder=make_embedder("hashing", {"dim": 64}), install_key=b"k" * 32)

    svc = service(plain)
    try:
        svc.ingest(svc.resolve_roots([mem]))
    finally:
        svc.close()
    reader = dbm.connect(db, readonly=True, migrate=False)
    try:
        reader.execute("BEGIN")
        assert reader.execute("SELECT COUNT(*) FROM memory_documents").fetchone()[0] == 2
        svc = service(ruled)
        try:
            out = svc.ingest(svc.resolve_roots([mem]))
            assert any("run `memlens purge`" in w for w in out.report.warnings), out.report.warnings
        finally:
            svc.close()
        reader.execute("COMMIT")
    finally:
        reader.close()
    svc = service(ruled)
    try:
        assert svc.purge().wal_truncated
    finally:
        svc.close()
    assert _holds(db, TOKEN) == []
