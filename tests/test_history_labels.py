"""Issue 42, item 2: outside the TUI, history printed each change under the wrong
revision (`#2 rename … +1 -0 lines` with the diff update #3 made, `#1 create — renamed
a.md -> b.md`): memlens stores a superseded revision's summary and diff on that revision
(the step to its successor). Now each change is shown under the revision it made, in the
CLI text, in `--json` (`change.from_revision`) and in MCP `memory_history`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli


class History:
    """A real database: a.md created, updated (+1 line), then renamed to b.md."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.db = root / "h.db"
        self.corpus = root / "corpus"
        self.cwd = root / "elsewhere"
        self.env = {"MEMLENS_EMBEDDER": "hashing", "HF_HUB_OFFLINE": "1",
                    "MEMLENS_CONFIG": str(root / "none.toml"),
                    "MEMLENS_INSTALL_KEY_FILE": str(root / "install.key")}
        self.cwd.mkdir()
        mem = self.corpus / "-home-dev-p" / "memory"
        mem.mkdir(parents=True)
        (mem / "a.md").write_text("# A\n\nfirst line\n", encoding="utf-8")
        self.ingest()
        (mem / "a.md").write_text("# A\n\nfirst line\nsecond line\n", encoding="utf-8")
        self.ingest()
        (mem / "a.md").rename(mem / "b.md")
        self.ingest()

    def ingest(self) -> None:
        proc = run_cli("ingest", str(self.corpus), "--db", str(self.db), env=self.env)
        assert proc.returncode == 0, proc.stderr

    def history(self, *args: str) -> str:
        proc = run_cli("history", "b.md", "--repository", "-home-dev-p", "--db", str(self.db),
                       *args, env=self.env)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout


@pytest.fixture(scope="module")
def hist(tmp_path_factory: pytest.TempPathFactory) -> History:
    return History(tmp_path_factory.mktemp("history"))


def _blocks(text: str) -> dict[str, list[str]]:
    """The text output's lines under each ``#N kind`` header, by ``N kind``."""
    out: dict[str, list[str]] = {}
    key = ""
    for line in text.splitlines()[1:]:
        if line.startswith("  #"):
            number, kind = line.split()[:2]
            key = f"{number[1:]} {kind}"
            out[key] = []
        else:
            out[key].append(line.strip())
    return out


def test_history_text_prints_each_change_under_the_revision_it_made(hist: History) -> None:
    blocks = _blocks(hist.history())
    assert list(blocks) == ["3 rename", "2 update", "1 create"]
    assert blocks["3 rename"] == ["change from #2: renamed a.md -> b.md"]
    update = blocks["2 update"]
    assert update[0].startswith("change from #1: +1 -0 lines")
    assert "+second line" in update
    assert blocks["1 create"] == ["first revision"]
    quiet = _blocks(hist.history("--no-diff"))
    assert quiet["2 update"] == [update[0]]


def test_history_json_says_which_revision_made_the_change(hist: History) -> None:
    revs = json.loads(hist.history("--json"))["revisions"]
    by = {r["number"]: r for r in revs}
    assert by[3]["change"]["from_revision"] == 2
    assert by[3]["change"]["summary"] == "renamed a.md -> b.md"
    assert by[2]["change"]["from_revision"] == 1
    assert "+second line" in by[2]["change"]["diff"]
    assert by[2]["change"]["summary"].startswith("+1 -0 lines")
    assert by[1]["change"] is None
    # the stored fields stay as they were (the step *to the next* revision)
    assert by[1]["summary"].startswith("+1 -0 lines") and by[3]["summary"] is None


def test_mcp_memory_history_labels_the_change_under_its_revision(hist: History) -> None:
    pytest.importorskip("mcp")
    from tests.test_mcp import Built, Recorder, run, session

    b = Built(hist.root)
    b.db, b.env, b.cwd = hist.db, hist.env, hist.cwd

    async def body() -> None:
        async with session(b) as s:
            r = Recorder(s)
            text, data = await r.ok("memory_history", {"repository": "-home-dev-p",
                                                       "path": "b.md"})
            lines = text.splitlines()
            head = {ln.split()[0]: ln for ln in lines if ln.startswith("#")}
            assert head["#3"].endswith("— change from #2: renamed a.md -> b.md"), head
            assert "change from #1: +1 -0 lines" in head["#2"], head
            assert head["#1"].endswith("— first revision"), head
            below_2 = lines[lines.index(head["#2"]) + 1:lines.index(head["#1"])]
            assert "    +second line" in below_2
            by = {it["number"]: it for it in data["revisions"]}
            assert by[3]["change"]["from_revision"] == 2 and by[1]["change"] is None
            _, one = await r.ok("memory_history", {"repository": "-home-dev-p",
                                                   "path": "b.md", "limit": 1})
            assert one["revisions"][0]["change"]["summary"] == "renamed a.md -> b.md"

    run(body)
