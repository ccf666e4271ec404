"""``memlens rechunk``: re-chunk stored documents with another chunker config."""

from __future__ import annotations

import click

from memlens.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    Args,
    CliError,
    Command,
    chunker_config,
    chunker_options,
    db_options,
    err,
    locate,
    print_json,
    service,
)


def cmd_rechunk(args: Args) -> int:
    """``memlens rechunk``."""
    if not args.all and not args.path:
        raise CliError("give a document PATH or --all")
    if args.all and args.path:
        raise CliError("give either a PATH or --all, not both")
    svc = service(args)
    try:
        svc.check_before_writing()
        cfg = chunker_config(args, svc.settings.chunker_dict())
        doc_id = None
        if not args.all:
            doc = locate(svc, args)
            if doc is None or doc.tombstoned:
                raise CliError(f"no live document {args.path!r}", EXIT_FAIL)
            doc_id = doc.id
        project = not args.defer_projection
        repo = args.repository if args.all else None
        if args.reset:
            out = svc.reset_chunker(doc_id, repository=repo, project=project)
        else:
            out = svc.rechunk_and_project(None if doc_id is None else [doc_id], cfg,
                                          project=project, repository=repo,
                                          remember=not args.no_remember)
    finally:
        svc.close()
    data = out.as_json()
    if args.json:
        print_json(data)
    else:
        print(f"{data['rechunked']} rechunked, {data['unchanged']} already used this config; "
              f"projection: {data['projection']['ready']} ready, "
              f"{data['projection']['failed']} failed")
    if data.get("stopped"):
        err(str(data["stopped"]))
    return EXIT_FAIL if data["projection"]["failed"] or data.get("stopped") else EXIT_OK


command = Command(
    "rechunk", handler=cmd_rechunk, short_help="re-chunk stored documents with another config",
    help="Create rechunk revisions (same content, new chunker config) and re-project them. "
    "The choice is remembered for the document, the repository (--all --repository R) or all "
    "documents (--all): later edits and re-ingests keep it (document > repository > all > "
    "settings). --reset forgets it. PATH is the logical path of one document, "
    "REPOSITORY/PATH as `memlens docs` lists it (-home-dev-proj/notes.md), or "
    "REPOSITORY:PATH (proj:notes.md).",
    params=[
        click.Argument(["path"], required=False),
        click.Option(["--all"], is_flag=True, help="rechunk every live document"),
        click.Option(["--repository"], help="repository of PATH, or limit --all to it"),
        click.Option(["--reset"], is_flag=True,
                     help="forget the remembered choice and rechunk with what applies then"),
        click.Option(["--no-remember"], is_flag=True,
                     help="rechunk once; the next write of the file uses the "
                     "remembered/default"),
        *chunker_options(),
        click.Option(["--defer-projection"], is_flag=True,
                     help="record the rechunk revisions but do not project them (the last "
                     "good projection stays searchable until `memlens project`)"),
        *db_options(),
    ])
