"""Relative Markdown links of a text (``MEMORY.md`` index lines): read by the index checks
(:mod:`memlens.core.ingest.indexfile`) and by search, which credits an index line to the
topic file it links to (:mod:`memlens.core.search.fusion`). One rule for both."""

from __future__ import annotations

import re

_LINK_RE = re.compile(r"\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def links(text: str) -> list[tuple[int, str]]:
    """Relative Markdown link targets with their 1-based line numbers (URLs and anchors skipped)."""
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        for m in _LINK_RE.finditer(line):
            target = m.group(1).split("#", 1)[0]
            if not target or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue
            out.append((i, target))
    return out
