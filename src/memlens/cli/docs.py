"""``memlens docs``: list documents with their projection status."""

from __future__ import annotations

import click

from memlens.cli.common import EXIT_OK, Args, Command, db_options, print_json, service


def cmd_docs(args: Args) -> int:
    """``memlens docs``."""
    svc = service(args)
    try:
        if args.filter:
            docs = [d for d, _ in svc.filter_documents(args.filter, include_tombstoned=args.all)]
            if args.repository:
                docs = [d for d in docs if d.repository == args.repository]
        else:
            docs = svc.list_documents(include_tombstoned=args.all, repository=args.repository)
    finally:
        svc.close()
    if args.json:
        print_json({"documents": [d.as_json() for d in docs]})
        return EXIT_OK
    for d in docs:
        print(f"{d.status:<10} {d.chunk_count:>3} {'chunk ' if d.chunk_count == 1 else 'chunks'}"
              f" {d.size:>7} B  {d.repository}/{d.path}"
              + (f"  ({d.error})" if d.error else ""))
    if not docs:
        print("no documents")
    return EXIT_OK


command = Command(
    "docs", handler=cmd_docs, short_help="list documents",
    help="List documents with their projection status.",
    params=[
        click.Option(["--filter"], help="fuzzy filter over repository, path, headings and name"),
        click.Option(["--repository"], help="only this repository"),
        click.Option(["--all"], is_flag=True, help="include tombstoned (deleted) documents"),
        *db_options(),
    ])
