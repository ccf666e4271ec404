"""Settings: defaults < TOML config file < ``MEMLENS_*`` environment < flags.

The config file lives at ``<user config dir>/memlens/config.toml`` (platformdirs),
or wherever ``MEMLENS_CONFIG`` points. Every effective value remembers where it
came from so ``memlens config`` can say so.

Example file::

    db = "~/.local/share/memlens/memlens.db"
    roots = ["~/.claude/projects"]

    [chunker]
    strategy = "adaptive"
    max_tokens = 400
    overlap_tokens = 80
    min_tokens = 50          # floor: shorter adjacent sections are merged

    [embedder]
    name = "static"          # or "hashing", "model2vec", "openai", "sentence-transformers"
    # options for the embedder:
    # path = "/models/potion-base-8M"
    # base_url = "http://127.0.0.1:11434/v1"

    [watch]
    enabled = true
    debounce_ms = 50
    reconcile_seconds = 60

    [retention]
    max_revisions = 50
    max_age_days = 0          # 0 = keep forever

    [limits]
    max_file_bytes = 8388608  # a larger file fails alone with one line
    max_chunks_per_file = 5000

    [[redact.rules]]          # a secret format the built-in rules do not know
    name = "sonar-token"      # the marker: [REDACTED:sonar-token]
    pattern = "[0-9A-Za-z]{40}"
    keywords = ["sonar"]      # optional: one must be on the match's line, within 80 chars
    # min_entropy = 3.0       # optional: bits per character of the secret
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memlens.core.config.sections import ChunkerSettings as ChunkerSettings
    from memlens.core.config.sections import EmbedderSettings as EmbedderSettings
    from memlens.core.config.sections import LimitsSettings as LimitsSettings
    from memlens.core.config.sections import ProjectionSettings as ProjectionSettings
    from memlens.core.config.sections import RetentionSettings as RetentionSettings
    from memlens.core.config.sections import WatchSettings as WatchSettings
    from memlens.core.redact.user_rules import UserRule

# tomllib is imported when a config file is read and platformdirs when a default path is
# needed: a command given --db and no config file pays for neither (benchmarks/cli_startup.py).


class ConfigError(Exception):
    """The configuration is invalid; the message names the file, line and key."""


@dataclass(frozen=True)
class SearchSettings:
    """``[search]``: how hybrid search fuses its two signals, and project preference.

    ``fusion`` is ``auto`` or one of :data:`FUSIONS`; the weights multiply the (normalised)
    lexical and vector signals; ``candidates`` is the depth read from each side;
    semantic-only hits need a cosine of at least mean + ``semantic_min_z`` * std of
    the query's vector candidates; ``prefer_current_project`` ranks the memory of
    the project the user is in (from the working directory) first; ``history`` is how
    many finished searches are kept for recall and rechunk previews (0: none);
    ``lexical_cache_mb`` bounds the RAM a long-lived process (TUI, MCP) spends on the
    bm25 postings of frequent phrases (:mod:`memlens.core.search.lexical_cache`; 0: off).
    """

    fusion: str = "auto"
    lexical_weight: float = 1.0
    vector_weight: float = 0.5
    rrf_k: float = 60.0
    candidates: int = 50
    semantic_min_z: float = 1.0
    adapt_power: float = 2.0
    adapt_top: int = 3
    adapt_knee: float = 0.6
    prefer_current_project: bool = True
    history: int = 100
    lexical_cache_mb: int = 128

    def fusion_options(self, embedder: str | None = None) -> dict[str, Any]:
        """Keyword arguments for :func:`memlens.core.search.engine.hybrid`.

        ``auto`` resolves to ``evidence`` (issue 46: chosen across the memory sets and
        LoCoMo at once, ``benchmarks/fusion_cv.py``), except with the ``hashing`` embedder
        (name ``embedder``), whose weak vector side hurts once normalised: ``convex`` there
        (measured on the dev corpus, ``docs/research/search-fusion.md``).
        """
        fusion = self.fusion
        if fusion == "auto":
            fusion = "convex" if embedder == "hashing" else "evidence"
        return {"fusion": fusion, "lexical_weight": self.lexical_weight,
                "vector_weight": self.vector_weight, "rrf_k": self.rrf_k,
                "candidates": self.candidates, "semantic_min_z": self.semantic_min_z,
                "adapt_power": self.adapt_power, "adapt_top": self.adapt_top,
                "adapt_knee": self.adapt_knee}


# key -> (type, default). Nested tables use dotted keys.
_SCHEMA: dict[str, tuple[type, Any]] = {
    "db": (str, None),
    "roots": (list, []),
    "repository": (str, None),
    "chunker.strategy": (str, "adaptive"),
    "chunker.max_tokens": (int, 400),
    "chunker.overlap_tokens": (int, 80),
    "chunker.min_tokens": (int, 50),
    "chunker.index_names": (list, ["MEMORY.md"]),
    "chunker.estimator": (str, "chars4"),
    "embedder.name": (str, "auto"),
    "watch.enabled": (bool, True),
    "watch.debounce_ms": (int, 50),
    "watch.stable_ms": (int, 100),
    "watch.reconcile_seconds": (int, 60),
    "retention.max_revisions": (int, 50),
    "retention.max_age_days": (int, 0),
    "limits.max_file_bytes": (int, 8 * 1024 * 1024),
    "limits.max_chunks_per_file": (int, 5000),
    "projection.retry_base_seconds": (float, 5.0),
    "projection.retry_max_seconds": (float, 3600.0),
    "projection.max_vectors_per_document": (int, 256),
    # [search]: the defaults are SearchSettings' own (one place).
    "search.fusion": (str, SearchSettings.fusion),
    "search.lexical_weight": (float, SearchSettings.lexical_weight),
    "search.vector_weight": (float, SearchSettings.vector_weight),
    "search.rrf_k": (float, SearchSettings.rrf_k),
    "search.candidates": (int, SearchSettings.candidates),
    "search.semantic_min_z": (float, SearchSettings.semantic_min_z),
    "search.adapt_power": (float, SearchSettings.adapt_power),
    "search.adapt_top": (int, SearchSettings.adapt_top),
    "search.adapt_knee": (float, SearchSettings.adapt_knee),
    "search.prefer_current_project": (bool, SearchSettings.prefer_current_project),
    "search.history": (int, SearchSettings.history),
    "search.lexical_cache_mb": (int, SearchSettings.lexical_cache_mb),
}
FUSIONS = ("evidence", "adaptive", "convex", "minmax", "zscore", "rrf")
FUSION_CHOICES = ("auto", *FUSIONS)
# Free-form options passed to the embedder (base_url, model, path, dim, ...).
_EMBEDDER_OPTION_TYPES = (str, int, float, bool)

_ENV: dict[str, str] = {
    "MEMLENS_DB": "db",
    "MEMLENS_ROOTS": "roots",
    "MEMLENS_REPOSITORY": "repository",
    "MEMLENS_STRATEGY": "chunker.strategy",
    "MEMLENS_MAX_TOKENS": "chunker.max_tokens",
    "MEMLENS_OVERLAP_TOKENS": "chunker.overlap_tokens",
    "MEMLENS_MIN_TOKENS": "chunker.min_tokens",
    "MEMLENS_EMBEDDER": "embedder.name",
    "MEMLENS_WATCH": "watch.enabled",
    "MEMLENS_DEBOUNCE_MS": "watch.debounce_ms",
    "MEMLENS_RECONCILE_SECONDS": "watch.reconcile_seconds",
    "MEMLENS_MAX_REVISIONS": "retention.max_revisions",
    "MEMLENS_FUSION": "search.fusion",
    "MEMLENS_MAX_FILE_BYTES": "limits.max_file_bytes",
    "MEMLENS_MAX_CHUNKS_PER_FILE": "limits.max_chunks_per_file",
}


def default_config_path() -> Path:
    """Where the config file is looked for (``MEMLENS_CONFIG`` overrides)."""
    env = os.environ.get("MEMLENS_CONFIG")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return platformdirs.user_config_path("memlens") / "config.toml"


def default_db_path() -> Path:
    """The default database file in the user data folder."""
    import platformdirs

    return platformdirs.user_data_path("memlens") / "memlens.db"


@dataclass
class Settings:
    """Effective settings plus the origin of each value.

    Read values through the typed sections (``settings.chunker.max_tokens``,
    ``settings.watch.enabled``, ...); ``values``/``origins`` (dotted keys) exist
    for ``memlens config`` to print where each value came from.
    """

    values: dict[str, Any]
    origins: dict[str, str]
    embedder_options: dict[str, Any] = field(default_factory=dict)
    config_path: Path | None = None
    redact_rules: tuple[UserRule, ...] = ()  # [[redact.rules]] (memlens.core.redact.user_rules)

    @property
    def db_path(self) -> Path:
        """The database path (expanded)."""
        v = self.values.get("db")
        return Path(v).expanduser() if v else default_db_path()

    @property
    def repository(self) -> str | None:
        """Repository name for a single configured memory folder, if set."""
        v = self.values.get("repository")
        return str(v) if v else None

    @property
    def chunker(self) -> ChunkerSettings:
        """The ``[chunker]`` section."""
        from memlens.core.config.sections import ChunkerSettings

        v = self.values
        return ChunkerSettings(
            strategy=str(v["chunker.strategy"]), max_tokens=int(v["chunker.max_tokens"]),
            overlap_tokens=int(v["chunker.overlap_tokens"]),
            index_names=tuple(str(x) for x in v["chunker.index_names"]),
            estimator=str(v["chunker.estimator"]), min_tokens=int(v["chunker.min_tokens"]))

    @property
    def embedder(self) -> EmbedderSettings:
        """The ``[embedder]`` section."""
        from memlens.core.config.sections import EmbedderSettings

        return EmbedderSettings(name=str(self.values["embedder.name"]),
                                options=dict(self.embedder_options))

    @property
    def watch(self) -> WatchSettings:
        """The ``[watch]`` section."""
        from memlens.core.config.sections import WatchSettings

        v = self.values
        return WatchSettings(enabled=bool(v["watch.enabled"]),
                             debounce_ms=int(v["watch.debounce_ms"]),
                             stable_ms=int(v["watch.stable_ms"]),
                             reconcile_seconds=int(v["watch.reconcile_seconds"]))

    @property
    def retention(self) -> RetentionSettings:
        """The ``[retention]`` section."""
        from memlens.core.config.sections import RetentionSettings

        return RetentionSettings(max_revisions=int(self.values["retention.max_revisions"]),
                                 max_age_days=int(self.values["retention.max_age_days"]))

    @property
    def limits(self) -> LimitsSettings:
        """The ``[limits]`` section."""
        from memlens.core.config.sections import LimitsSettings

        return LimitsSettings(max_file_bytes=int(self.values["limits.max_file_bytes"]),
                              max_chunks_per_file=int(self.values["limits.max_chunks_per_file"]))

    @property
    def projection(self) -> ProjectionSettings:
        """The ``[projection]`` section."""
        from memlens.core.config.sections import ProjectionSettings

        v = self.values
        return ProjectionSettings(
            retry_base_seconds=float(v["projection.retry_base_seconds"]),
            retry_max_seconds=float(v["projection.retry_max_seconds"]),
            max_vectors_per_document=int(v["projection.max_vectors_per_document"]))

    @property
    def search(self) -> SearchSettings:
        """The ``[search]`` section."""
        v = self.values
        return SearchSettings(fusion=str(v["search.fusion"]),
                              lexical_weight=float(v["search.lexical_weight"]),
                              vector_weight=float(v["search.vector_weight"]),
                              rrf_k=float(v["search.rrf_k"]),
                              candidates=int(v["search.candidates"]),
                              semantic_min_z=float(v["search.semantic_min_z"]),
                              adapt_power=float(v["search.adapt_power"]),
                              adapt_top=int(v["search.adapt_top"]),
                              adapt_knee=float(v["search.adapt_knee"]),
                              prefer_current_project=bool(v["search.prefer_current_project"]),
                              history=int(v["search.history"]),
                              lexical_cache_mb=int(v["search.lexical_cache_mb"]))

    @property
    def roots(self) -> list[Path]:
        """Configured memory roots (expanded)."""
        return [Path(r).expanduser() for r in self.values.get("roots") or []]

    def chunker_dict(self) -> dict[str, Any]:
        """Chunker config as a dict for :meth:`ChunkerConfig.from_dict`."""
        return {
            "strategy": self.values["chunker.strategy"],
            "max_tokens": self.values["chunker.max_tokens"],
            "overlap_tokens": self.values["chunker.overlap_tokens"],
            "min_tokens": self.values["chunker.min_tokens"],
            "index_names": list(self.values["chunker.index_names"]),
            "estimator": self.values["chunker.estimator"],
        }

    def as_json(self) -> dict[str, Any]:
        """Effective settings with origins, for ``memlens config --json``."""
        out: dict[str, Any] = {
            "config_file": str(self.config_path) if self.config_path else None,
            "settings": {
                k: {"value": self.values[k], "source": self.origins[k]}
                for k in sorted(self.values)
            },
            "embedder_options": {
                k: ("***" if "key" in k.lower() else v)
                for k, v in sorted(self.embedder_options.items())
            },
            "redact_rules": [r.as_json() for r in self.redact_rules],
        }
        out["settings"]["db"]["value"] = str(self.db_path)
        return out


def _line_of(text: str, key: str) -> int | None:
    leaf = key.split(".")[-1]
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith(leaf) and s[len(leaf):].lstrip().startswith("="):
            return i
    return None


def _coerce(key: str, value: Any, where: str) -> Any:
    typ, _ = _SCHEMA[key]
    if typ is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)  # and range-checked below (an integer skipped the checks)
    if typ is int and isinstance(value, bool):
        raise ConfigError(f"{where}: `{key}` must be an integer, got {value!r}")
    if not isinstance(value, typ):
        tname = typ.__name__
        raise ConfigError(f"{where}: `{key}` must be {tname}, got {value!r}")
    _check_value(key, value, where)
    if key == "roots" or key == "chunker.index_names":
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise ConfigError(f"{where}: `{key}` must be a list of strings")
    return value


def _check_value(key: str, value: Any, where: str) -> None:
    """Range and choice checks beyond the type."""
    if key == "embedder.name" and isinstance(value, str):
        from memlens.core.embedders.names import EMBEDDER_NAMES, known_embedder

        if not known_embedder(value):
            raise ConfigError(f"{where}: unknown embedder {value!r}; valid names: auto, "
                              f"{', '.join(sorted(EMBEDDER_NAMES))}")
    if key == "chunker.strategy" and value not in CHUNKER_STRATEGIES:
        raise ConfigError(f"{where}: `chunker.strategy` must be one of"
                          f" {', '.join(CHUNKER_STRATEGIES)}, got {value!r}")
    if key == "chunker.max_tokens" and (not isinstance(value, int) or value < 1):
        raise ConfigError(f"{where}: `chunker.max_tokens` must be a positive integer, got {value!r}")
    if key in ("chunker.overlap_tokens", "chunker.min_tokens", "watch.debounce_ms",
               "retention.max_revisions", "retention.max_age_days", "search.history",
               "projection.max_vectors_per_document") and (
            not isinstance(value, int) or value < 0):
        raise ConfigError(f"{where}: `{key}` must be an integer >= 0, got {value!r}")
    if key == "search.fusion" and value not in FUSION_CHOICES:
        raise ConfigError(f"{where}: `search.fusion` must be one of {', '.join(FUSION_CHOICES)},"
                          f" got {value!r}")
    if key in ("limits.max_file_bytes", "limits.max_chunks_per_file") and (
            not isinstance(value, int) or value < 1):
        raise ConfigError(f"{where}: `{key}` must be a positive integer, got {value!r}")
    if key == "search.lexical_cache_mb" and (not isinstance(value, int) or value < 0):
        raise ConfigError(f"{where}: `search.lexical_cache_mb` must be an integer >= 0,"
                          f" got {value!r}")
    if key in ("search.candidates", "search.adapt_top") and (
            not isinstance(value, int) or value < 1):
        raise ConfigError(f"{where}: `{key}` must be at least 1, got {value!r}")
    if key in ("search.lexical_weight", "search.vector_weight", "search.rrf_k",
               "search.adapt_power") and (
            not isinstance(value, (int, float)) or value < 0):
        raise ConfigError(f"{where}: `{key}` must be a number >= 0, got {value!r}")
    if key == "search.adapt_knee" and (
            not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value <= 1):
        raise ConfigError(f"{where}: `search.adapt_knee` must be a number in (0, 1], got {value!r}")


def _parse_env(key: str, raw: str, var: str | None = None) -> Any:
    typ, _ = _SCHEMA[key]
    where = f"environment variable {var} (`{key}`)" if var else f"environment variable for `{key}`"
    if typ is bool:
        low = raw.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{where}: expected true/false, got {raw!r}")
    if typ is int:
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{where}: expected an integer, got {raw!r}") from None
    if typ is float:
        try:
            return float(raw)
        except ValueError:
            raise ConfigError(f"{where}: expected a number, got {raw!r}") from None
    if typ is list:
        return [p for p in raw.split(os.pathsep) if p]
    return raw


def _redact_rules(path: Path, text: str, section: Any) -> tuple[UserRule, ...]:
    """The ``[[redact.rules]]`` of one config file; a bad rule is one line naming the file,
    the line of its ``[[redact.rules]]`` header and the rule."""
    import re

    from memlens.core.redact.user_rules import UserRuleError, parse_rule

    if not isinstance(section, dict):
        raise ConfigError(f"{path}: `redact` must be a table")
    for key in section:
        if key != "rules":
            raise ConfigError(f"{path}: unknown setting `redact.{key}` (valid: redact.rules)")
    raw = section.get("rules", [])
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: `redact.rules` must be an array of tables ([[redact.rules]])")
    heads = [i for i, line in enumerate(text.splitlines(), 1)
             if re.match(r"\s*\[\[\s*redact\s*\.\s*rules\s*\]\]", line)]
    builtin: frozenset[str] = frozenset()
    if raw:
        from memlens.core.redact.engine import KINDS

        builtin = KINDS
    rules: list[UserRule] = []
    for i, entry in enumerate(raw):
        line = heads[i] if i < len(heads) else _line_of(text, "redact.rules")
        name = entry.get("name") if isinstance(entry, dict) else None
        label = f"rule {name!r}" if isinstance(name, str) else f"rule #{i + 1}"
        try:
            rule = parse_rule(entry, builtin)
        except UserRuleError as exc:
            at = f"{path}:{line}" if line else str(path)
            raise ConfigError(f"{at}: [[redact.rules]] {label}: {exc}") from None
        if any(r.name == rule.name for r in rules):
            at = f"{path}:{line}" if line else str(path)
            raise ConfigError(f"{at}: [[redact.rules]] {label}: the name is used twice")
        rules.append(rule)
    return tuple(rules)


def _apply_file(path: Path, values: dict[str, Any], origins: dict[str, str],
                emb_opts: dict[str, Any]) -> tuple[UserRule, ...]:
    """Read one TOML config file into ``values`` (and embedder options), naming the
    file and line of any bad key."""
    import tomllib

    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: malformed TOML: {exc}") from None

    def where(key: str) -> str:
        line = _line_of(text, key)
        return f"{path}:{line}" if line else str(path)

    rules = _redact_rules(path, text, data.pop("redact")) if "redact" in data else ()
    flat: list[tuple[str, Any]] = []
    for top, val in data.items():
        if isinstance(val, dict):
            flat.extend((f"{top}.{sub}", v) for sub, v in val.items())
        else:
            flat.append((top, val))
    for key, v in flat:
        if key.startswith("embedder.") and key != "embedder.name":
            if not isinstance(v, _EMBEDDER_OPTION_TYPES):
                raise ConfigError(f"{where(key)}: `{key}` must be a scalar")
            emb_opts[key.split(".", 1)[1]] = v
            continue
        if key not in _SCHEMA:
            raise ConfigError(f"{where(key)}: unknown setting `{key}`")
        values[key] = _coerce(key, v, where(key))
        origins[key] = f"file {path}"
    return rules


def _apply_overrides(overrides: Mapping[str, Any], values: dict[str, Any],
                     origins: dict[str, str], emb_opts: dict[str, Any]) -> None:
    """Command-line flag values (dotted keys); None means "flag not given"."""
    for key, val in overrides.items():
        if val is None:
            continue
        if key.startswith("embedder.") and key != "embedder.name":
            emb_opts[key.split(".", 1)[1]] = val
            continue
        if key not in _SCHEMA:
            raise ConfigError(f"unknown setting `{key}`")
        _check_value(key, val, "command line")
        values[key] = val
        origins[key] = "flag"


CHUNKER_STRATEGIES = ("adaptive", "headings", "windows", "whole")
"""The chunker's strategies (``chunking.STRATEGIES``; not imported: it loads the chunker;
``tests/test_limits_config.py`` checks the two agree)."""


def load_settings(
    config_path: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Load settings with precedence defaults < file < environment < overrides.

    Args:
        config_path: Config file; default :func:`default_config_path`. A missing
            file is fine; a malformed one raises.
        env: Environment mapping (default ``os.environ``).
        overrides: Values from command-line flags (dotted keys); None values are ignored.

    Raises:
        ConfigError: Malformed TOML, unknown key or wrong type (file, line, key named).
    """
    env = os.environ if env is None else env
    path = config_path or default_config_path()
    values = {k: copy.deepcopy(d) for k, (_, d) in _SCHEMA.items()}
    origins = {k: "default" for k in _SCHEMA}
    emb_opts: dict[str, Any] = {}
    used_path: Path | None = None
    rules: tuple[UserRule, ...] = ()
    if path.is_file():
        used_path = path
        rules = _apply_file(path, values, origins, emb_opts)
    for var, key in _ENV.items():
        if var in env and env[var] != "":
            values[key] = _parse_env(key, env[var], var)
            _check_value(key, values[key], f"environment variable {var}")
            origins[key] = f"env {var}"
    _apply_overrides(overrides or {}, values, origins, emb_opts)
    over, most = values["chunker.overlap_tokens"], values["chunker.max_tokens"]
    if over >= most:
        raise ConfigError(
            f"`chunker.overlap_tokens` ({over}, {origins['chunker.overlap_tokens']}) must be"
            f" smaller than `chunker.max_tokens` ({most}, {origins['chunker.max_tokens']})")
    return Settings(values=values, origins=origins, embedder_options=emb_opts,
                    config_path=used_path, redact_rules=rules)


_SECTIONS = frozenset({"ChunkerSettings", "EmbedderSettings", "LimitsSettings",
                       "ProjectionSettings", "RetentionSettings", "WatchSettings"})


def __getattr__(name: str) -> Any:
    """The section classes of :mod:`memlens.core.config.sections`, on first use (PEP 562)."""
    if name not in _SECTIONS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from memlens.core.config import sections as config_sections

    value = getattr(config_sections, name)
    globals()[name] = value
    return value
