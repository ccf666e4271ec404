"""The last searches people made, kept in the database (``[search] history``).

Only finished searches are kept — a CLI ``memlens search``, a TUI search whose hit was
opened or whose screen was closed — never every keystroke of a live search. Queries are
redacted before they are stored, like everything else. The TUI recalls them with ``↑``
in an empty search box, and a rechunk preview replays them against the proposed
chunks. ``history = 0`` turns it off (and :func:`forget_all` empties it). This module
owns the ``search_history`` table.
"""

from __future__ import annotations

import re
import sys

import apsw

from memlens.core.store.rows import rows, write_txn


def record(conn: apsw.Connection, query: str, mode: str, source: str, now: float,
           keep: int) -> bool:
    """Store one finished search (redacted), keeping the newest ``keep``; returns
    whether it was stored (not when ``keep`` is 0, the query is blank, or it repeats
    the newest entry)."""
    text = query.strip()
    if needs_redaction(text):
        from memlens.core.redact.engine import redact  # on use: plain-word queries never load the rules

        text = redact(text).text
    if keep <= 0 or not text:
        return False
    with write_txn(conn):
        last = rows(conn, "SELECT query, mode FROM search_history ORDER BY id DESC LIMIT 1")
        if last and last[0]["query"] == text and last[0]["mode"] == mode:
            return False
        conn.execute("INSERT INTO search_history(query, mode, source, at) VALUES (?,?,?,?)",
                     (text, mode, source, now))
        conn.execute("DELETE FROM search_history WHERE id NOT IN"
                     " (SELECT id FROM search_history ORDER BY id DESC LIMIT ?)", (keep,))
    return True


# Up to 16 words of 1-16 ASCII letters, digits or "_", single spaces: no rule of
# `memlens.core.redact.engine` can match such text unless a key word is in it (keyed forms need
# "=", ":", quotes or "password is ..."; token rules need 20+ characters, the entropy
# fallback 24+). tests/test_search_history.py checks it against every labelled set and
# by hypothesis.
_PLAIN = re.compile(r"[A-Za-z0-9_]{1,16}(?: [A-Za-z0-9_]{1,16}){0,15}")
_KEY_WORDS = ("pass", "pwd", "secret", "token", "key", "sig", "login", "auth", "bearer",
              "basic", "cookie", "session", "cred", "bot", "user", "private")


def needs_redaction(text: str) -> bool:
    """False only for text that the redaction rules provably leave as it is (a few
    plain words, no key word, no user rule installed), so that storing it need not load the ~160 rules
    (≈20 ms of a CLI start); anything else goes through `memlens.core.redact.engine`."""
    if _PLAIN.fullmatch(text) is None:
        return True
    # A [[redact.rules]] pattern may match plain words. Rules are installed only through
    # that module, so when it was never imported (the one-shot search runs without a config
    # file) none are: no import here.
    user_rules = sys.modules.get("memlens.core.redact.user_rules")
    if user_rules is not None and user_rules.active():
        return True
    low = text.lower()
    return any(k in low for k in _KEY_WORDS)


def recent(conn: apsw.Connection, limit: int = 50) -> list[str]:
    """Distinct queries, newest first."""
    out: list[str] = []
    for r in rows(conn, "SELECT query FROM search_history ORDER BY id DESC LIMIT ?",
                  (max(0, limit) * 4,)):
        q = str(r["query"])
        if q not in out:
            out.append(q)
        if len(out) >= limit:
            break
    return out


def forget_all(conn: apsw.Connection) -> int:
    """Delete every stored search; returns how many there were."""
    with write_txn(conn):
        conn.execute("DELETE FROM search_history")
        return int(conn.changes())
