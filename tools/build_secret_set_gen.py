"""Build ``tests/data/secrets/generated_gitleaks.jsonl``: samples generated from every gitleaks rule.

``tools/build_secret_set.py`` takes only the ``tps`` string literals of the
gitleaks rules, so the rules whose samples are built at run time
(``secrets.NewSecret(...)``) are missing from ``external.jsonl``. This tool
covers every rule of ``config/gitleaks.toml`` (github.com/gitleaks/gitleaks,
MIT, see ``tests/data/secrets/LICENSE-gitleaks``) instead, by generating
samples from the rule's regex, as gitleaks' own ``secrets.NewSecret`` does:

* the secret part of a rule is its ``secretGroup``, else the first capture
  group, else the whole pattern (gitleaks' ``detect/detect.go``), taken in each
  top-level alternative of the regex (the Atlassian rule has two shapes);
  the regex is translated from Go RE2 with `build_secret_set.go_to_py`;
* up to ``PER_ALTERNATIVE`` distinct samples are drawn with hypothesis'
  ``st.from_regex(..., fullmatch=True)`` over printable ASCII, seeded with a
  CRC-32 of the rule id and pattern (the same samples on every run of the
  pinned hypothesis version);
* a sample is dropped, counted by reason, when it is a placeholder by
  construction (one character for more than half of it, e.g. hypothesis'
  minimal ``AKCp000...``; a short unit repeated), when gitleaks itself would
  not report it (below the rule's ``entropy``, matched by a global or rule
  allowlist regex aimed at the secret, or holding a rule stopword), or when it
  repeats an earlier sample;
* each rule's secret is ``prefixed`` when it starts with a fixed literal of at
  least ``PREFIX_MIN`` characters (``NRAK-``, ``sq0csp-``; case-insensitive
  literals count; every branch of a leading alternation must have one) or holds
  a fixed infix of two or more characters with a non-alphanumeric one (Azure's
  ``Q~``, Mailchimp's ``-us``) or of four or more (Dropbox's ``AAAAAAAAAA``),
  else ``bare`` (``[a-z0-9]{32}``: gitleaks finds those only next to a vendor
  keyword, so only the keyed context is meaningful for them).

Each sample gives the secret alone in the three contexts of
`build_secret_set.CONTEXTS` (keyed, prose, backticks); ``format`` is
``<rule id>/<context>`` and ``group`` is ``prefixed`` or ``bare``
(``python -m memlens.core.redact.evaluate --evaluate FILE --by group,context``).
Lines are stored reversed, as in ``external.jsonl``.

Usage::

    uv run python tools/build_secret_set_gen.py GITLEAKS_GIT_DIR [COMMIT]
"""

from __future__ import annotations

import json
import math
import re
import sys
import tomllib
import warnings
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

with warnings.catch_warnings():  # deprecated aliases of re._parser / re._constants
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_constants
    import sre_parse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_secret_set import (  # noqa: E402  (tools/ is not a package)
    _git,
    _group_end,
    _split_alternatives,
    go_to_py,
    secret_rows,
)

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "secrets" / "generated_gitleaks.jsonl"
PER_ALTERNATIVE = 3
DRAWS = 24  # hypothesis examples drawn per alternative to find PER_ALTERNATIVE good ones
PREFIX_MIN = 3
METHOD = (
    "hypothesis st.from_regex(secret group, fullmatch=True), seeded per rule, printable ASCII, "
    "case as written; "
    f"{PER_ALTERNATIVE} samples per top-level alternative; placeholders and samples "
    "gitleaks would not report dropped (tools/build_secret_set_gen.py)"
)
_LEADING_FLAGS = re.compile(r"^\(\?([a-zA-Z]+)\)")
_FLAG_GROUP = re.compile(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]+))?([:)])")
_ALPHABET = st.characters(min_codepoint=0x20, max_codepoint=0x7E)


def _capture_groups(rx: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the body of each capture group of ``rx``, in group order."""
    out, i, in_class = [], 0, False
    while i < len(rx):
        c = rx[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            i += rx[i + 1 : i + 2] == "^"
            i += rx[i + 1 : i + 2] == "]"
        elif c == "(" and (rx[i + 1 : i + 2] != "?" or rx[i + 1 : i + 4] == "?P<"):
            body = i + 1 if rx[i + 1 : i + 2] != "?" else rx.index(">", i) + 1
            out.append((body, _group_end(rx, i + 1)))
        i += 1
    return out


def _drop_case_flag(m: re.Match[str]) -> str:
    on, off = m.group(1).replace("i", ""), (m.group(2) or "").replace("i", "")
    if m.group(3) == ")":
        return f"(?{on})" if on else ""
    return f"(?{on}-{off}:" if off else f"(?{on}:"


def secret_patterns(rule: dict[str, Any]) -> list[str]:
    """The secret part of each top-level alternative of the rule's regex, as Python `re`.

    Case-insensitivity is removed (a leading ``(?i)``, scoped ``(?i:...)`` and
    ``(?-i:...)``): samples keep the case the rule's author wrote, as gitleaks'
    own ``secrets.NewSecret`` samples do (``CLOJARS_``, not ``ClOjArs_``). Other
    leading flags are kept as a scoped group.
    """
    rx = go_to_py(str(rule["regex"]))
    m = _LEADING_FLAGS.match(rx)
    flags, rx = (m.group(1), rx[m.end() :]) if m else ("", rx)
    flags = flags.replace("i", "")
    rx = _FLAG_GROUP.sub(_drop_case_flag, rx)
    groups = _capture_groups(rx)
    wanted = int(rule.get("secretGroup", 0))
    out, pos = [], 0
    for alt in _split_alternatives(rx):
        start, end = pos, pos + len(alt)
        pos = end + 1
        inside = [n for n, (s, e) in enumerate(groups, 1) if start <= s and e <= end]
        if wanted and wanted in inside:
            s, e = groups[wanted - 1]
        elif inside:
            s, e = groups[inside[0] - 1]
        else:
            s, e = start, end
        body = rx[s:e]
        out.append(f"(?{flags}:{body})" if flags else body)
    return out


def _literal_prefix(items: list[tuple[Any, Any]]) -> tuple[int, bool]:
    """Fixed literal characters at the start of a parsed sequence, and whether it is all literal."""
    n = 0
    for op, av in items:
        if op is sre_constants.LITERAL:
            n += 1
        elif op is sre_constants.AT:
            continue
        elif op is sre_constants.SUBPATTERN:
            k, whole = _literal_prefix(list(av[-1]))
            n += k
            if not whole:
                return n, False
        elif op is sre_constants.BRANCH:
            parts = [_literal_prefix(list(b)) for b in av[1]]
            n += min(k for k, _ in parts)
            if not all(whole for _, whole in parts):
                return n, False
        elif op is sre_constants.IN and len(av) == 2 and av[0][0] is sre_constants.LITERAL:
            n += 1  # [Aa]: one letter in either case (a case-insensitive literal)
        elif op is sre_constants.MAX_REPEAT and av[0] == av[1] and _literal_prefix(list(av[2]))[1]:
            n += av[0] * _literal_prefix(list(av[2]))[0]  # A{22}: a fixed run
        else:
            return n, False
    return n, True


def _literal_runs(items: list[tuple[Any, Any]]) -> list[str]:
    """Runs of consecutive literal characters anywhere in a parsed sequence."""
    runs, cur = [], ""
    for op, av in items:
        if op is sre_constants.LITERAL:
            cur += chr(av)
            continue
        if cur:
            runs.append(cur)
        cur = ""
        if op is sre_constants.SUBPATTERN:
            runs.extend(_literal_runs(list(av[-1])))
        elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT) and av[0] >= 1:
            runs.extend(_literal_runs(list(av[2])))  # not an optional part: (?:squ_)?
        elif op is sre_constants.BRANCH:
            for b in av[1]:
                runs.extend(_literal_runs(list(b)))
    if cur:
        runs.append(cur)
    return runs


def rule_group(pattern: str) -> str:
    """``prefixed`` or ``bare`` (see the module docstring)."""
    items = list(sre_parse.parse(pattern, re.ASCII))
    if _literal_prefix(items)[0] >= PREFIX_MIN:
        return "prefixed"
    runs = _literal_runs(items)
    if items and items[0][0] is sre_constants.LITERAL:
        runs = runs[1:]  # the prefix, shorter than PREFIX_MIN
    infix = any(len(r) >= 4 or (len(r) >= 2 and not r.isalnum()) for r in runs)
    return "prefixed" if infix else "bare"


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(k / n * math.log2(k / n) for k in Counter(s).values()) if n else 0.0


def placeholder_reason(secret: str, prefix: int = 0) -> str | None:
    """Why ``secret`` is a placeholder by construction, or ``None``.

    ``prefix``: length of the rule's fixed literal prefix, left out of the test
    (``FLWSECK_TEST-000000000000`` is a placeholder although most of it is not ``0``).
    """
    secret = secret[prefix:] or secret
    if Counter(secret).most_common(1)[0][1] * 2 > len(secret):
        return "one character for more than half of it"
    for unit in range(1, 5):
        if len(secret) >= 3 * unit and secret == (secret[:unit] * len(secret))[: len(secret)]:
            return "a short unit repeated"
    return None


def _compiled(patterns: list[str]) -> list[re.Pattern[str]]:
    out = []
    for p in patterns:
        try:
            out.append(re.compile(go_to_py(p)))
        except re.error:
            pass
    return out


def _secret_allowlists(allowlists: list[dict[str, Any]]) -> tuple[list[re.Pattern[str]], list[str]]:
    regexes: list[str] = []
    stopwords: list[str] = []
    for al in allowlists:
        if al.get("regexTarget", "secret") == "secret" and not al.get("paths"):
            regexes.extend(al.get("regexes", []))
        stopwords.extend(al.get("stopwords", []))
    return _compiled(regexes), [w.lower() for w in stopwords]


def not_reported(
    secret: str, rule: dict[str, Any], allow: list[re.Pattern[str]], stop: list[str]
) -> str | None:
    """Why gitleaks would not report ``secret`` for ``rule``, or ``None``."""
    if _entropy(secret) < float(rule.get("entropy", 0)):
        return "below the rule's entropy threshold"
    if any(a.search(secret) for a in allow):
        return "matched by an allowlist regex"
    if any(w in secret.lower() for w in stop):
        return "holds an allowlist stopword"
    return None


def draw(pattern: str, key: str, n: int = DRAWS) -> list[str]:
    """``n`` hypothesis examples that fully match ``pattern``, seeded by ``key``."""
    out: list[str] = []
    strategy = st.from_regex(re.compile(pattern, re.ASCII), fullmatch=True, alphabet=_ALPHABET)

    @seed(zlib.crc32(key.encode()))
    @settings(database=None, max_examples=n, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), deadline=None)
    @given(strategy)
    def collect(s: str) -> None:
        out.append(s)

    collect()
    return out


def write_set(out: Path, source: str, rows: list[dict[str, str]]) -> None:
    """Reversed JSONL lines after a header naming the source commit and `METHOD`."""
    with out.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"source": source, "method": METHOD, "comment": True}) + "\n")
        for row in rows:
            rec = {"id": row["id"], "format": row["format"], "label": row["label"],
                   "group": row["group"], "obfuscation": "reversed", "text": row["text"][::-1],
                   "secret": row["secret"][::-1]}
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} rows to {out}", file=sys.stderr)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: build_secret_set_gen.py GITLEAKS_GIT_DIR [COMMIT]", file=sys.stderr)
        return 2
    git_dir = argv[1]
    commit = argv[2] if len(argv) > 2 else _git(git_dir, "rev-parse", "HEAD").strip()
    config = tomllib.loads(_git(git_dir, "show", f"{commit}:config/gitleaks.toml"))
    global_allow, _ = _secret_allowlists([config.get("allowlist", {})])
    rows: list[dict[str, str]] = []
    counts: Counter[str] = Counter()
    groups: Counter[str] = Counter()
    for rule in config["rules"]:
        rid = str(rule["id"])
        if "regex" not in rule:
            counts["rules without a regex (path only, skipped)"] += 1
            continue
        counts["rules"] += 1
        allow, stop = _secret_allowlists(rule.get("allowlists", []))
        allow = global_allow + allow
        seen: set[str] = set()
        n = 0
        for pattern in secret_patterns(rule):
            try:
                candidates = draw(pattern, f"{rid}\n{pattern}")
                group = rule_group(pattern)
                prefix = _literal_prefix(list(sre_parse.parse(pattern, re.ASCII)))[0]
            except Exception as exc:  # noqa: BLE001  (hypothesis cannot draw this pattern)
                counts[f"alternatives not generatable ({type(exc).__name__})"] += 1
                print(f"cannot generate {rid}: {pattern!r}: {exc}", file=sys.stderr)
                continue
            kept = 0
            for secret in candidates:
                if kept == PER_ALTERNATIVE:
                    break
                reason = (
                    "an earlier sample repeated" if secret in seen else None
                ) or placeholder_reason(secret, prefix) or not_reported(secret, rule, allow, stop)
                if reason is None and not secret.strip():
                    reason = "blank"
                if reason:
                    counts[f"samples dropped: {reason}"] += 1
                    continue
                seen.add(secret)
                kept += 1
                n += 1
                for row in secret_rows(rid, n, secret):
                    row["group"] = group
                    rows.append(row)
            counts["samples kept"] += kept
            groups[group] += kept
            if kept < PER_ALTERNATIVE:
                counts["alternatives with fewer samples than wanted"] += 1
        if n == 0:
            counts["rules without any sample"] += 1
            print(f"no sample for {rid}", file=sys.stderr)
    for what, k in sorted(counts.items()):
        print(f"{k:5d} {what}", file=sys.stderr)
    for what, k in sorted(groups.items()):
        print(f"{k:5d} samples {what}", file=sys.stderr)
    write_set(OUT, f"gitleaks/gitleaks@{commit}", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
