"""The typed sections of :class:`memlens.core.config.settings.Settings` other than ``[search]``
(``settings.chunker``, ``.embedder``, ``.watch``, ``.retention``, ``.limits``,
``.projection``). Import them from :mod:`memlens.core.config.settings`, which re-exports them on
first use: a lexical search or ``memlens docs`` reads none of them, so it does not build
these classes (each frozen dataclass costs ~0.6 ms to create; benchmarks/cli_startup.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ChunkerSettings", "EmbedderSettings", "LimitsSettings", "ProjectionSettings",
           "RetentionSettings", "WatchSettings"]


@dataclass(frozen=True)
class ChunkerSettings:
    """``[chunker]``: how documents are split into chunks (``min_tokens``: the floor
    under which adjacent short sections are merged)."""

    strategy: str
    max_tokens: int
    overlap_tokens: int
    index_names: tuple[str, ...]
    estimator: str
    min_tokens: int = 50


@dataclass(frozen=True)
class EmbedderSettings:
    """``[embedder]``: the embedder name plus its free-form options."""

    name: str
    options: Mapping[str, Any]


@dataclass(frozen=True)
class WatchSettings:
    """``[watch]``: the file watcher."""

    enabled: bool
    debounce_ms: int
    stable_ms: int
    reconcile_seconds: int


@dataclass(frozen=True)
class RetentionSettings:
    """``[retention]``: how many revisions are kept, and for how long (0 = forever)."""

    max_revisions: int
    max_age_days: int


@dataclass(frozen=True)
class LimitsSettings:
    """``[limits]``: per-file bounds; a file over either fails alone with one line while
    the rest of its folder is stored."""

    max_file_bytes: int
    max_chunks_per_file: int


@dataclass(frozen=True)
class ProjectionSettings:
    """``[projection]``: retry back-off of failed projections; the cap on vectors embedded
    afresh per document revision (0: none; see ``projection.vectors.MAX_VECTORS_PER_DOCUMENT``)."""

    retry_base_seconds: float
    retry_max_seconds: float
    max_vectors_per_document: int = 256
