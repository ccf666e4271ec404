"""The embedder implementations behind :mod:`memlens.core.embedders.registry`."""
