"""The text and JSON forms of a search result, printed by the CLI (:mod:`memlens.cli.search`)
and by the console script's one-shot search (:mod:`memlens.launch`): one printer for both.
No core import: it prints the JSON object of ``SearchResult.as_json``.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


def print_json(obj: Any) -> None:
    """``obj`` as indented JSON on stdout (every ``--json`` of the CLI)."""
    import json

    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=False) + "\n")


def one_line_snippet(snippet: str, spans: Sequence[Sequence[int]], width: int = 160) -> str:
    """Snippet on one line with highlights marked «like this» (text output only)."""
    out: list[str] = []
    pos = 0
    for a, b in spans:
        out.append(snippet[pos:a])
        out.append("«" + snippet[a:b] + "»")
        pos = b
    out.append(snippet[pos:])
    flat = " ".join("".join(out).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def print_result(result: dict[str, Any], as_json: bool) -> None:
    """Print a search result (the JSON object of ``SearchResult.as_json``) as JSON or as
    the numbered text list; notes go to stderr in the text form."""
    if as_json:
        print_json(result)
        return
    hits = result["hits"]
    if not hits:
        print("no results")
    elif not result["matches"]:
        print("no matches")
    divider_done = False
    for i, h in enumerate(hits, 1):
        if h["match"] == "closest" and not divider_done:
            print("--- closest by meaning (no word of the query occurs in them) ---")
            divider_done = True
        ranks = " ".join(f"{k}={v}" for k, v in h["ranks"].items() if v is not None)
        head = " > ".join(h["heading_path"]) or "(top)"
        print(f"{i:2}. {h['repository']}/{h['path']} #{h['ordinal']} {head}  "
              f"[{h['score']:.4f} {h['match']} {ranks}]")
        print(f"    {one_line_snippet(h['snippet'], h['highlights'])}")
    for n in result["notes"]:
        print(f"memlens: {n}", file=sys.stderr)
