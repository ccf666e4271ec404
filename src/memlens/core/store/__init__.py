"""The durable store: connection, schema and migrations, documents / revisions / chunks, purge."""
