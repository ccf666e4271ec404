"""Screens of the memlens UI: live search, the rechunk dialog, help."""
