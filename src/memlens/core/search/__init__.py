"""Search over active projections: lexical (FTS5 bm25), vector (in-RAM matrix / vec0), fusion, history,
and the one-shot lexical path (quick.py).
"""
