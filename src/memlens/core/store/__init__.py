"""The durable store: connection, schema and migrations, documents / revisions / chunks, purge.
Owns ``memory_documents`` (but its projection columns), ``memory_revisions`` and ``memory_chunks``.
"""
