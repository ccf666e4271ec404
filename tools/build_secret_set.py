"""Build ``tests/data/secrets/external.jsonl`` from the gitleaks rules' samples.

Source: the ``tps`` (true positives) and ``fps`` (false positives) string
literals in ``cmd/generate/config/rules/*.go`` of github.com/gitleaks/gitleaks
(MIT, see ``tests/data/secrets/LICENSE-gitleaks``). Only plain string literals
are taken; samples built at run time (``secrets.NewSecret(...)``) are skipped.

Each true positive gives its secret (the longest token of the sample) in three
contexts: ``keyed`` (``api_key = "..."``), ``prose`` (a sentence with the token
alone) and ``backticks`` (a Markdown table cell in backticks). Each false
positive is kept verbatim as a look-alike. Lines are stored reversed
(``"obfuscation": "reversed"``) so that the committed file trips no scanner;
`memlens.core.redact_eval.load_labelled` undoes it.

Usage::

    python tools/build_secret_set.py GITLEAKS_GIT_DIR [COMMIT]
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "secrets" / "external.jsonl"
_BLOCK = re.compile(r"\b(tps|fps)\s*:?=\s*\[\]string\{(.*?)\n\s*\}", re.S)
_LIT = re.compile(r'^\s*(?:"((?:[^"\\\n]|\\.)*)"|`([^`]*)`)\s*,?\s*(?://.*)?$')
_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=.~:@]{16,}")
CONTEXTS = {
    "keyed": 'api_key = "{s}"',
    "prose": "I rotated it this morning, the new one is {s} and it works.",
    "backticks": "| deploy | `{s}` |",
}


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", git_dir, *args], check=True, capture_output=True, text=True
    ).stdout


def _secret_of(sample: str) -> str | None:
    tokens = [t.strip(".:=") for t in _TOKEN.findall(sample)]
    tokens = [t for t in tokens if len(t) >= 16 and any(c.isdigit() for c in t)]
    return max(tokens, key=len) if tokens else None


def main(argv: list[str]) -> int:
    git_dir = argv[1]
    commit = argv[2] if len(argv) > 2 else _git(git_dir, "rev-parse", "HEAD").strip()
    files = _git(git_dir, "ls-tree", "--name-only", commit, "cmd/generate/config/rules/")
    rows: list[dict[str, str]] = []
    for path in sorted(files.split()):
        if not path.endswith(".go") or path.endswith("_test.go"):
            continue
        family = Path(path).stem
        src = _git(git_dir, "show", f"{commit}:{path}")
        n = 0
        for which, body in _BLOCK.findall(src):
            for line in body.splitlines():
                m = _LIT.match(line)
                if not m:
                    continue
                sample = m.group(1) if m.group(1) is not None else m.group(2)
                if m.group(1) is not None:
                    sample = bytes(sample, "utf-8").decode("unicode_escape", "ignore")
                n += 1
                if which == "fps":
                    rows.append({"id": f"{family}-fp{n}", "format": f"{family}/fp",
                                 "label": "lookalike", "text": sample, "secret": ""})
                    continue
                secret = _secret_of(sample)
                if secret is None:
                    continue
                rows.extend(secret_rows(family, n, secret))
    write_set(OUT, f"gitleaks/gitleaks@{commit}", rows)
    return 0


def secret_rows(family: str, n: int, secret: str) -> list[dict[str, str]]:
    """One true-positive sample in each of the three `CONTEXTS`."""
    return [
        {"id": f"{family}-tp{n}-{ctx}", "format": f"{family}/{ctx}", "label": "secret",
         "text": tmpl.format(s=secret), "secret": secret}
        for ctx, tmpl in CONTEXTS.items()
    ]


def write_set(out: Path, source: str, rows: list[dict[str, str]]) -> None:
    """Write ``rows`` as reversed JSONL lines after a provenance header."""
    with out.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"source": source, "comment": True}) + "\n")
        for row in rows:
            rec: dict[str, object] = {"id": row["id"], "format": row["format"],
                                      "label": row["label"], "obfuscation": "reversed",
                                      "text": row["text"][::-1]}
            if row["label"] == "secret":
                rec["secret"] = row["secret"][::-1]
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} rows to {out}", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
