"""``memlens tui``: open the terminal UI (also what ``memlens`` alone does).

With no PATH it opens over the user's Claude memory (``~/.claude/projects/*/
memory``, or the configured roots). When there is none — or with ``--demo`` —
it opens over a copy of the bundled demo corpus with its own database, and says
so in the title and the status bar.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from memlens.cli.common import EXIT_FAIL, EXIT_OK, PATH, Args, CliError, Command, db_options

BLAS_THREADS = "1"
"""BLAS threads of the UI process (numpy's OpenBLAS; the vector search's ``M @ q``)."""


def limit_blas_threads() -> None:
    """Give the UI process one BLAS thread unless ``OPENBLAS_NUM_THREADS`` says otherwise.

    OpenBLAS starts a thread per core and lets them spin after every call; in the UI
    that spinning competes with the event loop for the cores. At 100,000 chunks on two
    shared cores, 20 hybrid searches typed in the UI (two interleaved pairs) stalled the
    loop over 50 ms 4 and 0 times with one thread, 13 and 5 times with the default, for
    the same search time (34-40 ms p50) and less CPU (9.6 / 7.4 s against 11.9 / 8.0 s).
    Must run before numpy is imported: the variable is read once, when OpenBLAS loads
    (the UI imports numpy on its first vector search).
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", BLAS_THREADS)


def cmd_tui(args: Args) -> int:
    """Open the UI; returns the exit code."""
    limit_blas_threads()
    from memlens.core.service import MemoryService, load_settings
    from memlens.core.types import ChunkerConfigError, ConfigError, DatabaseError, UsageError
    from memlens.tui.demo import DEMO_NOTE, DemoUnavailable, demo_db_path, prepare_demo

    paths: list[Path] = list(getattr(args, "paths", None) or [])
    overrides: dict[str, Any] = {"db": str(args.db) if args.db else None}
    try:
        settings = load_settings(args.config, overrides=overrides)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    probe = MemoryService(settings)
    demo = bool(args.demo)
    note = ""
    try:
        roots = [] if demo else probe.resolve_roots(paths or None, args.repository)
    except UsageError as exc:
        raise CliError(str(exc)) from None
    if not demo and not roots and not paths:
        demo = True
        note = DEMO_NOTE
    scan_paths = paths or None
    if demo:
        note = note or "demo: a copy of the bundled corpus (--demo)"
        try:
            copy = prepare_demo()
        except DemoUnavailable as exc:
            raise CliError(str(exc), EXIT_FAIL) from None
        roots = probe.resolve_roots([copy])
        scan_paths = [copy]
        user_db = args.db is not None or os.environ.get("MEMLENS_DB") or \
            settings.origins.get("db", "default") != "default"
        if not user_db:
            settings = load_settings(args.config, overrides={"db": str(demo_db_path())})
        note = f"{note} ({copy})"
    elif not roots:
        raise CliError("no memory folders found under " + ", ".join(map(str, paths)), EXIT_FAIL)
    service = MemoryService(settings)
    # Fail here, on one line, not inside a Textual screen: a file that is not a
    # database, one written by a newer memlens, chunker settings that cannot work.
    try:
        service.chunker_config()
        service.open()
    except DatabaseError as exc:
        service.close()
        raise CliError(str(exc)) from None
    except (ChunkerConfigError, ValueError, TypeError) as exc:
        service.close()
        raise CliError(f"invalid chunker settings: {exc}") from None
    watch = not args.no_watch and settings.watch.enabled

    from memlens.tui.app import MemlensApp
    from memlens.tui.screens.events import capture_warnings

    app = MemlensApp(service, watch=watch, roots=roots, scan_paths=scan_paths,
                     ingest=not args.no_ingest, demo=demo, demo_note=note,
                     demo_folder=scan_paths[0] if demo and scan_paths else None)
    try:
        with capture_warnings(app.events_log):  # into the events pane, not over the screen
            app.run()
    finally:
        service.close()
    if demo:  # the CLI reads the same memory when told where it is
        db = shlex.quote(str(service.db_path))
        print(f"memlens: the demo database is {db}; e.g. memlens search QUERY --db {db}",
              file=sys.stderr)
    return EXIT_OK if app.return_code in (None, 0) else int(app.return_code or 1)


command = Command(
    "tui", handler=cmd_tui, short_help="open the terminal UI (the default command)",
    help="Browse memory in a terminal UI: documents by repository, chunk boundaries, revision "
    "timeline with diffs, projection status, live search and rechunk with preview. PATH is a "
    "memory folder, a Claude project folder or a folder of project folders; with none, "
    "~/.claude/projects/*/memory is used, or a copy of the bundled demo corpus when there is "
    "no Claude memory. Press ? inside for keys.",
    epilog="Examples: `memlens`, `memlens tui corpus/ --db /tmp/demo.db`, `memlens tui --demo`.",
    params=[
        click.Argument(["paths"], nargs=-1, type=PATH, metavar="[PATH]..."),
        click.Option(["--repository"], help="repository name for a single memory folder"),
        click.Option(["--no-watch"], is_flag=True,
                     help="do not watch the folders for changes (config: watch.enabled)"),
        click.Option(["--demo"], is_flag=True,
                     help="open a copy of the bundled demo corpus (own database unless --db)"),
        click.Option(["--no-ingest"], is_flag=True,
                     help="only show what is already in the database"),
        *db_options(json_flag=False),
    ])
