"""The ``memlens`` console script, and the one-shot lexical search: a named corner.

``memlens search QUERY --mode lexical`` is answered here, by
:mod:`memlens.core.search.quick`, before the CLI (:mod:`memlens.cli.main`, click, the
façade) is imported, and so is ``memlens --help`` (its text generated from the click
tree: :mod:`memlens.cli.root_help`); every other command line goes to
:func:`memlens.cli.main.main`.

The short path takes the request when nothing else could change its answer:

* the command line is exactly ``search``, one QUERY (not starting with ``-``),
  ``--mode lexical``, and optionally ``-k N`` (N > 0), ``--json``, ``--db PATH`` and
  ``--all-projects``, in any order, each once, a value as the next word or after ``=``
  (``--db=PATH``; not ``-k5``): :func:`_request`. Any other form, even one click reads
  the same way, goes the full way: this is a small grammar of its own, not a copy of the
  parser's rules, and ``tests/test_quick.py`` checks click reads every request it takes
  the same way;
* no config file (``MEMLENS_CONFIG`` may name one that does not exist), no ``MEMLENS_*``
  setting but ``MEMLENS_DB`` and a valid ``MEMLENS_EMBEDDER`` (:data:`IGNORED_VARIABLES`
  are not settings).

**Import budget (a contract: ``tests/test_quick.py::test_short_path_import_budget``
runs the short path in a fresh interpreter and compares):** outside the standard library
it imports exactly ``apsw`` and the memlens modules ``launch``, ``cli.search_text`` (which
prints the result as the full CLI prints it), ``core.search.{quick, query, rows, history}``,
``core.store.rows`` and ``core.embedders.names`` (with their packages); of the standard
library little beyond ``json``, ``re`` and ``zlib`` — never click, the façade, ``typing``,
``pathlib``, ``dataclasses``, ``inspect`` or ``argparse``. A new import here is a decision
taken in that test.

Whatever the short path does not handle, including every error, is handed to the full
CLI before anything is printed or written, so messages and exit codes have one source.
``tests/test_quick.py`` runs both paths on the same requests.
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


_VALUED = frozenset({"--mode", "--db", "-k"})
_FLAGS = {"--json": "json", "--all-projects": "all"}


def _request(argv: Sequence[str]) -> dict[str, Any] | None:
    """The short path's request for this command line, or None when it is not one (see
    the module docstring for the grammar)."""
    if len(argv) < 2 or argv[0] != "search":
        return None
    req: dict[str, Any] = {"k": 10, "json": False, "db": None, "all": False}
    query = mode = None
    seen: set[str] = set()
    it = iter(argv[1:])
    for a in it:
        value = None
        if a.startswith("--") and "=" in a:  # --db=PATH, --mode=lexical
            a, value = a.split("=", 1)
            if a not in _VALUED:
                return None
        if a in seen:
            return None  # repeated: leave it to the full CLI
        if a in _VALUED:
            if value is None:
                value = next(it, None)
            if not value or value.startswith("-"):
                return None
            if a == "--mode":
                mode = value
            elif a == "--db":
                req["db"] = value
            elif value.isdigit() and value.isascii() and value[0] != "0":
                req["k"] = int(value)
            else:
                return None
        elif a in _FLAGS:
            req[_FLAGS[a]] = True
        elif not a.startswith("-") and query is None:
            query = a
            continue
        else:
            return None
        seen.add(a)
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


def _columns() -> int:
    """The terminal width as :func:`shutil.get_terminal_size` (which click's help uses)
    reads it, without importing shutil."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _root_help(argv: Sequence[str]) -> int | None:
    """``memlens --help``: the root group's help as click renders it at this width
    (:mod:`memlens.cli.root_help`, generated from the click tree and checked by a test),
    or None to let click render it."""
    if list(argv) not in (["--help"], ["-h"]):
        return None
    from memlens.cli import root_help

    if _columns() < root_help.COLUMNS:
        return None
    sys.stdout.write(root_help.TEXT)
    sys.stdout.flush()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memlens`` console script."""
    raw = list(sys.argv[1:] if argv is None else argv)
    try:
        done = _root_help(raw)
        if done is None:
            done = _short(raw)
    except KeyboardInterrupt:
        return 130
    if done is not None:
        return done
    from memlens.cli.main import main as full

    return full(raw)


if __name__ == "__main__":
    sys.exit(main())
