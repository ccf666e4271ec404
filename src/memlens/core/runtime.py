"""The plumbing of :class:`memlens.core.service.MemoryService`: settings, the
embedder, one SQLite connection per thread. Core-internal (the UI imports only
``memlens.core.service``); split out to keep modules small.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

from memlens.core.config.settings import Settings, load_settings
from memlens.core.store import db as dbm

if TYPE_CHECKING:
    from memlens.core.chunking.chunker import ChunkerConfig
    from memlens.core.embedders.registry import Embedder
# The chunker, embedders, install key and store are imported where first used, so a
# short read-only command (``memlens search --mode lexical``, ``docs``) does not pay
# for them (benchmarks/cli_startup.py).

Clock = Callable[[], float]


class ServiceBase:
    """Settings, clock, embedder and per-thread connections of a service."""

    def __init__(self, settings: Settings | None = None, *, db_path: Path | None = None,
                 clock: Clock | None = None, embedder: Embedder | None = None,
                 install_key: bytes | None = None, create: bool = True) -> None:
        self.settings = settings or load_settings()
        from memlens.core.redact.user_rules import install

        install(self.settings.redact_rules)  # every redaction of this process applies them
        self.create = create  # False: a missing database is an error, not created
        self.db_path = Path(db_path) if db_path else self.settings.db_path
        self.clock: Clock = clock or time.time  # seconds since the epoch
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self._local = threading.local()
        self._install_key = install_key
        self._conns: list[apsw.Connection] = []
        self._conns_lock = threading.Lock()

    # -- plumbing ---------------------------------------------------------
    def conn(self) -> apsw.Connection:
        """This thread's connection (opened and migrated on first use)."""
        c = getattr(self._local, "conn", None)
        if c is None:
            c = dbm.connect(self.db_path, create=self.create)
            self._local.conn = c
            with self._conns_lock:
                self._conns.append(c)
        return c

    def open(self) -> None:
        """Open (and migrate) the database now, so a broken or too-new file fails
        before a long-running UI starts; the connection is then released.

        Raises:
            DatabaseError: The file is not a usable SQLite database.
            SchemaTooNew: The file was written by a newer memlens.
        """
        self.conn()
        self.release_thread_connection()

    def release_thread_connection(self) -> None:
        """Close the calling thread's connection (worker threads call this before they end)."""
        c = getattr(self._local, "conn", None)
        if c is None:
            return
        self._local.conn = None
        with self._conns_lock:
            if c in self._conns:
                self._conns.remove(c)
        try:
            c.close()
        except apsw.Error:
            pass

    def close(self) -> None:
        """Close every connection this service opened."""
        with self._conns_lock:
            for c in self._conns:
                try:
                    c.close()
                except apsw.Error:
                    pass
            self._conns.clear()
        self._local = threading.local()

    def _writable(self) -> apsw.Connection:
        """This thread's connection, for a write.

        Raises:
            DatabaseReadOnly: The database file or its folder is not writable.
        """
        c = self.conn()
        if dbm.is_readonly(c):
            raise dbm.DatabaseReadOnly(
                f"{self.db_path} is read-only here: reading works, but this command writes; "
                "it needs write permission on the file and its folder")
        return c

    def chunker_config(self) -> ChunkerConfig:
        """The configured chunker (validated)."""
        from memlens.core.chunking.chunker import ChunkerConfig

        cfg = ChunkerConfig.from_dict(self.settings.chunker_dict())
        cfg.validate()
        return cfg

    @property
    def embedder(self) -> Embedder:
        """The configured embedder. ``auto`` (the default) is the shipped int8 ONNX
        all-MiniLM-L6-v2 (``minilm``), else the shipped static model, else hashing —
        the first one this install can run."""
        with self._embedder_lock:
            if self._embedder is None:
                from memlens.core.embedders.registry import EmbedderUnavailable, make_embedder

                name = self.settings.embedder.name
                opts = dict(self.settings.embedder.options)
                if name == "auto":
                    for candidate, copts in (("minilm", opts), ("static", {})):
                        try:
                            self._embedder = make_embedder(candidate, copts)
                            break
                        except EmbedderUnavailable:
                            continue
                    else:
                        self._embedder = make_embedder("hashing", {})
                else:
                    self._embedder = make_embedder(name, opts)
            assert self._embedder is not None
            return self._embedder

    def install_key(self) -> bytes:
        """The per-install key for keyed source hashes."""
        if self._install_key is None:
            from memlens.core.ingest.installkey import load_install_key

            self._install_key = load_install_key()
        return self._install_key
