"""Bytes per superseded revision: bounded unified diff vs compressed snapshot.

Usage::

    uv run python benchmarks/retention.py [--generated 300] [--chain 20] [--json]

When a revision is superseded, memlens keeps a bounded unified diff to its
successor (``src/memlens/core/store.py::unified_diff``: 2 lines of context, at most 400 lines
/ 32 KiB, ``diff_truncated`` set when cut) plus a short summary, instead of the
full snapshot. This script measures what that costs against the alternatives,
for the same old -> new pairs:

* ``diff``: ``unified_diff(old, new)`` as stored (UTF-8 bytes);
* ``zlib``: ``zlib.compress(old, 9)``, a full compressed snapshot of the old text
  (self-contained: needs no other revision to read);
* ``zlib+dict``: zlib level 9 with the successor as preset dictionary
  (``zlib.compressobj(zdict=new)``): lossless and never truncated, but like the
  diff it needs the successor to decode;
* ``diff+zlib``: the diff, zlib-compressed.

Edit types, applied to every non-empty file of the bundled corpus and to
``--generated`` generated files with the real size mix (fixed seeds):

* ``append``: one list line added at the end;
* ``edit-paragraph``: about a third of the words of one paragraph replaced;
* ``rewrite-section``: the body of one heading section replaced by new text of
  about the same length (the whole body for a file without headings);
* ``delete-half``: the second half of the lines removed.

``--chain`` also simulates edit histories: each generated file gets that many
random edits in a row (append 40 %, edit-paragraph 35 %, rewrite-section 15 %,
delete-half 10 %), and the total retained bytes per history are compared.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlens import bench
from memlens.core.chunking.chunker import ChunkerConfig, chunk_markdown
from memlens.core.store.records import change_summary, unified_diff

ROOT = Path(__file__).resolve().parent.parent
EDITS = ("append", "edit-paragraph", "rewrite-section", "delete-half")
CHAIN_WEIGHTS = (0.40, 0.35, 0.15, 0.10)


def _words(rng: random.Random, n: int) -> str:
    return " ".join(bench._word(rng) for _ in range(n))


def edit_append(text: str, rng: random.Random) -> str:
    """One list line added at the end."""
    sep = "" if text.endswith("\n") or not text else "\n"
    return f"{text}{sep}- {_words(rng, rng.randint(8, 18)).capitalize()}.\n"


_PARA_SPLIT = re.compile(r"\n[ \t]*\n")


def edit_paragraph(text: str, rng: random.Random) -> str:
    """About a third of the words of one prose paragraph (or list) replaced."""
    parts = _PARA_SPLIT.split(text)
    cands = [i for i, p in enumerate(parts)
             if p.strip() and not p.lstrip().startswith(("#", "```", "---", "|")) and
             len(p.split()) >= 4]
    if not cands:
        return edit_append(text, rng)
    i = rng.choice(cands)
    words = parts[i].split(" ")
    for j in rng.sample(range(len(words)), max(1, len(words) // 3)):
        if "\n" not in words[j]:
            words[j] = bench._word(rng)
    seps = _PARA_SPLIT.findall(text)
    parts[i] = " ".join(words)
    out = parts[0]
    for sep, p in zip(seps, parts[1:], strict=True):
        out += sep + p
    return out


def edit_rewrite_section(text: str, rng: random.Random) -> str:
    """The body of one heading section replaced by new text of about the same length."""
    chunks = chunk_markdown(text, ChunkerConfig(strategy="headings")).chunks
    secs = [c for c in chunks if c.heading_path] or chunks
    if not secs:
        return edit_append(text, rng)
    c = rng.choice(secs)
    body = c.text
    head, nl, rest = body.partition("\n")
    keep = head + nl if c.heading_path and head.lstrip().startswith("#") else ""
    target = len(rest) if keep else len(body)
    new: list[str] = []
    size = 0
    while size < max(40, target):
        line = f"{_words(rng, rng.randint(6, 16)).capitalize()}."
        if rng.random() < 0.3:
            line = "- " + line
        new.append(line)
        size += len(line) + 1
    return text[: c.start_char] + keep + "\n".join(new) + text[c.end_char:]


def edit_delete_half(text: str, rng: random.Random) -> str:
    """The second half of the lines removed."""
    lines = text.splitlines(keepends=True)
    return "".join(lines[: max(1, len(lines) // 2)])


EDIT_FNS: dict[str, Callable[[str, random.Random], str]] = {
    "append": edit_append, "edit-paragraph": edit_paragraph,
    "rewrite-section": edit_rewrite_section, "delete-half": edit_delete_half,
}


def costs(old: str, new: str) -> dict[str, Any]:
    """Bytes to keep ``old`` once ``new`` is current, per representation."""
    diff, truncated = unified_diff(old, new, "a/x.md", "b/x.md")
    d = diff.encode()
    c = zlib.compressobj(9, zdict=new.encode() or b"\0")
    zd = c.compress(old.encode()) + c.flush()
    return {"raw": len(old.encode()), "diff": len(d), "truncated": truncated,
            "summary": len(change_summary(old, new).encode()),
            "zlib": len(zlib.compress(old.encode(), 9)), "zlib_dict": len(zd),
            "diff_zlib": len(zlib.compress(d, 9))}


def _texts(generated: int) -> dict[str, list[str]]:
    corpus = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "corpus").rglob("*.md"))
              if "memory" in p.relative_to(ROOT / "corpus").parts]
    corpus = [t for t in corpus if t.strip()]
    with tempfile.TemporaryDirectory() as d:
        bench.generate_corpus(Path(d) / "g", generated, seed=5)
        gen = [p.read_text(encoding="utf-8") for p in sorted((Path(d) / "g").rglob("*.md"))]
    return {"corpus": corpus, "generated": gen}


def _summ(vals: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(vals), 1),
            "p90": round(bench.percentile(vals, 90), 1)} if vals else {"median": 0.0, "p90": 0.0}


REPS = ("diff", "zlib", "zlib_dict", "diff_zlib")


def single_edits(texts: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Median/p90 bytes per representation for each corpus x edit type."""
    out = []
    for cname, docs in texts.items():
        for kind in EDITS:
            rng = random.Random(f"{cname}:{kind}")
            rows = [costs(t, EDIT_FNS[kind](t, rng)) for t in docs]
            rows = [r for r in rows if r["raw"]]
            entry: dict[str, Any] = {"corpus": cname, "edit": kind, "n": len(rows),
                                     "raw": _summ([r["raw"] for r in rows]),
                                     "summary": _summ([r["summary"] for r in rows]),
                                     "truncated": sum(r["truncated"] for r in rows)}
            for rep in REPS:
                entry[rep] = _summ([r[rep] for r in rows])
            entry["diff_smaller_than_zlib"] = round(
                sum(r["diff"] < r["zlib"] for r in rows) / len(rows), 3)
            entry["diff_over_zlib_median"] = round(
                statistics.median(r["diff"] / r["zlib"] for r in rows), 3)
            out.append(entry)
    return out


def histories(docs: list[str], chain: int) -> dict[str, Any]:
    """Total retained bytes for ``chain`` successive random edits of each document."""
    rng = random.Random(99)
    totals: dict[str, list[float]] = {rep: [] for rep in REPS}
    totals["raw"] = []
    truncated = 0
    for t in docs:
        cur = t
        acc = {rep: 0 for rep in [*REPS, "raw"]}
        for _ in range(chain):
            kind = rng.choices(EDITS, weights=CHAIN_WEIGHTS)[0]
            new = EDIT_FNS[kind](cur, rng)
            if new == cur:
                new = edit_append(cur, rng)
            c = costs(cur, new)
            truncated += int(c["truncated"])
            for rep in acc:
                acc[rep] += c[rep]
            cur = new
        for rep in acc:
            totals[rep].append(acc[rep])
    per_rev = {rep: _summ([v / chain for v in vals]) for rep, vals in totals.items()}
    return {"documents": len(docs), "chain": chain, "truncated_diffs": truncated,
            "total": {rep: _summ(vals) for rep, vals in totals.items()},
            "per_revision": per_rev}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--generated", type=int, default=300)
    ap.add_argument("--chain", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    texts = _texts(a.generated)
    single = single_edits(texts)
    hist = histories(texts["generated"], a.chain)
    report = {"single_edits": single, "histories": hist,
              "files": {k: len(v) for k, v in texts.items()}}
    if a.json:
        print(json.dumps(report, indent=2))
        return 0
    print("| Corpus | Edit | n | Old text | diff | zlib-9 snapshot | zlib+dict | diff+zlib "
          "| diff < zlib | truncated |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    def cell(e: dict[str, Any], rep: str) -> str:
        return f"{e[rep]['median']:.0f} / {e[rep]['p90']:.0f}"

    for e in single:
        def f(rep: str, e: dict[str, Any] = e) -> str:
            return cell(e, rep)

        print(f"| {e['corpus']} | {e['edit']} | {e['n']} | {f('raw')} | {f('diff')} | {f('zlib')} | "
              f"{f('zlib_dict')} | {f('diff_zlib')} | {e['diff_smaller_than_zlib']:.0%} | "
              f"{e['truncated']} |")
    h = hist
    print(f"\nHistories: {h['documents']} generated files x {h['chain']} edits "
          f"({h['truncated_diffs']} truncated diffs); bytes per superseded revision, median / p90:")
    for rep in ("raw", *REPS):
        print(f"  {rep:<10} {h['per_revision'][rep]['median']:>8.0f} / "
              f"{h['per_revision'][rep]['p90']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
