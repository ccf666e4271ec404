"""The redaction fingerprint: a short name for the rules a text was redacted with.

It has two parts, ``rules=<built-in>`` and, when the user added rules in the config file,
``;user=<user>`` (:func:`memlens.core.redact.user_rules.fingerprint`). The built-in part
is a digest of this package's rule code (every module but the evaluator): it changes with
every release whose rules differ, without anyone having to remember to bump a version
number (a comment edit changes it too: that costs one extra re-redaction pass, never a
missed one). Where the sources cannot be read (a build without ``.py`` files), the
installed memlens version stands in for them.

The ingest flow stores the fingerprint with the database; when the current one differs,
everything stored is redacted again and every file re-read (docs/reliability.md,
"Rule changes").
"""

from __future__ import annotations

import functools
import hashlib
from importlib import resources

from memlens.core.redact import user_rules

__all__ = ["builtin", "current"]

# Not rules: the evaluation harness and the command-line entry.
_NOT_RULES = frozenset({"evaluate.py", "__main__.py"})


@functools.cache
def builtin() -> str:
    """16 hex digits naming the built-in rules (cached for the process)."""
    h = hashlib.sha256()
    try:
        files = sorted((f for f in resources.files("memlens.core.redact").iterdir()
                        if f.name.endswith(".py") and f.name not in _NOT_RULES),
                       key=lambda f: f.name)
        for f in files:
            h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
        if not files:
            raise FileNotFoundError("no rule sources")
    except OSError:
        from importlib.metadata import PackageNotFoundError, version

        try:
            h.update(f"memlens-{version('memlens')}".encode())
        except PackageNotFoundError:
            h.update(b"memlens-unknown")
    return h.hexdigest()[:16]


def current() -> str:
    """The fingerprint of the rules redaction applies here: the built-in rules and the
    active user rules (:func:`memlens.core.redact.user_rules.active`)."""
    user = user_rules.fingerprint(user_rules.active())
    return f"rules={builtin()}" + (f";user={user}" if user else "")
