"""The ``memlens`` command line.

Every subcommand takes ``--db PATH`` (env ``MEMLENS_DB``; default in the user data
folder) and every listing/query command takes ``--json``. Exit codes: 0 success,
1 some item failed or a problem was found, 2 usage or configuration error.
Errors go to stderr as one line a person can act on.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import memlens.core.types as T  # heavy names (chunker, embedders, key) resolve on use
from memlens.core.service import MemoryService, explain_storage_error, load_settings
from memlens.core.types import FUSIONS, ConfigError, DatabaseError, StorageError, UsageError

if TYPE_CHECKING:
    from memlens.core.types import ChunkerConfig, FileChange

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2


class CliError(Exception):
    """A user-facing error with an exit code."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def _err(msg: str) -> None:
    print(f"memlens: {msg}", file=sys.stderr)


def _print_json(obj: Any) -> None:
    from memlens.cli.search_text import print_json

    print_json(obj)


def _ts(t: float | None) -> str:
    if not t:
        return "-"
    from datetime import UTC, datetime  # only `history` prints times

    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S")


# ---------------------------------------------------------------------------
# parser


def _common(p: argparse.ArgumentParser, *, json_flag: bool = True) -> None:
    p.add_argument("--db", type=Path, default=None,
                   help="database file (env MEMLENS_DB; default: user data folder)")
    p.add_argument("--config", type=Path, default=None,
                   help="config file (env MEMLENS_CONFIG; default: user config folder)")
    if json_flag:
        p.add_argument("--json", action="store_true", help="print JSON (see README for shapes)")


def _chunker_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--strategy", choices=["adaptive", "headings", "windows", "whole"],
                   help="chunking strategy (default from config: adaptive)")
    p.add_argument("--max-tokens", type=int, help="largest chunk, in estimated tokens (400)")
    p.add_argument("--overlap", type=int, help="tokens shared by neighbouring windows (80)")
    p.add_argument("--min-tokens", type=int,
                   help="floor: shorter adjacent sections merge (50; at most max/8; 0 = off)")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line naming the command and its
    ``--help`` (argparse prints the whole usage block first); exit 2. Sub-parsers are
    built with the same class."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse ``argv``; an option the command does not know is reported by that command
    (``memlens docs: unrecognized arguments: --bogus``), not by the top-level parser."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        cmd = getattr(args, "command", None)
        prog = f"{parser.prog} {cmd}" if cmd else parser.prog
        parser.exit(EXIT_USAGE, f"{prog}: unrecognized arguments: {' '.join(extra)}"
                                f" (see `{prog} --help`)\n")
    return args


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs); ``only`` names one of the core
    commands to build just that sub-parser (what :func:`main` does when argv starts with
    it: building all of them costs more than a lexical search)."""
    p = _Parser(
        prog="memlens",
        description="Keep Claude Code's Markdown memory in one SQLite database; search and "
        "inspect it. With no command, opens the terminal UI.",
        epilog="Run `memlens COMMAND --help` for the options of a command.",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    if only in _PARSERS:  # one known command: build just its parser (start-up cost)
        _PARSERS[only](sub)
        return p
    for add in _PARSERS.values():
        add(sub)
    _register_optional(sub)
    return p


def _parser_ingest(sub: Any) -> None:
    s = sub.add_parser("ingest", help="read memory folders into the database",
                       description="Read Markdown memory into the database, then project it "
                       "for search. PATH is a memory folder, a Claude project folder or a "
                       "folder of project folders (like ~/.claude/projects). With no PATH, "
                       "the configured roots or ~/.claude/projects/*/memory are used.")
    s.add_argument("paths", nargs="*", type=Path, metavar="PATH")
    s.add_argument("--repository", help="repository name for a single memory folder")
    s.add_argument("--defer-projection", action="store_true",
                   help="store durably but do not project (not searchable until `memlens project`)")
    _chunker_flags(s)
    s.add_argument("--embedder", help="embedder for the projection (see README)")
    _common(s)


def _parser_project(sub: Any) -> None:
    s = sub.add_parser("project", help="project pending documents for search",
                       description="Embed and index documents whose projection is pending, or "
                       "failed and due for a retry (--force: all failed ones now).")
    s.add_argument("--force", action="store_true", help="ignore retry back-off")
    s.add_argument("--embedder", help="embedder to project with")
    _common(s)


def _parser_search(sub: Any) -> None:
    s = sub.add_parser("search", help="search active memory",
                       description="Search the active projection. Modes: lexical (FTS5 bm25), "
                       "vector (sqlite-vec KNN), hybrid (score fusion of both; default).")
    s.add_argument("query")
    s.add_argument("--mode", choices=["lexical", "vector", "hybrid"], default="hybrid")
    s.add_argument("-k", type=int, default=10, help="number of hits (default 10)")
    s.add_argument("--repository", help="only this repository")
    s.add_argument("--type", dest="doc_type", help="only documents with this front-matter type")
    s.add_argument("--embedder", help="embedder for the query (must match the projection)")
    s.add_argument("--fusion", choices=["auto", *FUSIONS],
                   help="how hybrid fuses lexical and vector scores (config [search] fusion)")
    s.add_argument("--all-projects", action="store_true",
                   help="do not rank the current project's memory first")
    _common(s)


def _parser_docs(sub: Any) -> None:
    s = sub.add_parser("docs", help="list documents",
                       description="List documents with their projection status.")
    s.add_argument("--filter", help="fuzzy filter over repository, path, headings and name")
    s.add_argument("--repository", help="only this repository")
    s.add_argument("--all", action="store_true", help="include tombstoned (deleted) documents")
    _common(s)


def _parser_history(sub: Any) -> None:
    s = sub.add_parser("history", help="revision timeline of a document",
                       description="Revisions newest first: change kind, hash, chunker, "
                       "embedder, summary and bounded diff.")
    s.add_argument("path", help="logical path inside the memory folder, e.g. MEMORY.md")
    s.add_argument("--repository", help="repository (needed when the path is ambiguous)")
    s.add_argument("--no-diff", action="store_true", help="omit diffs in text output")
    _common(s)


def _parser_chunks(sub: Any) -> None:
    s = sub.add_parser("chunks", help="show how a Markdown file is chunked",
                       description="Chunk one Markdown file (nothing is stored) and print "
                       "ordinal, heading path, spans, tokens and first line. The text is "
                       "redacted first, as ingest does, so you see what would be stored.")
    s.add_argument("path", type=Path)
    s.add_argument("--raw", action="store_true",
                   help="do not redact: show the original text (secrets included)")
    _chunker_flags(s)
    _common(s)


def _parser_rechunk(sub: Any) -> None:
    s = sub.add_parser("rechunk", help="re-chunk stored documents with another config",
                       description="Create rechunk revisions (same content, new chunker config) "
                       "and re-project them. The choice is remembered for the document, the "
                       "repository (--all --repository R) or all documents (--all): later edits "
                       "and re-ingests keep it (document > repository > all > settings). "
                       "--reset forgets it.")
    s.add_argument("path", nargs="?", help="logical path of one document")
    s.add_argument("--all", action="store_true", help="rechunk every live document")
    s.add_argument("--repository", help="repository of PATH, or limit --all to it")
    s.add_argument("--reset", action="store_true",
                   help="forget the remembered choice and rechunk with what applies then")
    s.add_argument("--no-remember", action="store_true",
                   help="rechunk once; the next write of the file uses the remembered/default")
    _chunker_flags(s)
    s.add_argument("--defer-projection", action="store_true",
                   help="record the rechunk revisions but do not project them (the last good"
                        " projection stays searchable until `memlens project`)")
    _common(s)


def _parser_doctor(sub: Any) -> None:
    s = sub.add_parser("doctor", help="check database consistency",
                       description="integrity_check, FTS5 integrity (rank 1), vectors == nodes, "
                       "no orphan junction rows, active revisions projected. Exit 1 on problems.")
    _common(s)


def _parser_config(sub: Any) -> None:
    s = sub.add_parser("config", help="print effective settings and their origin")
    _common(s)


_PARSERS: dict[str, Callable[[Any], None]] = {
    "ingest": _parser_ingest,
    "project": _parser_project,
    "search": _parser_search,
    "docs": _parser_docs,
    "history": _parser_history,
    "chunks": _parser_chunks,
    "rechunk": _parser_rechunk,
    "doctor": _parser_doctor,
    "config": _parser_config,
}


def _register_optional(sub: Any) -> None:
    """Subcommands implemented in their own modules (watch, bench, tui)."""
    from memlens.cli import bench as cli_bench
    from memlens.cli import mcp as cli_mcp
    from memlens.cli import purge as cli_purge
    from memlens.cli import tui as cli_tui
    from memlens.cli import watch as cli_watch

    for mod in (cli_watch, cli_bench, cli_mcp, cli_tui, cli_purge):
        mod.register(sub, _common)


# ---------------------------------------------------------------------------
# helpers


def _service(args: argparse.Namespace, **overrides: Any) -> MemoryService:
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
    svc = MemoryService(settings, create=getattr(args, "command", None) not in _NEEDS_DB)
    if getattr(args, "repository", None) and getattr(args, "command", None) in _READS_REPOSITORY:
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


_NEEDS_DB = frozenset({"search", "docs", "history", "doctor", "project", "rechunk", "purge"})
"""Commands that work on a stored database: a missing ``--db`` folder is an error for them."""
_READS_REPOSITORY = frozenset({"search", "docs", "history", "rechunk"})
"""Commands whose ``--repository`` picks a stored repository (ingest's names a new one)."""


def _chunker_config(args: argparse.Namespace, base: dict[str, Any]) -> ChunkerConfig:
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


def _progress_enabled(args: argparse.Namespace) -> bool:
    return not getattr(args, "json", False) and sys.stderr.isatty()


# ---------------------------------------------------------------------------
# commands


def cmd_ingest(args: argparse.Namespace) -> int:
    """``memlens ingest``."""
    svc = _service(args)
    _chunker_config(args, svc.settings.chunker_dict())
    try:
        roots = svc.resolve_roots(args.paths or None, args.repository)
    except UsageError as exc:
        raise CliError(str(exc)) from None
    if not roots:
        raise CliError("no memory folders found (looked in ~/.claude/projects/*/memory); "
                       "pass a PATH, e.g. `memlens ingest corpus/`", EXIT_FAIL)
    progress = None
    task = None
    if _progress_enabled(args):
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
        unprojected = _projection_failures(svc, out.projection)
        no_vectors = _vector_failures(svc, out.projection)
    finally:
        if progress is not None:
            progress.stop()
        svc.close()
    data = out.as_json()
    if unprojected:
        data["projection_failed"] = unprojected
    if no_vectors:
        data["vectors_failed"] = no_vectors
    if args.json:
        _print_json(data)
        if data.get("stopped"):
            _err(str(data["stopped"]))
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
            _err(f"{f['repository']}/{f['path']}: {f['error']}")
        for w in data.get("warnings", []):
            _err(f"warning: {w}")
        if data.get("stopped") and not data["failed"]:  # a projection stop (not in "failed")
            _err(str(data["stopped"]))
        for f in unprojected:
            _err(f"{f['repository']}/{f['path']}: stored, but not searchable yet: {f['error']}"
                 " (memlens project retries it)")
        for f in no_vectors:
            _err(f"{f['repository']}/{f['path']}: searchable by its words, but its vectors"
                 f" failed: {f['error']} (memlens project retries them)")
    # Like `memlens project`: a document this run could not project is a failure (exit 1).
    failed = data["failed"] or data.get("stopped") or unprojected or no_vectors
    return EXIT_FAIL if failed else EXIT_OK


def _projection_failures(svc: MemoryService, rep: T.ProjectionReport | None,
                         ) -> list[dict[str, Any]]:
    """This run's projection failures (not a full disk's: that is one ``stopped`` line),
    with the document's repository and path."""
    if rep is None:
        return []
    bad = {o.document_id: o.error or o.result for o in rep.outcomes
           if o.result in ("failed", "stale") and not (rep.stopped and o.disk_full)}
    return [{"document_id": d.id, "repository": d.repository, "path": d.path,
             "error": bad[d.id]} for d in svc.document_summaries(list(bad))]


def _vector_failures(svc: MemoryService, rep: T.ProjectionReport | None,
                     ) -> list[dict[str, Any]]:
    """Documents whose vectors this run could not compute (stage 2; their words are
    searchable), when the run's vector stage failed."""
    if rep is None or rep.vectors is None or not rep.vectors.error:
        return []
    return [{"document_id": d.id, "repository": d.repository, "path": d.path,
             "error": d.vector_error} for d in svc.list_documents()
            if d.vector_status == "failed"]


def cmd_project(args: argparse.Namespace) -> int:
    """``memlens project``."""
    svc = _service(args)
    try:
        rep = svc.project(force=args.force)
        q = svc.pending_count()
        no_vectors = _vector_failures(svc, rep)
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
        _print_json(data)
        if rep.stopped:
            _err(rep.stopped)
    else:
        queue = ", ".join(f"{n} {status}" for status, n in q.items() if n) or "empty"
        print(f"{data['projected']} projected: {data['ready']} ready, "
              f"{len(data['failed'])} failed; queue: {queue}")
        if rep.stopped:  # one line for the full disk, not one per document it failed
            _err(rep.stopped)
        for o in rep.outcomes:
            if o.result in ("failed", "stale") and not (rep.stopped and o.disk_full):
                _err(f"document {o.document_id}: {o.error}")
        for f in no_vectors:
            _err(f"{f['repository']}/{f['path']}: searchable by its words, but its vectors"
                 f" failed: {f['error']}")
    return EXIT_FAIL if data["failed"] or rep.stopped or no_vectors else EXIT_OK


def _commands() -> dict[str, Callable[[argparse.Namespace], int]]:
    """Command name -> handler (the read and maintenance commands live in cli_read.py)."""
    from memlens.cli import read as cli_read

    return {
        "ingest": cmd_ingest, "project": cmd_project, "search": cli_read.cmd_search,
        "docs": cli_read.cmd_docs, "history": cli_read.cmd_history,
        "chunks": cli_read.cmd_chunks, "rechunk": cli_read.cmd_rechunk,
        "doctor": cli_read.cmd_doctor, "config": cli_read.cmd_config,
    }


def _default_to_tui(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``memlens --demo``, ``memlens --db x.db ~/notes``: the ``tui`` flags and paths
    work without the command (a first word that is neither a command nor an existing
    path is left to argparse, which names the commands)."""
    if not argv or argv[0] in ("-h", "--help"):
        return argv
    first = argv[0]
    commands = {name for a in parser._actions if isinstance(a, argparse._SubParsersAction)
                for name in a.choices}
    if first.startswith("-") or (first not in commands and Path(first).expanduser().exists()):
        return ["tui", *argv]
    return argv


_VALUE_OPTIONS = ("--repository",)


def _join_dash_values(argv: Sequence[str]) -> list[str]:
    """Let ``--repository -home-dev-proj`` work: Claude slugs start with ``-``.

    argparse would read the slug as an option; ``--repository=VALUE`` is unambiguous.
    """
    out: list[str] = []
    it = iter(range(len(argv)))
    skip = False
    for i in it:
        if skip:
            skip = False
            continue
        a = argv[i]
        if a in _VALUE_OPTIONS and i + 1 < len(argv) and argv[i + 1].startswith("-") \
                and argv[i + 1] not in ("-h", "--help"):
            out.append(f"{a}={argv[i + 1]}")
            skip = True
        else:
            out.append(a)
    return out


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """Warnings reach the user as one ``memlens: warning: ...`` line, not Python's two."""
    _err(f"warning: {message}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memlens`` console script."""
    warnings.showwarning = _show_warning
    raw = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(raw[0] if raw else None)
    args = _parse(parser, _join_dash_values(_default_to_tui(parser, raw)))
    if args.command is None:
        try:  # `memlens` alone opens the TUI
            args = _parse(parser, ["tui"])
        except SystemExit:
            pass
    cfg = getattr(args, "config", None)
    if cfg is not None and not Path(cfg).expanduser().is_file():
        _err(f"--config {cfg}: no such file (leave --config out to use defaults)")
        return EXIT_USAGE
    cmd = args.command or "tui"
    handler = _commands().get(cmd) or getattr(args, "handler", None)
    if handler is None:
        parser.error(f"unknown command {cmd}")
    try:
        return int(handler(args))
    except CliError as exc:
        _err(str(exc))
        return exc.code
    except (DatabaseError, ConfigError, T.InstallKeyError) as exc:
        _err(str(exc))
        return EXIT_USAGE
    except StorageError as exc:  # disk full, I/O error, damage found mid-way: one line
        _err(explain_storage_error(exc, getattr(args, "db", None)))
        return EXIT_FAIL
    except T.EmbedderUnavailable as exc:
        _err(str(exc))
        return EXIT_USAGE
    except T.EmbeddingError as exc:  # e.g. the endpoint refuses connections: files read stay stored
        _err(f"{exc}; what was read is stored and waits for projection"
             " (run memlens project once the embedder answers)")
        return EXIT_FAIL
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    # Under `python -m` this file runs as __main__ *and* is imported as memlens.cli.main by
    # the subcommand modules; call the imported copy so their CliError is the one caught.
    from memlens.cli.main import main as _main

    sys.exit(_main())
