"""Markdown chunking: markdown-it tokens -> sections -> bounded windows; token estimators; remembered
rechunk choices.
"""
