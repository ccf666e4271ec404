"""What every ``memlens`` command shares: exit codes, the one-line error, JSON printing,
the common options (``--db``, ``--config``, ``--json``, the chunker flags), building the
service from them, and :class:`Command`, the click command class every command module uses.

A command module (``memlens.cli.docs``, ``memlens.cli.history``, ...) defines ``command``,
a :class:`Command` whose ``handler`` takes the parsed :class:`Args` and returns the exit
code; :meth:`Command.invoke` runs it and turns the errors a person can act on into one
``memlens: ...`` line on stderr and an exit code (0 success, 1 some item failed or a
problem was found, 2 usage or configuration error). No traceback reaches the user for
them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import click

import memlens.core.types as T  # heavy names (chunker, embedders, key) resolve on use
from memlens.core.service import MemoryService, explain_storage_error, load_settings
from memlens.core.types import ConfigError, DatabaseError, StorageError

if TYPE_CHECKING:
    from memlens.core.types import ChunkerConfig, DocumentDetail

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2

HELP_OPTIONS = ["-h", "--help"]
PATH = click.Path(path_type=Path)
"""A path argument (no existence check here: the command says what is wrong with it)."""


class CliError(Exception):
    """A user-facing error with an exit code."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def err(msg: str) -> None:
    """One ``memlens: ...`` line on stderr."""
    print(f"memlens: {msg}", file=sys.stderr)


def print_json(obj: Any) -> None:
    """``obj`` as indented JSON on stdout (every ``--json``)."""
    from memlens.cli.search_text import print_json as _print

    _print(obj)


def ts(t: float | None) -> str:
    """A stored time as ``YYYY-MM-DD HH:MM:SS`` UTC (``-`` when unknown)."""
    if not t:
        return "-"
    from datetime import UTC, datetime  # only `history` prints times

    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S")


class Args(SimpleNamespace):
    """The parsed command line of one command: ``command`` (its name), ``handler`` and one
    attribute per parameter (``--max-tokens`` is ``max_tokens``; ``PATH...`` a list)."""

    command: str
    handler: Callable[[Args], int]

    def __getattr__(self, name: str) -> Any:  # for mypy: parameters are dynamic
        raise AttributeError(name)


# ---------------------------------------------------------------------------
# options shared by the commands


def db_options(*, json_flag: bool = True) -> list[click.Parameter]:
    """``--db``, ``--config`` and (unless ``json_flag`` is false) ``--json``."""
    out: list[click.Parameter] = [
        click.Option(["--db"], type=PATH, default=None,
                     help="database file (env MEMLENS_DB; default: user data folder)"),
        click.Option(["--config"], type=PATH, default=None,
                     help="config file (env MEMLENS_CONFIG; default: user config folder)"),
    ]
    if json_flag:
        out.append(click.Option(["--json"], is_flag=True,
                                help="print JSON (shapes: docs/cli.md)"))
    return out


def chunker_options() -> list[click.Parameter]:
    """``--strategy``, ``--max-tokens``, ``--overlap``, ``--min-tokens``."""
    return [
        click.Option(["--strategy"], type=click.Choice(["adaptive", "headings", "windows", "whole"]),
                     help="chunking strategy (default from config: adaptive)"),
        click.Option(["--max-tokens"], type=int,
                     help="largest chunk, in estimated tokens (400)"),
        click.Option(["--overlap"], type=int, help="tokens shared by neighbouring windows (80)"),
        click.Option(["--min-tokens"], type=int,
                     help="floor: shorter adjacent sections merge (50; at most max/8; 0 = off)"),
    ]


# ---------------------------------------------------------------------------
# arguments that start with "-"


def is_dash_path(token: str) -> bool:
    """A ``repository/path`` (or ``repository:path``) whose repository is a Claude slug
    (they all start with ``-``): ``-home-x-proj/notes.md``. One dash, then a ``/`` or
    ``:`` with no ``=`` before it."""
    if not token.startswith("-") or token.startswith("--") or len(token) < 3:
        return False
    cut = min((i for i in (token.find("/"), token.find(":")) if i > 1), default=-1)
    return cut > 1 and "=" not in token[:cut]


class Command(click.Command):
    """A ``memlens`` command: click parses, :meth:`invoke` runs ``handler`` on the
    :class:`Args` and maps the errors to one line and an exit code.

    A positional argument may start with ``-`` (``memlens history -home-x-proj/notes.md``):
    before click parses, a token that is no option of this command and reads as a
    ``slug/path`` (:func:`is_dash_path`) is passed after ``--``, with every other
    positional token, in the order given."""

    def __init__(self, name: str, *, handler: Callable[[Args], int], **kw: Any) -> None:
        kw.setdefault("context_settings", {"help_option_names": HELP_OPTIONS})
        super().__init__(name, **kw)
        self.handler = handler

    def _value_options(self) -> tuple[set[str], set[str]]:
        """(every option name, the names of options that take a value)."""
        names: set[str] = set(HELP_OPTIONS)
        valued: set[str] = set()
        for p in self.params:
            if isinstance(p, click.Option):
                names.update(p.opts, p.secondary_opts)
                if not p.is_flag and not p.count:
                    valued.update(p.opts)
        return names, valued

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self.positionals_last(args))

    def positionals_last(self, args: Sequence[str]) -> list[str]:
        """``args`` unchanged, or, when one of them is a dash path that is not an option,
        the options (with their values) first and every positional after ``--``."""
        if "--" in args:
            return list(args)
        names, valued = self._value_options()
        opts: list[str] = []
        positional: list[str] = []
        want_value = False
        for a in args:
            if want_value:
                opts.append(a)
                want_value = False
            elif a.startswith("-") and len(a) > 1 and not (is_dash_path(a) and a not in names):
                opts.append(a)
                want_value = a in valued
            else:
                positional.append(a)
        if not any(a.startswith("-") for a in positional):
            return list(args)
        return [*opts, "--", *positional]

    def make_args(self, params: dict[str, Any]) -> Args:
        """The handler's :class:`Args` for click's parsed ``params``."""
        values = {k: list(v) if isinstance(v, tuple) else v for k, v in params.items()}
        return Args(command=self.name, handler=self.handler, **values)

    def invoke(self, ctx: click.Context) -> int:
        return run(self.make_args(ctx.params))


def run(args: Args) -> int:
    """Run ``args.handler``; an error a person can act on is one line and an exit code."""
    cfg = getattr(args, "config", None)
    if cfg is not None and not Path(cfg).expanduser().is_file():
        err(f"--config {cfg}: no such file (leave --config out to use defaults)")
        return EXIT_USAGE
    try:
        return int(args.handler(args))
    except CliError as exc:
        err(str(exc))
        return exc.code
    except (DatabaseError, ConfigError, T.InstallKeyError) as exc:
        err(str(exc))
        return EXIT_USAGE
    except StorageError as exc:  # disk full, I/O error, damage found mid-way: one line
        err(explain_storage_error(exc, getattr(args, "db", None)))
        return EXIT_FAIL
    except T.EmbedderUnavailable as exc:
        err(str(exc))
        return EXIT_USAGE
    except T.EmbeddingError as exc:  # e.g. the endpoint refuses connections: files read stay stored
        err(f"{exc}; what was read is stored and waits for projection"
            " (run memlens project once the embedder answers)")
        return EXIT_FAIL
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


# ---------------------------------------------------------------------------
# the service and the chunker settings from the options


NEEDS_DB = frozenset({"search", "docs", "history", "doctor", "project", "rechunk", "purge"})
"""Commands that work on a stored database: a missing ``--db`` folder is an error for them."""
READS_REPOSITORY = frozenset({"search", "docs", "history", "rechunk"})
"""Commands whose ``--repository`` picks a stored repository (ingest's names a new one)."""


def service(args: Args, **overrides: Any) -> MemoryService:
    """The door, with the settings the options and the config give."""
    ov: dict[str, Any] = {"db": str(args.db) if getattr(args, "db", None) else None}
    for flag, key in (("strategy", "chunker.strategy"), ("max_tokens", "chunker.max_tokens"),
                      ("overlap", "chunker.overlap_tokens"), ("min_tokens", "chunker.min_tokens"),
                      ("embedder", "embedder.name")):
        if getattr(args, flag, None) is not None:
            ov[key] = getattr(args, flag)
    ov.update(overrides)
    try:
        settings = load_settings(getattr(args, "config", None), overrides=ov)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    # Commands that only read (or work on what is stored) never create a database folder.
    svc = MemoryService(settings, create=getattr(args, "command", None) not in NEEDS_DB)
    if getattr(args, "repository", None) and getattr(args, "command", None) in READS_REPOSITORY:
        try:  # `--repository tidewater` means the one stored repository it names
            args.repository = svc.resolve_repository(args.repository)
        except LookupError as exc:
            svc.close()
            raise CliError(str(exc)) from None
    doc_type = getattr(args, "doc_type", None)
    if doc_type and doc_type not in (types := svc.search_facets()[1]):
        svc.close()  # a typo would answer "no results" as if nothing were stored
        raise CliError(f"no document type {doc_type!r}; known: {', '.join(types) or 'none yet'}")
    return svc


def locate(svc: MemoryService, args: Args) -> DocumentDetail | None:
    """The stored document ``args.path`` names: a logical path (``--repository`` when it is
    ambiguous), ``REPOSITORY/PATH`` as ``memlens docs`` lists it, or ``REPOSITORY:PATH``
    (the repository by its full or a short name, as ``--repository`` takes it)."""
    try:
        doc = svc.locate(args.repository, args.path)
        if doc is None and not args.repository and ":" in args.path:
            repo, _, path = args.path.partition(":")
            if repo and path:
                doc = svc.locate(svc.resolve_repository(repo), path)
    except LookupError as exc:
        raise CliError(str(exc)) from None
    return doc


def chunker_config(args: Args, base: dict[str, Any]) -> ChunkerConfig:
    """The chunker settings: ``base`` (from the settings) with the chunker flags applied."""
    d = dict(base)
    if args.strategy is not None:
        d["strategy"] = args.strategy
    if args.max_tokens is not None:
        d["max_tokens"] = args.max_tokens
    if args.overlap is not None:
        d["overlap_tokens"] = args.overlap
    if getattr(args, "min_tokens", None) is not None:
        d["min_tokens"] = args.min_tokens
    try:
        cfg = T.ChunkerConfig.from_dict(d)
        cfg.validate()
    except (T.ChunkerConfigError, TypeError, ValueError) as exc:
        raise CliError(f"invalid chunker settings: {exc}") from None
    return cfg


def progress_enabled(args: Args) -> bool:
    """A progress bar on stderr: only for a person at a terminal, never with ``--json``."""
    return not getattr(args, "json", False) and sys.stderr.isatty()
