"""Architecture guards: the core must stay importable without Textual; the import rules
(the core imports no client, clients enter it only through the door ``memlens.core.service``
/ ``memlens.core.types``, layers inside the core) are import-linter contracts in
pyproject.toml, run here and by .ci/run; mypy sees real types across the door."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_core_imports_without_textual() -> None:
    """Importing every core module (packages walked; a package's ``__main__`` is a
    command, not imported) in a fresh interpreter must not pull in a UI library or UI."""
    code = (
        "import importlib, pkgutil, sys\n"
        "import memlens.core as core\n"
        "for m in pkgutil.walk_packages(core.__path__, 'memlens.core.'):\n"
        "    if not m.name.endswith('.__main__'):\n"
        "        importlib.import_module(m.name)\n"
        "assert 'memlens.core.projection.swap' in sys.modules, 'the walk missed packages'\n"
        "ui = ('textual', 'click', 'mcp', 'memlens.tui', 'memlens.cli', 'memlens.mcp')\n"
        "bad = sorted(n for n in sys.modules if n in ui or n.startswith(tuple(u + '.' for u in ui)))\n"
        "print(','.join(bad))\n"
        "sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, f"core imported UI modules: {proc.stdout} {proc.stderr}"


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


def test_import_contracts_hold() -> None:
    """The import rules of ``[tool.importlinter]`` in pyproject.toml hold (also run by
    .ci/run): the core imports no UI library and no client; clients enter the core only
    through the door; the layers inside the core; the one-shot search's import budget."""
    pytest.importorskip("importlinter")
    proc = subprocess.run([sys.executable, "-c",
                           "import sys; from importlinter.cli import lint_imports_command;"
                           " sys.exit(lint_imports_command())", "--no-cache", "--no-logo"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


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
