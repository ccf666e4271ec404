"""Widgets of the memlens UI: document tree, chunk view, timeline, projection panel,
status bar, and small helpers."""
