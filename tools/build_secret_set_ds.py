"""Build ``tests/data/secrets/external_detect_secrets.jsonl`` from detect-secrets' tests.

Source: the ``@pytest.mark.parametrize`` cases of ``tests/plugins/*_test.py`` in
github.com/Yelp/detect-secrets (Apache-2.0, see
``tests/data/secrets/LICENSE-detect-secrets``). The test files are parsed with
`ast`, never run: a case is kept when its string can be computed from literals,
module-level string constants, ``+`` and ``str.format`` (anything else is
skipped). A case flagged ``True`` gives its secret (the longest token of the
sample, as for the gitleaks set) in the same three contexts as
``tools/build_secret_set.py`` (``keyed``, ``prose``, ``backticks``); a case
flagged ``False`` is kept verbatim as a look-alike (``<family>/fp``).
Repeated secrets and look-alikes are kept once per family, and unformatted
templates (``'"{secret}"'``) are dropped. ``high_entropy_strings`` cases give
their ``secret`` and ``non_secret`` values.
``ip_public`` is left out: public IP addresses are not credentials and memlens
does not redact them.

This is the held-out set: the rules are tuned on the gitleaks set only.

Usage::

    python tools/build_secret_set_ds.py DETECT_SECRETS_GIT_DIR [COMMIT]

``--peer FILE.jsonl...`` instead scores the ``detect-secrets`` package (default
plugins and filters, one temporary file per example, ``scan_file``) on labelled
sets, as a peer to memlens. Run it with a Python that has detect-secrets
installed, e.g. a throwaway venv; memlens does not depend on it. A secret counts
as found when detect-secrets reports anything for its example (more lenient than
memlens' score, which needs the exact secret gone); a look-alike is kept when
nothing is reported.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import re  # noqa: E402

from build_secret_set import _git, secret_rows, write_set  # noqa: E402

OUT = (
    Path(__file__).resolve().parent.parent
    / "tests" / "data" / "secrets" / "external_detect_secrets.jsonl"
)
SKIP = frozenset({"base", "ip_public"})
# Like the gitleaks builder's token, without ":" and "@": detect-secrets' samples
# are whole lines (``key: value``, ``https://user:pw@host``), and the secret is
# the value, not the line.
_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=.~]{16,}")
_TEMPLATE = re.compile(r"\{[a-z_]+\}")


def _secret_of(sample: str) -> str | None:
    """The longest token with a digit, cut at ``key=`` and at URL path separators."""
    parts: list[str] = []
    for tok in _TOKEN.findall(sample):
        for part in re.split(r"=(?!=*$)", tok):  # AccountKey=<value>, keep "==" padding
            hostlike = part.startswith("/") or re.search(r"\.[a-z]{2,}/", part)
            parts.extend(part.split("/") if hostlike else [part])
    tokens = [t.strip(".=") for t in parts]
    tokens = [t for t in tokens if len(t) >= 16 and any(c.isdigit() for c in t)]
    return max(tokens, key=len) if tokens else None


def _value(node: ast.expr, env: dict[str, str]) -> object:
    """Evaluate literals, known names, ``+`` and ``str.format``; else None."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _value(node.left, env), _value(node.right, env)
        return left + right if isinstance(left, str) and isinstance(right, str) else None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    ):
        base = _value(node.func.value, env)
        args = [_value(a, env) for a in node.args]
        kwargs = {k.arg: _value(k.value, env) for k in node.keywords if k.arg}
        values = [*args, *kwargs.values()]
        if isinstance(base, str) and all(isinstance(v, str) for v in values):
            try:
                return base.format(*args, **kwargs)
            except (IndexError, KeyError, ValueError):
                return None
    return None


def _constants(tree: ast.Module) -> dict[str, str]:
    env: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            value = _value(node.value, env)
            if isinstance(target, ast.Name) and isinstance(value, str):
                env[target.id] = value
    return env


def _cases(call: ast.Call, env: dict[str, str]) -> list[tuple[str, bool]]:
    """(sample, flagged) pairs of one ``parametrize`` call."""
    if len(call.args) < 2 or not isinstance(call.args[1], (ast.List, ast.Tuple)):
        return []
    names = _value(call.args[0], env)
    if not isinstance(names, str):
        return []
    argnames = [a.strip() for a in names.split(",")]
    out: list[tuple[str, bool]] = []
    for elt in call.args[1].elts:
        items = elt.elts if isinstance(elt, ast.Tuple) else [elt]
        values = [_value(e, env) for e in items]
        if len(values) != len(argnames):
            continue
        row = dict(zip(argnames, values, strict=True))
        if "secret" in row and "non_secret" in row:
            for key, flag in (("secret", True), ("non_secret", False)):
                if isinstance(row[key], str):
                    out.append((str(row[key]), flag))
            continue
        sample = next((v for v in values if isinstance(v, str)), None)
        flags = [v for v in values if isinstance(v, bool)]
        if sample is None:
            continue
        if len(argnames) == 1:
            out.append((sample, True))  # single-argument cases: every one must be flagged
        elif len(flags) == 1:
            out.append((sample, flags[0]))
    return out


def _family_rows(family: str, src: str) -> list[dict[str, str]]:
    tree = ast.parse(src)
    env = _constants(tree)
    rows: list[dict[str, str]] = []
    seen: set[str] = set()
    n = 0
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "parametrize"
        ):
            continue
        for sample, flagged in _cases(node, env):
            if _TEMPLATE.search(sample):
                continue  # an unformatted test template such as '"{secret}"'
            # One row per distinct look-alike and per distinct secret: the three
            # contexts are built from the secret alone, so repeats add nothing.
            secret = _secret_of(sample) if flagged else None
            key = f"tp:{secret}" if flagged else f"fp:{sample}"
            if (flagged and secret is None) or key in seen:
                continue
            seen.add(key)
            n += 1
            if secret is None:
                rows.append({"id": f"{family}-fp{n}", "format": f"{family}/fp",
                             "label": "lookalike", "text": sample, "secret": ""})
            else:
                rows.extend(secret_rows(family, n, secret))
    return rows


def _load(path: Path) -> list[dict[str, str]]:
    """The examples of a labelled JSONL file, un-reversed (no memlens import)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line) if line.strip() else {}
        if not row or row.get("comment"):
            continue
        if row.get("obfuscation") == "reversed":
            row["text"] = row["text"][::-1]
        rows.append(row)
    return rows


def peer(paths: list[str]) -> int:
    """Score detect-secrets on labelled sets: per context, then the scan time."""
    import tempfile
    import time
    from collections import Counter

    from detect_secrets import SecretsCollection  # type: ignore[import-not-found]
    from detect_secrets.settings import default_settings  # type: ignore[import-not-found]

    for path in paths:
        rows = _load(Path(path))
        handled: Counter[str] = Counter()
        total: Counter[str] = Counter()
        with tempfile.TemporaryDirectory() as tmp, default_settings():
            files = []
            for i, row in enumerate(rows):
                f = Path(tmp) / f"{i}.md"
                f.write_text(row["text"] + "\n", encoding="utf-8")
                files.append(f)
            t0 = time.perf_counter()
            found = []
            for f in files:
                secrets = SecretsCollection()
                secrets.scan_file(str(f))
                found.append(bool(list(secrets)))
            elapsed = time.perf_counter() - t0
        for row, hit in zip(rows, found, strict=True):
            ctx = row["format"].rpartition("/")[2]
            total[ctx] += 1
            handled[ctx] += hit if row["label"] == "secret" else not hit
        print(path)
        for ctx in sorted(total):
            print(f"  {ctx:10s} {handled[ctx]:4d}/{total[ctx]:<4d} {handled[ctx] / total[ctx]:.3f}")
        tp = sum(handled[c] for c in total if c != "fp")
        fa = total["fp"] - handled["fp"]
        print(f"  recall {tp / sum(total[c] for c in total if c != 'fp'):.3f}"
              f"  precision {tp / (tp + fa) if tp + fa else 1.0:.3f}"
              f"  {elapsed:.2f}s for {len(rows)} examples")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) > 2 and argv[1] == "--peer":
        return peer(argv[2:])
    git_dir = argv[1]
    commit = argv[2] if len(argv) > 2 else _git(git_dir, "rev-parse", "HEAD").strip()
    files = _git(git_dir, "ls-tree", "--name-only", commit, "tests/plugins/")
    rows: list[dict[str, str]] = []
    for path in sorted(files.split()):
        if not path.endswith("_test.py"):
            continue
        family = Path(path).stem.removesuffix("_test")
        if family in SKIP:
            continue
        rows.extend(_family_rows(family, _git(git_dir, "show", f"{commit}:{path}")))
    write_set(OUT, f"Yelp/detect-secrets@{commit}", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
