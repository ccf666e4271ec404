"""The embedder implementations behind :mod:`memlens.core.embedding`."""
