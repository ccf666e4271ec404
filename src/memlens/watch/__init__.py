"""Live re-ingest: watchfiles -> debounced changes -> the service's after-change flow (a client of the
door).
"""
