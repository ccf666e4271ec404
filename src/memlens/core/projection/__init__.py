"""The search projection: the queue (claims, statuses, retries), stage 1 (nodes and FTS rows,
swapped atomically), stage 2 (vectors in slices), a run of both; vector spaces, the embedding
cache, the change fingerprint. Owns the node, FTS, vector and cache tables (tests/test_table_owners.py).
"""
