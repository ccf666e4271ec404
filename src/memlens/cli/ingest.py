"""``memlens ingest``: read memory folders into the database, then project them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

import memlens.core.types as T
from memlens.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    PATH,
    Args,
    CliError,
    Command,
    chunker_config,
    chunker_options,
    db_options,
    err,
    print_json,
    progress_enabled,
    service,
)
from memlens.core.service import MemoryService
from memlens.core.types import UsageError

if TYPE_CHECKING:
    from memlens.core.types import FileChange


def cmd_ingest(args: Args) -> int:
    """``memlens ingest``."""
    svc = service(args)
    chunker_config(args, svc.settings.chunker_dict())
    try:
        roots = svc.resolve_roots(args.paths or None, args.repository)
    except UsageError as exc:
        raise CliError(str(exc)) from None
    if not roots:
        raise CliError("no memory folders found (looked in ~/.claude/projects/*/memory); "
                       "pass a PATH, e.g. `memlens ingest corpus/`", EXIT_FAIL)
    svc.check_before_writing()  # a damaged (small) database: one line, exit 1, nothing written
    progress = None
    task = None
    if progress_enabled(args):
        from rich.progress import Progress

        progress = Progress(transient=True, console=None)
        progress.start()
        task = progress.add_task("ingesting", total=None)

    def on_change(ch: FileChange) -> None:
        if progress is not None and task is not None:
            progress.update(task, advance=1, description=f"{ch.repository}/{ch.path}"[:60])

    try:
        if args.defer_projection:
            out = svc.ingest(roots, project=False, on_change=on_change)
        else:
            out = svc.start_up(roots, progress=lambda ev: on_change(ev.change)
                               if isinstance(ev, T.FileRead) else None)
        unprojected = projection_failures(svc, out.projection)
        no_vectors = vector_failures(svc, out.projection)
    finally:
        if progress is not None:
            progress.stop()
        svc.close()
    data = out.as_json()
    if unprojected:
        data["projection_failed"] = unprojected
    if no_vectors:
        data["vectors_failed"] = no_vectors
    if args.paths and not data["failed"] and not data.get("warnings") and not any(
            data[k] for k in ("created", "updated", "renamed", "deleted", "unchanged")):
        # A PATH with no Markdown memory in it (a typo'd or wrong folder): one line, exit 1.
        if args.json:
            print_json(data)
        err(f"no Markdown memory file under {', '.join(map(str, args.paths))}: nothing was "
            "ingested; give a memory folder, a project folder holding memory/, or a folder of "
            "projects such as ~/.claude/projects")
        return EXIT_FAIL
    if args.json:
        print_json(data)
        if data.get("stopped"):
            err(str(data["stopped"]))
    else:
        print(f"{data['created']} created, {data['updated']} updated, {data['renamed']} renamed, "
              f"{data['deleted']} deleted, {data['unchanged']} unchanged, "
              f"{len(data['failed'])} failed")
        pj = data["projection"]
        print(f"projection: {pj['ready']} ready, {pj['pending']} pending, {pj['failed']} failed, "
              f"{pj['stale']} stale")
        if "vectors" in data:
            vs = data["vectors"]
            print(f"vectors: {vs['written']} written, {vs['waiting']} document(s) waiting,"
                  f" {len(no_vectors)} failed")
        for f in data["failed"]:
            err(f"{f['repository']}/{f['path']}: {f['error']}")
        for w in data.get("warnings", []):
            err(f"warning: {w}")
        if data.get("stopped") and not data["failed"]:  # a projection stop (not in "failed")
            err(str(data["stopped"]))
        for f in unprojected:
            err(f"{f['repository']}/{f['path']}: stored, but not searchable yet: {f['error']}"
                " (memlens project retries it)")
        for f in no_vectors:
            err(f"{f['repository']}/{f['path']}: searchable by its words, but its vectors"
                f" failed: {f['error']} (memlens project retries them)")
    # Like `memlens project`: a document this run could not project is a failure (exit 1).
    failed = data["failed"] or data.get("stopped") or unprojected or no_vectors
    return EXIT_FAIL if failed else EXIT_OK


def projection_failures(svc: MemoryService, rep: T.ProjectionReport | None,
                        ) -> list[dict[str, Any]]:
    """This run's projection failures (not a full disk's: that is one ``stopped`` line),
    with the document's repository and path."""
    if rep is None:
        return []
    bad = {o.document_id: o.error or o.result for o in rep.outcomes
           if o.result in ("failed", "stale") and not (rep.stopped and o.disk_full)}
    return [{"document_id": d.id, "repository": d.repository, "path": d.path,
             "error": bad[d.id]} for d in svc.document_summaries(list(bad))]


def vector_failures(svc: MemoryService, rep: T.ProjectionReport | None,
                    ) -> list[dict[str, Any]]:
    """Documents whose vectors this run could not compute (stage 2; their words are
    searchable), when the run's vector stage failed."""
    if rep is None or rep.vectors is None or not rep.vectors.error:
        return []
    return [{"document_id": d.id, "repository": d.repository, "path": d.path,
             "error": d.vector_error} for d in svc.list_documents()
            if d.vector_status == "failed"]


command = Command(
    "ingest", handler=cmd_ingest, short_help="read memory folders into the database",
    help="Read Markdown memory into the database, then project it for search. PATH is a "
    "memory folder, a Claude project folder or a folder of project folders (like "
    "~/.claude/projects). With no PATH, the configured roots or ~/.claude/projects/*/memory "
    "are used.",
    params=[
        click.Argument(["paths"], nargs=-1, type=PATH, metavar="[PATH]..."),
        click.Option(["--repository"], help="repository name for a single memory folder"),
        click.Option(["--defer-projection"], is_flag=True,
                     help="store durably but do not project (not searchable until "
                     "`memlens project`)"),
        *chunker_options(),
        click.Option(["--embedder"], help="embedder for the projection (see docs/search.md)"),
        *db_options(),
    ])
