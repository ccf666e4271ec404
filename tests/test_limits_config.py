"""`[limits]` in the config file (and its environment variables): a file over
`max_file_bytes` or splitting into more than `max_chunks_per_file` chunks fails alone with
one line, its neighbours are stored; a bad value is one line, exit 2. Real CLI, real file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

ENV = {"MEMLENS_EMBEDDER": "hashing"}


def _memory(tmp_path: Path) -> Path:
    mem = tmp_path / "p" / "memory"
    mem.mkdir(parents=True)
    (mem / "small.md").write_text("# Small\n\nA short note.\n", encoding="utf-8")
    (mem / "dense.md").write_text(
        "".join(f"## Section {i}\n\n" + "word " * 60 + "\n\n" for i in range(40)),
        encoding="utf-8")
    return mem


def _ingest(tmp_path: Path, config: str, *extra: str,
            env: dict[str, str] | None = None) -> tuple[int, dict[str, object], str]:
    cfg = tmp_path / "c.toml"
    cfg.write_text(config, encoding="utf-8")
    p = run_cli("ingest", str(_memory(tmp_path)), "--repository", "demo", "--db",
                str(tmp_path / "m.db"), "--config", str(cfg), "--json", *extra,
                env={**ENV, **(env or {})})
    return p.returncode, (json.loads(p.stdout) if p.stdout else {}), p.stderr


def test_chunk_cap_from_the_config_file(tmp_path: Path) -> None:
    code, data, _ = _ingest(tmp_path, "[limits]\nmax_chunks_per_file = 5\n")
    assert code == 1
    failed = data["failed"]
    assert isinstance(failed, list) and [f["path"] for f in failed] == ["dense.md"]
    assert "over the limit of 5 per file" in failed[0]["error"]
    assert "[limits] max_chunks_per_file" in failed[0]["error"]
    assert data["created"] == 1  # the neighbour is stored


def test_file_size_limit_from_the_config_file(tmp_path: Path) -> None:
    code, data, _ = _ingest(tmp_path, "[limits]\nmax_file_bytes = 100\n")
    assert code == 1
    failed = data["failed"]
    assert isinstance(failed, list) and [f["path"] for f in failed] == ["dense.md"]
    assert "over the 100-byte limit" in failed[0]["error"]
    assert data["created"] == 1


def test_environment_beats_the_file(tmp_path: Path) -> None:
    code, data, _ = _ingest(tmp_path, "[limits]\nmax_chunks_per_file = 5\n",
                            env={"MEMLENS_MAX_CHUNKS_PER_FILE": "100000"})
    assert code == 0 and data["created"] == 2 and data["failed"] == []


@pytest.mark.parametrize("config, env", [
    ("[limits]\nmax_chunks_per_file = 0\n", {}),
    ("[limits]\nmax_file_bytes = \"big\"\n", {}),
    ("", {"MEMLENS_MAX_FILE_BYTES": "-3"}),
])
def test_bad_limits_are_one_line_exit_2(tmp_path: Path, config: str,
                                        env: dict[str, str]) -> None:
    code, _, err = _ingest(tmp_path, config, env=env)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "limits.max_" in lines[0] and "Traceback" not in err


@pytest.mark.parametrize("config, env, names", [
    ('[chunker]\nstrategy = "fancy"\n', {}, ["c.toml:2", "chunker.strategy", "'fancy'"]),
    ("[chunker]\nmax_tokens = -5\n", {}, ["c.toml:2", "chunker.max_tokens"]),
    ("[chunker]\nmax_tokens = 100\noverlap_tokens = 100\n", {},
     ["chunker.overlap_tokens", "c.toml", "chunker.max_tokens"]),
    ("", {"MEMLENS_STRATEGY": "bogus"}, ["MEMLENS_STRATEGY", "chunker.strategy"]),
    ("", {"MEMLENS_OVERLAP_TOKENS": "-1"}, ["MEMLENS_OVERLAP_TOKENS", "chunker.overlap_tokens"]),
    ("", {"MEMLENS_DEBOUNCE_MS": "-1"}, ["MEMLENS_DEBOUNCE_MS", "watch.debounce_ms"]),
    ("", {"MEMLENS_MAX_REVISIONS": "-2"}, ["MEMLENS_MAX_REVISIONS", "retention.max_revisions"]),
])
@pytest.mark.parametrize("command", ["config", "docs"])
def test_bad_chunker_and_range_values_are_named_where_they_are_set(
        tmp_path: Path, config: str, env: dict[str, str], names: list[str], command: str) -> None:
    """Bad chunker values (and negative counts) are refused when the settings load, with
    the file, line and key (or the variable), by every command: `config` and `docs`
    accepted them (exit 0) and only `chunks`/`ingest`/the TUI failed later, naming
    neither the file nor the line."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(config, encoding="utf-8")
    p = run_cli(command, "--config", str(cfg), "--db", str(tmp_path / "m.db"),
                env={**ENV, **env})
    assert p.returncode == 2, p.stdout
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    for n in names:
        assert n in lines[0], lines[0]


def test_chunker_strategy_names_agree() -> None:
    from memlens.core.chunking.chunker import STRATEGIES
    from memlens.core.config.settings import CHUNKER_STRATEGIES

    assert tuple(STRATEGIES) == CHUNKER_STRATEGIES
