"""``memlens watch`` tells a persisting failure once and its fix (issue 42 item 3).

The watcher's periodic reconcile meets a file it cannot read again each time; the CLI
used to print the same failure on every reconcile. Real :class:`WatchEvent` values go
through the CLI's printer; the JSONL stream on stdout keeps every event.
"""

from __future__ import annotations

import json

import pytest

from memlens.cli.watch import _Printer
from memlens.watch.events import WatchEvent

BAD = "bad.md: not valid UTF-8 at byte 3"


def _events() -> list[WatchEvent]:
    fail = WatchEvent("change", 1.0, "-p", "bad.md", change_kind="failed", message=BAD,
                      error="not valid UTF-8 at byte 3")
    again = [WatchEvent("reconcile", 2.0 + i, message="reconciled (periodic): 0 changes")
             for i in range(3)]
    fixed = WatchEvent("change", 9.0, "-p", "bad.md", change_kind="update", result="ready",
                       message="bad.md updated")
    return [fail, again[0], fail, again[1], fail, again[2], fixed,
            WatchEvent("change", 10.0, "-p", "bad.md", change_kind="failed", message=BAD)]


@pytest.mark.parametrize("as_json", [False, True])
def test_a_failure_met_again_is_told_once_and_its_fix_too(
        as_json: bool, capsys: pytest.CaptureFixture[str]) -> None:
    printer = _Printer(as_json)
    for ev in _events():
        printer(ev)
    out, err = capsys.readouterr()
    notes = err.splitlines()
    told = [n for n in notes if "not valid UTF-8" in n]
    # once while it lasts, once more when it breaks again after the fix
    assert len(told) == 2, notes
    assert sum("fixed: -p/bad.md" in n for n in notes) == 1, notes
    # a periodic rescan is noted only after news: the first failure, not its repeats
    assert sum("reconciled (periodic)" in n for n in notes) == (0 if as_json else 1), notes
    if as_json:
        kinds = [json.loads(line)["event"] for line in out.splitlines()]
        assert kinds.count("change") == 5 and kinds.count("reconcile") == 3
