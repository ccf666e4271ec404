"""``memlens purge``: apply the current redaction rules to everything already stored.

For a secret that got into the database before a rule could catch it: after the rules
are updated (a newer memlens), ``memlens purge`` re-redacts every document, revision
(snapshot, diff, summary) and chunk, rebuilds the search projection of what changed,
drops the cached vectors of the old text, then checkpoints the WAL and VACUUMs with
``secure_delete`` on, so no byte of the secret is left in the database file or its
-wal/-shm files. Exit 0 when done completely, 1 when something is left to do (another
process kept the WAL open, or a re-projection failed: the message says what to run).
"""

from __future__ import annotations

import json
import sys

from memlens.cli.common import EXIT_FAIL, EXIT_OK, Args, Command, db_options, service


def cmd_purge(args: Args) -> int:
    """``memlens purge``."""
    svc = service(args)
    try:
        svc.check_before_writing()
        out = svc.purge()
    finally:
        svc.close()
    data = out.as_json()
    if args.json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        print(f"{data['documents']} documents checked, {data['changed']} changed: "
              f"{data['revisions']} revisions and {data['chunks']} chunks rewritten; "
              f"projection: {data['projection']['ready']} ready, "
              f"{data['projection']['failed']} failed")
    if out.note:
        print(f"memlens: {out.note}", file=sys.stderr)
    elif not out.wal_truncated:
        print("memlens: the WAL is still in use by another process, so old pages may remain "
              "in it; stop watchers and the TUI and run `memlens purge` again", file=sys.stderr)
    elif not out.complete:
        print("memlens: some documents could not be re-projected; run `memlens project "
              "--force`", file=sys.stderr)
    return EXIT_OK if out.complete else EXIT_FAIL


command = Command(
    "purge", handler=cmd_purge,
    short_help="re-redact everything stored with the current rules; leave no trace",
    help="Apply the current redaction rules again to everything stored (documents, every "
    "revision's snapshot, diff and summary, chunks), re-project what changed and drop the "
    "cached vectors of the old text, then checkpoint the WAL and VACUUM with secure_delete, "
    "so a secret caught late leaves no byte behind. Stop watchers and the TUI first: a "
    "process that keeps the database open keeps old pages in the WAL.",
    params=db_options())
