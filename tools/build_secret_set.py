"""Build ``tests/data/secrets/external.jsonl`` from the gitleaks rules' samples.

Source: the ``tps`` (true positives) and ``fps`` (false positives) string
literals in ``cmd/generate/config/rules/*.go`` of github.com/gitleaks/gitleaks
(MIT, see ``tests/data/secrets/LICENSE-gitleaks``), and the compiled rules in
``config/gitleaks.toml`` at the same commit. Only plain string literals are
taken; samples built at run time (``secrets.NewSecret(...)``,
``utils.GenerateSampleSecrets(...)``) are skipped and counted.

Labels are what gitleaks itself reports as the secret: each true positive is
matched with the regex of the rule whose function lists it (its ``RuleID``),
translated from Go RE2 to Python `re` (`go_to_py`), and the secret is the
rule's ``secretGroup``, else the first non-empty capture group, else the whole
match -- the logic of gitleaks' ``detect/detect.go``. One layer of matching
quotes around a captured value is removed (``curl -u 'user:pass'`` captures the
quotes). A sample whose rule regex cannot be compiled or does not match in
Python is dropped and counted by reason; no label is guessed.

Each labelled true positive gives its secret in three contexts: ``keyed``
(``api_key = "..."``), ``prose`` (a sentence) and ``backticks`` (a Markdown
table cell in backticks). When the rule needs text around the secret to fire
(the match holds more than the secret and its delimiters, e.g. ``curl -u`` or
``Authorization: Bearer``), the prose and backticks contexts carry that
context -- the rule's match, on one line -- since the value alone is not a
credential by gitleaks' own definition; otherwise they carry the secret alone.
Each false positive is kept verbatim as a look-alike. Lines are stored
reversed (``"obfuscation": "reversed"``) so that the committed file trips no
scanner; `memlens.core.redact.evaluate.load_labelled` undoes it.

Usage::

    python tools/build_secret_set.py GITLEAKS_GIT_DIR [COMMIT]
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "secrets" / "external.jsonl"
_BLOCK = re.compile(r"\b(tps|fps)\s*:?=\s*\[\]string\{")
_RULE_ID = re.compile(r'RuleID:\s*"([^"]+)"')
CONTEXTS = {
    "keyed": 'api_key = "{s}"',
    "prose": "I rotated it this morning, the new one is {s} and it works.",
    "backticks": "| deploy | `{s}` |",
}
# prose/backticks when the secret needs the rule's context (a command, a header)
IN_CONTEXT = {
    "prose": "I rotated it this morning, it works again with {s} as before.",
    "backticks": "| deploy | `{s}` |",
}
_POSIX = {"alnum": "A-Za-z0-9", "alpha": "A-Za-z", "digit": "0-9", "xdigit": "0-9A-Fa-f",
          "upper": "A-Z", "lower": "a-z", "space": r"\s", "word": r"\w", "punct": r"!-/:-@\[-`{-~"}


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", git_dir, *args], check=True, capture_output=True, text=True
    ).stdout


def _group_end(rx: str, i: int) -> int:
    """Index of the ``)`` closing the group that is open at ``rx[i]`` (or ``len``)."""
    depth, in_class = 0, False
    while i < len(rx):
        c = rx[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if rx[i + 1 : i + 2] == "^":
                i += 1
            if rx[i + 1 : i + 2] == "]":
                i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    return len(rx)


def _split_alternatives(rx: str) -> list[str]:
    """``rx`` split at its top-level ``|``."""
    parts, start, i = [], 0, 0
    while i < len(rx):
        c = rx[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            j = i + 1 + (rx[i + 1 : i + 2] == "^")
            j += rx[j : j + 1] == "]"
            while j < len(rx) and rx[j] != "]":
                j += 2 if rx[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            i = _group_end(rx, i + 1) + 1
            continue
        if c == "|":
            parts.append(rx[start:i])
            start = i + 1
        i += 1
    parts.append(rx[start:])
    return parts


_MID_FLAGS = re.compile(r"\(\?([a-zA-Z]+(?:-[a-zA-Z]+)?|-[a-zA-Z]+)\)")


def go_to_py(rx: str) -> str:
    """Translate the RE2 constructs gitleaks uses into Python `re` syntax.

    ``\\z`` becomes ``\\Z``; POSIX classes (``[[:alnum:]]``) are expanded; a
    flag group in the middle of a pattern (``p8e-(?i)[a-z0-9]{32}``), which RE2
    applies to the rest of the enclosing group, becomes a scoped group over each
    remaining alternative of that group (``p8e-(?i:[a-z0-9]{32})``).
    """
    rx = rx.replace(r"\z", r"\Z")
    rx = re.sub(r"\[:(\w+):\]", lambda m: _POSIX.get(m.group(1), m.group(0)), rx)
    while True:
        m = next((m for m in _MID_FLAGS.finditer(rx) if m.start() > 0), None)
        if m is None:
            return rx
        end = _group_end(rx, m.end())
        rest = _split_alternatives(rx[m.end() : end])
        scoped = "|".join(f"(?{m.group(1)}:{alt})" for alt in rest)
        rx = rx[: m.start()] + scoped + rx[end:]


def _unquote(s: str) -> str:
    quoted = len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"" and s[0] not in s[1:-1]
    return s[1:-1] if quoted else s


def label(rule: dict[str, object], sample: str) -> tuple[str, str] | str:
    """``(secret, context)`` that gitleaks' ``rule`` reports in ``sample``, or a reason.

    ``context`` is the secret alone, or the rule's match on one line when the
    rule needs the text around the secret.
    """
    try:
        pattern = re.compile(go_to_py(str(rule["regex"])))
    except re.error:
        return "regex not translatable to Python re"
    m = pattern.search(sample)
    if m is None:
        return "rule regex does not match in Python re"
    group = int(str(rule.get("secretGroup", 0)))
    idx = group if group else next((i for i, g in enumerate(m.groups(), 1) if g), 0)
    secret = _unquote(m.group(idx))
    if not secret.strip():
        return "empty capture"
    start, end = m.span(idx)
    before = sample[m.start() : start]
    if not re.search(r"\w", before):
        return secret, secret
    context = sample[m.start() : m.end()].rstrip()
    context = re.sub(r"\\[nr]$|;$", "", context)
    if context and context[-1] in "'\"" and context.count(context[-1]) % 2:
        context = context[:-1]
    context = re.sub(r"[ \t]*\\?\r?\n[ \t#]*", " ", context).strip()
    if secret not in context or pattern.search(context) is None:
        return "rule no longer matches its context on one line"
    return secret, context


def _go_string(src: str, i: int) -> tuple[str, int]:
    """The Go string literal starting at ``src[i]`` (raw or interpreted) and its end."""
    if src[i] == "`":
        end = src.index("`", i + 1)
        return src[i + 1 : end], end + 1
    j = i + 1
    while src[j] != '"':
        j += 2 if src[j] == "\\" else 1
    raw = src[i + 1 : j]
    return bytes(raw, "utf-8").decode("unicode_escape", "ignore"), j + 1


def _skip_expression(src: str, i: int) -> int:
    """Index of the ``,`` or ``}`` ending the Go expression at ``src[i]``."""
    depth = 0
    while i < len(src):
        c = src[i]
        if c in "`\"":
            i = _go_string(src, i)[1]
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return i
            depth -= 1
        elif c == "," and depth == 0:
            return i
        i += 1
    return i


def _samples(src: str, i: int) -> tuple[list[str], int]:
    """String-literal elements of the ``[]string{`` list opened before ``src[i]``.

    Returns the literals (multi-line raw strings included) and how many other
    elements (built at run time) were skipped.
    """
    out, skipped = [], 0
    while i < len(src):
        if src.startswith("//", i):
            i = src.find("\n", i) % (len(src) + 1)
        elif src.startswith("/*", i):
            i = src.index("*/", i) + 2
        elif src[i] in " \t\r\n,":
            i += 1
        elif src[i] == "}":
            break
        elif src[i] in "`\"":
            sample, j = _go_string(src, i)
            k = j
            while k < len(src) and src[k] in " \t":
                k += 1
            if k < len(src) and src[k] not in ",}\n/":
                skipped += 1  # a literal inside an expression, e.g. "x" + secrets.NewSecret(...)
                i = _skip_expression(src, j)
            else:
                out.append(sample)
                i = j
        else:
            skipped += 1
            i = _skip_expression(src, i)
    return out, skipped


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: build_secret_set.py GITLEAKS_GIT_DIR [COMMIT]", file=sys.stderr)
        return 2
    git_dir = argv[1]
    commit = argv[2] if len(argv) > 2 else _git(git_dir, "rev-parse", "HEAD").strip()
    config = tomllib.loads(_git(git_dir, "show", f"{commit}:config/gitleaks.toml"))
    rules = {r["id"]: r for r in config["rules"]}
    files = _git(git_dir, "ls-tree", "--name-only", commit, "cmd/generate/config/rules/")
    rows: list[dict[str, str]] = []
    counts: Counter[str] = Counter()
    for path in sorted(files.split()):
        if not path.endswith(".go") or path.endswith("_test.go"):
            continue
        family = Path(path).stem
        n = 0
        for func in re.split(r"\nfunc ", _git(git_dir, "show", f"{commit}:{path}")):
            ids = [i for i in _RULE_ID.findall(func) if i in rules and "regex" in rules[i]]
            missing = "rule not in config/gitleaks.toml" if _RULE_ID.search(func) else "no rule"
            for block in _BLOCK.finditer(func):
                which = block.group(1)
                samples, skipped = _samples(func, block.end())
                counts[f"{which} built at run time (skipped)"] += skipped
                for sample in samples:
                    n += 1
                    if which == "fps":
                        counts["fps kept"] += 1
                        rows.append({"id": f"{family}-fp{n}", "format": f"{family}/fp",
                                     "label": "lookalike", "text": sample, "secret": ""})
                        continue
                    got: tuple[str, str] | str = missing
                    for rid in ids:
                        got = label(rules[rid], sample)
                        if not isinstance(got, str):
                            break
                    if isinstance(got, str):
                        counts[f"tps dropped: {got}"] += 1
                        print(f"dropped {family}-tp{n} ({got}): {sample[:60]!r}", file=sys.stderr)
                        continue
                    counts["tps labelled"] += 1
                    secret, context = got
                    counts["tps labelled, in rule context"] += context != secret
                    rows.extend(secret_rows(family, n, secret, context))
    for what, k in sorted(counts.items()):
        print(f"{k:5d} {what}", file=sys.stderr)
    write_set(OUT, f"gitleaks/gitleaks@{commit}", rows)
    return 0


def secret_rows(
    family: str, n: int, secret: str, context: str | None = None
) -> list[dict[str, str]]:
    """One true-positive sample in each of the three `CONTEXTS`.

    ``context`` (text holding ``secret``) replaces the bare secret in the prose
    and backticks contexts, with the `IN_CONTEXT` templates.
    """
    rows = []
    for ctx, tmpl in CONTEXTS.items():
        text = tmpl.format(s=secret)
        if ctx == "keyed" and '"' in secret:
            text = text.replace('"', "'", 1)[::-1].replace('"', "'", 1)[::-1]
        if context is not None and context != secret and ctx in IN_CONTEXT:
            text = IN_CONTEXT[ctx].format(s=context)
        rows.append({"id": f"{family}-tp{n}-{ctx}", "format": f"{family}/{ctx}",
                     "label": "secret", "text": text, "secret": secret})
    return rows


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
