"""Architecture guards: the core must stay importable without Textual, and the UI
enters the core only through the door (``memlens.core.service`` and ``memlens.core.types``)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "memlens"
DOOR = {"memlens.core.service", "memlens.core.types"}


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


def _absolute(py: Path, node: ast.ImportFrom) -> str:
    """The absolute module name of a (possibly relative) ``from … import``."""
    if node.level == 0:
        return node.module or ""
    pkg = list(py.relative_to(SRC.parent).with_suffix("").parts[:-1])
    base = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
    return ".".join(base + ([node.module] if node.module else []))


def _core_imports(py: Path) -> list[str]:
    """Every ``memlens.core…`` module (or name) a file imports, relative imports included."""
    out: list[str] = []
    for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names if a.name.startswith("memlens.core"))
        elif isinstance(node, ast.ImportFrom):
            mod = _absolute(py, node)
            if mod == "memlens.core" or mod == "memlens":
                # `from memlens.core import views` / `from memlens import core`
                out.extend(f"{mod}.{a.name}" for a in node.names)
            elif mod.startswith("memlens.core."):
                out.append(mod)
    return [m for m in out if m.startswith("memlens.core")]


def _ui_files() -> list[Path]:
    return (sorted((SRC / "tui").rglob("*.py")) + sorted((SRC / "cli").rglob("*.py"))
            + sorted((SRC / "mcp").rglob("*.py")))


def test_ui_imports_only_the_door() -> None:
    """Every .py of the UI (tui/, cli*.py included, and the MCP server in mcp/) imports from
    the core only ``memlens.core.service`` and ``memlens.core.types``. No exemptions."""
    files = _ui_files()
    assert any(f.parent.name == "cli" and f.name == "main.py" for f in files)
    assert any(f.parent.name == "mcp" and f.name == "server.py" for f in files)
    bad = [f"{py.relative_to(ROOT)}: {m}" for py in files for m in _core_imports(py)
           if m not in DOOR]
    assert bad == [], "UI reaches around the façade:\n" + "\n".join(bad)


def test_launcher_uses_only_the_one_shot_search() -> None:
    """``memlens/launch.py`` (the console script) is not UI: it only chooses the program.
    Of the core it uses ``memlens.core.search.quick`` and nothing else; every other request goes
    to ``memlens.cli.main``, through the door."""
    assert set(_core_imports(SRC / "launch.py")) <= {"memlens.core.search", "memlens.core.search.quick"}


def test_door_check_sees_relative_and_package_imports() -> None:
    """The checker itself: relative imports and `from memlens.core import x` are caught."""
    probe = SRC / "tui" / "screens" / "probe.py"  # never written: only its place counts
    code = ("from ...core import views\nfrom ...core.search import SearchHit\n"
            "from memlens.core import service\nfrom memlens.core.types import Chunk\n")
    found = [_absolute(probe, n) for n in ast.walk(ast.parse(code))
             if isinstance(n, ast.ImportFrom)]
    assert found == ["memlens.core", "memlens.core.search", "memlens.core",
                     "memlens.core.types"]


_PROBE_BAD = """\
from memlens.core.service import MemoryService

MemoryService().no_such_method()
"""
_PROBE_GOOD = """\
from memlens.core.service import MemoryService
from memlens.core.types import DocumentDetail

svc = MemoryService()
doc: DocumentDetail | None = svc.detail(1)
n: int = len(svc.list_documents())
svc.close()
"""


def _mypy(tmp_path: Path, name: str, code: str) -> subprocess.CompletedProcess[str]:
    f = tmp_path / name
    f.write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--follow-imports=silent", "--no-error-summary", str(f)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_mypy_sees_real_types_across_the_door(tmp_path: Path) -> None:
    """mypy (the project's config, mypy_path=src) resolves MemoryService for real: a missing
    method is an ``attr-defined`` error, a correct use is clean."""
    pytest.importorskip("mypy")
    bad = _mypy(tmp_path, "probe_bad.py", _PROBE_BAD)
    assert "probe_bad.py:3" in bad.stdout and "[attr-defined]" in bad.stdout, bad.stdout
    assert "no_such_method" in bad.stdout
    good = _mypy(tmp_path, "probe_good.py", _PROBE_GOOD)
    assert [ln for ln in good.stdout.splitlines() if "probe_good.py" in ln] == [], good.stdout
