"""False findings of `memlens.core.redact.engine` on Markdown you did not write, against a baseline.

Redaction precision is measured on text with no (or few, known) secrets: package READMEs,
vendored docs, changelogs, the bundled corpora. This script redacts every file, records each
finding as ``(kind, first 80 characters of the value)`` per file, and either saves that as a
baseline or prints what a later tree gained (``NEW``) or lost (``GONE``) against it, so every
new finding of a rule change can be read before the change lands.

Usage::

    find / -xdev -name '*.md' -size -2M > /tmp/md.txt         # or any list of files
    python tools/redact_fp_scan.py save /tmp/base.json --files /tmp/md.txt
    # change the rules, then:
    python tools/redact_fp_scan.py cmp /tmp/base.json --files /tmp/md.txt

``corpus/``, ``corpus_validation/`` and ``docs/`` of this repository are always included.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from memlens.core.redact.engine import redact

REPO = Path(__file__).resolve().parent.parent


def _files(listing: Path | None) -> list[Path]:
    out = [Path(line.strip()) for line in listing.read_text().splitlines() if line.strip()] \
        if listing else []
    for folder in ("corpus", "corpus_validation", "docs"):
        out += sorted((REPO / folder).rglob("*.md"))
    return out


def scan(files: list[Path]) -> tuple[dict[str, list[list[str]]], int, float]:
    """Findings per file (only files with some), characters read, CPU seconds."""
    found: dict[str, list[list[str]]] = {}
    chars = 0
    start = time.process_time()
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        chars += len(text)
        hits = sorted({(x.kind, text[x.start : x.end][:80]) for x in redact(text).findings})
        if hits:
            found[str(f)] = [list(h) for h in hits]
    return found, chars, time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["save", "cmp"])
    ap.add_argument("baseline", type=Path)
    ap.add_argument("--files", type=Path, help="a file listing the files to read, one a line")
    args = ap.parse_args(argv)
    files = _files(args.files)
    found, chars, cpu = scan(files)
    total = sum(map(len, found.values()))
    print(f"{len(files)} files, {chars / 1e6:.1f} M characters, {cpu:.1f} s CPU "
          f"({chars / 1e6 / max(cpu, 1e-9):.2f} M/s), {total} findings", file=sys.stderr)
    if args.action == "save":
        args.baseline.write_text(json.dumps(found))
        return 0
    base = json.loads(args.baseline.read_text())
    changed = 0
    for name, hits in sorted(found.items()):
        before = {tuple(h) for h in base.get(name, [])}
        for h in hits:
            if tuple(h) not in before:
                print("NEW ", tuple(h), name)
                changed += 1
    for name, hits in sorted(base.items()):
        now = {tuple(h) for h in found.get(name, [])}
        for h in hits:
            if tuple(h) not in now:
                print("GONE", tuple(h), name)
                changed += 1
    return 1 if changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
