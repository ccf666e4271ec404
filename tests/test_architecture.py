"""Architecture guards: the core must stay importable without Textual."""

import subprocess
import sys


def test_core_imports_without_textual() -> None:
    """Importing every core module in a fresh interpreter must not pull in textual."""
    code = (
        "import importlib, pkgutil, sys\n"
        "import memlens.core as core\n"
        "for m in pkgutil.iter_modules(core.__path__):\n"
        "    importlib.import_module('memlens.core.' + m.name)\n"
        "bad = sorted(n for n in sys.modules if n == 'textual' or n.startswith('textual.')"
        " or n.startswith('memlens.tui'))\n"
        "print(','.join(bad))\n"
        "sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, f"core imported UI modules: {proc.stdout} {proc.stderr}"


def test_core_sources_never_import_ui() -> None:
    """Static check over core/*.py: no `textual` or `memlens.tui` import anywhere.

    (import-linter cannot see the `core/` -> `memlens.core` package-dir mapping of an
    editable install, so the contract is enforced here instead.)
    """
    import ast
    from pathlib import Path

    bad = []
    for py in (Path(__file__).resolve().parent.parent / "src" / "memlens" / "core").rglob("*.py"):
        tree = ast.parse(py.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [("." * node.level) + node.module]
            for n in names:
                if n.split(".")[0] == "textual" or n.startswith("memlens.tui") or \
                        n.startswith("..tui"):
                    bad.append(f"{py.name}: {n}")
    assert bad == []


def test_no_sql_in_tui() -> None:
    """SQL lives in core: the UI package has no SQL statements or apsw use."""
    import re
    from pathlib import Path

    sql = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE)\b\s+.*\b(FROM|INTO|SET)\b")
    offenders = []
    for py in (Path(__file__).resolve().parent.parent / "src" / "memlens" / "tui").rglob("*.py"):
        text = py.read_text(encoding="utf-8")
        if "import apsw" in text or sql.search(text):
            offenders.append(py.name)
    assert offenders == []
