"""End-to-end: the real `memlens` CLI in a subprocess against a real SQLite file."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from tests.conftest import CORPUS, run_cli

ENV = {"MEMLENS_EMBEDDER": "hashing"}


@pytest.fixture
def corpus_copy(tmp_path: Path) -> Path:
    dst = tmp_path / "corpus"
    shutil.copytree(CORPUS, dst, ignore=shutil.ignore_patterns("*.jsonl", "README.md"))
    return dst


def _json(proc: object) -> dict:
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    return json.loads(proc.stdout)  # type: ignore[attr-defined]


def test_ingest_search_docs_history_doctor(tmp_path: Path, corpus_copy: Path) -> None:
    """The whole loop over the bundled corpus, through the CLI, JSON shapes included."""
    db = str(tmp_path / "m.db")
    out = _json(run_cli("ingest", str(corpus_copy), "--db", db, "--json", env=ENV))
    assert set(out) == {"created", "updated", "renamed", "deleted", "unchanged", "failed", "projection",
                        "vectors"}
    assert out["vectors"]["waiting"] == 0 and out["vectors"]["error"] is None
    assert out["created"] >= 25 and out["failed"] == []
    assert set(out["projection"]) == {"ready", "pending", "failed", "stale"}
    assert out["projection"]["pending"] == 0 and out["projection"]["ready"] == out["created"]

    again = _json(run_cli("ingest", str(corpus_copy), "--db", db, "--json", env=ENV))
    assert again["unchanged"] == out["created"] and again["created"] == 0

    res = _json(run_cli("search", "busy_timeout", "--db", db, "--json", "--mode", "lexical", env=ENV))
    assert res["query"] == "busy_timeout" and res["mode"] == "lexical"
    assert res["hits"], "expected hits for busy_timeout"
    hit = res["hits"][0]
    for key in (
        "repository",
        "path",
        "heading_path",
        "ordinal",
        "score",
        "snippet",
        "start_char",
        "end_char",
        "ranks",
    ):
        assert key in hit
    assert str(tmp_path) not in res_text(res)

    docs = _json(run_cli("docs", "--db", db, "--json", env=ENV))["documents"]
    assert len(docs) == out["created"]
    d0 = docs[0]
    for key in (
        "repository",
        "path",
        "state",
        "status",
        "current_revision_id",
        "active_revision_id",
        "chunks",
        "size",
        "name",
        "type",
    ):
        assert key in d0

    target = next(d for d in docs if d["path"] == "MEMORY.md")
    hist = _json(
        run_cli("history", "MEMORY.md", "--repository", target["repository"], "--db", db, "--json", env=ENV)
    )
    assert hist["revisions"][0]["change_kind"] == "create"

    doc = _json(run_cli("doctor", "--db", db, "--json", env=ENV))
    assert doc["ok"] is True and doc["problems"] == []


def res_text(obj: object) -> str:
    return json.dumps(obj)


def test_ingest_partial_failure_exit_1(tmp_path: Path) -> None:
    """A bad file gives exit 1 and a clear line; the other files are ingested."""
    mem = tmp_path / "proj" / "memory"
    mem.mkdir(parents=True)
    (mem / "good.md").write_text("# Good\n\nfine text\n")
    (mem / "bad.md").write_bytes(b"\xff\xfe\x00bad")
    db = str(tmp_path / "m.db")
    proc = run_cli("ingest", str(mem), "--db", db, env=ENV)
    assert proc.returncode == 1
    assert "bad.md" in proc.stderr and "UTF-16" in proc.stderr
    docs = _json(run_cli("docs", "--db", db, "--json", env=ENV))["documents"]
    assert [d["path"] for d in docs] == ["good.md"]
    assert docs[0]["repository"] == "proj"


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    """Missing paths, bad chunker settings and bad config are usage errors (exit 2)."""
    db = str(tmp_path / "m.db")
    p = run_cli("ingest", str(tmp_path / "nope"), "--db", db, env=ENV)
    assert p.returncode == 2 and "no such folder" in p.stderr
    (tmp_path / "m").mkdir()
    p = run_cli("ingest", str(tmp_path / "m"), "--overlap", "500", "--db", db, env=ENV)
    assert p.returncode == 2 and "overlap" in p.stderr
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[chunker]\nmax_tokens = 'lots'\n")
    p = run_cli("docs", "--db", db, "--config", str(cfg), env=ENV)
    assert p.returncode == 2 and "bad.toml:2" in p.stderr and "chunker.max_tokens" in p.stderr
    cfg.write_text("[chunker\n")
    p = run_cli("docs", "--db", db, "--config", str(cfg), env=ENV)
    assert p.returncode == 2 and "malformed TOML" in p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("argv, line", [
    (["docs", "--bogus"],
     "memlens docs: no such option '--bogus' (see `memlens docs --help`)"),
    (["search"], "memlens search: missing argument 'QUERY' (see `memlens search --help`)"),
    (["search", "x", "-k", "many"],
     "memlens search: invalid value for '-k': 'many' is not a valid integer"
     " (see `memlens search --help`)"),
    (["history", "a.md", "--nope", "1"],
     "memlens history: no such option '--nope' (see `memlens history --help`)"),
    (["serch", "x"], "memlens: no command 'serch'; the commands are ingest, project, search,"
     " docs, history, chunks, rechunk, doctor, config, watch, bench, mcp, tui, purge, redact"
     " (see `memlens --help`)"),
])
def test_argument_errors_are_one_line_naming_the_command(
        tmp_path: Path, argv: list[str], line: str) -> None:
    """One line naming the command and its --help, not click's (or argparse's) usage
    block; an unknown option is reported by the command that does not know it."""
    p = run_cli(*argv, "--db", str(tmp_path / "m.db"), env=ENV)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [line]
    assert not (tmp_path / "m.db").exists()


def test_chunks_command(tmp_path: Path) -> None:
    """`memlens chunks FILE --json` shape, and clear errors for bad files."""
    f = tmp_path / "n.md"
    text = "# A\n\nalpha\n\n## B\n\n" + ("beta words here. " * 200) + "\n"
    f.write_text(text)
    out = _json(run_cli("chunks", str(f), "--json", "--max-tokens", "100", "--overlap", "20"))
    assert set(out) >= {"file", "config", "chunks"}
    assert out["config"]["max_tokens"] == 100
    for c in out["chunks"]:
        assert text[c["start_char"] : c["end_char"]] == c["text"]
        assert c["tokens"] <= 100
    # The text form says why each chunk exists, as the README says (it showed only --json).
    shown = run_cli("chunks", str(f), "--max-tokens", "100", "--overlap", "20").stdout
    reasons = [ln.strip()[len("why: "):] for ln in shown.splitlines()
               if ln.strip().startswith("why: ")]
    assert reasons == [c["reason"] for c in out["chunks"]] and len(reasons) > 2
    missing = run_cli("chunks", str(tmp_path / "missing.md"))
    assert missing.returncode == 1 and "no such file" in missing.stderr
    d = run_cli("chunks", str(tmp_path))
    assert d.returncode == 1 and "folder" in d.stderr
    b = tmp_path / "b.md"
    b.write_bytes(b"\x00\x00binary")
    pb = run_cli("chunks", str(b))
    assert pb.returncode == 1 and "binary" in pb.stderr
    if os.geteuid() != 0:
        f.chmod(0)
        pp = run_cli("chunks", str(f))
        assert pp.returncode == 1 and "permission" in pp.stderr
        f.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_chunks_redacts_like_ingest(tmp_path: Path) -> None:
    """`memlens chunks` shows the stored (redacted) text; --raw shows the original."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    f = tmp_path / "s.md"
    f.write_text(f"# Deploy\n\nUse token {token} for the registry.\n")
    out = _json(run_cli("chunks", str(f), "--json"))
    assert out["redacted"] is True and out["secrets_redacted"] == 1
    joined = " ".join(c["text"] for c in out["chunks"])
    assert token not in joined and "[REDACTED:" in joined
    text = run_cli("chunks", str(f))
    assert text.returncode == 0 and token not in text.stdout
    assert "redacted as stored: 1 secret(s)" in text.stdout
    raw = _json(run_cli("chunks", str(f), "--json", "--raw"))
    assert raw["redacted"] is False and token in " ".join(c["text"] for c in raw["chunks"])


def test_newer_schema_refused(tmp_path: Path) -> None:
    """A database from a newer memlens is refused with a clear message, not changed."""
    import apsw

    db = tmp_path / "new.db"
    c = apsw.Connection(str(db))
    c.execute("PRAGMA user_version=99")
    c.close()
    p = run_cli("docs", "--db", str(db), env=ENV)
    assert p.returncode == 2 and "upgrade memlens" in p.stderr


def test_rechunk_cli(tmp_path: Path, corpus_copy: Path) -> None:
    """`memlens rechunk --all` creates rechunk revisions and re-projects."""
    db = str(tmp_path / "m.db")
    _json(run_cli("ingest", str(corpus_copy), "--db", db, "--json", env=ENV))
    out = _json(
        run_cli(
            "rechunk",
            "--all",
            "--strategy",
            "windows",
            "--max-tokens",
            "48",
            "--overlap",
            "12",
            "--db",
            db,
            "--json",
            env=ENV,
        )
    )
    assert out["rechunked"] > 0 and out["projection"]["failed"] == 0
    assert _json(run_cli("doctor", "--db", db, "--json", env=ENV))["ok"]


def test_config_command_origins(tmp_path: Path) -> None:
    """`memlens config --json` names where each value came from."""
    cfg = tmp_path / "c.toml"
    cfg.write_text("[chunker]\nmax_tokens = 300\n")
    out = _json(run_cli("config", "--json", "--config", str(cfg), env={"MEMLENS_OVERLAP_TOKENS": "40"}))
    s = out["settings"]
    assert s["chunker.max_tokens"] == {"value": 300, "source": f"file {cfg}"}
    assert s["chunker.overlap_tokens"] == {"value": 40, "source": "env MEMLENS_OVERLAP_TOKENS"}
    assert s["chunker.strategy"]["source"] == "default"


def test_search_text_output_one_line_per_snippet(tmp_path: Path) -> None:
    """Human output: one header line and one snippet line per hit, highlights marked."""
    mem = tmp_path / "proj" / "memory"
    mem.mkdir(parents=True)
    (mem / "a.md").write_text("# Pool\n\nSet busy_timeout\nto 5000\n\nin   every\tconnection.\n")
    db = str(tmp_path / "m.db")
    assert run_cli("ingest", str(mem), "--db", db, env=ENV).returncode == 0
    p = run_cli("search", "busy_timeout", "--mode", "lexical", "--db", db, env=ENV)
    assert p.returncode == 0
    lines = p.stdout.splitlines()
    assert len(lines) == 2 and lines[0].lstrip().startswith("1. proj/a.md")
    assert "«busy_timeout»" in lines[1]


def test_small_cli_messages(tmp_path: Path) -> None:
    """Errors name what to fix: the variable, the missing --config, the embedder names;
    `memlens project` prints text."""
    bad = run_cli("config", env={"MEMLENS_EMBEDDER": "bogus"})
    assert bad.returncode == 2
    assert "MEMLENS_EMBEDDER" in bad.stderr and "auto, hashing, minilm" in bad.stderr
    missing = run_cli("config", "--config", str(tmp_path / "nope.toml"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    env_bad = run_cli("docs", "--db", str(tmp_path / "x.db"), env={"MEMLENS_MAX_TOKENS": "abc"})
    assert env_bad.returncode == 2 and "MEMLENS_MAX_TOKENS" in env_bad.stderr
    mem = tmp_path / "projects" / "-home-dev-p" / "memory"
    mem.mkdir(parents=True)
    (mem / "a.md").write_text("# A\n\nhello\n")
    db = str(tmp_path / "m.db")
    assert run_cli("ingest", str(tmp_path / "projects"), "--db", db, "--defer-projection",
                   env=ENV).returncode == 0
    proj = run_cli("project", "--db", db, env=ENV)
    assert proj.returncode == 0 and proj.stdout.strip() == \
        "1 projected: 1 ready, 0 failed; queue: 1 ready"


def test_history_takes_the_path_docs_prints_and_search_refuses_an_unknown_type(
        tmp_path: Path) -> None:
    """`memlens docs` lists `repository/path`; `history` said "no document" for exactly
    that string. `search --type` with a type no document has answered "no results",
    exit 0, as if nothing were stored (`--repository` already said what is known)."""
    mem = tmp_path / "mem"
    mem.mkdir()
    (mem / "db.md").write_text("---\nname: DB\ntype: project\n---\n# DB\n\nUse postgres.\n")
    (mem / "sub").mkdir()
    (mem / "sub" / "x.md").write_text("# X\n\nnested note\n")
    db = str(tmp_path / "m.db")
    assert run_cli("ingest", str(mem), "--db", db, env=ENV).returncode == 0
    listed = run_cli("docs", "--db", db, env=ENV).stdout
    for shown, path in (("mem/db.md", "db.md"), ("mem/sub/x.md", "sub/x.md")):
        assert shown in listed
        h = _json(run_cli("history", shown, "--db", db, "--json", env=ENV))
        assert (h["repository"], h["path"]) == ("mem", path)
        assert _json(run_cli("history", path, "--db", db, "--json", env=ENV)) == h
    missing = run_cli("history", "mem/nope.md", "--db", db, env=ENV)
    assert missing.returncode == 1 and missing.stderr.strip() == "memlens: no document 'mem/nope.md'"

    bad = run_cli("search", "postgres", "--type", "projekt", "--db", db, env=ENV)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip() == "memlens: no document type 'projekt'; known: project"
    ok = _json(run_cli("search", "postgres", "--type", "project", "--db", db, "--json", env=ENV))
    assert [h["path"] for h in ok["hits"]][:1] == ["db.md"]
