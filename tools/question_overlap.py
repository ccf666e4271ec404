"""Content-word overlap of labelled questions with their answer documents.

    uv run python tools/question_overlap.py CORPUS QUERIES.jsonl [--kind KIND] [--words]

Prints one line per question (id, kind, overlap, and with --words the question's
words that the answer contains) and the mean per kind. The answer's text is never
printed, so a question writer can check a draft without reading the answer.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memlens.bench.metrics import load_queries
from memlens.bench.overlap import mean, overlap, shared_words, word_set


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("queries", type=Path)
    ap.add_argument("--kind", default=None)
    ap.add_argument("--words", action="store_true", help="list the question's words the answer has")
    a = ap.parse_args(argv)
    per_kind: dict[str, list[float | None]] = {}
    for q in load_queries(a.queries):
        if a.kind and q.kind != a.kind:
            continue
        doc = a.corpus / q.repository / "memory" / q.path
        try:
            vocab = word_set(doc.read_text(encoding="utf-8"))
        except OSError as exc:
            print(f"{q.id}: cannot read the answer document ({exc.strerror})", file=sys.stderr)
            return 1
        ov = overlap(q.query, vocab)
        per_kind.setdefault(q.kind, []).append(ov)
        extra = f"  shared: {', '.join(shared_words(q.query, vocab))}" if a.words else ""
        print(f"{q.id}\t{q.kind}\t{'-' if ov is None else f'{ov:.2f}'}{extra}")
    for kind, vals in per_kind.items():
        m = mean(vals)
        over = sum(1 for v in vals if v is not None and v > 0.30)
        print(f"# {kind}: n={len(vals)} mean overlap {'-' if m is None else f'{m:.3f}'}"
              f", {over} over 0.30")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
