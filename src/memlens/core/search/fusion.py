"""Hybrid fusion: the lexical and vector candidates of one query become one score each,
and every part of that score is kept as a typed value (issue 46), so the ranking can be
explained from the very values that made it (issue 45).

The default, ``evidence`` fusion, in three rules:

1. **Absent is unknown, not worst.** Each side contributes only its *positive* evidence:
   ``max(0, z)`` of the candidate's score among that side's candidates (bm25 on the
   lexical side, cosine on the vector side). A candidate missing from a side's list gets
   0 there, exactly what a present but below-average candidate gets: it is never scored
   below a present candidate only for being absent.
2. **Each side weighs by its own confidence.** The lexical weight is the idf share of the
   question held by one of its best candidates (:mod:`memlens.core.search.evidence`),
   ``min(1, share / knee) ** power``; the vector weight is ``vector_weight``. When the
   two lists agree (the best document of one is among the first few of the other), that
   document is what both sides say and neither weight is cut.
3. **Documents, not chunks, compete** for the memory-aware rules
   (:func:`memory_adjust`): a ``MEMORY.md`` index chunk never ranks above a topic file it
   links to on the same evidence, unless the question names the index.

The older forms stay selectable (``adaptive``, ``zscore``, ``minmax``, ``convex``,
``rrf``) and share :class:`Pool` and :class:`FusionDecision`.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import apsw

from memlens.core.chunking.links import links
from memlens.core.search import evidence as search_evidence
from memlens.core.search.decision import Confidence as Confidence
from memlens.core.search.decision import FusionDecision as FusionDecision
from memlens.core.search.decision import FusionParams as FusionParams
from memlens.core.search.decision import Part as Part
from memlens.core.search.hits import SearchHit

INDEX_NAMES = ("MEMORY.md",)
_INDEX_QUESTION = re.compile(r"\b(index|memory\.md)\b", re.IGNORECASE)


@dataclass
class Pool:
    """The union of lexical and vector candidates of one hybrid query."""

    fused: dict[int, SearchHit] = field(default_factory=dict)
    lex_raw: dict[int, float] = field(default_factory=dict)
    vec_raw: dict[int, float] = field(default_factory=dict)
    lex_rank: dict[int, int] = field(default_factory=dict)
    vec_rank: dict[int, int] = field(default_factory=dict)
    lexical_share: float = 1.0
    vector_ok: bool = True
    """False when there is no embedder or it failed: the fusion is lexical only."""
    paths: dict[int, str] = field(default_factory=dict)
    """document id -> logical path (of the candidates' documents; for the index rule)."""
    index_links: dict[int, frozenset[int]] = field(default_factory=dict)
    """index document id -> the candidate documents its links point to."""
    doc_chunks: dict[int, int] = field(default_factory=dict)
    """document id -> its number of chunks (for the length prior)."""
    vector_floor: float | None = None
    """The cosine a semantic-only candidate needed to stay (set by :meth:`drop_weak_semantic`)."""
    gives_way: dict[int, frozenset[int]] = field(default_factory=dict)
    """index chunk (node id) -> the topic documents it gives way to: those whose link
    lines hold most of its lexical evidence; all it links to when it has none."""

    @classmethod
    def merge(cls, lex_hits: Iterable[SearchHit], vec_hits: Iterable[SearchHit]) -> Pool:
        pool = cls()
        for rank, h in enumerate(lex_hits, 1):
            pool.fused[h.node_id] = h
            h.ranks = {"lexical": rank, "vector": None}
            h.lexical_match, h.match = True, "lexical"
            pool.lex_raw[h.node_id], pool.lex_rank[h.node_id] = h.score, rank
        for rank, h in enumerate(vec_hits, 1):
            if h.node_id in pool.fused:
                pool.fused[h.node_id].ranks["vector"] = rank
            else:
                h.ranks = {"lexical": None, "vector": rank}
                h.lexical_match, h.match = False, "semantic"
                pool.fused[h.node_id] = h
            pool.vec_raw[h.node_id], pool.vec_rank[h.node_id] = h.score, rank
        return pool

    def drop_weak_semantic(self, min_z: float) -> None:
        """Drop semantic-only candidates whose cosine is below mean + min_z * std."""
        if len(self.vec_raw) < 2:
            return
        mu, sd = _mean_sd(self.vec_raw.values())
        floor = mu + min_z * sd
        self.vector_floor = floor
        for nid in [nid for nid in self.fused
                    if nid not in self.lex_raw and self.vec_raw[nid] < floor]:
            del self.fused[nid]

    def doc(self, nid: int) -> int:
        return self.fused[nid].document_id


def _mean_sd(values: Iterable[float]) -> tuple[float, float]:
    vals = list(values)
    if not vals:
        return 0.0, 0.0
    mu = math.fsum(vals) / len(vals)
    return mu, math.sqrt(math.fsum((v - mu) ** 2 for v in vals) / len(vals))


def normalise(values: Mapping[int, float], how: str) -> dict[int, float]:
    """Per-query normalisation of one signal over its candidates (min-max or z-score)."""
    if not values:
        return {}
    if how == "zscore":
        mu, sd = _mean_sd(values.values())
        return {nid: ((v - mu) / sd if sd > 1e-12 else 0.0) for nid, v in values.items()}
    lo, hi = min(values.values()), max(values.values())
    span = hi - lo
    return {nid: ((v - lo) / span if span > 1e-12 else 1.0) for nid, v in values.items()}


def _top_docs(pool: Pool, ranks: Mapping[int, int], n: int) -> list[int]:
    """The first ``n`` distinct documents of one side's list."""
    out: list[int] = []
    for nid in sorted((nid for nid in ranks if nid in pool.fused), key=ranks.__getitem__):
        d = pool.doc(nid)
        if d not in out:
            out.append(d)
            if len(out) >= n:
                break
    return out


def confidence(pool: Pool, p: FusionParams) -> Confidence:
    """Each side's weight for this query (see the module doc)."""
    share = pool.lexical_share
    lw = p.lexical_weight * min(1.0, share / max(p.adapt_knee, 1e-9)) ** p.adapt_power
    lex_top = _top_docs(pool, pool.lex_rank, p.agree_top)
    vec_top = _top_docs(pool, pool.vec_rank, p.agree_top)
    agree = bool(lex_top and vec_top and (lex_top[0] in vec_top or vec_top[0] in lex_top))
    if agree and p.agree_keep:
        lw = p.lexical_weight
    margin = _vector_margin(pool)
    vw = p.vector_weight
    if p.margin_knee > 0:
        vw *= min(1.0, margin / p.margin_knee)
    return Confidence(lexical_share=share, agreement=agree, lexical_weight=lw,
                      vector_weight=vw, vector_margin=margin)


def _vector_margin(pool: Pool) -> float:
    """(best cosine of the first document - best of the second) / std of the cosines."""
    if len(pool.vec_raw) < 2:
        return 0.0
    best: dict[int, float] = {}
    for nid, cos in pool.vec_raw.items():
        if nid in pool.fused:
            d = pool.doc(nid)
            best[d] = max(best.get(d, -2.0), cos)
    top = sorted(best.values(), reverse=True)
    _, sd = _mean_sd(pool.vec_raw.values())
    return (top[0] - top[1]) / sd if len(top) > 1 and sd > 1e-12 else 0.0


def decide(pool: Pool, p: FusionParams, query: str = "") -> FusionDecision:
    """Score every candidate of ``pool`` with ``p`` and order them (matches first, then
    score, then node id), applying the memory-aware rule for ``evidence``."""
    method = p.method
    conf: Confidence | None = None
    parts: dict[int, Part] = {}
    if not pool.vector_ok:  # embedder down: the lexical ranking as it is, no weight claimed
        method = "lexical"
        for nid in pool.fused:
            parts[nid] = _part(pool, nid, pool.lex_raw.get(nid, 0.0), 0.0)
    elif method == "convex":
        lex_max = max(pool.lex_raw.values(), default=0.0) or 1.0
        for nid in pool.fused:
            lx = p.lexical_weight * pool.lex_raw.get(nid, 0.0) / lex_max
            vx = p.vector_weight * max(0.0, pool.vec_raw.get(nid, 0.0))
            parts[nid] = _part(pool, nid, lx, vx)
    elif method == "rrf":
        for nid in pool.fused:
            lx = (p.lexical_weight / (p.rrf_k + pool.lex_rank[nid])
                  if nid in pool.lex_rank else 0.0)
            vx = (p.vector_weight / (p.rrf_k + pool.vec_rank[nid])
                  if nid in pool.vec_rank else 0.0)
            parts[nid] = _part(pool, nid, lx, vx)
    elif method in ("zscore", "minmax", "adaptive"):
        how = "minmax" if method == "minmax" else "zscore"
        lw = p.lexical_weight
        if method == "adaptive":
            conf = confidence(pool, p)
            lw = conf.lexical_weight
        ln, vn = normalise(pool.lex_raw, how), normalise(pool.vec_raw, how)
        lmiss = min(ln.values(), default=0.0) if how == "zscore" else 0.0
        vmiss = min(vn.values(), default=0.0) if how == "zscore" else 0.0
        for nid in pool.fused:
            parts[nid] = _part(pool, nid, lw * ln.get(nid, lmiss),
                               p.vector_weight * vn.get(nid, vmiss),
                               lz=ln.get(nid), vz=vn.get(nid))
    elif method == "evidence":
        conf = confidence(pool, p)
        ln, vn = normalise(pool.lex_raw, "zscore"), normalise(pool.vec_raw, "zscore")
        for nid in pool.fused:
            damp = (pool.doc_chunks.get(pool.doc(nid), 1) ** -p.length_prior
                    if p.length_prior else 1.0)
            parts[nid] = _part(pool, nid, damp * conf.lexical_weight * max(0.0, ln.get(nid, 0.0)),
                               damp * conf.vector_weight * max(0.0, vn.get(nid, 0.0)),
                               lz=ln.get(nid), vz=vn.get(nid), damp=damp)
    else:
        raise ValueError(f"unknown fusion {method!r}")
    order = sorted(parts, key=lambda nid: (not pool.fused[nid].is_match, -parts[nid].score, nid))
    decision = FusionDecision(method=method, confidence=conf, parts=parts, order=order, params=p)
    if method == "evidence" and p.index_rule and not _INDEX_QUESTION.search(query):
        memory_adjust(pool, decision)
    return decision


def _part(pool: Pool, nid: int, lx: float, vx: float, *, lz: float | None = None,
          vz: float | None = None, damp: float = 1.0) -> Part:
    return Part(node_id=nid, lexical=lx, vector=vx, lexical_absent=nid not in pool.lex_raw,
                vector_absent=nid not in pool.vec_raw, score=lx + vx, lexical_z=lz,
                vector_z=vz, damp=damp)


def is_index(path: str, names: Iterable[str] = INDEX_NAMES) -> bool:
    return posixpath.basename(path) in set(names)


def memory_adjust(pool: Pool, decision: FusionDecision) -> None:
    """An index chunk gives way to the topic file its evidence is about
    (``pool.gives_way``): that file's best chunk, if it ranks below, takes the index
    chunk's place, and the index chunk follows it (the index line's match is credited to
    the topic file it summarises). Scores are kept; only the order changes."""
    order = decision.order
    for nid in [n for n in order if pool.gives_way.get(n)]:
        i = order.index(nid)
        first_at: dict[int, int] = {}
        for j, m in enumerate(order):
            first_at.setdefault(pool.doc(m), j)
        later = [first_at[d] for d in pool.gives_way[nid] if d in first_at and first_at[d] > i
                 and pool.fused[order[first_at[d]]].is_match >= pool.fused[nid].is_match]
        if not later:
            continue
        topic = order.pop(min(later))
        order.insert(i, topic)
        decision.parts[nid] = replace(decision.parts[nid], moved_below=topic)
        decision.parts[topic] = replace(decision.parts[topic], credited_from=nid)


def index_links(conn: apsw.Connection, pool: Pool, names: Sequence[str],
                fts: str | None = None, weights: dict[str, float] | None = None) -> None:
    """Fill ``pool.paths`` (document -> logical path of every candidate document) and
    ``pool.index_links`` (index document -> the candidate documents its Markdown links
    point to, in the same repository). Two small reads; index text only for index
    documents among the candidates."""
    ids = list(pool.fused)
    if not ids:
        return
    ph = ",".join("?" * len(ids))
    by_path: dict[tuple[str, str], int] = {}
    for doc, repo, path in conn.execute(
            f"SELECT DISTINCT document_id, repository, logical_path FROM knowledge_nodes"
            f" WHERE id IN ({ph})", ids):
        pool.paths[int(doc)] = str(path)
        by_path[(str(repo), str(path))] = int(doc)
    docs = list(pool.paths)
    dph = ",".join("?" * len(docs))
    for doc, count in conn.execute(
            f"SELECT document_id, count(*) FROM knowledge_nodes WHERE document_id IN ({dph})"
            " GROUP BY document_id", docs):
        pool.doc_chunks[int(doc)] = int(count)
    wanted = set(names)
    indexes = [(d, r, p) for (r, p), d in by_path.items() if posixpath.basename(p) in wanted]
    for doc, repo, path in indexes:
        base = posixpath.dirname(path)

        def target(link: str, repo: str = repo, base: str = base) -> int | None:
            return by_path.get((repo, posixpath.normpath(posixpath.join(base, link))))

        chunks = [(int(nid), str(text)) for nid, text in conn.execute(
            "SELECT id, text FROM knowledge_nodes WHERE document_id=? ORDER BY ordinal", (doc,))]
        linked = {target(t) for _, text in chunks for _, t in links(text)} - {None, doc}
        if not linked:
            continue
        pool.index_links[doc] = frozenset(d for d in linked if d is not None)
        for nid, text in chunks:
            if nid not in pool.fused:
                continue
            if nid not in pool.lex_raw or not fts:  # matched by meaning: which line is unknown
                pool.gives_way[nid] = pool.index_links[doc]
                continue
            if weights is None:
                weights = search_evidence.phrase_weights(conn, fts)
            pool.gives_way[nid] = _line_targets(conn, text, weights, target, doc)


def _line_targets(conn: apsw.Connection, text: str, weights: Mapping[str, float],
                  target: Callable[[str], int | None], doc: int) -> frozenset[int]:
    """The topic documents whose link lines in ``text`` hold at least half of the
    idf weight of the query phrases ``text`` holds."""
    lines = text.splitlines()
    held = search_evidence.line_holders(conn, list(weights), lines)
    total = sum(w for p, w in weights.items() if held.get(p))
    if total <= 0:
        return frozenset()
    line_doc: dict[int, set[int]] = {}
    for line_no, link in links(text):
        d = target(link)
        if d is not None and d != doc:
            line_doc.setdefault(line_no - 1, set()).add(d)
    by_doc: dict[int, float] = {}
    for p, w in weights.items():
        for d in {d for i in held.get(p, ()) for d in line_doc.get(i, ())}:
            by_doc[d] = by_doc.get(d, 0.0) + w
    return frozenset(d for d, w in by_doc.items() if w >= 0.5 * total)
