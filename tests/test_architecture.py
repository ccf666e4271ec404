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
