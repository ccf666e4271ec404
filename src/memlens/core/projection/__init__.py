"""The search projection: knowledge nodes, FTS rows and vectors, swapped atomically; the embedding
cache; the change fingerprint.
"""
