"""Typed settings: defaults < TOML config file < MEMLENS_* environment < flags (settings.py; the other
sections in sections.py).
"""
