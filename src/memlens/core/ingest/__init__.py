"""Ingest: discover memory folders, read files safely, name and key them, redact, chunk and store."""
