"""``memlens project``: embed and index the documents whose projection is pending."""

from __future__ import annotations

from typing import Any

import click

from memlens.cli.common import EXIT_FAIL, EXIT_OK, Args, Command, db_options, err, print_json, service
from memlens.cli.ingest import vector_failures


def cmd_project(args: Args) -> int:
    """``memlens project``."""
    svc = service(args)
    try:
        svc.check_before_writing()
        rep = svc.project(force=args.force)
        q = svc.pending_count()
        no_vectors = vector_failures(svc, rep)
    finally:
        svc.close()
    data: dict[str, Any] = {"projected": len(rep.outcomes), "ready": rep.count("ready"),
            "failed": [{"document_id": o.document_id, "error": o.error}
                       for o in rep.outcomes if o.result in ("failed", "stale")],
            "queue": q}
    if rep.vectors is not None:
        data["vectors"] = {"embedded": rep.vectors.embedded, "written": rep.vectors.written,
                           "waiting": rep.vectors.waiting, "error": rep.vectors.error}
    if no_vectors:
        data["vectors_failed"] = no_vectors
    if rep.stopped:
        data["stopped"] = rep.stopped
    if args.json:
        print_json(data)
        if rep.stopped:
            err(rep.stopped)
    else:
        queue = ", ".join(f"{n} {status}" for status, n in q.items() if n) or "empty"
        print(f"{data['projected']} projected: {data['ready']} ready, "
              f"{len(data['failed'])} failed; queue: {queue}")
        if rep.stopped:  # one line for the full disk, not one per document it failed
            err(rep.stopped)
        for o in rep.outcomes:
            if o.result in ("failed", "stale") and not (rep.stopped and o.disk_full):
                err(f"document {o.document_id}: {o.error}")
        for f in no_vectors:
            err(f"{f['repository']}/{f['path']}: searchable by its words, but its vectors"
                f" failed: {f['error']}")
    return EXIT_FAIL if data["failed"] or rep.stopped or no_vectors else EXIT_OK


command = Command(
    "project", handler=cmd_project, short_help="project pending documents for search",
    help="Embed and index documents whose projection is pending, or failed and due for a "
    "retry (--force: all failed ones now).",
    params=[
        click.Option(["--force"], is_flag=True, help="ignore retry back-off"),
        click.Option(["--embedder"], help="embedder to project with"),
        *db_options(),
    ])
