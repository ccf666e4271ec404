"""Digest of every redaction pattern's matches, to compare Python versions.

Possessive quantifiers and atomic groups are new in Python 3.11's `re`, and their
behaviour moved between patch releases (3.11.2 and 3.11.7 disagree on patterns that
mix them with lookaheads). This script finds every compiled pattern reachable from the
redaction modules, runs ``finditer`` over the labelled secret sets, 20,000 seeded
splices of them and any Markdown files you list, and prints one SHA-1 of all match
spans per pattern, plus one per text of ``redact()``'s output. Run it under each
interpreter and compare::

    for py in /usr/bin/python3 ~/.pyenv/versions/3.1[123]*/bin/python; do
        v=$($py -c 'import sys; print(sys.version.split()[0])')
        PYTHONPATH=src $py tools/redact_pattern_digest.py --files /tmp/md.txt > /tmp/d-$v.json
    done
    python tools/redact_pattern_digest.py --compare /tmp/d-*.json

(The interpreters need numpy, which ``redact`` uses for text above U+00FF.)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import types
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODULES = ("redact", "redact_rules", "redact_rules_cloud", "redact_rules_dev", "redact_rules_saas",
           "redact_rules_tokens", "redact_rules_vendors", "redact_scan", "redact_keyed",
           "redact_entropy")
GLUE = ["", " ", "\n", "&", ";", "=", ":", '"', "'", "`", "&user=", ";EndpointSuffix=", "?", "/",
        "@", "password=", "token: ", "api_key=", 'secret="', "AccountKey=",
        "Authorization: Bearer ", "\\n", ",", "#", " \n", "\t\n"]


def patterns() -> dict[str, re.Pattern[str]]:
    """Every `re.Pattern` reachable from the redaction modules' globals."""
    import importlib

    found: dict[str, re.Pattern[str]] = {}
    seen: set[int] = set()

    def walk(obj: object, depth: int) -> None:
        if id(obj) in seen or depth > 6:
            return
        seen.add(id(obj))
        if isinstance(obj, re.Pattern):
            if isinstance(obj.pattern, str):
                found[f"{obj.flags}:{obj.pattern}"] = obj
        elif isinstance(obj, (list, tuple, set, frozenset)):
            for item in obj:
                walk(item, depth + 1)
        elif isinstance(obj, dict):
            for item in obj.values():
                walk(item, depth + 1)
        elif isinstance(obj, types.FunctionType):
            for cell in obj.__closure__ or ():
                try:
                    walk(cell.cell_contents, depth + 1)
                except ValueError:
                    pass
            for item in obj.__defaults__ or ():
                walk(item, depth + 1)
        elif not isinstance(obj, (types.ModuleType, type)):
            for slot in getattr(obj, "__slots__", ()):
                walk(getattr(obj, slot, None), depth + 1)
            for item in getattr(obj, "__dict__", {}).values():
                walk(item, depth + 1)

    for name in MODULES:
        module = importlib.import_module(f"memlens.core.{name}")
        for value in vars(module).values():
            if not isinstance(value, types.ModuleType):
                walk(value, 0)
    return found


def texts(listing: Path | None) -> list[str]:
    """The labelled sets' texts, seeded splices of them, then the listed files."""
    base = []
    for path in sorted((REPO / "tests" / "data" / "secrets").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if "text" in row:
                base.append(row["text"])
    out = list(base)
    rng = random.Random(17)
    for _ in range(20000):
        a, b = rng.choice(base), rng.choice(base)
        i = rng.randrange(len(a) + 1)
        j = rng.randrange(i, len(a) + 1)
        k = rng.randrange(len(b) + 1)
        m = rng.randrange(k, len(b) + 1)
        out.append(a[i:j] + rng.choice(GLUE) + b[k:m] + rng.choice(GLUE) + a[j:])
    if listing:
        for line in listing.read_text().splitlines():
            if line.strip():
                try:
                    out.append(Path(line.strip()).read_text(errors="replace"))
                except OSError:
                    out.append("")
    return out


def digest(listing: Path | None) -> dict[str, object]:
    from memlens.core.redact.engine import redact

    corpus = texts(listing)
    per_pattern = {}
    for key, pattern in sorted(patterns().items()):
        h = hashlib.sha1()
        for index, text in enumerate(corpus):
            for match in pattern.finditer(text):
                h.update(f"{index}:{match.start()}-{match.end()};".encode())
        per_pattern[key] = h.hexdigest()
    outputs = [hashlib.sha1(redact(t).text.encode()).hexdigest()[:16] for t in corpus]
    return {"python": sys.version.split()[0], "texts": len(corpus), "patterns": per_pattern,
            "redacted": outputs}


def compare(paths: list[Path]) -> int:
    runs = [json.loads(p.read_text()) for p in paths]
    ref = runs[0]
    bad = 0
    for run in runs[1:]:
        pats = [k for k in ref["patterns"] if run["patterns"].get(k) != ref["patterns"][k]]
        outs = [i for i, (a, b) in enumerate(zip(ref["redacted"], run["redacted"], strict=True)) if a != b]
        print(f"{ref['python']} vs {run['python']}: {len(ref['patterns'])} patterns, "
              f"{ref['texts']} texts; patterns differing {len(pats)}, outputs differing {len(outs)}")
        for key in pats:
            print("   ", key[:160])
        if outs:
            print("    texts:", outs[:20])
        bad += len(pats) + len(outs)
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=Path, help="a file listing Markdown paths, one a line")
    parser.add_argument("--compare", type=Path, nargs="+", help="digests to compare")
    args = parser.parse_args()
    if args.compare:
        return compare(args.compare)
    json.dump(digest(args.files), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
