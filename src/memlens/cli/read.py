"""``memlens search``, ``docs``, ``history``, ``chunks``, ``rechunk``, ``doctor`` and
``config``: the commands that read (or re-chunk) what is stored. Split out of
:mod:`memlens.cli.main`, which parses the arguments and dispatches here.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import memlens.core.types as T
from memlens.cli.main import (
    EXIT_FAIL,
    EXIT_OK,
    CliError,
    _chunker_config,
    _err,
    _print_json,
    _service,
    _ts,
)
from memlens.cli.search_text import print_result
from memlens.core.service import MemoryService, chunk_file, load_settings
from memlens.core.types import (
    ConfigError,
    DatabaseError,
    SearchError,
    SourceError,
    StorageError,
)


def cmd_search(args: argparse.Namespace) -> int:
    """``memlens search``."""
    if args.k <= 0:
        raise CliError("-k must be a positive number")
    svc = _service(args, **{"search.fusion": args.fusion})
    try:
        res = svc.search(args.query, mode=args.mode, k=args.k, repository=args.repository,
                         doc_type=args.doc_type, all_projects=args.all_projects)
        _remember(svc, args.query, args.mode)
    except (SearchError, T.EmbeddingError) as exc:
        raise CliError(str(exc), EXIT_FAIL) from None
    finally:
        svc.close()
    print_result(res.as_json(), args.json)
    return EXIT_OK


def _remember(svc: MemoryService, query: str, mode: str) -> None:
    """Keep the search for recall; a read-only or locked database is not an error here."""
    try:
        svc.remember_search(query, mode, "cli")
    except (DatabaseError, StorageError):
        pass  # history is best effort: the search has answered


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
        print(f"{d.status:<10} {d.chunk_count:>3} {'chunk ' if d.chunk_count == 1 else 'chunks'}"
              f" {d.size:>7} B  {d.repository}/{d.path}"
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
        cfg = r.chunker.config.label if r.chunker.config else "-/-/-"
        print(f"  #{r.number:<3} {r.change_kind:<8} {_ts(r.observed_at)}  "
              f"{r.content_hash[:12]}  {cfg}  {emb}")
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
    word = "chunk" if len(res.chunks) == 1 else "chunks"
    print(f"{p}: {len(res.chunks)} {word} ({cfg.canonical_json()}; {note})")
    for c in res.chunks:
        first = next((ln for ln in c.text.splitlines() if ln.strip()), "")[:70]
        head = " > ".join(c.heading_path) or "(top)"
        print(f"  #{c.ordinal:<3} {c.tokens:>4} tok  chars {c.start_char}-{c.end_char}  "
              f"bytes {c.start_byte}-{c.end_byte}  {head}")
        print(f"        why: {c.reason}")
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
    if data.get("stopped"):
        _err(str(data["stopped"]))
    return EXIT_FAIL if data["projection"]["failed"] or data.get("stopped") else EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    """``memlens doctor``."""
    svc = _service(args)
    try:
        checks, problems = svc.doctor()
        notices = [] if any(p.check == "sqlite_integrity" for p in problems) \
            else svc.doctor_notices()
    finally:
        svc.close()
    if args.json:
        _print_json({"ok": not problems, "checks": checks,
                     "problems": [p.as_json() for p in problems], "notices": notices})
    else:
        for p in problems:
            print(f"PROBLEM [{p.check}] {p.message}")
        for n in notices:
            print(f"note: {n}")
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
