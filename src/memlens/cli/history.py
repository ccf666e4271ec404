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
    if args.json:
        print_json({"repository": doc.repository, "path": doc.path,
                    "revisions": [r.as_json() for r in hist]})
        return EXIT_OK
    print(f"{doc.repository}/{doc.path}")
    for r in hist:
        emb = r.embedder or "-"
        cfg = r.chunker.config.label if r.chunker.config else "-/-/-"
        print(f"  #{r.number:<3} {r.change_kind:<8} {ts(r.observed_at)}  "
              f"{r.content_hash[:12]}  {cfg}  {emb}")
        if r.summary:
            print(f"       {r.summary}")
        if r.diff and not args.no_diff:
            for line in r.diff.splitlines():
                print(f"       {line}")
    return EXIT_OK


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
