"""No import cycles in ``src/memlens``, counting every import statement.

The graph is built from the source with :mod:`ast`, not by importing anything: each
module's edges are every ``import`` / ``from … import`` anywhere in its file — at the
top, inside functions and methods (a function-local import that closes a loop is still
a loop: it only moves the failure from import time to the first call), and under
``if TYPE_CHECKING:`` (those count too: a type-only loop still ties the two modules
together for a reader and for mypy). ``from pkg import name`` is an edge to the module
``pkg.name`` when that is a module, else to ``pkg``. Importing a submodule also runs its
parent packages' ``__init__``; those are short docstrings here, so parents are not
added as edges.

A cycle is a strongly connected component of more than one module; each is printed
with its edges inside the component, so the message says what to cut.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def _modules(src: Path) -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package ``__init__``) for every .py under ``src``."""
    out: dict[str, tuple[Path, bool]] = {}
    for py in sorted(src.rglob("*.py")):
        parts = list(py.relative_to(src).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (py, is_pkg)
    return out


def _resolve(name: str, mods: dict[str, tuple[Path, bool]]) -> str | None:
    """The longest prefix of ``name`` that is one of our modules (``memlens.x.y.Name``
    -> ``memlens.x.y``), or None for a third-party or stdlib name."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    """Module -> the modules under ``src`` it imports anywhere in its file."""
    mods = _modules(src)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, (py, is_pkg) in mods.items():
        for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: anchored at this module's package
                    pkg = mod if is_pkg else mod.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        pkg = pkg.rpartition(".")[0]
                    base = f"{pkg}.{base}" if base else pkg
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]
            for t in targets:
                hit = _resolve(t, mods)
                if hit is not None and hit != mod:
                    graph[mod].add(hit)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp: list[str] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return sorted(found)


def _describe(graph: dict[str, set[str]], comps: list[list[str]]) -> str:
    lines = []
    for comp in comps:
        lines.append(f"cycle of {len(comp)} modules:")
        lines.extend(f"  {m} -> {', '.join(sorted(graph[m] & set(comp)))}" for m in comp)
    return "\n".join(lines)


def test_the_checker_sees_local_relative_and_type_checking_imports(tmp_path: Path) -> None:
    """The graph builder on a made-up loop of three kinds of imports."""
    pkg = tmp_path / "p"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""p."""\n')
    (pkg / "a.py").write_text("def f():\n    from p import b\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\n"
                              "if TYPE_CHECKING:\n    from .c import X\n")
    (pkg / "c.py").write_text("from p.a import f\nX = 1\n")
    (pkg / "d.py").write_text("import p.c\n")
    graph = import_graph(tmp_path)
    assert graph["p.a"] == {"p.b"} and graph["p.b"] == {"p.c"} and graph["p.c"] == {"p.a"}
    assert cycles(graph) == [["p.a", "p.b", "p.c"]]


def test_no_import_cycles_in_core() -> None:
    """The engine (``memlens.core.*``) has no import cycle, function-local imports included."""
    graph = import_graph()
    core = {m: {t for t in ts if t.startswith("memlens.core")}
            for m, ts in graph.items() if m.startswith("memlens.core")}
    found = cycles(core)
    assert found == [], "\n" + _describe(core, found)


def test_no_import_cycles_in_src() -> None:
    """All of ``src/`` has no import cycle, function-local imports included."""
    graph = import_graph()
    found = cycles(graph)
    assert found == [], "\n" + _describe(graph, found)
