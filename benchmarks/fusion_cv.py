"""Fusion settings chosen across both regimes at once (issue 46): Markdown memory and LoCoMo.

Usage::

    uv run python benchmarks/fusion_cv.py [--locomo DATA_DIR] [--embedder minilm] [--json OUT]

Every question's candidates are gathered once through the engine
(:func:`memlens.core.search.engine.gather`: the same lexical and vector lists, lexical
share and index links a search reads), then every fusion setting of the grid is replayed
on them with :func:`memlens.core.search.fusion.decide`, the function ``memlens search``
calls, so a grid of 100 settings costs seconds, not a re-run per setting.

Sets and their roles (nothing is tuned on a ``report`` set):

* choose: ``corpus/queries.jsonl`` (train, 96), ``corpus/queries_hard.jsonl`` (44),
  LoCoMo conversations 0-4 (with ``--locomo``);
* report: ``corpus_validation/queries.jsonl`` (80), ``corpus_validation/queries_hard.jsonl``
  and ``queries_hard2.jsonl`` (44 each), LoCoMo conversations 5-9.

Memory sets score document-level Hit@1 and MRR (hits deduplicated by document, k=10, as
``memlens bench``); LoCoMo scores recall@5 and MRR of the hits as returned (two chunks
of one note take two places, as ``memlens search`` returns them) and collapsed to
distinct notes. A setting is judged by its *worst deficit*: per set and question kind,
hybrid minus the better of lexical and vector (in questions; LoCoMo in recall@5 x n),
summed over the choose sets, then by its mean score.
"""

from __future__ import annotations

import argparse
import itertools
import json
import pickle
import shutil
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlens.core.config.settings import load_settings
from memlens.core.embedders.registry import make_embedder
from memlens.core.ingest.sources import roots_for_path
from memlens.core.search import engine as search_mod
from memlens.core.search import fusion as fusion_mod
from memlens.core.service import MemoryService

ROOT = Path(__file__).resolve().parent.parent
N = 50          # candidates per side, the default
K = 10


@dataclass
class Item:
    """One question with its gathered pool and its two halves' rankings."""

    set: str
    role: str
    kind: str
    query: str
    truth: frozenset[Any]     # documents (memory: (repo, path); LoCoMo: note stems)
    pool: fusion_mod.Pool
    label: dict[int, Any]     # node id -> document label
    lexical: list[Any]        # document labels as the lexical mode ranks them
    vector: list[Any]


def _labels(conn: Any, ids: Sequence[int], locomo: bool) -> dict[int, Any]:
    if not ids:
        return {}
    ph = ",".join("?" * len(ids))
    out = {}
    for nid, repo, path in conn.execute(
            f"SELECT id, repository, logical_path FROM knowledge_nodes WHERE id IN ({ph})", list(ids)):
        out[int(nid)] = Path(path).stem if locomo else (repo, path)
    return out


def _mode_docs(conn: Any, q: str, mode: str, emb: Any, locomo: bool) -> list[Any]:
    res = search_mod.search(conn, q, mode=mode, embedder=emb if mode == "vector" else None,
                            k=N if not locomo else K, per_document=0 if not locomo else 2)
    lab = _labels(conn, [h.node_id for h in res.hits], locomo)
    return [lab[h.node_id] for h in res.hits if h.node_id in lab]


def gather_items(svc: MemoryService, name: str, role: str, questions: list[dict[str, Any]],
                 locomo: bool = False) -> list[Item]:
    conn = svc.conn()
    out = []
    for q in questions:
        _, pool = search_mod.gather(conn, q["query"], svc.embedder, n=N, adapt_top=3,
                                    index_names=fusion_mod.INDEX_NAMES)
        out.append(Item(set=name, role=role, kind=q["kind"], query=q["query"],
                        truth=frozenset(q["truth"]), pool=pool,
                        label=_labels(conn, list(pool.fused), locomo),
                        lexical=_mode_docs(conn, q["query"], "lexical", svc.embedder, locomo),
                        vector=_mode_docs(conn, q["query"], "vector", svc.embedder, locomo)))
    return out


def _memory_service(corpus: Path, tmp: Path, embedder: str) -> MemoryService:
    shutil.copytree(corpus, tmp / "c", ignore=shutil.ignore_patterns("*.jsonl", "README.md"))
    s = load_settings(tmp / "none.toml", env={}, overrides={"db": str(tmp / "m.db")})
    svc = MemoryService(s, embedder=make_embedder(embedder, {}), install_key=b"k" * 32)
    svc.ingest(roots_for_path(tmp / "c"))
    return svc


def _memory_questions(path: Path) -> list[dict[str, Any]]:
    qs = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return [{**q, "truth": [(q["repository"], q["path"])]} for q in qs]


def memory_sets(tmp: Path, embedder: str) -> Iterator[Item]:
    plan = [("corpus", [("train", "choose", "queries.jsonl"), ("hard", "choose", "queries_hard.jsonl")]),
            ("corpus_validation", [("validation", "report", "queries.jsonl"),
                                   ("vhard", "report", "queries_hard.jsonl"),
                                   ("vhard2", "report", "queries_hard2.jsonl")])]
    for corpus, sets in plan:
        d = tmp / corpus
        d.mkdir()
        svc = _memory_service(ROOT / corpus, d, embedder)
        try:
            for name, role, f in sets:
                yield from gather_items(svc, name, role, _memory_questions(ROOT / corpus / f))
        finally:
            svc.close()


def locomo_sets(data_dir: Path, embedder: str) -> Iterator[Item]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import locomo

    corpus = locomo.load_corpus(data_dir)
    db, _ = locomo.cached_database(corpus, data_dir, embedder=embedder)
    svc = locomo.open_service(db, embedder=embedder)
    try:
        for role, convs in (("choose", range(5)), ("report", range(5, 10))):
            qs = [{"query": q.question, "kind": f"cat{q.category}", "truth": list(q.truth)}
                  for q in corpus.questions if q.conversation in convs]
            yield from gather_items(svc, f"locomo{'0-4' if role == 'choose' else '5-9'}", role,
                                    qs, locomo=True)
    finally:
        svc.close()


# -- scoring --------------------------------------------------------------------------------

def ranked_docs(item: Item, params: fusion_mod.FusionParams, per_document: int) -> list[Any]:
    d = fusion_mod.decide(item.pool, params, item.query)
    hits = [item.pool.fused[nid] for nid in d.order]
    if per_document:
        hits = search_mod.diversify(hits, per_document)
    return [item.label[h.node_id] for h in hits if h.node_id in item.label]


def _dedupe(docs: Sequence[Any]) -> list[Any]:
    return list(dict.fromkeys(docs))


def score(item: Item, docs: Sequence[Any], collapse: bool = False) -> dict[str, float]:
    """Memory: hit1, mrr over distinct documents. LoCoMo: recall@5 and mrr as returned
    (``collapse``: over distinct notes)."""
    if item.set.startswith("locomo"):
        top = (_dedupe(docs) if collapse else list(docs))[:K]
        r5 = len(item.truth & set(top[:5])) / len(item.truth) if item.truth else 0.0
        rr = next((1 / i for i, d in enumerate(top, 1) if d in item.truth), 0.0)
        return {"hit1": r5, "mrr": rr}
    top = _dedupe(docs)[:K]
    rr = next((1 / i for i, d in enumerate(top, 1) if d in item.truth), 0.0)
    return {"hit1": float(rr == 1.0), "mrr": rr}


Config = fusion_mod.FusionParams | str


def table(items: Sequence[Item], configs: dict[str, Config],
          collapse: bool = False) -> dict[str, dict[tuple[str, str], tuple[float, float, int]]]:
    """config -> (set, kind) -> (sum hit1-or-recall5, sum mrr, n); kind "all" too. A name
    ending in `` pd1`` keeps one hit per note on LoCoMo (the others: two, the default)."""
    out: dict[str, dict[tuple[str, str], tuple[float, float, int]]] = {}
    for name, p in configs.items():
        per_doc = 1 if name.endswith(" pd1") else 2
        acc: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
        for it in items:
            loc = it.set.startswith("locomo")
            if p == "lexical":
                docs = it.lexical
            elif p == "vector":
                docs = it.vector
            else:
                assert isinstance(p, fusion_mod.FusionParams)
                docs = ranked_docs(it, p, per_doc if loc else 0)
            sc = score(it, docs, collapse)
            for key in ((it.set, it.kind), (it.set, "all")):
                a = acc[key]
                a[0] += sc["hit1"]
                a[1] += sc["mrr"]
                a[2] += 1
        out[name] = {k: (v[0], v[1], int(v[2])) for k, v in acc.items()}
    return out


def deficit(row: dict[tuple[str, str], tuple[float, float, int]],
            lex: dict[tuple[str, str], tuple[float, float, int]],
            vec: dict[tuple[str, str], tuple[float, float, int]], role_sets: set[str]) -> float:
    """Sum over (set, kind) of min(0, hybrid - better half), in questions (hit1 sums)."""
    tot = 0.0
    for key, (h, _, _) in row.items():
        if key[0] in role_sets and key[1] != "all":
            tot += min(0.0, h - max(lex[key][0], vec[key][0]))
    return tot


def grid() -> dict[str, Config]:
    P = fusion_mod.FusionParams
    out: dict[str, Config] = {
        "adaptive (old default)": P(method="adaptive", index_rule=False),
        "adaptive (old default) pd1": P(method="adaptive", index_rule=False),
        "rrf": P(method="rrf", vector_weight=1.0, index_rule=False),
    }
    for knee, power, vw, agree, mk, lp in itertools.product(
            (0.4, 0.6, 0.8), (1.0, 2.0), (0.35, 0.5, 0.75), (False,), (0.0,), (0.0,)):
        name = (f"ev k{knee} p{power} vw{vw}{' agree' if agree else ''}"
                f"{f' mk{mk}' if mk else ''}{f' lp{lp}' if lp else ''}")
        out[name] = P(adapt_knee=knee, adapt_power=power, vector_weight=vw, agree_keep=agree,
                      margin_knee=mk, length_prior=lp)
    out["ev k0.6 p2.0 vw0.5 noidx"] = P(index_rule=False)
    out["ev k0.6 p2.0 vw0.5 pd1"] = P()
    return out


def _cell(v: tuple[float, float, int]) -> str:
    return f"{v[0] / v[2]:6.3f}/{v[1] / v[2]:.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--locomo", type=Path, help="LoCoMo DATA_DIR (see benchmarks/locomo.py)")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--json", type=Path, help="write every figure here")
    ap.add_argument("--items", type=Path, help="pickle of the gathered pools: read if it exists, "
                    "else written (replays skip the gathering)")
    ap.add_argument("--memory-again", action="store_true",
                    help="with --items: gather the memory sets again, keep LoCoMo's pools")
    ap.add_argument("--show", help="print this config's per-kind cells")
    a = ap.parse_args(argv)
    if a.items and a.items.exists():
        items: list[Item] = pickle.loads(a.items.read_bytes())
        fresh = fusion_mod.Pool()
        for it in items:  # pools pickled before a field was added get its default
            for name, value in vars(fresh).items():
                if not hasattr(it.pool, name):
                    setattr(it.pool, name, value)
        if a.memory_again:
            with tempfile.TemporaryDirectory() as tmp:
                items = [*memory_sets(Path(tmp), a.embedder),
                         *(it for it in items if it.set.startswith("locomo"))]
            a.items.write_bytes(pickle.dumps(items))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            items = list(memory_sets(Path(tmp), a.embedder))
        if a.locomo:
            items += list(locomo_sets(a.locomo, a.embedder))
        if a.items:
            a.items.write_bytes(pickle.dumps(items))
    configs: dict[str, Config] = {"lexical": "lexical", "vector": "vector"}
    configs.update(grid())
    res = table(items, configs)
    choose = {it.set for it in items if it.role == "choose"}
    report = {it.set for it in items if it.role == "report"}
    lex, vec = res["lexical"], res["vector"]
    ranked = sorted((n for n in res if n not in ("lexical", "vector")),
                    key=lambda n: (-deficit(res[n], lex, vec, choose),
                                   -sum(res[n][(s, "all")][1] / res[n][(s, "all")][2] for s in choose)))
    sets = sorted({it.set for it in items}, key=lambda s: (s not in choose, s))
    print("cells: set all-kinds Hit@1 (LoCoMo recall@5) / MRR; deficit = sum over choose-set kinds "
          "of min(0, hybrid - better half) in questions")
    print(f"{'config':40s} {'def.ch':>7s} {'def.rep':>7s} " + " ".join(f"{s:>14s}" for s in sets))
    for n in ["lexical", "vector", *ranked]:
        r = res[n]
        cells = " ".join(_cell(r[(s, "all")]) for s in sets)
        print(f"{n:40s} {deficit(r, lex, vec, choose):7.1f} {deficit(r, lex, vec, report):7.1f} {cells}")
    for n in ([a.show] if a.show else []):
        keys = sorted(k for k in res[n] if k[1] != "all")
        for key in keys:
            print(f"{key[0]:11s} {key[1]:11s} n={lex[key][2]:4d} lexical {_cell(lex[key])} "
                  f"vector {_cell(vec[key])} {n} {_cell(res[n][key])}")
    if a.json:
        a.json.write_text(json.dumps({n: {f"{k[0]}|{k[1]}": v for k, v in r.items()}
                                      for n, r in res.items()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
