"""memlens: Claude Code auto-memory in one SQLite database, with a terminal UI."""
