"""The text form of ``memlens search --explain`` / ``--why-not`` (issue 45); the JSON form
is ``Explanation.as_json`` (shapes ``search-explain`` and ``search-why-not`` in docs/cli.md)."""

from __future__ import annotations

import sys

import memlens.core.types as T


def print_explanation(e: T.Explanation) -> None:
    """Each hit with its score in parts and why, then the why-not target, in words;
    notes go to stderr as in the plain search."""
    print(f"query: {e.query}  ({e.mode}" + (f", fusion {e.method})" if e.method else ")"))
    for line in e.weights:
        print(f"  {line}")
    if not e.hits:
        print("no results")
    for i, h in enumerate(e.hits, 1):
        head, *rest = h.lines
        print(f"{i:2}. {head}")
        for line in rest:
            print(f"    {line}")
    if e.why_not is not None:
        w = e.why_not
        print(f"why not {w.target} (judged by {w.standing.label}):")
        print(f"    {w.reason}")
        for line in w.standing.lines[1:]:
            print(f"    {line}")
        print("    To rank first:")
        for line in w.needs:
            print(f"      {line}")
    for n in e.notes:
        print(f"memlens: {n}", file=sys.stderr)
