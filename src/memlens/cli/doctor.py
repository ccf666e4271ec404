"""``memlens doctor``: check database consistency and the invariants (exit 1 on problems)."""

from __future__ import annotations

from pathlib import Path

import click

from memlens.cli.common import EXIT_FAIL, EXIT_OK, Args, Command, db_options, print_json, service


def cmd_doctor(args: Args) -> int:
    """``memlens doctor``."""
    if args.probe:
        return _probe(args)
    svc = service(args)
    try:
        checks, problems = svc.doctor()
        damaged = any(p.check == "sqlite_integrity" for p in problems)
        if not damaged:  # then the invariants, each with its fix
            names, found = svc.invariants(lag_minutes=args.lag_minutes)
            checks, problems = [*checks, *names], [*problems, *found]
        notices = [] if damaged else svc.doctor_notices()
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


def _probe(args: Args) -> int:
    """``memlens doctor --probe``: the end-to-end probe (:mod:`memlens.cli.probe`)."""
    from memlens.cli.probe import run_probe

    svc = service(args)
    try:
        config = getattr(args, "config", None)
        probe = run_probe(svc, Path(config) if config else None)
    finally:
        svc.close()
    problems = [{"check": f"probe.{s.name}", "message": s.detail, "fix": _FIXES.get(s.name)}
                for s in probe.failed]
    if args.json:
        print_json({"ok": probe.ok, "checks": ["probe"], "problems": problems, "notices": [],
                    "probe": probe.as_json()})
    else:
        print(f"probe: a temporary repository in a separate database file, with this "
              f"database's settings (embedder {probe.embedder or '?'})")
        for s in probe.steps:
            mark = "ok" if s.ok else ("--" if s.detail.startswith("skipped:") else "FAIL")
            print(f"  {s.name:<15} {mark:<4} {s.ms:8.1f} ms  {s.detail}")
        for p in problems:
            print(f"PROBLEM [{p['check']}] {p['message']}"
                  + (f" — fix: {p['fix']}" if p["fix"] else ""))
        total = sum(s.ms for s in probe.steps)
        print(f"probe ok in {total:.0f} ms" if probe.ok else f"{len(problems)} problem(s)")
    return EXIT_OK if probe.ok else EXIT_FAIL


_FIXES = {
    "database": "make the database file and its folder writable by you (or pass another --db)",
    "embedder": "check [embedder] in the config (`memlens config`) or MEMLENS_EMBEDDER; the "
                "model must exist and load",
    "search_vector": "check the embedder (`memlens config`); `memlens project --force` then",
}


command = Command(
    "doctor", handler=cmd_doctor, short_help="check database consistency",
    help="integrity_check, FTS5 integrity (rank 1), vectors == nodes, no orphan junction rows, "
    "active revisions projected; then the invariants: watcher_heartbeat, repeated_failures, "
    "projection_lag, schema_skew (each with its fix). Exit 1 on problems.",
    params=[
        click.Option(["--lag-minutes"], type=click.FloatRange(min=0), default=None,
                     help="projection_lag: a change waiting longer than this (default 10)"),
        click.Option(["--probe"], is_flag=True,
                     help="instead of the checks, an end-to-end probe: a temporary note "
                     "written, ingested, searched, edited and deleted in a separate "
                     "temporary database with these settings, each step timed"),
        *db_options(),
    ])
