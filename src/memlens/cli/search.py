"""``memlens search``: search the active projection (lexical, vector or hybrid).

A plain lexical search is usually answered before this module loads, by the console
script's one-shot path (:mod:`memlens.launch`); this is the full path, for every search.
"""

from __future__ import annotations

import click

import memlens.core.types as T
from memlens.cli.common import EXIT_FAIL, EXIT_OK, Args, CliError, Command, db_options, service
from memlens.cli.search_text import print_json, print_result
from memlens.core.service import MemoryService
from memlens.core.types import FUSIONS, DatabaseError, SearchError, StorageError


def cmd_search(args: Args) -> int:
    """``memlens search``."""
    if args.k <= 0:
        raise CliError("-k must be a positive number")
    svc = service(args, **{"search.fusion": args.fusion})
    pending = None
    explained: T.Explanation | None = None
    try:
        if args.explain or args.why_not is not None:
            explained = svc.explain(args.query, mode=args.mode, k=args.k,
                                    repository=args.repository, doc_type=args.doc_type,
                                    all_projects=args.all_projects, why_not=args.why_not)
        else:
            res = svc.search(args.query, mode=args.mode, k=args.k, repository=args.repository,
                             doc_type=args.doc_type, all_projects=args.all_projects)
        _remember(svc, args.query, args.mode)
        if args.pending:
            pending = svc.not_searchable(mode=args.mode, repository=args.repository,
                                         doc_type=args.doc_type, limit=PENDING_SHOWN)
    except T.ExplainError as exc:
        raise CliError(str(exc)) from None
    except (SearchError, T.EmbeddingError) as exc:
        raise CliError(str(exc), EXIT_FAIL) from None
    finally:
        svc.close()
    if explained is not None:
        if args.json:
            data = explained.as_json()
            if pending is not None:
                data["pending"] = pending.as_json()
            print_json(data)
        else:
            from memlens.cli.search_explain import print_explanation

            print_explanation(explained)
            if pending is not None:
                _print_pending(pending)
        return EXIT_OK
    data = res.as_json()
    if pending is not None:
        data["pending"] = pending.as_json()
    print_result(data, args.json)
    if pending is not None and not args.json:
        _print_pending(pending)
    return EXIT_OK


PENDING_SHOWN = 100
"""The most status stubs ``--pending`` prints (the total is always given)."""


def _print_pending(pending: T.PendingDocuments) -> None:
    """The status stubs after the hits (text form of ``--pending``)."""
    if not pending.total:
        print("not searchable yet: none in scope")
        return
    print(f"not searchable yet: {pending.total} document(s) in scope")
    for d in pending.documents:
        error = f" ({d.error})" if d.error else ""
        print(f"    {d.repository}/{d.path} — {d.describe()}{error}")
    if pending.total > len(pending.documents):
        print(f"    … and {pending.total - len(pending.documents)} more")


def _remember(svc: MemoryService, query: str, mode: str) -> None:
    """Keep the search for recall; a read-only or locked database is not an error here."""
    try:
        svc.remember_search(query, mode, "cli")
    except T.DAMAGE:
        raise  # a damaged page: one line, exit 1 (cli/common.run), not a silent answer
    except (DatabaseError, StorageError):
        pass  # history is best effort: the search has answered


command = Command(
    "search", handler=cmd_search, short_help="search active memory",
    help="Search the active projection. Modes: lexical (FTS5 bm25), vector (sqlite-vec KNN), "
    "hybrid (score fusion of both; default).",
    params=[
        click.Argument(["query"]),
        click.Option(["--mode"], type=click.Choice(["lexical", "vector", "hybrid"]),
                     default="hybrid", show_default=True),
        click.Option(["-k"], type=int, default=10, help="number of hits (default 10)"),
        click.Option(["--repository"], help="only this repository"),
        click.Option(["--type", "doc_type"], help="only documents with this front-matter type"),
        click.Option(["--embedder"], help="embedder for the query (must match the projection)"),
        click.Option(["--fusion"], type=click.Choice(["auto", *FUSIONS]),
                     help="how hybrid fuses lexical and vector scores (config [search] fusion)"),
        click.Option(["--all-projects"], is_flag=True,
                     help="do not rank the current project's memory first"),
        click.Option(["--pending"], is_flag=True,
                     help="also list the documents in scope that are not searchable yet "
                     "(pending, failed, vectors waiting); JSON: `pending`"),
        click.Option(["--explain"], is_flag=True,
                     help="explain each hit: its score in parts (words, meaning) and why"),
        click.Option(["--why-not"], "why_not", metavar="PATH[#N]",
                     help="also explain where this document (or chunk N) stands and what it"
                     " would need to rank first (PATH or REPOSITORY/PATH)"),
        *db_options(),
    ])
