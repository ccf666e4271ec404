"""The ``memlens`` command line.

Every subcommand takes ``--db PATH`` (env ``MEMLENS_DB``; default in the user data
folder) and every listing/query command takes ``--json``. Exit codes: 0 success,
1 some item failed or a problem was found, 2 usage or configuration error.
Errors go to stderr as one line a person can act on.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlens.core.service import MemoryService, chunk_file, explain_storage_error, load_settings
from memlens.core.types import (
    FUSIONS,
    ChunkerConfig,
    ChunkerConfigError,
    ConfigError,
    DatabaseError,
    EmbedderUnavailable,
    EmbeddingError,
    FileChange,
    SearchError,
    SourceError,
    StorageError,
    UsageError,
)

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
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=False) + "\n")


def _ts(t: float | None) -> str:
    if not t:
        return "-"
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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    p = argparse.ArgumentParser(
        prog="memlens",
        description="Keep Claude Code's Markdown memory in one SQLite database; search and "
        "inspect it. With no command, opens the terminal UI.",
        epilog="Run `memlens COMMAND --help` for the options of a command.",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

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

    s = sub.add_parser("project", help="project pending documents for search",
                       description="Embed and index documents whose projection is pending, or "
                       "failed and due for a retry (--force: all failed ones now).")
    s.add_argument("--force", action="store_true", help="ignore retry back-off")
    s.add_argument("--embedder", help="embedder to project with")
    _common(s)

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

    s = sub.add_parser("docs", help="list documents",
                       description="List documents with their projection status.")
    s.add_argument("--filter", help="fuzzy filter over repository, path, headings and name")
    s.add_argument("--repository", help="only this repository")
    s.add_argument("--all", action="store_true", help="include tombstoned (deleted) documents")
    _common(s)

    s = sub.add_parser("history", help="revision timeline of a document",
                       description="Revisions newest first: change kind, hash, chunker, "
                       "embedder, summary and bounded diff.")
    s.add_argument("path", help="logical path inside the memory folder, e.g. MEMORY.md")
    s.add_argument("--repository", help="repository (needed when the path is ambiguous)")
    s.add_argument("--no-diff", action="store_true", help="omit diffs in text output")
    _common(s)

    s = sub.add_parser("chunks", help="show how a Markdown file is chunked",
                       description="Chunk one Markdown file (nothing is stored) and print "
                       "ordinal, heading path, spans, tokens and first line. The text is "
                       "redacted first, as ingest does, so you see what would be stored.")
    s.add_argument("path", type=Path)
    s.add_argument("--raw", action="store_true",
                   help="do not redact: show the original text (secrets included)")
    _chunker_flags(s)
    _common(s)

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
    s.add_argument("--defer-projection", action="store_true")
    _common(s)

    s = sub.add_parser("doctor", help="check database consistency",
                       description="integrity_check, FTS5 integrity (rank 1), vectors == nodes, "
                       "no orphan junction rows, active revisions projected. Exit 1 on problems.")
    _common(s)

    s = sub.add_parser("config", help="print effective settings and their origin")
    _common(s)

    _register_optional(sub)
    return p


def _register_optional(sub: Any) -> None:
    """Subcommands implemented in their own modules (watch, bench, tui)."""
    from memlens.tui import cli_bench, cli_mcp, cli_purge, cli_tui, cli_watch

    for mod in (cli_watch, cli_bench, cli_mcp, cli_tui, cli_purge):
        mod.register(sub, _common)


# ---------------------------------------------------------------------------
# helpers


def _service(args: argparse.Namespace, **overrides: Any) -> MemoryService:
    ov: dict[str, Any] = {"db": str(args.db) if getattr(args, "db", None) else None}
    for flag, key in (("strategy", "chunker.strategy"), ("max_tokens", "chunker.max_tokens"),
                      ("overlap", "chunker.overlap_tokens"), ("embedder", "embedder.name")):
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
    try:
        cfg = ChunkerConfig.from_dict(d)
        cfg.validate()
    except (ChunkerConfigError, TypeError, ValueError) as exc:
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
            out = svc.start_up(roots, on_change=on_change)
    finally:
        if progress is not None:
            progress.stop()
        svc.close()
    data = out.as_json()
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
        for f in data["failed"]:
            _err(f"{f['repository']}/{f['path']}: {f['error']}")
        for w in data.get("warnings", []):
            _err(f"warning: {w}")
    return EXIT_FAIL if data["failed"] else EXIT_OK


def cmd_project(args: argparse.Namespace) -> int:
    """``memlens project``."""
    svc = _service(args)
    try:
        rep = svc.project(force=args.force)
        q = svc.pending_count()
    finally:
        svc.close()
    data: dict[str, Any] = {"projected": len(rep.outcomes), "ready": rep.count("ready"),
            "failed": [{"document_id": o.document_id, "error": o.error}
                       for o in rep.outcomes if o.result in ("failed", "stale")],
            "queue": q}
    if args.json:
        _print_json(data)
    else:
        print(f"{data['projected']} projected: {data['ready']} ready, "
              f"{len(data['failed'])} failed; queue: {q}")
        for f in data["failed"]:
            _err(f"document {f['document_id']}: {f['error']}")
    return EXIT_FAIL if data["failed"] else EXIT_OK


def cmd_search(args: argparse.Namespace) -> int:
    """``memlens search``."""
    if args.k <= 0:
        raise CliError("-k must be a positive number")
    svc = _service(args, **{"search.fusion": args.fusion})
    try:
        res = svc.search(args.query, mode=args.mode, k=args.k, repository=args.repository,
                         doc_type=args.doc_type, all_projects=args.all_projects)
        _remember(svc, args.query, args.mode)
    except (SearchError, EmbeddingError) as exc:
        raise CliError(str(exc), EXIT_FAIL) from None
    finally:
        svc.close()
    if args.json:
        _print_json(res.as_json())
        return EXIT_OK
    if not res.hits:
        print("no results")
    elif not res.matches:
        print("no matches")
    divider_done = False
    for i, h in enumerate(res.hits, 1):
        if not h.is_match and not divider_done:
            print("--- closest by meaning (no word of the query occurs in them) ---")
            divider_done = True
        ranks = " ".join(f"{k}={v}" for k, v in h.ranks.items() if v is not None)
        head = " > ".join(h.heading_path) or "(top)"
        print(f"{i:2}. {h.repository}/{h.path} #{h.ordinal} {head}  "
              f"[{h.score:.4f} {h.match} {ranks}]")
        print(f"    {_one_line_snippet(h.snippet, h.highlights)}")
    for n in res.notes:
        _err(n)
    return EXIT_OK


def _remember(svc: MemoryService, query: str, mode: str) -> None:
    """Keep the search for recall; a read-only or locked database is not an error here."""
    try:
        svc.remember_search(query, mode, "cli")
    except DatabaseError:
        pass
    except Exception as exc:  # history is best effort: the search has answered
        if type(exc).__module__.startswith("apsw"):
            return
        raise


def _one_line_snippet(snippet: str, spans: Sequence[Sequence[int]], width: int = 160) -> str:
    """Snippet on one line with highlights marked «like this» (text output only)."""
    out: list[str] = []
    pos = 0
    for a, b in spans:
        out.append(snippet[pos:a])
        out.append("«" + snippet[a:b] + "»")
        pos = b
    out.append(snippet[pos:])
    flat = " ".join("".join(out).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def cmd_docs(args: argparse.Namespace) -> int:
    """``memlens docs``."""
    svc = _service(args)
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
        _print_json({"documents": [d.as_json() for d in docs]})
        return EXIT_OK
    for d in docs:
        print(f"{d.status:<10} {d.chunk_count:>3} chunks {d.size:>7} B  {d.repository}/{d.path}"
              + (f"  ({d.error})" if d.error else ""))
    if not docs:
        print("no documents")
    return EXIT_OK


def cmd_history(args: argparse.Namespace) -> int:
    """``memlens history``."""
    svc = _service(args)
    try:
        try:
            doc = svc.locate(args.repository, args.path)
        except LookupError as exc:
            raise CliError(str(exc)) from None
        if doc is None:
            raise CliError(f"no document {args.path!r}"
                           + (f" in {args.repository}" if args.repository else ""), EXIT_FAIL)
        hist = svc.revisions(doc.id)
    finally:
        svc.close()
    if args.json:
        _print_json({"repository": doc.repository, "path": doc.path,
                     "revisions": [r.as_json() for r in hist]})
        return EXIT_OK
    print(f"{doc.repository}/{doc.path}")
    for r in hist:
        emb = r.embedder or "-"
        cfg = r.chunker.config or {}
        print(f"  #{r.number:<3} {r.change_kind:<8} {_ts(r.observed_at)}  "
              f"{r.content_hash[:12]}  {cfg.get('strategy', '-')}/{cfg.get('max_tokens', '-')}"
              f"/{cfg.get('overlap_tokens', '-')}  {emb}")
        if r.summary:
            print(f"       {r.summary}")
        if r.diff and not args.no_diff:
            for line in r.diff.splitlines():
                print(f"       {line}")
    return EXIT_OK


def cmd_chunks(args: argparse.Namespace) -> int:
    """``memlens chunks PATH``: chunk one file without storing it."""
    p: Path = args.path
    if not p.exists():
        raise CliError(f"{p}: no such file", EXIT_FAIL)
    if p.is_dir():
        raise CliError(f"{p}: is a folder; give a Markdown file", EXIT_FAIL)
    try:
        settings = load_settings(args.config,
                                 overrides={"db": str(args.db) if args.db else None})
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    cfg = _chunker_config(args, settings.chunker_dict())
    try:
        res, redacted = chunk_file(p, cfg, raw=args.raw)
    except SourceError as exc:
        raise CliError(f"{p}: {exc}", EXIT_FAIL) from None
    if args.json:
        _print_json({
            "file": str(p), "config": json.loads(cfg.canonical_json()),
            "redacted": not args.raw, "secrets_redacted": redacted,
            "front_matter": res.front_matter,
            "chunks": [{"ordinal": c.ordinal, "heading_path": list(c.heading_path),
                        "start_char": c.start_char, "end_char": c.end_char,
                        "start_byte": c.start_byte, "end_byte": c.end_byte, "tokens": c.tokens,
                        "overlap_chars": c.overlap_chars, "reason": c.reason, "hash": c.hash,
                        "text": c.text}
                       for c in res.chunks]})
        return EXIT_OK
    note = "raw, not redacted" if args.raw else f"redacted as stored: {redacted} secret(s)"
    print(f"{p}: {len(res.chunks)} chunks ({cfg.canonical_json()}; {note})")
    for c in res.chunks:
        first = next((ln for ln in c.text.splitlines() if ln.strip()), "")[:70]
        head = " > ".join(c.heading_path) or "(top)"
        print(f"  #{c.ordinal:<3} {c.tokens:>4} tok  chars {c.start_char}-{c.end_char}  "
              f"bytes {c.start_byte}-{c.end_byte}  {head}")
        print(f"        {first}")
    return EXIT_OK


def cmd_rechunk(args: argparse.Namespace) -> int:
    """``memlens rechunk``."""
    if not args.all and not args.path:
        raise CliError("give a document PATH or --all")
    if args.all and args.path:
        raise CliError("give either a PATH or --all, not both")
    svc = _service(args)
    try:
        cfg = _chunker_config(args, svc.settings.chunker_dict())
        doc_id = None
        if not args.all:
            try:
                doc = svc.locate(args.repository, args.path)
            except LookupError as exc:
                raise CliError(str(exc)) from None
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
        _print_json(data)
    else:
        print(f"{data['rechunked']} rechunked, {data['unchanged']} already used this config; "
              f"projection: {data['projection']['ready']} ready, "
              f"{data['projection']['failed']} failed")
    return EXIT_FAIL if data["projection"]["failed"] else EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    """``memlens doctor``."""
    svc = _service(args)
    try:
        checks, problems = svc.doctor()
    finally:
        svc.close()
    if args.json:
        _print_json({"ok": not problems, "checks": checks,
                     "problems": [p.as_json() for p in problems]})
    else:
        for p in problems:
            print(f"PROBLEM [{p.check}] {p.message}")
        print("ok" if not problems else f"{len(problems)} problem(s)")
    return EXIT_FAIL if problems else EXIT_OK


def cmd_config(args: argparse.Namespace) -> int:
    """``memlens config``."""
    ov = {"db": str(args.db) if args.db else None}
    try:
        s = load_settings(args.config, overrides=ov)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    data = s.as_json()
    data["chunker_choices"] = []
    if s.db_path.is_file():  # never create a database just to show settings
        svc = MemoryService(s)
        try:
            data["chunker_choices"] = [
                {"scope": scope, "target": target, "config": json.loads(cfg.canonical_json()),
                 "set_at": at} for scope, target, cfg, at in svc.chunker_choices()]
        except DatabaseError as exc:
            raise CliError(str(exc), EXIT_FAIL) from None
        finally:
            svc.close()
    if args.json:
        _print_json(data)
    else:
        print(f"config file: {data['config_file'] or '(none; defaults)'}")
        for k, v in data["settings"].items():
            print(f"  {k} = {v['value']!r}   ({v['source']})")
        for k, v in data["embedder_options"].items():
            print(f"  embedder.{k} = {v!r}   (file)")
        for c in data["chunker_choices"]:
            cfg = c["config"]
            print(f"  chunker for {c['target']} = {cfg['strategy']}/{cfg['max_tokens']}/"
                  f"{cfg['overlap_tokens']}   (rechunk, {c['scope']})")
    return EXIT_OK


COMMANDS = {
    "ingest": cmd_ingest, "project": cmd_project, "search": cmd_search, "docs": cmd_docs,
    "history": cmd_history, "chunks": cmd_chunks, "rechunk": cmd_rechunk,
    "doctor": cmd_doctor, "config": cmd_config,
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memlens`` console script."""
    parser = build_parser()
    args = parser.parse_args(_join_dash_values(_default_to_tui(
        parser, list(sys.argv[1:] if argv is None else argv))))
    if args.command is None:
        try:  # `memlens` alone opens the TUI
            args = parser.parse_args(["tui"])
        except SystemExit:
            pass
    cmd = args.command or "tui"
    handler = COMMANDS.get(cmd) or getattr(args, "handler", None)
    if handler is None:
        parser.error(f"unknown command {cmd}")
    try:
        return int(handler(args))
    except CliError as exc:
        _err(str(exc))
        return exc.code
    except (DatabaseError, ConfigError) as exc:
        _err(str(exc))
        return EXIT_USAGE
    except StorageError as exc:  # disk full, I/O error, damage found mid-way: one line
        _err(explain_storage_error(exc, getattr(args, "db", None)))
        return EXIT_FAIL
    except EmbedderUnavailable as exc:
        _err(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    # Under `python -m` this file runs as __main__ *and* is imported as memlens.tui.cli by
    # the subcommand modules; call the imported copy so their CliError is the one caught.
    from memlens.tui.cli import main as _main

    sys.exit(_main())
