"""Why search ranked what it ranked (issue 45), read from the ranking itself.

Nothing here scores anything. A search run for an explanation keeps the candidate pool
it fused (:func:`memlens.core.search.engine.hybrid`, ``pools=``) and its result carries
the fusion's :class:`~memlens.core.search.decision.FusionDecision`: every candidate's
lexical and vector part, the z-scores and length factor they were made from, the
memory-aware moves, the weights and the confidence that chose them. This module puts
those values into words, beside the raw evidence they came from (bm25 and its matched
terms with their idf, the cosine, the ranks on each side), so the parts of a hit add up
to its reported score by construction, and the order of the hits follows from them
(``tests/test_explain.py`` checks both on every bench question).

"Why not": for any document or chunk, where it stands on each side (a candidate and
its rank, or why not: no query word occurs in it, it ranks past the candidate depth, it
is below the vector cut), where the fusion placed it, why it is not shown (the cut, one
document's chunk limit, an index line giving way) and what it would need to rank first.
Those few extra reads (its bm25 and cosine, and their rank among every row) are made
only when asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import apsw

from memlens.core.search import evidence as evidence_mod
from memlens.core.search.decision import FusionDecision, Part
from memlens.core.search.hits import SearchHit, SearchResult
from memlens.core.search.rows import BM25_WEIGHTS, filters
from memlens.core.store.db import scalar, vec_table_name

if TYPE_CHECKING:
    from memlens.core.embedders.registry import Embedder
    from memlens.core.search.fusion import Pool

from memlens.core.search.explain_values import (
    BELOW_CUT,
    CANDIDATE,
    FILTERED,
    NO_WORD,
    PAST_DEPTH,
    SIDE_OFF,
    SIDES,
    ExplainError,
    Explanation,
    Side,
    Standing,
    Term,
    WhyNot,
    plain,
)

# ---------------------------------------------------------------- words

def nth(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _z_words(z: float | None) -> str:
    if z is None:
        return ""
    if z > 0:
        return f"{z:.2f} sd above the candidates' average"
    return f"{-z:.2f} sd below the candidates' average" if z < 0 else "at the candidates' average"


def _side_words(side: Side, weight: float | None, damp: float, terms: Sequence[str]) -> str:
    name = "Words" if side.kind == "lexical" else "Meaning"
    what = "bm25" if side.kind == "lexical" else "cosine"
    if side.status == SIDE_OFF:
        return f"{name}: not used for this search."
    if side.status == FILTERED:
        return f"{name}: not searched, it is {FILTERED}."
    if side.status in (NO_WORD, PAST_DEPTH) and side.part != 0.0:
        why = ("no word of the query occurs in it" if side.status == NO_WORD else
               f"{what} {side.score:.4f} ranks it {nth(side.rank or 0)}, past this side's"
               " candidates")
        return (f"{name}: {why}; this fusion scores a missing candidate as the lowest present"
                f" one → {side.part:+.4f}.")
    if side.status == NO_WORD:
        return f"{name}: no word of the query occurs in it, so this side gives it nothing."
    if side.status == PAST_DEPTH:
        return (f"{name}: {what} {side.score:.4f} ranks it {nth(side.rank or 0)} of all chunks,"
                " past the candidates this side hands to the fusion: it adds nothing.")
    if side.status == BELOW_CUT:
        return (f"{name}: cosine {side.score:.4f} ({nth(side.rank or 0)} by meaning) is below the"
                " vector cut for a chunk that shares no word with the query: not a candidate.")
    held = (" It holds " + ", ".join(f"«{plain(t)}»" for t in terms) + ".") if terms else ""
    where = f"{name}: {nth(side.rank or 0)} by {what} ({side.score:.4f}"
    where += f", {_z_words(side.z)})" if side.z is not None else ")"
    if weight is None:
        return f"{where}.{held}"
    if side.part > 0:
        tail = f" × weight {weight:.3f}" + (f" × length {damp:.3f}" if damp != 1.0 else "")
        return f"{where}{tail} → adds {side.part:.4f}.{held}"
    if side.part < 0:
        return f"{where} × weight {weight:.3f} → {side.part:+.4f}.{held}"
    if side.z is not None and side.z <= 0:
        return f"{where}: not above average, so it adds nothing.{held}"
    return f"{where} → adds {side.part:.4f}.{held}"


def weights_words(decision: FusionDecision | None, pool: Pool | None,
                  terms: Sequence[Term], mode: str) -> tuple[str, ...]:
    """Why the fusion chose its weights for this query, in words."""
    if mode != "hybrid":
        what = "bm25 (word match)" if mode == "lexical" else "cosine (meaning)"
        return (f"{mode} search: the score is the {what} itself; no fusion.",)
    if decision is None:
        return ()
    if decision.method == "lexical":
        return ("The embedder is unavailable: the ranking is the word ranking as it is,"
                " no vector weight is claimed.",)
    c, p = decision.confidence, decision.params
    if c is None or p is None:
        return (f"Fusion {decision.method}: fixed weights (lexical {p.lexical_weight if p else 0:g},"
                f" vector {p.vector_weight if p else 0:g}).",)
    out = [f"Fusion {decision.method}: words weigh {c.lexical_weight:.3f}, meaning"
           f" {c.vector_weight:.3f} for this query."]
    rare = sorted(terms, key=lambda t: -t.idf)[:3]
    if rare:
        out.append("Rarest query words (carry the most information): " + ", ".join(
            f"«{plain(t.phrase)}» idf {t.idf:.2f} ({t.share:.0%})" for t in rare) + ".")
    share = (f"One of the best word candidates holds {c.lexical_share:.0%} of the question's"
             f" information (idf-weighted)")
    if c.lexical_share >= p.adapt_knee:
        out.append(f"{share}, at least the knee of {p.adapt_knee:.0%}: words keep their full"
                   f" weight {p.lexical_weight:g}.")
    else:
        out.append(f"{share}, below the knee of {p.adapt_knee:.0%}: the word weight is cut to"
                   f" {p.lexical_weight:g} × ({c.lexical_share:.2f}/{p.adapt_knee:.2f})"
                   f"^{p.adapt_power:g} = {c.lexical_weight:.3f}"
                   + (" (but the two sides agree, so it is kept)" if c.agreement and p.agree_keep
                      else "") + ".")
    out.append("Both sides agree on the best document." if c.agreement else
               "The two sides do not agree on the best document.")
    if p.margin_knee > 0:
        out.append(f"The vector side's best document leads the next by {c.vector_margin:.2f} sd"
                   f" (knee {p.margin_knee:g}): meaning weighs {c.vector_weight:.3f}.")
    if decision.method == "evidence":
        out.append("Each side adds only its positive evidence (weight × how far above its"
                   " candidates' average the chunk scores); a side that does not list a chunk"
                   " adds 0 — unknown, not worst.")
    return tuple(out)


# ---------------------------------------------------------------- reads (explain only)

def query_terms(conn: apsw.Connection, fts: str | None) -> tuple[Term, ...]:
    """The query's phrases with the idf the lexical share weighs them by
    (:func:`memlens.core.search.evidence.phrase_weights`, the same function)."""
    if not fts:
        return ()
    weights = evidence_mod.phrase_weights(conn, fts)
    total = sum(weights.values())
    return tuple(Term(p, w, w / total if total > 0 else 0.0) for p, w in weights.items())


class _AllRanks:
    """Every row's score on one side for this query, read once and only when an
    explanation needs the rank of a chunk that is not among the side's candidates."""

    def __init__(self, scores: dict[int, float]) -> None:
        self.scores = scores
        order = sorted(scores, key=lambda n: (-scores[n], n))  # best first, ties by id
        self.at = {n: i for i, n in enumerate(order, 1)}

    def rank(self, nid: int) -> tuple[float, int] | None:
        """``(score, rank)`` of ``nid`` (``None``: not on this side at all)."""
        return (self.scores[nid], self.at[nid]) if nid in self.scores else None


def lexical_ranks(conn: apsw.Connection, fts: str | None, repository: str | None,
                  doc_type: str | None) -> _AllRanks:
    """bm25 (as a positive score) of every row holding a query word, within the filter."""
    if not fts:
        return _AllRanks({})
    fsql, fparams = filters(repository, doc_type)
    sql = (f"SELECT n.id, bm25(knowledge_nodes_fts, {BM25_WEIGHTS}) FROM knowledge_nodes_fts"
           " JOIN knowledge_nodes n ON n.id=knowledge_nodes_fts.rowid"
           f" WHERE knowledge_nodes_fts MATCH ?{fsql}")
    try:
        return _AllRanks({int(i): -float(b) for i, b in conn.execute(sql, [fts, *fparams])})
    except apsw.SQLError:
        return _AllRanks({})


def vector_ranks(conn: apsw.Connection, embedder: Embedder, query: str,
                 repository: str | None, doc_type: str | None) -> _AllRanks:
    """Cosine of every vector of the embedder's space to the query, within the filter."""
    import numpy as np

    space = scalar(conn, "SELECT name FROM vector_spaces WHERE fingerprint=?",
                   (embedder.fingerprint(),))
    if not space or not query.strip():
        return _AllRanks({})
    try:
        q = np.asarray(embedder.embed_query(query), dtype=np.float32).tobytes()
    except Exception:  # the embedder is down: the search said so; no vector ranks
        return _AllRanks({})
    fsql, fparams = filters(repository, doc_type, alias="")
    where = f" WHERE 1{fsql}" if fsql else ""
    sql = (f"SELECT node_id, vec_distance_cosine(embedding, ?) FROM"
           f" {vec_table_name(str(space))}{where}")
    return _AllRanks({int(i): 1.0 - float(d) for i, d in conn.execute(sql, [q, *fparams])
                      if d is not None})


def _held(conn: apsw.Connection, terms: Sequence[Term], nids: Sequence[int],
          ) -> dict[int, tuple[str, ...]]:
    """Which query phrases each node holds (the lexical share's own membership test)."""
    held = evidence_mod.holders(conn, [t.phrase for t in terms], nids)
    return {n: tuple(t.phrase for t in terms if n in held.get(t.phrase, ())) for n in nids}


def _node_meta(conn: apsw.Connection, nid: int) -> tuple[str, str, int, str, int, str | None]:
    r = conn.execute("SELECT repository, logical_path, ordinal, heading, document_id, doc_type"
                     " FROM knowledge_nodes WHERE id=?", (nid,)).fetchone()
    if r is None:
        raise ExplainError(f"chunk {nid} is no longer in memory")
    return (str(r[0]), str(r[1]), int(r[2]), str(r[3] or ""), int(r[4]),
            None if r[5] is None else str(r[5]))


# ---------------------------------------------------------------- the explanation

@dataclass
class _Ctx:
    conn: apsw.Connection
    res: SearchResult
    pool: Pool | None
    embedder: Embedder | None
    repository: str | None
    doc_type: str | None
    terms: tuple[Term, ...]
    fused_at: dict[int, int]
    shown_at: dict[int, int]
    _all: dict[str, _AllRanks] = field(default_factory=dict)

    @property
    def decision(self) -> FusionDecision | None:
        return self.res.decision

    def all_ranks(self, kind: str) -> _AllRanks:
        """Every row's rank on one side (read on first need, then kept)."""
        if kind not in self._all:
            if kind == "lexical":
                got = lexical_ranks(self.conn, self.res.fts_query, self.repository, self.doc_type)
            elif self.embedder is not None:
                got = vector_ranks(self.conn, self.embedder, self.res.query, self.repository,
                                   self.doc_type)
            else:
                got = _AllRanks({})
            self._all[kind] = got
        return self._all[kind]


def _sides(ctx: _Ctx, nid: int, meta: tuple[str, str, int, str, int, str | None],
           hit: SearchHit | None) -> tuple[Side, Side, Part | None]:
    res, pool, dec = ctx.res, ctx.pool, ctx.decision
    part = dec.parts.get(nid) if dec is not None else None
    outside = ((ctx.repository is not None and meta[0] != ctx.repository)
               or (ctx.doc_type is not None and meta[5] != ctx.doc_type))
    sides: list[Side] = []
    for kind in SIDES:
        used = res.mode in ("hybrid", kind) and not (
            kind == "vector" and (ctx.embedder is None or (pool is not None and not pool.vector_ok)))
        if not used:
            sides.append(Side(kind, SIDE_OFF))
            continue
        if outside:
            sides.append(Side(kind, FILTERED))
            continue
        if res.mode != "hybrid" and hit is not None:  # one side: the score is the side's own
            sides.append(Side(kind, CANDIDATE, rank=hit.ranks.get(kind), score=hit.score,
                              part=hit.score))
            continue
        raw_map = (pool.lex_raw if kind == "lexical" else pool.vec_raw) if pool else {}
        rank_map = (pool.lex_rank if kind == "lexical" else pool.vec_rank) if pool else {}
        if nid in raw_map and (pool is not None and nid in pool.fused) and part is not None:
            sides.append(Side(kind, CANDIDATE, rank=rank_map[nid], score=raw_map[nid],
                              z=part.lexical_z if kind == "lexical" else part.vector_z,
                              part=part.lexical if kind == "lexical" else part.vector))
            continue
        if kind == "vector" and nid in raw_map:
            sides.append(Side(kind, BELOW_CUT, rank=rank_map[nid], score=raw_map[nid],
                              part=part.vector if part is not None else 0.0))
            continue
        got = ctx.all_ranks(kind).rank(nid)
        # absent from this side's list: what the fusion gave it for that (0 in evidence)
        absent = 0.0 if part is None else part.lexical if kind == "lexical" else part.vector
        if got is None:
            sides.append(Side(kind, NO_WORD if kind == "lexical" else SIDE_OFF, part=absent))
        else:
            sides.append(Side(kind, PAST_DEPTH, rank=got[1], score=got[0], part=absent))
    return sides[0], sides[1], part


def _standing(ctx: _Ctx, nid: int, hit: SearchHit | None, terms: tuple[str, ...]) -> Standing:
    meta = _node_meta(ctx.conn, nid)
    lex, vec, part = _sides(ctx, nid, meta, hit)
    dec, pool = ctx.decision, ctx.pool
    conf = dec.confidence if dec is not None else None
    lw = conf.lexical_weight if conf else (dec.params.lexical_weight if dec and dec.params else None)
    vw = conf.vector_weight if conf else (dec.params.vector_weight if dec and dec.params else None)
    damp = part.damp if part is not None else 1.0
    lex = Side(lex.kind, lex.status, lex.rank, lex.score, lex.z, lex.part,
               _side_words(lex, lw, damp, terms))
    vec = Side(vec.kind, vec.status, vec.rank, vec.score, vec.z, vec.part,
               _side_words(vec, vw, damp, ()))
    score = (part.score if part is not None else hit.score if hit is not None else None)
    if ctx.res.mode != "hybrid" and hit is not None:
        score = hit.score
    moved = credited = None
    if part is not None and part.moved_below is not None:
        m = _node_meta(ctx.conn, part.moved_below)
        moved = f"{m[0]}/{m[1]} #{m[2]}"
    if part is not None and part.credited_from is not None:
        m = _node_meta(ctx.conn, part.credited_from)
        credited = f"{m[0]}/{m[1]} #{m[2]}"
    pref = ctx.res.preferred_repository
    preferred = bool(pref and meta[0] == pref)
    match = hit.match if hit is not None else (
        pool.fused[nid].match if pool is not None and nid in pool.fused else "none")
    position = ctx.shown_at.get(nid)
    head = f"{meta[0]}/{meta[1]} #{meta[2]}" + (f" {meta[3]}" if meta[3] else "")
    lines: list[str] = []
    if score is not None and ctx.res.mode == "hybrid" and part is not None:
        lines.append(f"Score {score:.4f} = words {part.lexical:.4f} + meaning {part.vector:.4f}.")
    elif score is not None:
        lines.append(f"Score {score:.4f}.")
    lines += [lex.words, vec.words]
    if damp != 1.0 and pool is not None:
        chunks = pool.doc_chunks.get(meta[4], 0)
        lines.append(f"Long document ({chunks} chunks): both parts × {damp:.3f} (length prior).")
    if moved:
        lines.append(f"An index chunk: it gives way to {moved}, the topic file its matching"
                     " link line summarises, and follows it.")
    if credited:
        lines.append(f"Credited from the index: a link line of {credited} that points here"
                     " matched the query, so this topic file takes that index chunk's place.")
    if preferred and position is not None:
        lines.append(f"From your current project ({pref}): its matches are listed first.")
    if match == "closest":
        lines.append("Closest by meaning only: not presented as a match (listed after matches).")
    summary = _summary(score, lex, vec, moved, preferred and position is not None)
    if credited:
        summary += f"; in place of index {credited}"
    return Standing(repository=meta[0], path=meta[1], ordinal=meta[2], heading=meta[3],
                    node_id=nid, document_id=meta[4], position=position,
                    fused_position=ctx.fused_at.get(nid), match=match, score=score,
                    lexical=lex, vector=vec, terms=terms, damp=damp, moved_below=moved,
                    credited_from=credited,
                    preferred=preferred, lines=(head, *lines), summary=summary)


def _summary(score: float | None, lex: Side, vec: Side, moved: str | None,
             preferred: bool) -> str:
    def side(s: Side, name: str, what: str) -> str:
        if s.status == CANDIDATE:
            return f"{name} {s.part:.3f} ({what} {s.score:.3f}, #{s.rank})"
        return f"{name} {s.part:.3f} ({s.status})" if s.part else f"{name} 0 ({s.status})"
    out = (f"score {score:.3f} = " if score is not None else "not scored: ")
    out += side(lex, "words", "bm25") + " + " + side(vec, "meaning", "cos")
    if moved:
        out += f"; index, gives way to {moved}"
    if preferred:
        out += "; your project first"
    return out


def explain(conn: apsw.Connection, res: SearchResult, pool: Pool | None, *,
            embedder: Embedder | None, candidates: int, per_document: int,
            repository: str | None = None, doc_type: str | None = None,
            target: tuple[str, list[int]] | None = None) -> Explanation:
    """Explain ``res`` (a finished search; for hybrid, ``pool`` is the pool it fused) and,
    with ``target`` (``(as asked, node ids)`` from :func:`resolve_target`), why that
    document or chunk is not first."""
    dec = res.decision
    terms = query_terms(conn, res.fts_query)
    fused_at = {nid: i for i, nid in enumerate(dec.order, 1)} if dec is not None else {}
    shown_at = {h.node_id: i for i, h in enumerate(res.hits, 1)}
    ctx = _Ctx(conn, res, pool, embedder, repository, doc_type, terms, fused_at, shown_at)
    held = _held(conn, terms, [h.node_id for h in res.hits]) if terms else {}
    hits = tuple(_standing(ctx, h.node_id, h, held.get(h.node_id, ())) for h in res.hits)
    conf = dec.confidence if dec is not None else None
    params = dec.params if dec is not None else None
    why = None if target is None else _why_not(ctx, target, hits, per_document)
    return Explanation(
        query=res.query, mode=res.mode, method=dec.method if dec is not None else None,
        lexical_weight=conf.lexical_weight if conf else (params.lexical_weight if params else None),
        vector_weight=conf.vector_weight if conf else (params.vector_weight if params else None),
        lexical_share=conf.lexical_share if conf else None,
        agreement=conf.agreement if conf else None,
        vector_margin=conf.vector_margin if conf else None,
        candidates=candidates, lexical_candidates=len(pool.lex_rank) if pool else 0,
        vector_candidates=len(pool.vec_rank) if pool else 0,
        vector_floor=pool.vector_floor if pool else None, per_document=per_document,
        preferred_repository=res.preferred_repository, terms=terms,
        weights=weights_words(dec, pool, terms, res.mode), hits=hits, why_not=why,
        notes=tuple(res.notes), result=res)


def resolve_target(conn: apsw.Connection, text: str,
                   repository: str | None = None) -> tuple[str, list[int]]:
    """``PATH[#ordinal]`` (``PATH``: a logical path, or ``REPOSITORY/PATH``) -> the node
    ids it names, in chunk order. Raises :class:`ExplainError` with one line."""
    path, ordinal = text.strip(), None
    if "#" in path:
        head, _, tail = path.rpartition("#")
        if not tail.isdigit():
            raise ExplainError(f"--why-not {text!r}: the part after '#' must be a chunk number")
        path, ordinal = head, int(tail)
    found = conn.execute(
        "SELECT DISTINCT repository, logical_path FROM knowledge_nodes WHERE logical_path=?"
        " OR repository || '/' || logical_path = ?", (path, path)).fetchall()
    if repository is not None and len(found) > 1:  # the filter picks among several;
        found = [r for r in found if r[0] == repository] or found  # outside it: said so
    if not found:
        raise ExplainError(f"--why-not: no searchable document {path!r} in memory")
    if len(found) > 1:
        repos = ", ".join(sorted(str(r[0]) for r in found))
        raise ExplainError(f"--why-not: {path!r} is in {len(found)} repositories ({repos});"
                           " write REPOSITORY/PATH")
    repo, logical = str(found[0][0]), str(found[0][1])
    nodes = [(int(i), int(o)) for i, o in conn.execute(
        "SELECT id, ordinal FROM knowledge_nodes WHERE repository=? AND logical_path=?"
        " ORDER BY ordinal", (repo, logical))]
    if ordinal is not None:
        nodes = [(i, o) for i, o in nodes if o == ordinal]
        if not nodes:
            raise ExplainError(f"--why-not: {repo}/{logical} has no chunk #{ordinal}")
    return text, [i for i, _ in nodes]


def _representative(ctx: _Ctx, nids: Sequence[int]) -> int:
    """The chunk a document is judged by: the one shown first, else the one fused first,
    else the best by bm25, else the nearest by meaning, else its first."""
    for where in (ctx.shown_at, ctx.fused_at):
        got = [n for n in nids if n in where]
        if got:
            return min(got, key=where.__getitem__)
    for kind in SIDES:
        if kind == "vector" and ctx.res.mode == "lexical":
            continue
        ranks = ctx.all_ranks(kind)
        got = [n for n in nids if ranks.rank(n) is not None]
        if got:
            return min(got, key=lambda n: ranks.at[n])
    return nids[0]


def _why_not(ctx: _Ctx, target: tuple[str, list[int]], hits: Sequence[Standing],
             per_document: int) -> WhyNot:
    label, nids = target
    nid = _representative(ctx, nids)
    held = _held(ctx.conn, ctx.terms, [nid]).get(nid, ()) if ctx.terms else ()
    hit = next((h for h in ctx.res.hits if h.node_id == nid), None)
    st = _standing(ctx, nid, hit, held)
    dec, pool = ctx.decision, ctx.pool
    if st.position is not None:
        reason = "It ranks first." if st.position == 1 else f"It is shown, {nth(st.position)}."
    elif st.fused_position is not None and dec is not None and pool is not None:
        above = [n for n in dec.order[:st.fused_position - 1] if pool.doc(n) == st.document_id]
        if st.moved_below:
            reason = (f"An index chunk: it gives way to {st.moved_below}, the topic file its"
                      " matching link line summarises.")
        elif len(above) >= per_document:
            reason = (f"Its document already has {len(above)} chunks ranked above it; at most"
                      f" {per_document} of one document are shown.")
        else:
            reason = (f"The fusion placed it {nth(st.fused_position)} of {len(dec.order)}"
                      f" candidates; {len(ctx.res.hits)} hit(s) are shown.")
    else:
        why = []
        if st.lexical.status != SIDE_OFF:
            why.append({NO_WORD: "no query word occurs in it",
                        PAST_DEPTH: f"its words rank it {nth(st.lexical.rank or 0)} by bm25,"
                                    " past the candidate depth",
                        FILTERED: FILTERED}.get(st.lexical.status, st.lexical.status))
        if st.vector.status != SIDE_OFF:
            why.append({BELOW_CUT: "by meaning it is below the vector cut",
                        PAST_DEPTH: f"by meaning it ranks {nth(st.vector.rank or 0)},"
                                    " past the candidate depth",
                        FILTERED: FILTERED}.get(st.vector.status, st.vector.status))
        reason = "Not a candidate: " + "; ".join(why) + "."
    needed: dict[str, float | None] = {}
    needs, gap = _needs(ctx, st, hits, needed)
    return WhyNot(target=label, standing=st, reason=reason, needs=needs, gap=gap,
                  need_bm25=needed.get("lexical"), need_cosine=needed.get("vector"))


def _needs(ctx: _Ctx, st: Standing, hits: Sequence[Standing], needed: dict[str, float | None],
           ) -> tuple[tuple[str, ...], float | None]:
    """What ``st`` would need to rank first, each side alone, the others held fixed
    (``needed``: filled with the bm25 / cosine found by :func:`replay_need`)."""
    if st.position == 1:
        return ("Nothing: it ranks first.",), 0.0
    if not hits or hits[0].score is None:
        return ("There is no hit to beat.",), None
    first = hits[0]
    top = first.score if first.score is not None else 0.0
    gap = top - (st.score or 0.0)
    out: list[str] = []
    dec, pool = ctx.decision, ctx.pool
    if ctx.res.mode != "hybrid" or dec is None or pool is None:
        what = "bm25" if ctx.res.mode == "lexical" else "cosine"
        out.append(f"A {what} above the first hit's {top:.4f} (now "
                   + (f"{st.score:.4f})." if st.score is not None else "none)."))
        return tuple(out), gap
    conf, params = dec.confidence, dec.params
    lw = conf.lexical_weight if conf else (params.lexical_weight if params else 0.0)
    vw = conf.vector_weight if conf else (params.vector_weight if params else 0.0)
    if st.position is None and st.fused_position == 1:
        out.append("It is first in the fused order: what keeps it out is the reason above.")
        return tuple(out), gap
    scored = f"it: {st.score:.4f}" if st.score is not None else "it has no score"
    how = (" Replaying the fusion with only its own score on one side changed, it ranks"
           " first with:" if st.node_id in pool.fused else " It is not a candidate:")
    out.append(f"Its score would have to gain {gap:.4f} (first: {top:.4f}, {scored}).{how}")
    for side, weight, what in ((st.lexical, lw, "bm25"), (st.vector, vw, "cosine")):
        name = "Words" if side.kind == "lexical" else "Meaning"
        now = f"{side.score:.4f}" if side.score is not None else "none"
        need = replay_need(pool, dec, ctx.res.query, st.node_id, side.kind)
        needed[side.kind] = need
        if need is None:
            if st.node_id not in pool.fused:
                out.append(f"{name}: it would first have to become a candidate"
                           + (" (hold a word of the query)." if side.kind == "lexical" else
                              f" (a cosine of at least {pool.vector_floor:.4f} for a chunk with"
                              " no query word)." if pool.vector_floor is not None else "."))
            else:
                out.append(f"{name}: no {what} would rank it first on its own (weight"
                           f" {weight:.3f} for this query; now {now}).")
            continue
        line = f"{name}: a {what} of {need:.4f} or more (now {now})"
        if side.kind == "lexical":
            missing = [t for t in sorted(ctx.terms, key=lambda t: -t.idf)
                       if t.phrase not in st.terms][:3]
            if missing:
                line += ", e.g. by holding " + ", ".join(f"«{plain(t.phrase)}»" for t in missing)
        out.append(line + ".")
    if st.moved_below:
        out.append(f"As an index line it would still give way to {st.moved_below}.")
    pref = ctx.res.preferred_repository
    if pref and first.preferred and st.repository != pref:
        out.append(f"Matches of your current project ({pref}) are listed first: search with"
                   " --all-projects to compare across projects.")
    if first.match != "closest" and st.match in ("closest", "none") and st.lexical.status != CANDIDATE:
        out.append("It would also have to be a match: hold a word of the query or be close"
                   " enough by meaning to pass the vector cut.")
    return tuple(out), gap


def replay_need(pool: Pool, decision: FusionDecision, query: str, nid: int,
                kind: str) -> float | None:
    """The least bm25 (``kind`` lexical) or cosine (vector) with which the fusion itself
    (:func:`memlens.core.search.fusion.decide`, same settings, same pool, only this
    chunk's score on that side changed) puts ``nid`` first; ``None`` when no value does
    or ``nid`` is not a candidate. Bisection on the real fusion, so it is exact to 1e-6
    whatever the fusion's form; the pool is left as it was."""
    from memlens.core.search import fusion as fusion_mod

    params = decision.params
    if params is None or nid not in pool.fused or not pool.vector_ok:
        return None
    raw = pool.lex_raw if kind == "lexical" else pool.vec_raw
    had, orig = nid in raw, raw.get(nid)

    def first(x: float) -> bool:
        raw[nid] = x
        try:
            return fusion_mod.decide(pool, params, query).order[0] == nid
        finally:
            if had and orig is not None:
                raw[nid] = orig
            else:
                del raw[nid]

    values = [v for n, v in raw.items() if n != nid]
    lo = orig if orig is not None else min(values, default=0.0)
    hi = 1.0 if kind == "vector" else max(max(values, default=1.0) * 4.0, lo + 1.0)
    if not first(hi):
        return None
    for _ in range(40):
        if hi - lo <= 1e-6:
            break
        mid = (lo + hi) / 2
        if first(mid):
            hi = mid
        else:
            lo = mid
    return hi
