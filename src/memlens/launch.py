"""The ``memlens`` console script: a plain lexical search is answered by the one-shot
path (:mod:`memlens.core.search.quick`); every other command line goes to the CLI of the UI
package (:mod:`memlens.cli.main`), which enters the core through the façade.

This module is not part of the UI: it holds no command handler and no widget, only the
choice of which program runs. ``memlens search QUERY --mode lexical`` (with ``-k N``,
``--json``, ``--db PATH``, ``--all-projects`` in any order) takes the short path when
nothing else could change its answer: no other flag, no config file (``MEMLENS_CONFIG`` may
name one that does not exist), no ``MEMLENS_*`` setting but ``MEMLENS_DB`` and a valid
``MEMLENS_EMBEDDER`` (:data:`IGNORED_VARIABLES` are not settings). Then the process loads
SQLite, ``json``, ``re`` and five small core modules instead of ``argparse`` and the façade
(docs/benchmarks.md, "One-shot lexical search"); the result is printed by
:mod:`memlens.cli.search_text`, as the full CLI prints it. Whatever the short path does not
handle, including every error, is handed to the full CLI before anything is printed or
written, so messages and exit codes have one source. ``tests/test_quick.py`` runs both on
the same requests.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

EXIT_OK = 0

IGNORED_VARIABLES = frozenset({
    "MEMLENS_ALLOW_DOWNLOAD", "MEMLENS_CACHE_DIR", "MEMLENS_DARK", "MEMLENS_LIGHT",
    "MEMLENS_DEMO_CORPUS", "MEMLENS_INSTALL_KEY_FILE", "MEMLENS_OPENAI_API_KEY",
    "MEMLENS_OPENAI_BASE_URL", "MEMLENS_OPENAI_MODEL"})
"""Variables a lexical search never reads (model downloads, the UI theme, the demo, the
install key, the OpenAI endpoint); any other ``MEMLENS_*`` one sends the request to the
full CLI, which reads and checks it (``tests/test_quick.py``: none is a config variable)."""


def _request(argv: Sequence[str]) -> dict[str, Any] | None:
    """The short path's request for this command line, or None when it is not one: the
    ``search`` command in lexical mode with only the flags the short path knows, each
    once, in a form argparse reads the same way."""
    if len(argv) < 2 or argv[0] != "search":
        return None
    req: dict[str, Any] = {"k": 10, "json": False, "db": None, "all": False}
    query = mode = None
    seen: set[str] = set()
    it = iter(argv[1:])
    for a in it:
        name, value = a, None
        if a.startswith("--") and "=" in a:
            name, value = a.split("=", 1)
        elif a.startswith("-k") and len(a) > 2 and a[2:].isdigit():
            name, value = "-k", a[2:]
        if name in seen:
            return None  # repeated: argparse keeps the last one (or errors); leave it to it
        if name in ("--mode", "--db", "-k") and value is None:
            value = next(it, None)
            if value is None or value.startswith("-"):
                return None
        if name == "--mode":
            mode = value
        elif name == "--db":
            if not value:
                return None  # argparse makes "" the folder "." (an error there)
            req["db"] = value
        elif name == "-k":
            if not (value and value.isdigit() and value.isascii() and value[0] != "0"):
                return None
            req["k"] = int(value)
        elif name in ("--json", "--all-projects") and value is None:
            req["json" if name == "--json" else "all"] = True
        elif not a.startswith("-") and query is None:
            query = a
            continue
        else:
            return None
        seen.add(name)
    if query is None or mode != "lexical":
        return None
    req["query"] = query
    return req


_READ_HERE = frozenset({"MEMLENS_DB", "MEMLENS_CONFIG"})


def _database(req: dict[str, Any]) -> str | None:
    """The database file the full CLI would open for ``req``, or None when settings other
    than the defaults could apply (a config file, other ``MEMLENS_*`` variables)."""
    env = os.environ
    for var, value in env.items():
        if not var.startswith("MEMLENS_") or value == "" or var in _READ_HERE \
                or var in IGNORED_VARIABLES:
            continue
        if var == "MEMLENS_EMBEDDER":
            from memlens.core.search.quick import known_embedder

            if known_embedder(value):
                continue  # lexical search uses no embedder; the name only has to be valid
        return None
    from memlens.core.search import quick

    paths = quick.default_paths()
    if paths is None:
        return None  # not Linux, or no usable HOME: platformdirs decides, in the full CLI
    config = os.path.expanduser(env.get("MEMLENS_CONFIG") or paths[0])
    if os.path.exists(config):
        return None  # a config file: the full CLI reads and checks it
    db = req["db"] or env.get("MEMLENS_DB") or paths[1]
    return os.path.expanduser(db)


def _short(argv: Sequence[str]) -> int | None:
    req = _request(argv)
    if req is None:
        return None
    db = _database(req)
    if db is None:
        return None
    from memlens.core.search import quick

    result = quick.lexical_search(db, req["query"], k=req["k"], all_projects=req["all"])
    if result is None:
        return None
    from memlens.cli.search_text import print_result

    try:
        print_result(result, req["json"])
        sys.stdout.flush()
    except BrokenPipeError:  # `memlens search ... | head`: as the full CLI
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memlens`` console script."""
    raw = list(sys.argv[1:] if argv is None else argv)
    try:
        done = _short(raw)
    except KeyboardInterrupt:
        return 130
    if done is not None:
        return done
    from memlens.cli.main import main as full

    return full(raw)


if __name__ == "__main__":
    sys.exit(main())
