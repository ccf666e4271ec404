"""Chunker settings chosen by a rechunk, remembered where the user put them.

A manual rechunk records its configuration at the scope it was made for: one
document, one repository, or all documents. Later writes of a file (an edit, a
re-ingest, a restart) chunk with the *effective* configuration, resolved as

    document choice > repository choice > all-documents choice > settings
    (config file, environment, defaults)

and "reset" removes a choice, so the next broader one applies again. This module
owns the ``chunker_choices`` table; nothing else writes it.
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from memlens.core.chunking.chunker import ChunkerConfig
from memlens.core.store.db import rows, write_txn

SCOPES = ("document", "repository", "all")
_ALL_KEY = "*"


@dataclass(frozen=True)
class ChunkerChoice:
    """The chunker configuration a document uses, and where it comes from.

    ``origin`` is ``"document"``, ``"repository"``, ``"all"`` (a remembered choice)
    or ``"settings"`` (the configured default); ``set_at`` is when the choice was
    made (None for settings).
    """

    config: ChunkerConfig
    origin: str
    set_at: float | None = None

    @property
    def label(self) -> str:
        """``windows/120/30 (this document)`` and the like, for a status line."""
        where = {"document": "this document", "repository": "this repository",
                 "all": "all documents", "settings": "settings"}[self.origin]
        return f"{config_label(self.config)} ({where})"


def config_label(cfg: ChunkerConfig) -> str:
    """``strategy/max_tokens/overlap_tokens``, e.g. ``adaptive/400/80``."""
    return f"{cfg.strategy}/{cfg.max_tokens}/{cfg.overlap_tokens}"


def _key(scope: str, document_id: int | None, repository: str | None) -> str:
    if scope == "document":
        if document_id is None:
            raise ValueError("a document choice needs a document id")
        return str(int(document_id))
    if scope == "repository":
        if not repository:
            raise ValueError("a repository choice needs a repository")
        return repository
    if scope == "all":
        return _ALL_KEY
    raise ValueError(f"unknown scope {scope!r}; use one of {', '.join(SCOPES)}")


def remember(conn: apsw.Connection, scope: str, config: ChunkerConfig, now: float, *,
             document_id: int | None = None, repository: str | None = None,
             document_ids: list[int] | None = None) -> None:
    """Record ``config`` for a scope; a broader choice clears the narrower ones it covers.

    For ``repository`` pass the ids of that repository's documents as
    ``document_ids`` so their own choices are cleared; ``all`` clears every
    document and repository choice.
    """
    key = _key(scope, document_id, repository)
    with write_txn(conn):
        if scope == "all":
            conn.execute("DELETE FROM chunker_choices WHERE scope IN ('document','repository')")
        elif scope == "repository":
            conn.executemany("DELETE FROM chunker_choices WHERE scope='document' AND key=?",
                             [(str(i),) for i in document_ids or []])
        conn.execute(
            "INSERT INTO chunker_choices(scope, key, config, set_at) VALUES (?,?,?,?)"
            " ON CONFLICT(scope, key) DO UPDATE SET config=excluded.config,"
            " set_at=excluded.set_at", (scope, key, config.canonical_json(), now))


def forget(conn: apsw.Connection, scope: str, *, document_id: int | None = None,
           repository: str | None = None, document_ids: list[int] | None = None) -> bool:
    """Remove a remembered choice and, as :func:`remember` does, the narrower ones it
    covers: ``all`` forgets every choice; ``repository`` also the choices of its
    documents (pass their ids as ``document_ids``). Returns whether any was removed."""
    key = _key(scope, document_id, repository)
    with write_txn(conn):
        if scope == "all":
            conn.execute("DELETE FROM chunker_choices")
            return bool(conn.changes())
        conn.execute("DELETE FROM chunker_choices WHERE scope=? AND key=?", (scope, key))
        removed = bool(conn.changes())
        if scope == "repository":
            conn.executemany("DELETE FROM chunker_choices WHERE scope='document' AND key=?",
                             [(str(i),) for i in document_ids or []])
            removed = removed or bool(conn.changes())
        return removed


def effective(conn: apsw.Connection, document_id: int | None, repository: str,
              default: ChunkerConfig) -> ChunkerChoice:
    """The configuration a document of ``repository`` chunks with (``document_id``
    None: a file not stored yet)."""
    found = {(str(r["scope"]), str(r["key"])): r for r in rows(
        conn, "SELECT scope, key, config, set_at FROM chunker_choices WHERE"
        " (scope='document' AND key=?) OR (scope='repository' AND key=?) OR scope='all'",
        (str(document_id) if document_id is not None else "", repository))}
    for scope, key in (("document", str(document_id)), ("repository", repository),
                       ("all", _ALL_KEY)):
        r = found.get((scope, key))
        if r is not None:
            return ChunkerChoice(ChunkerConfig.from_json(str(r["config"])), scope,
                                 float(r["set_at"]))
    return ChunkerChoice(default, "settings")


def resolver(conn: apsw.Connection, repository: str, default: ChunkerConfig,
             ) -> dict[int | None, ChunkerChoice]:
    """Every remembered choice that applies in ``repository``, keyed by document id
    (None: the choice for a document that has no own choice), read once for an ingest."""
    out: dict[int | None, ChunkerChoice] = {None: effective(conn, None, repository, default)}
    for r in rows(conn, "SELECT c.key, c.config, c.set_at FROM chunker_choices c"
                  " JOIN memory_documents d ON c.scope='document' AND c.key=CAST(d.id AS TEXT)"
                  " WHERE d.repository=?", (repository,)):
        out[int(r["key"])] = ChunkerChoice(ChunkerConfig.from_json(str(r["config"])),
                                           "document", float(r["set_at"]))
    return out


def choices(conn: apsw.Connection) -> list[tuple[str, str, ChunkerConfig, float]]:
    """All remembered choices as (scope, key, config, set_at), for ``memlens config``."""
    return [(str(r["scope"]), str(r["key"]), ChunkerConfig.from_json(str(r["config"])),
             float(r["set_at"])) for r in rows(
        conn, "SELECT scope, key, config, set_at FROM chunker_choices ORDER BY scope, key")]
