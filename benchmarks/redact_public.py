"""Redaction on two public sets it was not written from (issue 44): keyed recall, the
look-alikes kept, and recall per family for a secret alone in prose.

Usage::

    uv run python benchmarks/redact_public.py --gitleaks GIT_DIR --trufflehog GIT_DIR
        [--json] [--misses N]

``GIT_DIR`` is a clone (or bare git directory) of github.com/gitleaks/gitleaks and of
github.com/trufflesecurity/trufflehog; nothing of them is stored in this repository
(trufflehog is AGPL-3.0: its test strings are read at run time and only counts are
printed). The sets:

* **gitleaks rule samples, keyed.** gitleaks' ``utils.GenerateSampleSecrets(identifier,
  secret)`` writes each rule's secret into every configuration and code shape it knows
  (INI, JSON, multi-line XML, YAML, C#, Go, Java, Kotlin, PHP, Python, Makefile,
  logstash, ``System.setProperty``). The shapes are read from
  ``cmd/generate/config/utils/generate.go`` and the identifier of each rule from its
  ``GenerateSampleSecrets("...")`` call in ``cmd/generate/config/rules/*.go``; the
  secrets are the ones drawn from each rule's own regex in
  ``tests/data/secrets/generated_gitleaks.jsonl`` (``tools/build_secret_set_gen.py``,
  as gitleaks' ``secrets.NewSecret`` does at run time). Every rule's literal ``tps``
  (``tests/data/secrets/external.jsonl``, keyed context) are added. The family is the
  rule's file (``discord.go`` -> ``discord``).
* **trufflehog detector test strings, keyed.** Each detector's pattern test
  (``pkg/detectors/*/**/*_test.go``, not the integration tests): every ``input`` whose
  ``want`` lists secrets, with ``fmt.Sprintf`` and the file's string constants resolved;
  each wanted string that occurs in the input is one secret (a multi-part ``want`` such
  as Plivo's key + id counts the parts found). The family is the detector.
* **look-alikes**: the ``fps`` of gitleaks' rules (``external.jsonl``) and the
  look-alikes of the detect-secrets set (``external_detect_secrets.jsonl``), kept when
  redaction leaves them unchanged.
* **prose per family**: each generated gitleaks secret alone in a sentence (the
  ``prose`` lines of ``generated_gitleaks.jsonl``), split into ``prefixed`` rules (a
  fixed literal of 3+ characters or a distinctive infix) and ``bare`` ones (gitleaks
  itself needs the vendor keyword for those).

A secret is handled when its exact text is gone from the output and a marker is there
(:func:`memlens.core.redact.evaluate.score_groups`'s rule).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from memlens.core.redact.engine import redact  # noqa: E402
from memlens.core.redact.evaluate import load_labelled  # noqa: E402
from memlens.core.redact.rules import MARKER_PREFIX  # noqa: E402

DATA = REPO / "tests" / "data" / "secrets"


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True, text=True,
                          check=True).stdout


def _git_dir(path: str) -> str:
    p = Path(path)
    return str(p / ".git") if (p / ".git").exists() else str(p)


@dataclass
class Tally:
    """Handled / total per family, and a few misses to read."""

    handled: Counter[str] = field(default_factory=Counter)
    total: Counter[str] = field(default_factory=Counter)
    misses: list[tuple[str, str]] = field(default_factory=list)

    def add(self, family: str, text: str, secret: str) -> None:
        out = redact(text).text
        ok = secret not in out and MARKER_PREFIX in out
        self.total[family] += 1
        self.handled[family] += ok
        if not ok:
            self.misses.append((family, text))

    @property
    def share(self) -> float:
        n = sum(self.total.values())
        return sum(self.handled.values()) / n if n else 1.0

    def line(self) -> str:
        h, n = sum(self.handled.values()), sum(self.total.values())
        return f"{h}/{n} = {self.share:.3f} ({len(self.total)} families)"


# -- gitleaks ----------------------------------------------------------------------

_GO_STR = r'"((?:[^"\\]|\\.)*)"|`([^`]*)`'
_TEMPLATE = re.compile(r'^\s*"([^"]+)":\s*(' + _GO_STR + r")\s*,", re.M)
_SAMPLE_CALL = re.compile(r'GenerateSampleSecrets\(\s*"([^"]+)"')
_RULE_ID = re.compile(r'RuleID:\s*"([^"]+)"')


def _go_unquote(dq: str | None, bq: str | None) -> str:
    if bq is not None:
        return bq
    return json.loads(f'"{dq}"') if dq is not None else ""


def gitleaks_templates(git_dir: str) -> dict[str, str]:
    """The active shapes of ``GenerateSampleSecrets`` (commented-out TODOs skipped)."""
    src = _git(git_dir, "show", "HEAD:cmd/generate/config/utils/generate.go")
    body = src[src.index("func GenerateSampleSecrets"):]
    body = body[: body.index("replacer :=")]
    out = {}
    for m in _TEMPLATE.finditer(body):
        line_start = body.rfind("\n", 0, m.start()) + 1
        if body[line_start: m.start() + 1].strip().startswith("//"):
            continue
        out[m.group(1)] = _go_unquote(m.group(3), m.group(4))
    return out


def gitleaks_identifiers(git_dir: str) -> tuple[dict[str, str], dict[str, str]]:
    """(rule id -> the identifier its samples use, rule id -> family = its file)."""
    idents: dict[str, str] = {}
    family: dict[str, str] = {}
    files = [f for f in _git(git_dir, "ls-tree", "--name-only", "HEAD",
                             "cmd/generate/config/rules/").split() if f.endswith(".go")
             and not f.endswith("_test.go")]
    for f in files:
        src = _git(git_dir, "show", f"HEAD:{f}")
        for chunk in re.split(r"\nfunc ", src):
            rid = _RULE_ID.search(chunk)
            if rid is None:
                continue
            family[rid.group(1)] = Path(f).stem
            call = _SAMPLE_CALL.search(chunk)
            if call is not None:
                idents[rid.group(1)] = call.group(1)
    return idents, family


def gitleaks_keyed(git_dir: str) -> Tally:
    templates = gitleaks_templates(git_dir)
    idents, family = gitleaks_identifiers(git_dir)
    tally = Tally()
    seen: set[tuple[str, str]] = set()
    for ex in load_labelled(DATA / "generated_gitleaks.jsonl"):
        rule = ex.format.split("/")[0]
        if ex.secret is None or rule not in idents or (rule, ex.secret) in seen:
            continue
        seen.add((rule, ex.secret))
        ident = idents[rule]
        for shape in templates.values():
            text = shape.replace("{i}", ident).replace("{I}", ident.upper()).replace(
                "{s}", ex.secret)
            tally.add(family.get(rule, rule), text, ex.secret)
    for ex in load_labelled(DATA / "external.jsonl"):  # the literal tps, keyed
        if ex.secret is not None and ex.format.endswith("keyed"):
            rule = ex.format.split("/")[0]
            tally.add(family.get(rule, rule), ex.text, ex.secret)
    return tally


# -- trufflehog --------------------------------------------------------------------

_CONST = re.compile(r"^\s*(\w+)\s*(?::?=|\s+string\s*=)\s*(" + _GO_STR + r")\s*$", re.M)
_CASE = re.compile(r"\binput:\s*(?P<input>.+?),\s*\n\s*want:\s*(?P<want>\[\]string\{.*?\}|nil)",
                   re.S)


def _go_expr(expr: str, consts: dict[str, str]) -> str | None:
    """A Go string expression: literals, constants, ``+`` and ``fmt.Sprintf`` with %s/%v/%q."""
    expr = expr.strip()
    m = re.fullmatch(r"fmt\.Sprintf\((.*)\)", expr, re.S)
    if m is not None:
        parts = _split_args(m.group(1))
        fmt = _go_expr(parts[0], consts)
        args = [_go_expr(p, consts) for p in parts[1:]]
        if fmt is None or any(a is None for a in args):
            return None
        out, it = [], iter(args)
        pos = 0
        for spec in re.finditer(r"%[sqv]", fmt):
            out.append(fmt[pos: spec.start()])
            val = next(it, None)
            if val is None:
                return None
            out.append(json.dumps(val) if spec.group() == "%q" else val)
            pos = spec.end()
        out.append(fmt[pos:])
        return "".join(out)
    pieces = _split_args(expr, "+")
    if len(pieces) > 1:
        vals = [_go_expr(p, consts) for p in pieces]
        return None if any(v is None for v in vals) else "".join(v for v in vals if v)
    lit = re.fullmatch(_GO_STR, expr, re.S)
    if lit is not None:
        try:
            return _go_unquote(lit.group(1), lit.group(2))
        except ValueError:
            return None
    return consts.get(expr)


def _split_args(s: str, sep: str = ",") -> list[str]:
    """Split at top-level ``sep`` (outside strings and brackets)."""
    out, depth, cur, i, quote = [], 0, [], 0, ""
    while i < len(s):
        c = s[i]
        if quote:
            cur.append(c)
            if c == "\\" and quote == '"':
                cur.append(s[i + 1])
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"`":
            quote = c
            cur.append(c)
        elif c in "([{":
            depth += 1
            cur.append(c)
        elif c in ")]}":
            depth -= 1
            cur.append(c)
        elif c == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    out.append("".join(cur))
    return [p for p in (x.strip() for x in out) if p]


def trufflehog_keyed(git_dir: str) -> tuple[Tally, Counter[str]]:
    """The detectors' pattern tests; also counts of cases skipped, by reason."""
    tally = Tally()
    skipped: Counter[str] = Counter()
    files = [f for f in _git(git_dir, "ls-tree", "-r", "--name-only", "HEAD",
                             "pkg/detectors/").split()
             if f.endswith("_test.go") and "integration" not in f]
    for f in files:
        src = _git(git_dir, "show", f"HEAD:{f}")
        consts = {m.group(1): _go_unquote(m.group(3), m.group(4)) for m in _CONST.finditer(src)}
        detector = f.split("/")[2]
        for case in _CASE.finditer(src):
            want_src = case.group("want")
            if want_src == "nil" or want_src.strip() == "[]string{}":
                continue
            text = _go_expr(case.group("input"), consts)
            wants = [_go_expr(w, consts) for w in _split_args(want_src[len("[]string{"):-1])]
            if text is None or any(w is None for w in wants):
                skipped["unresolved expression"] += 1
                continue
            found = [w for w in wants if w and w in text]
            if not found:
                skipped["wanted string not in the input (built from parts)"] += 1
                continue
            for w in found:
                tally.add(detector, text, w)
    return tally, skipped


# -- look-alikes and prose ---------------------------------------------------------

def lookalikes() -> tuple[int, int]:
    kept = total = 0
    for path in (DATA / "external.jsonl", DATA / "external_detect_secrets.jsonl"):
        for ex in load_labelled(path):
            if ex.label == "lookalike":
                total += 1
                kept += redact(ex.text).text == ex.text
    return kept, total


def prose_by_family(family: dict[str, str]) -> dict[str, dict[str, list[int]]]:
    """family -> {"prefixed"|"bare": [handled, total]}."""
    out: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for ex in load_labelled(DATA / "generated_gitleaks.jsonl"):
        if ex.secret is None or not ex.format.endswith("/prose"):
            continue
        rule = ex.format.split("/")[0]
        res = redact(ex.text).text
        cell = out[family.get(rule, rule)][ex.group or "bare"]
        cell[0] += ex.secret not in res and MARKER_PREFIX in res
        cell[1] += 1
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gitleaks", required=True)
    ap.add_argument("--trufflehog", required=True)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--misses", type=int, default=0, help="print this many misses per set")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    gl, th = _git_dir(args.gitleaks), _git_dir(args.trufflehog)
    g = gitleaks_keyed(gl)
    t, skipped = trufflehog_keyed(th)
    kept, fps = lookalikes()
    _, family = gitleaks_identifiers(gl)
    prose = prose_by_family(family)
    pre = [sum(c["prefixed"][i] for c in prose.values() if "prefixed" in c) for i in (0, 1)]
    bare = [sum(c["bare"][i] for c in prose.values() if "bare" in c) for i in (0, 1)]
    result = {
        "gitleaks_commit": _git(gl, "rev-parse", "HEAD").strip(),
        "trufflehog_commit": _git(th, "rev-parse", "HEAD").strip(),
        "gitleaks_keyed": [sum(g.handled.values()), sum(g.total.values()), len(g.total)],
        "trufflehog_keyed": [sum(t.handled.values()), sum(t.total.values()), len(t.total)],
        "trufflehog_skipped": dict(skipped),
        "lookalikes_kept": [kept, fps],
        "prose_prefixed": pre, "prose_bare": bare,
        "prose_by_family": {f: {k: v for k, v in c.items()} for f, c in sorted(prose.items())},
        "seconds": round(time.perf_counter() - t0, 1),
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"gitleaks {result['gitleaks_commit'][:7]} rule samples, keyed: {g.line()}")
    print(f"trufflehog {result['trufflehog_commit'][:7]} detector tests, keyed: {t.line()};"
          f" skipped {dict(skipped)}")
    print(f"look-alikes kept unchanged: {kept}/{fps} = {kept / fps:.3f}")
    print(f"prose, prefixed rules: {pre[0]}/{pre[1]} = {pre[0] / pre[1]:.3f};"
          f" bare rules: {bare[0]}/{bare[1]} = {bare[0] / bare[1]:.3f}")
    print("\n| family | prose, prefixed | prose, bare (keyword-only) |\n|---|---:|---:|")
    for f, c in sorted(prose.items()):
        cells = [f"{c[k][0]}/{c[k][1]}" if k in c else "" for k in ("prefixed", "bare")]
        print(f"| {f} | {cells[0]} | {cells[1]} |")
    for name, tl in (("gitleaks", g), ("trufflehog", t)):
        low = sorted((tl.handled[f] / tl.total[f], f) for f in tl.total)
        print(f"\n{name}: lowest families: "
              + ", ".join(f"{f} {tl.handled[f]}/{tl.total[f]}" for s, f in low[:12] if s < 1))
        for fam, text in tl.misses[: args.misses]:
            print(f"  miss [{fam}] {text[:160]!r}")
    print(f"\n{result['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
