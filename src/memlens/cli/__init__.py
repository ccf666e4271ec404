"""The memlens command line: a client of the door (memlens.core.service / memlens.core.types)."""
