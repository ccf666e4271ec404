"""``memlens chunks FILE``: show how a Markdown file is chunked (nothing is stored)."""

from __future__ import annotations

import json
from pathlib import Path

import click

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
    print_json,
)
from memlens.core.service import chunk_file, load_settings
from memlens.core.types import ConfigError, SourceError


def cmd_chunks(args: Args) -> int:
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
    cfg = chunker_config(args, settings.chunker_dict())
    try:
        res, redacted = chunk_file(p, cfg, raw=args.raw, settings=settings)
    except SourceError as exc:
        raise CliError(f"{p}: {exc}", EXIT_FAIL) from None
    if args.json:
        print_json({
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


command = Command(
    "chunks", handler=cmd_chunks, short_help="show how a Markdown file is chunked",
    help="Chunk one Markdown file (nothing is stored) and print ordinal, heading path, spans, "
    "tokens and first line. The text is redacted first, as ingest does, so you see what would "
    "be stored.",
    params=[
        click.Argument(["path"], type=PATH),
        click.Option(["--raw"], is_flag=True,
                     help="do not redact: show the original text (secrets included)"),
        *chunker_options(),
        *db_options(),
    ])
