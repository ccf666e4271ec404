"""The ``memlens`` command line: a click group whose commands load when they run.

Every command is a module of this package (``memlens.cli.<name>``) defining ``command``,
a :class:`memlens.cli.common.Command`; :data:`COMMANDS` names them with their one-line help,
so ``memlens --help`` lists them without importing one (the lazy group of the click docs),
and ``memlens docs`` imports ``docs`` alone. ``memlens`` with no command, or with the
``tui`` flags or a folder first (``memlens --demo``, ``memlens ~/notes``), opens the TUI.

Every subcommand takes ``--db PATH`` (env ``MEMLENS_DB``; default in the user data
folder) and ``--config PATH``; every listing/query command takes ``--json``. Exit codes:
0 success, 1 some item failed or a problem was found, 2 usage or configuration error.
Errors go to stderr as one line a person can act on: a usage error is
``memlens COMMAND: what is wrong (see `memlens COMMAND --help`)``.

The console script is :mod:`memlens.launch`, which answers a plain lexical search before
this module (or click) is imported, and hands every other command line to :func:`main`.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from memlens.cli.common import Args, Command

EXIT_OK = 0
EXIT_USAGE = 2

COMMANDS: dict[str, str] = {
    "ingest": "read memory folders into the database",
    "project": "project pending documents for search",
    "search": "search active memory",
    "docs": "list documents",
    "history": "revision timeline of a document",
    "chunks": "show how a Markdown file is chunked",
    "rechunk": "re-chunk stored documents with another config",
    "doctor": "check database consistency",
    "config": "print effective settings and their origin",
    "watch": "watch memory folders and re-ingest changes as they happen",
    "bench": "benchmark chunking strategies, search modes and embedders",
    "mcp": "serve memory to MCP clients (Claude Code…) over stdio",
    "tui": "open the terminal UI (the default command)",
    "purge": "re-redact everything stored with the current rules; leave no trace",
    "redact": "show what redaction would replace in a file",
}
"""Command name -> its one-line help; the command is ``memlens.cli.<name>.command``
(``tests/test_cli_click.py`` checks the help here is the command's own ``short_help``)."""

DEFAULT_COMMAND = "tui"


def load(name: str) -> Command:
    """The command ``name`` (imports its module)."""
    cmd: Command = importlib.import_module(f"memlens.cli.{name}").command
    return cmd


class Group(click.Group):
    """The root ``memlens`` group: lazy commands, the TUI by default, one-line errors."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return load(cmd_name) if cmd_name in COMMANDS else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):  # from the table: no command module is imported
            formatter.write_dl(list(COMMANDS.items()))

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, default_to_tui(args))

    def resolve_command(self, ctx: click.Context, args: list[str],
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in COMMANDS:
            ctx.fail(f"no command {args[0]!r}; the commands are {', '.join(COMMANDS)}")
        return super().resolve_command(ctx, args)


def default_to_tui(argv: Sequence[str]) -> list[str]:
    """``memlens`` alone, ``memlens --demo``, ``memlens --db x.db ~/notes``: the ``tui``
    command with its flags and paths (a first word that is neither a command nor an
    existing path stays: it is reported as an unknown command)."""
    if not argv:
        return [DEFAULT_COMMAND]
    first = argv[0]
    if first in ("-h", "--help"):
        return list(argv)
    if first.startswith("-") or (first not in COMMANDS and Path(first).expanduser().exists()):
        return [DEFAULT_COMMAND, *argv]
    return list(argv)


cli = Group(
    "memlens",
    help="Keep Claude Code's Markdown memory in one SQLite database; search and inspect it. "
    "With no command, opens the terminal UI.",
    epilog="Run `memlens COMMAND --help` for the options of a command.",
    context_settings={"help_option_names": ["-h", "--help"]},
    subcommand_metavar="COMMAND [ARGS]...",
)


def parse_args(argv: Sequence[str]) -> Args:
    """What the command line ``argv`` asks for, parsed as :func:`main` parses it (for tests
    and tools); a usage error raises :class:`click.UsageError`."""
    args = default_to_tui(list(argv))
    with cli.make_context("memlens", list(args), resilient_parsing=False) as ctx:
        name, cmd, rest = cli.resolve_command(ctx, [args[0]])
        assert name is not None and cmd is not None
        sub_ctx = cmd.make_context(name, list(args[1:]), parent=ctx)
    command: Command = cmd  # type: ignore[assignment]  # every command is a common.Command
    return command.make_args(sub_ctx.params)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """Warnings reach the user as one ``memlens: warning: ...`` line, not Python's two."""
    print(f"memlens: warning: {message}", file=sys.stderr)


def usage_line(exc: click.UsageError) -> str:
    """A usage error as one line naming the command and its ``--help``."""
    prog = exc.ctx.command_path if exc.ctx is not None else "memlens"
    msg = exc.format_message().strip().rstrip(".")
    msg = msg[:1].lower() + msg[1:] if msg[1:2].islower() else msg
    return f"{prog}: {msg} (see `{prog} --help`)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    warnings.showwarning = _show_warning
    raw = list(sys.argv[1:] if argv is None else argv)
    try:
        rv = cli.main(args=raw, prog_name="memlens", standalone_mode=False)
    except click.UsageError as exc:
        print(usage_line(exc), file=sys.stderr)
        return EXIT_USAGE
    except click.ClickException as exc:
        print(f"memlens: {exc.format_message()}", file=sys.stderr)
        return exc.exit_code
    except click.Abort:  # Ctrl-C while click itself was reading
        return 130
    return int(rv or 0)


if __name__ == "__main__":
    sys.exit(main())
