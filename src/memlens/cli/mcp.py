"""``memlens mcp``: serve the memory database to MCP clients over stdio.

stdout is the protocol stream: nothing else is ever written there. Logging, the
``--watch`` watcher's events and errors go to stderr. Without the MCP SDK (the
``mcp`` extra) the command prints one line to stderr and exits 2.

Register it with Claude Code, for example::

    claude mcp add memlens -- memlens mcp --watch
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlens.mcp import SDK_MISSING


def register(sub: Any, common: Callable[..., None]) -> None:
    """Add the ``mcp`` subcommand to the main parser's subparsers."""
    p = sub.add_parser(
        "mcp", help="serve memory to MCP clients (Claude Code…) over stdio",
        description="Run a Model Context Protocol server on stdin/stdout with the tools "
        "search_memory, read_memory, memory_history, list_memories and memory_status, and "
        "the resource memory://{repository}/{path}. With --watch, memory folders are also "
        "watched (like `memlens watch`) while serving; PATH is what to watch (default: the "
        "configured roots or ~/.claude/projects). Logs go to stderr.",
        epilog="Example: claude mcp add memlens -- memlens mcp --watch")
    p.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                   help="memory folders to watch (with --watch)")
    p.add_argument("--watch", action="store_true",
                   help="keep the database in step with the memory folders while serving")
    p.add_argument("--repository", help="repository name for a single watched memory folder")
    common(p, json_flag=False)
    p.set_defaults(handler=cmd_mcp)


def _fail(message: str, code: int) -> int:
    sys.stderr.write(f"memlens: {message}\n")
    return code


def _watcher_factory(svc: Any, args: argparse.Namespace) -> Callable[..., Any] | None:
    """A factory for the ``--watch`` watcher (None when there is nothing to watch)."""
    roots = svc.resolve_roots(args.paths or None, args.repository)
    scan = svc.watch_scan_paths(args.paths or None)
    if not roots and not scan:
        sys.stderr.write("memlens: --watch: no memory folders found (looked in "
                         "~/.claude/projects); serving without a watcher\n")
        return None

    def make(on_event: Callable[..., None]) -> Any:
        from memlens.watch.watcher import Watcher

        return Watcher(svc, roots, scan_paths=scan, on_event=on_event,
                       repository=args.repository)

    return make


def cmd_mcp(args: argparse.Namespace) -> int:
    """``memlens mcp [--watch] [PATH...]``: serve until the client closes stdin."""
    try:
        from memlens.mcp import server
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "mcp":
            raise
        return _sdk_missing()
    from memlens.cli.main import EXIT_OK, EXIT_USAGE, _service
    from memlens.core.types import UsageError

    if args.paths and not args.watch:
        return _fail("PATH is what --watch watches; add --watch (or drop PATH)", EXIT_USAGE)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="memlens mcp: %(levelname)s %(name)s: %(message)s")
    svc = _service(args)  # a CliError reaches cli.main, which prints it (one line)
    try:
        svc.open()  # a broken database fails before serving
        factory = _watcher_factory(svc, args) if args.watch else None
    except UsageError as exc:
        svc.close()
        return _fail(str(exc), EXIT_USAGE)
    except BaseException:
        svc.close()
        raise
    server.serve(svc, watcher=factory)
    return EXIT_OK


def _sdk_missing() -> int:
    sys.stderr.write(SDK_MISSING + "\n")
    return 2
