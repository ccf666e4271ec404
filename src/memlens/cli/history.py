"""``memlens history PATH``: the revision timeline of one document."""

from __future__ import annotations

import click

from memlens.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    Args,
    CliError,
    Command,
    db_options,
    locate,
    print_json,
    service,
    ts,
)
from memlens.core.types import Revision, RevisionChange, revision_changes


def cmd_history(args: Args) -> int:
    """``memlens history``."""
    svc = service(args)
    try:
        doc = locate(svc, args)
        if doc is None:
            raise CliError(f"no document {args.path!r}"
                           + (f" in {args.repository}" if args.repository else ""), EXIT_FAIL)
        hist = svc.revisions(doc.id)
    finally:
        svc.close()
    changes = revision_changes(hist)  # the change that made each revision (issue 42)
    if args.json:
        print_json({"repository": doc.repository, "path": doc.path,
                    "revisions": [{**r.as_json(), "change": c.as_json() if c else None}
                                  for r, c in zip(hist, changes, strict=True)]})
        return EXIT_OK
    print(f"{doc.repository}/{doc.path}")
    for i, (r, c) in enumerate(zip(hist, changes, strict=True)):
        emb = r.embedder or "-"
        cfg = r.chunker.config.label if r.chunker.config else "-/-/-"
        print(f"  #{r.number:<3} {r.change_kind:<8} {ts(r.observed_at)}  "
              f"{r.content_hash[:12]}  {cfg}  {emb}")
        for line in change_lines(r, c, current=i == 0, diff=not args.no_diff):
            print(f"       {line}")
    return EXIT_OK


def change_lines(r: Revision, c: RevisionChange | None, *, current: bool,
                 diff: bool = True) -> list[str]:
    """What a revision of the timeline says under it: the change that made it (stored on
    the revision before it) and its diff; for the oldest revision kept, that it is the
    first (and its own note while it is the current one, as the TUI shows it)."""
    if c is None:
        first = "first revision" if r.number == 1 else "oldest revision kept"
        return [first + (f": {r.summary}" if r.summary and current else "")]
    lines = [f"change from #{c.from_revision}: {c.summary or '-'}"]
    if diff and c.diff:
        lines.extend(c.diff.splitlines())
        if c.diff_truncated:
            lines.append("… (diff truncated)")
    return lines


command = Command(
    "history", handler=cmd_history, short_help="revision timeline of a document",
    help="Revisions newest first: change kind, hash, chunker, embedder, summary and bounded "
    "diff. PATH is the logical path inside the memory folder (MEMORY.md), "
    "REPOSITORY/PATH as `memlens docs` lists it (-home-dev-proj/notes.md), or "
    "REPOSITORY:PATH (proj:notes.md; a short repository name as --repository takes).",
    params=[
        click.Argument(["path"]),
        click.Option(["--repository"],
                     help="repository (needed when the path is ambiguous)"),
        click.Option(["--no-diff"], is_flag=True, help="omit diffs in text output"),
        *db_options(),
    ])
