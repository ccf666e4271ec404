"""The bundled demo corpus: found in the source tree, used only as a *copy*.

When the user has no Claude memory folders (or passes ``--demo``), the TUI opens
over a copy of ``corpus/`` in the user data folder, with its own database, so
the repository checkout is never modified and the user's real database is never
mixed with demo data.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import platformdirs

DEMO_NOTE = "demo: no Claude memory folders found, showing a copy of the bundled corpus"


class DemoUnavailable(Exception):
    """The bundled corpus is not part of this installation."""


def bundled_corpus() -> Path:
    """The bundled corpus folder (``MEMLENS_DEMO_CORPUS`` overrides).

    Raises:
        DemoUnavailable: When it cannot be found (e.g. a wheel without the corpus).
    """
    env = os.environ.get("MEMLENS_DEMO_CORPUS")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[3] / "corpus")
    for c in candidates:
        if c.is_dir() and any((p / "memory").is_dir() for p in c.iterdir()):
            return c
    raise DemoUnavailable("the bundled demo corpus is not installed; pass a memory folder, "
                          "e.g. `memlens tui ~/.claude/projects`")


def demo_home() -> Path:
    """Where the demo copy and its database live (user data folder)."""
    return platformdirs.user_data_path("memlens") / "demo"


def prepare_demo(target: Path | None = None, *, refresh: bool = False) -> Path:
    """Copy the bundled corpus's project folders into ``target`` (once) and return it.

    Only ``<slug>/memory/`` folders are copied (not the corpus README or the
    retrieval questions). An existing copy is reused so edits made while trying
    the watcher survive; ``refresh`` replaces it.
    """
    src = bundled_corpus()
    dest = target or demo_home() / "projects"
    if refresh and dest.exists():
        shutil.rmtree(dest)
    if not dest.exists():
        tmp = dest.with_name(dest.name + ".tmp")
        if tmp.exists():
            shutil.rmtree(tmp)
        _private_folders(tmp)
        for project in sorted(src.iterdir()):
            if (project / "memory").is_dir():
                shutil.copytree(project / "memory", tmp / project.name / "memory")
        tmp.rename(dest)
    return dest


def _private_folders(folder: Path) -> None:
    """Create ``folder`` and its missing parents ``0700`` whatever the umask, as the
    database's own folders are: the user data folder made here is where the real
    database lands later."""
    missing: list[Path] = []
    d = folder
    while not d.exists():
        missing.append(d)
        d = d.parent
    for f in reversed(missing):
        try:
            f.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(f, 0o700)  # mkdir's mode is filtered by the umask


def demo_db_path() -> Path:
    """The demo database (separate from the user's real one)."""
    return demo_home() / "memlens-demo.db"


def banner(title: str, demo_folder: Path | None, demo_note: str | None, width: int) -> str:
    """The header's demo line for a terminal ``width`` wide: where the demo copy lives
    (edit it to try the watcher), the folder shortened from the middle."""
    from memlens.tui.widgets.fmt import shorten_middle
    if demo_folder is None:
        return "DEMO · " + (demo_note or "bundled corpus copy")
    folder = str(demo_folder)
    home = str(Path.home())
    if home not in ("", "/") and folder.startswith(home + "/"):
        folder = "~" + folder[len(home):]
    head, tail = "DEMO · edit ", " to try the watcher"
    # The header centres "memlens — <this>" between its icon and clock space (8 each).
    room = max(16, width - 18 - len(title) - 3 - len(head) - len(tail))
    return head + shorten_middle(folder, room) + tail
