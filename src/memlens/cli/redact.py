"""``memlens redact --check FILE|-``: show what redaction would replace in a file, and by
which rule (built-in or a ``[[redact.rules]]`` rule of the config file), without storing
anything and without printing a secret in full. Exit 0: nothing found; 1: something
would be redacted; 2: the file cannot be read or the config is bad."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from memlens.cli.common import EXIT_FAIL, EXIT_OK, Args, CliError, Command, db_options, print_json, service


def _read(name: str) -> str:
    if name == "-":
        return sys.stdin.buffer.read().decode("utf-8", errors="replace")
    p = Path(name)
    if p.is_dir():
        raise CliError(f"{p}: is a folder; give a file or - for standard input")
    try:
        return p.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise CliError(f"{p}: cannot read: {exc.strerror or exc}") from None


def cmd_redact(args: Args) -> int:
    """``memlens redact --check FILE|-``."""
    text = _read(args.check)
    svc = service(args)  # settings and the door only: no database is opened
    try:
        found = svc.check_redaction(text)
    finally:
        svc.close()
    if args.json:
        print_json({"file": args.check, "count": len(found),
                    "findings": [f.as_json() for f in found]})
        return EXIT_FAIL if found else EXIT_OK
    if not found:
        print(f"{args.check}: nothing would be redacted")
        return EXIT_OK
    for f in found:
        print(f"{args.check}:{f.line}:{f.column}  [REDACTED:{f.kind}]  ({f.source})"
              f"  {f.masked} ({f.length} chars)")
    user = sum(f.source == "user" for f in found)
    word = "secret" if len(found) == 1 else "secrets"
    print(f"{len(found)} {word} would be redacted ({len(found) - user} by built-in rules,"
          f" {user} by user rules)")
    return EXIT_FAIL


command = Command(
    "redact", handler=cmd_redact, short_help="show what redaction would replace in a file",
    help="Show what redaction would replace in FILE (or standard input with -), and by which "
    "rule: built-in, or a [[redact.rules]] rule of the config file. Each secret is shown "
    "masked (its first characters and its length). Nothing is stored. Exit 0 when nothing "
    "would be redacted, 1 when something would.",
    params=[
        click.Option(["--check"], metavar="FILE|-", required=True,
                     help="the file to check (- reads standard input)"),
        *db_options(),
    ])
