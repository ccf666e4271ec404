"""How much of a question the lexical side explains: evidence for adaptive fusion.

bm25 ranks every row that shares *any* phrase with the query, so a long question
written in other words than the memory still gets a "best" lexical hit: the row that
happens to hold two of its commoner words. Fusing that hit at full weight drowns a
strong semantic neighbour (issue 36: on an unseen corpus the lexical top document of a
paraphrased question was wrong 28 times in 30, and hybrid fell from vector's 0.53 to
0.13). :func:`coverage` measures, for a few lexical candidates, the share of the
query's *information* they contain: each phrase of the FTS query weighs its inverse
document frequency, a phrase no row holds weighs the most (the asker's word is not the
memory's word), and a row's coverage is the weight of the phrases it holds over the
weight of all of them. Adaptive fusion scales the lexical signal by the best coverage.

Cost, bounded per query: the row count is one read of FTS5's own totals record; each
phrase's document frequency is counted up to :func:`df_cap` rows (the idf of a phrase
past the cap is already low); membership is tested in a small TEMP FTS5 table holding
only the candidate rows (same tokenizer), never against the main index's doclists.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import apsw

from memlens.core.search.query import fts_phrases
from memlens.core.store.rows import FTS_TOKENIZER

EVIDENCE_TABLE = "temp.memlens_evidence"
DF_CAP_MIN = 64       # phrases in at least this many rows all count as "common" (floor)
DF_CAP_SHARE = 16     # ... or in 1/16 of the rows, whichever is more


def fts_row_count(conn: apsw.Connection) -> int:
    """The number of rows in the node FTS index, from FTS5's totals record (the first
    varint of ``%_data`` row 1, which bm25 itself reads); a ``count(*)`` if the record
    cannot be read."""
    try:
        got = conn.execute("SELECT block FROM knowledge_nodes_fts_data WHERE id=1").fetchone()
    except apsw.SQLError:
        got = None
    if got and isinstance(got[0], bytes) and got[0]:
        value, shift = 0, 0
        for byte in got[0][:9]:  # SQLite varint: 7 bits a byte, big-endian, <= 9 bytes
            value = (value << 7) | (byte & 0x7F)
            shift += 1
            if not byte & 0x80:
                return value
    return _count(conn, "SELECT count(*) FROM knowledge_nodes_fts", ())


def _count(conn: apsw.Connection, sql: str, params: tuple[object, ...]) -> int:
    got = conn.execute(sql, params).fetchone()
    return int(got[0]) if got else 0


def df_cap(n_rows: int) -> int:
    """How far a phrase's rows are counted: ``max(DF_CAP_MIN, n_rows // DF_CAP_SHARE)``."""
    return max(DF_CAP_MIN, n_rows // DF_CAP_SHARE)


def idf(df: int, n_rows: int) -> float:
    """bm25's idf (FTS5's form, floored at a small positive value)."""
    return max(1e-6, math.log((n_rows - df + 0.5) / (df + 0.5) + 1.0))


def phrase_weights(conn: apsw.Connection, fts: str, n_rows: int | None = None) -> dict[str, float]:
    """Each phrase of the FTS query ``fts`` and its idf weight (document frequency
    counted up to :func:`df_cap`; a phrase no row holds gets the weight of ``df = 0``)."""
    n = fts_row_count(conn) if n_rows is None else n_rows
    cap = df_cap(n)
    out: dict[str, float] = {}
    for p in dict.fromkeys(fts_phrases(fts)):
        try:
            df = _count(conn, "SELECT count(*) FROM (SELECT 1 FROM knowledge_nodes_fts"
                        " WHERE knowledge_nodes_fts MATCH ? LIMIT ?)", (p, cap))
        except apsw.SQLError:  # defensive: a phrase our builder made should parse
            continue
        out[p] = idf(df, max(n, df))
    return out


def holders(conn: apsw.Connection, phrases: Sequence[str], node_ids: Sequence[int],
            ) -> dict[str, set[int]]:
    """Which of ``node_ids`` hold each phrase (same tokenizer and columns as the main
    index), tested in a TEMP FTS5 table filled with those rows only."""
    ids = list(dict.fromkeys(int(n) for n in node_ids))
    if not ids or not phrases:
        return {p: set() for p in phrases}
    ph = ",".join("?" * len(ids))
    fill = (f"INSERT INTO {EVIDENCE_TABLE}(rowid, heading, text, logical_path)"
            f" SELECT id, heading, text, logical_path FROM main.knowledge_nodes WHERE id IN ({ph})")
    try:
        conn.execute(fill, ids)
    except apsw.SQLError:  # first use on this connection: create the TEMP table
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {EVIDENCE_TABLE} USING fts5("
                     f"heading, text, logical_path, tokenize='{FTS_TOKENIZER}')")
        conn.execute(f"DELETE FROM {EVIDENCE_TABLE}")
        conn.execute(fill, ids)
    out: dict[str, set[int]] = {}
    try:
        for p in phrases:
            try:
                out[p] = {int(r[0]) for r in conn.execute(
                    f"SELECT rowid FROM {EVIDENCE_TABLE} WHERE memlens_evidence MATCH ?", (p,))}
            except apsw.SQLError:
                out[p] = set()
    finally:
        conn.execute(f"DELETE FROM {EVIDENCE_TABLE}")  # empty between uses
    return out


def line_holders(conn: apsw.Connection, phrases: Sequence[str], lines: Sequence[str],
                 ) -> dict[str, set[int]]:
    """Which of ``lines`` (0-based indexes) hold each phrase, with the main index's
    tokenizer (a TEMP FTS5 table filled with these lines only; the index rule of
    :mod:`memlens.core.search.fusion` reads which ``MEMORY.md`` line a question matches)."""
    if not lines or not phrases:
        return {p: set() for p in phrases}
    _ensure_table(conn)
    conn.executemany(f"INSERT INTO {EVIDENCE_TABLE}(rowid, heading, text, logical_path)"
                     " VALUES (?, '', ?, '')", [(i + 1, t) for i, t in enumerate(lines)])
    out: dict[str, set[int]] = {}
    try:
        for p in phrases:
            try:
                out[p] = {int(r[0]) - 1 for r in conn.execute(
                    f"SELECT rowid FROM {EVIDENCE_TABLE} WHERE memlens_evidence MATCH ?", (p,))}
            except apsw.SQLError:
                out[p] = set()
    finally:
        conn.execute(f"DELETE FROM {EVIDENCE_TABLE}")
    return out


def _ensure_table(conn: apsw.Connection) -> None:
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {EVIDENCE_TABLE} USING fts5("
                 f"heading, text, logical_path, tokenize='{FTS_TOKENIZER}')")


def coverage(conn: apsw.Connection, fts: str | None, node_ids: Sequence[int],
             n_rows: int | None = None, weights: dict[str, float] | None = None,
             ) -> dict[int, float]:
    """Per node of ``node_ids``, the idf-weighted share of the query's phrases it holds
    (0 to 1; 1 = every phrase). Empty when there is no FTS query or no node."""
    if not fts or not node_ids:
        return {}
    if weights is None:
        weights = phrase_weights(conn, fts, n_rows)
    total = sum(weights.values())
    if total <= 0:
        return {int(n): 0.0 for n in node_ids}
    held = holders(conn, list(weights), node_ids)
    out = {int(n): 0.0 for n in node_ids}
    for p, nodes in held.items():
        for n in nodes:
            out[n] += weights[p] / total
    return {n: min(1.0, v) for n, v in out.items()}
