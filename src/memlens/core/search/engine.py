"""Search over active projections: lexical (FTS5 bm25), vector (sqlite-vec KNN),
hybrid (a selectable fusion of the two: evidence, adaptive, convex, min-max, z-score or
reciprocal rank; the fusion itself is :mod:`memlens.core.search.fusion`).
The fuzzy "go to document" filter lives in :class:`memlens.core.types.FilterIndex`.

Only knowledge nodes are searched, and nodes exist only for the active projected
revision of live documents, so history and pending revisions never show up.

Query handling never raises on user input: the text is split into terms, each
term is quoted (so ``AND``/``OR``/``NEAR``/``*``/``"`` are plain words), code
identifiers (``SQLITE_BUSY``, ``foo.bar()``, ``path/to/file.md``) become phrases,
stop words are dropped, and the last term matches as a prefix while the user is
still typing.

Hybrid fusion, chosen by measurement on the bundled corpus (see
``docs/research/auto-memory-results.md``): a *convex* combination
``1.0 * bm25/max(bm25) + 0.5 * cosine`` over the union of the top 50 lexical and
top 50 vector candidates. Reciprocal rank fusion (``fusion="rrf"``, K=60) was
measured too: because RRF flattens the lexical scores, a weak vector signal
reorders near-ties and hybrid fell *below* lexical on every query kind with the
hashing embedder (paraphrase Hit@1 0.38 vs 0.62); the convex form never fell
below lexical with either the hashing or the shipped static embedder and gained
on paraphrases (0.62 -> 0.67 hashing, 0.62 -> 0.71 static). Diversification: at most
``per_document`` hits (default 2) from one document; further hits of the same
document are dropped so one long file cannot flood the list.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import apsw

from memlens.core.config.settings import FUSIONS, SearchSettings
from memlens.core.search import evidence as search_evidence
from memlens.core.search import fusion as fusion_mod
from memlens.core.search import hits as hits_mod
from memlens.core.search import rows as search_rows
from memlens.core.search.hits import HL_END as HL_END
from memlens.core.search.hits import HL_START as HL_START
from memlens.core.search.hits import SearchHit as SearchHit
from memlens.core.search.hits import SearchResult as SearchResult
from memlens.core.store.db import DAMAGE, raise_if_damage, rows, scalar, vec_table_name

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from memlens.core.embedders.registry import Embedder
    from memlens.core.search.lexical_cache import LexicalCache
    from memlens.core.search.vector_matrix import VectorMatrixCache
from memlens.core.search.query import STOP_WORDS as STOP_WORDS
from memlens.core.search.query import build_fts_query as build_fts_query
from memlens.core.search.query import fts_phrases as fts_phrases
from memlens.core.search.query import identifiers_only as identifiers_only
from memlens.core.search.query import match_spans as match_spans
from memlens.core.search.rows import BM25_WEIGHTS as BM25_WEIGHTS
from memlens.core.search.rows import filters as _filters

MODES = ("lexical", "vector", "hybrid")
VEC_K_MAX = 4096  # sqlite-vec 0.1.9 rejects k above 4096
# Defaults come from the one place settings are defined (``[search]`` in the config).
_DEFAULTS = SearchSettings()
RRF_K = _DEFAULTS.rrf_k
LEXICAL_WEIGHT = _DEFAULTS.lexical_weight
VECTOR_WEIGHT = _DEFAULTS.vector_weight
FUSION = _DEFAULTS.fusion_options()["fusion"]
CANDIDATES = _DEFAULTS.candidates
ADAPT_POWER = _DEFAULTS.adapt_power
ADAPT_TOP = _DEFAULTS.adapt_top
ADAPT_KNEE = _DEFAULTS.adapt_knee
AGREE_TOP = fusion_mod.FusionParams().agree_top
# semantic-only hits need cosine >= mean + z*std of the query's candidates
SEMANTIC_MIN_Z = _DEFAULTS.semantic_min_z
MATCH_KINDS = ("lexical", "semantic", "closest")
EMBEDDER_DOWN = "embedder unavailable"
NO_WORD_NOTE = ("no word of the query occurs in memory; the hits are only the closest by"
                " meaning, not matches")
NO_WORD_FILTERED_NOTE = ("no word of the query occurs in the documents this filter keeps; the"
                         " hits are only the closest by meaning, not matches")
"""NO_WORD_NOTE under a --type / --repository filter: the words may occur elsewhere."""


def no_word_note(repository: str | None, doc_type: str | None) -> str:
    """The note of a search none of whose words occurs where it looked (issue 42)."""
    return NO_WORD_NOTE if repository is None and doc_type is None else NO_WORD_FILTERED_NOTE



class SearchError(Exception):
    """A search request that cannot be served (bad mode, no embedder...)."""


def lexical(conn: apsw.Connection, query: str, *, k: int = 10, repository: str | None = None,
            doc_type: str | None = None, prefix: bool = True,
            snippets: bool = True) -> SearchResult:
    """bm25-ranked full-text search with highlighted snippets.

    Only the top ``k`` rowids are taken from FTS5 first; node metadata and snippets
    are then fetched for those rows alone (building a snippet for every matching
    row made a common query ~6x slower at 100k chunks).
    """
    res = SearchResult(query=query, mode="lexical", hits=[],
                       fts_query=build_fts_query(query, prefix=prefix))
    top = _lexical_top(conn, res, k, repository, doc_type)
    if not top:
        return res
    res.hits = hits_mod.lexical_hits(top, search_rows.node_rows(conn, [nid for nid, _ in top]))
    if snippets:
        attach_snippets(conn, res.fts_query, res.hits)
    return res


def _lexical_top(conn: apsw.Connection, res: SearchResult, k: int, repository: str | None,
                 doc_type: str | None, cache: LexicalCache | None = None,
                 ) -> list[tuple[int, float]]:
    """``(node_id, bm25)`` of the best ``k`` FTS5 matches of ``res.fts_query``
    (bm25 is "lower is better", ties by node id); a parse error becomes a note on
    ``res``. ``cache``: a long-lived caller's phrase postings (same rows and scores)."""
    fts = res.fts_query
    if fts is None or k <= 0:
        return []
    if cache is not None:
        got = cache.top(conn, fts_phrases(fts), k, repository, doc_type)
        if got is not None:
            return got
    try:
        return search_rows.lexical_top(conn, fts, k, repository, doc_type)
    except apsw.SQLError as exc:  # defensive: our builder should never produce bad syntax
        res.notes.append(f"query could not be parsed: {exc}")
        return []


def attach_snippets(conn: apsw.Connection, fts: str | None, hits: Sequence[SearchHit]) -> None:
    """Replace lead snippets by FTS5 snippets with highlight spans, for these hits only.

    The hits' rows are copied into a small TEMP FTS5 table (same columns, same
    tokenizer) and ``snippet()`` runs there: FTS5's snippet depends only on the row's
    own phrase positions, so the text is the same as on the main index, but the MATCH
    no longer loads each query term's whole doclist once per hit (for terms in half
    the chunks at 104k that cost ~1.2 ms a hit; now ~0.6 ms for ten).
    """
    ids = list(dict.fromkeys(h.node_id for h in hits if h.ranks.get("lexical")))
    if fts is None or not ids:
        return
    found = search_rows.hit_snippets(conn, fts, ids)
    for h in hits:
        got = found.get(h.node_id)
        if got is not None:
            h.snippet, h.highlights = got


def vector_space_for(conn: apsw.Connection, embedder: Embedder) -> str | None:
    """The vector space holding this embedder's vectors, if any were written."""
    v = scalar(conn, "SELECT name FROM vector_spaces WHERE fingerprint=?", (embedder.fingerprint(),))
    return str(v) if v else None


def vector(conn: apsw.Connection, query: str, embedder: Embedder, *, k: int = 10,
           repository: str | None = None, doc_type: str | None = None,
           matrix: VectorMatrixCache | None = None) -> SearchResult:
    """Exact KNN over the nodes embedded with ``embedder`` (cosine distance).

    With ``matrix`` (a long-lived service's cache, :mod:`memlens.core.search.vector_matrix`)
    the scan runs over an in-RAM float32 copy of the space when that copy matches the
    current snapshot; otherwise, and without ``matrix``, sqlite-vec's ``vec0`` KNN
    answers. Both give the same neighbours in the same order.
    """
    res = SearchResult(query=query, mode="vector", hits=[], embedder=embedder.fingerprint())
    knn = _vector_knn(conn, res, query, embedder, k, repository, doc_type, matrix)()
    if knn:
        res.hits = hits_mod.vector_hits(knn, search_rows.node_rows(conn, [nid for nid, _ in knn]))
    return res


def _vector_knn(conn: apsw.Connection, res: SearchResult, query: str, embedder: Embedder,
                k: int, repository: str | None, doc_type: str | None,
                matrix: VectorMatrixCache | None, *, background: bool = False,
                ) -> Callable[[], list[tuple[int, float]]]:
    """A callable giving ``(node_id, distance)`` of the ``k`` nearest nodes, nearest
    first. With ``background`` and a usable ``matrix``, the in-RAM scan runs on the
    cache's worker thread meanwhile (numpy releases the GIL), so hybrid can run its
    FTS query at the same time; otherwise the work is done before returning."""
    import numpy as np

    if not query.strip() or k <= 0:
        return list
    space = scalar(conn, "SELECT name FROM vector_spaces WHERE fingerprint=?",
                   (embedder.fingerprint(),))
    if not space:
        res.notes.append("no vectors for this embedder yet; run `memlens project`")
        return list

    def embed() -> npt.NDArray[np.float32] | None:
        v = np.asarray(embedder.embed_query(query), dtype=np.float32)
        return v if v.shape == (embedder.dim,) and np.any(v) else None

    kk = max(1, min(int(k), VEC_K_MAX))
    if matrix is not None:
        # In the background the query is embedded on the matrix's worker as well, so
        # hybrid's FTS5 ranking runs meanwhile instead of after it.
        later = matrix.knn_later(conn, str(space), embedder.dim, embedder.metric, embed, kk,
                                 repository=repository, doc_type=doc_type,
                                 background=background)
        if later is not None:
            return later
    q = embed()
    if q is None:
        return list
    fsql, fparams = _filters(repository, doc_type, alias="")
    params: list[Any] = [q.tobytes(), kk, *fparams]
    found = [(int(r["node_id"]), float(r["distance"])) for r in rows(
        conn, f"SELECT node_id, distance FROM {vec_table_name(str(space))}"
        f" WHERE embedding MATCH ? AND k=?{fsql} ORDER BY distance", params)]
    return lambda: found


def diversify(hits: Sequence[SearchHit], per_document: int) -> list[SearchHit]:
    """Keep at most ``per_document`` hits of one document, preserving order."""
    return search_rows.cap_per_document(hits, per_document, lambda h: h.document_id)


def note_vectors_waiting(conn: apsw.Connection, res: SearchResult) -> None:
    """Issue 37: documents whose vectors are still being computed (stage 2 of the
    projection) are found by their words only meanwhile; say how many."""
    from memlens.core.projection.changes import vectors_waiting

    waiting = vectors_waiting(conn)
    if waiting:
        res.notes.append(f"{waiting} document(s) still wait for their vectors:"
                         " they rank by their words until the vectors are written")


def hybrid(conn: apsw.Connection, query: str, embedder: Embedder | None, *, k: int = 10,
           repository: str | None = None, doc_type: str | None = None,
           per_document: int = 2, lexical_weight: float = LEXICAL_WEIGHT,
           vector_weight: float = VECTOR_WEIGHT, fusion: str = FUSION,
           rrf_k: float = RRF_K, candidates: int = CANDIDATES,
           semantic_min_z: float | None = SEMANTIC_MIN_Z, snippets: bool = True,
           matrix: VectorMatrixCache | None = None, complete: bool = True,
           lexical_cache: LexicalCache | None = None, adapt_power: float = ADAPT_POWER,
           adapt_top: int = ADAPT_TOP, adapt_knee: float = ADAPT_KNEE,
           agree_top: int = AGREE_TOP, index_rule: bool = True,
           index_names: Sequence[str] = fusion_mod.INDEX_NAMES,
           pools: list[fusion_mod.Pool] | None = None) -> SearchResult:
    """Fuse lexical and vector results, diversified per document (``snippets``: attach
    FTS snippets to the hits; :func:`search` does it once, after its own cut).

    Fusion methods (``fusion``):

    - ``"convex"``: ``lexical_weight * bm25/max(bm25) + vector_weight * cosine``
      (the historical default; the best lexical hit always gets the full weight).
    - ``"minmax"`` / ``"zscore"``: each signal normalised per query over its own
      candidates (min-max to [0, 1] or z-score); a candidate missing from one side
      gets that side's lowest normalised value; then weighted sum.
    - ``"rrf"``: ``sum(w / (rrf_k + rank))``.
    - ``"evidence"`` (what ``auto`` means with a semantic embedder; issue 46): each side
      adds only its positive z-score (absent = 0 = no evidence), the lexical side
      weighted as in ``adaptive``, and a ``MEMORY.md`` chunk gives way to the topic file
      its matching line links to (:mod:`memlens.core.search.fusion`). The decision, every
      candidate's score in parts, is ``res.decision``.
    - ``"adaptive"`` (the default before issue 46): z-score fusion
      whose lexical weight is scaled by ``share ** adapt_power``, ``share`` being the
      best idf-weighted share of the query's phrases held by one of the top
      ``adapt_top`` lexical candidates (:func:`memlens.core.search.evidence.coverage`).
      A question whose words the memory does not use leans on the vector side; a
      question whose words one chunk holds keeps its lexical ranking.

    The candidate depth is ``max(candidates, k)`` on each side, so for any
    ``k <= candidates`` the order of the top ``k`` does not depend on ``k``.

    Every hit says whether it shares a query term (``lexical_match`` / ``match``);
    when every word of the query is a code identifier (:func:`identifiers_only`), hits
    that share none are "closest", not matches.
    Semantic-only hits are kept only when their cosine is at least
    ``mean + semantic_min_z * std`` of the query's vector candidates (``None``
    keeps them all), so a query nothing matches lexically and whose neighbours are
    all alike returns few or no hits. If the embedder fails, the lexical results
    are returned with a note instead of an error.

    Candidates are ranked as bare hits (node, document, repository, score) and
    only the returned hits read their node and chunk columns (``complete=False``
    leaves them bare: :func:`search` completes them after its own cut);
    ``matrix`` is passed to :func:`vector` (an in-RAM copy of the vectors, same
    neighbours) and ``lexical_cache`` to the lexical side (phrase postings, same
    rows and scores). ``pools``: when given, the candidate pool this ranking fused is
    appended to it (the explanation reads it: :mod:`memlens.core.search.explain`).
    """
    if fusion not in FUSIONS:
        raise SearchError(f"unknown fusion {fusion!r}; use one of {', '.join(FUSIONS)}")
    n = max(int(candidates), int(k), 1)
    res, pool = gather(conn, query, embedder, n=n, repository=repository, doc_type=doc_type,
                       adapt_top=adapt_top if fusion in ("adaptive", "evidence") else 0,
                       semantic_min_z=semantic_min_z, matrix=matrix,
                       lexical_cache=lexical_cache,
                       index_names=index_names if fusion == "evidence" and index_rule else ())
    params = fusion_mod.FusionParams(
        method=fusion, lexical_weight=lexical_weight, vector_weight=vector_weight,
        rrf_k=rrf_k, adapt_power=adapt_power, adapt_knee=adapt_knee, agree_top=agree_top,
        index_rule=index_rule)
    decision = fusion_mod.decide(pool, params, query)
    if pools is not None:
        pools.append(pool)
    res.fusion = decision.as_json()
    res.decision = decision
    ranked = []
    for nid in decision.order:
        h = pool.fused[nid]
        h.score = round(decision.parts[nid].score, 8)
        ranked.append(h)
    res.hits = diversify(ranked, per_document)[:k]
    if not pool.lex_raw and res.hits:
        for h in res.hits:
            h.match = "closest"
        res.notes.append(no_word_note(repository, doc_type))
    if complete:
        res.hits = hits_mod.complete(conn, res.hits)
    if snippets:
        attach_snippets(conn, res.fts_query, res.hits)
    return res


def gather(conn: apsw.Connection, query: str, embedder: Embedder | None, *, n: int,
           repository: str | None = None, doc_type: str | None = None, adapt_top: int = 0,
           semantic_min_z: float | None = SEMANTIC_MIN_Z,
           matrix: VectorMatrixCache | None = None, lexical_cache: LexicalCache | None = None,
           index_names: Sequence[str] = ()) -> tuple[SearchResult, fusion_mod.Pool]:
    """The candidates of a hybrid query: the best ``n`` of each side as one
    :class:`~memlens.core.search.fusion.Pool` (with the lexical share of the best
    ``adapt_top`` lexical candidates when ``adapt_top`` > 0, and the links of index
    documents named ``index_names``), and the result its notes go to. Deterministic
    for one database state: :func:`hybrid` fuses it, benchmarks replay fusions on it."""
    res = SearchResult(query=query, mode="hybrid", hits=[], fts_query=build_fts_query(query))
    # The vector side starts first: with a matrix its scan runs while FTS5 ranks.
    notes_before = len(res.notes)
    vec_later = _vector_side(conn, query, embedder, res, k=n, repository=repository,
                             doc_type=doc_type, matrix=matrix)
    lex_top = _lexical_top(conn, res, n, repository, doc_type, lexical_cache)
    # The lexical weight depends on how much of the question its best candidates hold;
    # measured while the vector scan may still be running.
    weights = (search_evidence.phrase_weights(conn, res.fts_query)
               if adapt_top and lex_top and res.fts_query else None)
    lex_share = (_lexical_share(conn, res.fts_query, lex_top, adapt_top, weights)
                 if adapt_top else 1.0)
    vec_top = vec_later()
    vector_ok = embedder is not None and not any(
        note.startswith(EMBEDDER_DOWN) for note in res.notes[notes_before:])
    if embedder is not None:
        note_vectors_waiting(conn, res)
    # Candidates are ranked bare (one light read for both lists); only the hits kept
    # after fusion and the cut read their node text.
    known = hits_mod.light(conn, [nid for nid, _ in lex_top] + [nid for nid, _ in vec_top])
    pool = fusion_mod.Pool.merge(hits_mod.stubs(lex_top, known, "lexical"),
                                 hits_mod.stubs(vec_top, known, "vector"))
    pool.lexical_share, pool.vector_ok = lex_share, vector_ok
    if semantic_min_z is not None:
        pool.drop_weak_semantic(semantic_min_z)
    if pool.lex_raw and identifiers_only(query):  # where `busy_timeout` occurs, not what
        for h in pool.fused.values():             # is near it: the rest rank after
            if h.match == "semantic":
                h.match = "closest"
    if index_names:
        fusion_mod.index_links(conn, pool, index_names, res.fts_query, weights)
    return res, pool


def _lexical_share(conn: apsw.Connection, fts: str | None, lex_top: Sequence[tuple[int, float]],
                   top: int, weights: dict[str, float] | None = None) -> float:
    """The best idf-weighted query coverage among the first ``top`` lexical candidates
    (0 when there are none)."""
    if not lex_top or not fts:
        return 0.0
    cov = search_evidence.coverage(conn, fts, [nid for nid, _ in lex_top[:max(1, top)]],
                                   weights=weights)
    return max(cov.values(), default=0.0)


def _vector_side(conn: apsw.Connection, query: str, embedder: Embedder | None,
                 res: SearchResult, *, k: int, repository: str | None,
                 doc_type: str | None, matrix: VectorMatrixCache | None = None,
                 ) -> Callable[[], list[tuple[int, float]]]:
    """Start the vector candidates of hybrid search; the returned callable gives
    ``(node_id, distance)`` and adds this side's notes to ``res``. An embedder failure
    becomes a note and no candidates (lexical results still answer)."""
    if embedder is None:
        return list
    v = SearchResult(query=query, mode="vector", hits=[])

    def failed(exc: Exception) -> list[tuple[int, float]]:
        res.notes.append(f"{EMBEDDER_DOWN} ({type(exc).__name__}: {exc});"
                         " showing lexical results only")
        return []

    try:
        v.embedder = embedder.fingerprint()
        pending = _vector_knn(conn, v, query, embedder, k, repository, doc_type, matrix,
                              background=True)
    except DAMAGE:  # a damaged page is not an embedder failure: no partial answer
        raise
    except Exception as exc:  # any embedder failure degrades to lexical
        raise_if_damage(exc)  # ... but sqlite-vec unable to read its pages is damage
        return functools.partial(failed, exc)

    def finish() -> list[tuple[int, float]]:
        try:
            knn = pending()
        except DAMAGE:
            raise
        except Exception as exc:  # same degrade as above
            raise_if_damage(exc)
            return failed(exc)
        res.embedder = v.embedder
        res.notes.extend(v.notes)
        return knn
    return finish


def search(conn: apsw.Connection, query: str, *, mode: str = "hybrid",
           embedder: Embedder | None = None, k: int = 10, repository: str | None = None,
           doc_type: str | None = None, per_document: int = 2,
           fusion_options: dict[str, Any] | None = None,
           prefer_repository: str | None = None,
           matrix: VectorMatrixCache | None = None,
           lexical_cache: LexicalCache | None = None) -> SearchResult:
    """Search active projections in the given mode (never raises on query text).

    ``fusion_options`` are passed to :func:`hybrid` (``fusion``, ``lexical_weight``,
    ``vector_weight``, ``rrf_k``, ``candidates``, ``semantic_min_z``).

    ``prefer_repository`` (ignored when ``repository`` filters anyway) ranks that
    project's hits first: of the best ``candidates`` hits, the matches of the
    preferred project come first, then the other matches, then hits that are only
    closest by meaning; each group keeps its own order.

    ``matrix``: a long-lived caller's in-RAM vector cache (see :func:`vector`);
    ``lexical_cache``: its phrase postings (:mod:`memlens.core.search.lexical_cache`).
    """
    if mode not in MODES:
        raise SearchError(f"unknown search mode {mode!r}; use one of {', '.join(MODES)}")
    k = max(0, min(int(k), VEC_K_MAX))
    prefer = prefer_repository if prefer_repository and not repository else None
    depth = max(k, int((fusion_options or {}).get("candidates", CANDIDATES))) if prefer else k
    res = _search_mode(conn, query, mode, embedder, depth, repository, doc_type, per_document,
                       fusion_options, matrix, lexical_cache)
    if prefer:
        res.preferred_repository = prefer
        res.hits = sorted(res.hits, key=lambda h: (not h.is_match,
                                                   h.repository != prefer))[:k]
    res.hits = hits_mod.complete(conn, res.hits)  # node text for the hits shown only
    attach_snippets(conn, res.fts_query, res.hits)  # once, for the hits shown
    return res


def _search_mode(conn: apsw.Connection, query: str, mode: str, embedder: Embedder | None,
                 k: int, repository: str | None, doc_type: str | None, per_document: int,
                 fusion_options: dict[str, Any] | None,
                 matrix: VectorMatrixCache | None = None,
                 lexical_cache: LexicalCache | None = None) -> SearchResult:
    depth = k * 4 if per_document else k
    if mode == "lexical":
        res = SearchResult(query=query, mode="lexical", hits=[], fts_query=build_fts_query(query))
        top = _lexical_top(conn, res, depth, repository, doc_type, lexical_cache)
        known = hits_mod.light(conn, [nid for nid, _ in top])
        res.hits = diversify(hits_mod.stubs(top, known, "lexical"), per_document)[:k]
        for i, h in enumerate(res.hits, 1):
            h.ranks = {"lexical": i, "vector": None}
        return res
    if mode == "vector":
        if embedder is None:
            raise SearchError("vector search needs an embedder")
        res = SearchResult(query=query, mode="vector", hits=[], embedder=embedder.fingerprint())
        knn = _vector_knn(conn, res, query, embedder, depth, repository, doc_type, matrix)()
        known = hits_mod.light(conn, [nid for nid, _ in knn])
        res.hits = diversify(hits_mod.stubs(knn, known, "vector"), per_document)[:k]
        for i, h in enumerate(res.hits, 1):
            h.ranks = {"lexical": None, "vector": i}
        if res.hits and not _any_word_occurs(conn, query, repository, doc_type):
            for h in res.hits:
                h.match = "closest"
            res.notes.append(no_word_note(repository, doc_type))
        return res
    return hybrid(conn, query, embedder, k=k, repository=repository, doc_type=doc_type,
                  per_document=per_document, snippets=False, matrix=matrix, complete=False,
                  lexical_cache=lexical_cache, **(fusion_options or {}))


def _any_word_occurs(conn: apsw.Connection, query: str, repository: str | None,
                     doc_type: str | None) -> bool:
    """Whether any active chunk shares a term with ``query`` (stops at the first
    match: no bm25 ranking of every matching row)."""
    fts = build_fts_query(query)
    if fts is None:
        return False
    fsql, fparams = _filters(repository, doc_type)
    if fsql:
        sql = ("SELECT 1 FROM knowledge_nodes_fts JOIN knowledge_nodes n"
               f" ON n.id=knowledge_nodes_fts.rowid WHERE knowledge_nodes_fts MATCH ?{fsql} LIMIT 1")
    else:
        sql = "SELECT 1 FROM knowledge_nodes_fts WHERE knowledge_nodes_fts MATCH ? LIMIT 1"
    try:
        return conn.execute(sql, [fts, *fparams]).fetchone() is not None
    except apsw.SQLError:
        return False
