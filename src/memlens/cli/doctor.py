"""``memlens doctor``: check database consistency and the invariants (exit 1 on problems)."""

from __future__ import annotations

import click

from memlens.cli.common import EXIT_FAIL, EXIT_OK, Args, Command, db_options, print_json, service


def cmd_doctor(args: Args) -> int:
    """``memlens doctor``."""
    svc = service(args)
    try:
        checks, problems = svc.doctor(lag_minutes=args.lag_minutes)
        notices = [] if any(p.check == "sqlite_integrity" for p in problems) \
            else svc.doctor_notices()
    finally:
        svc.close()
    if args.json:
        print_json({"ok": not problems, "checks": checks,
                    "problems": [p.as_json() for p in problems], "notices": notices})
    else:
        for p in problems:
            print(f"PROBLEM [{p.check}] {p.message}" + (f" — fix: {p.fix}" if p.fix else ""))
        for n in notices:
            print(f"note: {n}")
        print("ok" if not problems else f"{len(problems)} problem(s)")
    return EXIT_FAIL if problems else EXIT_OK


command = Command(
    "doctor", handler=cmd_doctor, short_help="check database consistency",
    help="integrity_check, FTS5 integrity (rank 1), vectors == nodes, no orphan junction rows, "
    "active revisions projected; then the invariants: watcher_heartbeat, repeated_failures, "
    "projection_lag, schema_skew (each with its fix). Exit 1 on problems.",
    params=[
        click.Option(["--lag-minutes"], type=click.FloatRange(min=0), default=None,
                     help="projection_lag: a change waiting longer than this (default 10)"),
        *db_options(),
    ])
