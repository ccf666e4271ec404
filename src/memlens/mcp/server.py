"""The memlens MCP server (stdio), on the official SDK's high-level ``MCPServer``.

Five read-only tools (``search_memory``, ``read_memory``, ``memory_history``,
``list_memories``, ``memory_status``) and one resource template,
``memory://{repository}/{+path}``, answer from one :class:`MemoryService`. Every
service call runs on one dedicated worker thread, so the server holds a single
SQLite connection for its reads (the watcher, with ``--watch``, has its own thread
and connection). Bad input and failures become tool errors (``isError``) with a
sentence a model can act on; no traceback and no absolute path reaches the client.
stdout carries only the protocol; logging and watcher events go to stderr.
"""

from __future__ import annotations

import inspect
import logging
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Annotated, Any, Protocol, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedToolError,
)
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from memlens.core.service import MemoryService
from memlens.mcp import tools
from memlens.mcp.tools import (
    HISTORY_MAX,
    K_MAX,
    K_MIN,
    MESSAGE_MAX,
    ToolInputError,
    ToolOutput,
    clip,
    echo,
    scrub,
)
from memlens.watch.events import WatchEvent

log = logging.getLogger("memlens.mcp")
T = TypeVar("T")

INSTRUCTIONS = (
    "memlens holds Claude Code's per-project Markdown memory (the files under "
    "~/.claude/projects/<project>/memory) in one database, already redacted of secrets. "
    "Use search_memory first (the current project's notes rank first), then read_memory for "
    "a whole file and memory_history to see how a note changed. Documents are named by "
    "repository (a Claude project slug such as -home-dev-projects-app) and a logical path "
    "inside its memory folder (such as MEMORY.md). The same text is available as the "
    "resource memory://{repository}/{path}."
)
_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                             open_world_hint=False)

# Module level: with postponed annotations the SDK evaluates them in module globals.
RepoArg = Annotated[str, Field(description="Repository (project slug) as shown by search_memory "
                               "or list_memories, e.g. -home-dev-projects-app.")]
PathArg = Annotated[str, Field(description="Logical path inside the memory folder, e.g. "
                               "MEMORY.md or notes/retro.md.")]


# What each argument must be, in words a model can act on; a wrong type gets this
# sentence instead of pydantic's validation report (issue 42).
ARGUMENT_RULES = {
    "query": "query must be a string: a few words or a question",
    "mode": "mode must be one of hybrid, lexical, vector",
    "k": f"k must be a whole number from {K_MIN} to {K_MAX}",
    "repository": "repository must be a string: a project slug from list_memories",
    "path": "path must be a string: a logical path such as 'MEMORY.md'",
    "limit": f"limit must be a whole number from 1 to {HISTORY_MAX}",
    "all_projects": "all_projects must be true or false",
    "include_pending": "include_pending must be true or false",
}


def argument_error(tool: str, exc: ValidationError) -> str:
    """One sentence per rejected argument of ``tool``, echoing the value (cut)."""
    said: list[str] = []
    for err in exc.errors():
        field = ".".join(str(part) for part in err["loc"]) or "arguments"
        rule = ARGUMENT_RULES.get(field, f"{field} has the wrong type")
        if err["type"] == "missing":
            text = f"{field} is required: {rule.split(': ', 1)[-1]}." if ": " in rule \
                else f"{field} is required; {rule}."
        else:
            text = f"{rule}; got {echo(err.get('input'))}."
        if text not in said:
            said.append(text)
    return clip(f"{tool}: " + " ".join(said), MESSAGE_MAX)


class _Server(MCPServer[Any]):
    """The SDK's server, with argument validation errors said in one sentence."""

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None,
                        ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
                raise ToolError(argument_error(name, cause)) from cause
            raise


def _describe(fn: Callable[..., Any]) -> str:
    """A tool's description: its docstring dedented, each paragraph on one line."""
    doc = inspect.cleandoc(fn.__doc__ or "")
    return "\n\n".join(" ".join(p.split()) for p in doc.split("\n\n"))


class WatcherLike(Protocol):
    """What the server needs of a :class:`memlens.watch.watcher.Watcher`."""

    def run(self, stop: threading.Event) -> None: ...

    @property
    def state(self) -> str: ...


WatcherFactory = Callable[[Callable[[WatchEvent], None]], WatcherLike]


class ServiceThread:
    """Runs service calls one at a time on a single thread (one SQLite connection)."""

    def __init__(self, svc: MemoryService) -> None:
        self.svc = svc
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memlens-mcp")

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(svc, *args)`` on the service thread; its exceptions propagate."""
        return self._pool.submit(fn, self.svc, *args).result()

    def warm(self) -> None:
        """Open the connection and load the embedder in the background, so the first
        search does not pay for them (an unavailable embedder is reported later)."""
        def load(svc: MemoryService) -> None:
            try:
                svc.conn()
                svc.embedder_label()
            except Exception:
                log.debug("warm-up failed", exc_info=True)

        self._pool.submit(load, self.svc)

    def close(self) -> None:
        """Release the worker's connection and stop the thread."""
        try:
            self._pool.submit(self.svc.release_thread_connection).result(timeout=10)
        except Exception:  # the worker is gone or stuck: close() below still runs
            log.debug("could not release the worker connection", exc_info=True)
        self._pool.shutdown(wait=False, cancel_futures=True)


@dataclass
class WatchState:
    """The ``--watch`` watcher as ``memory_status`` reports it."""

    watcher: WatcherLike | None = None
    last: str | None = None
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        state = "error" if self.error else (self.watcher.state if self.watcher else "off")
        return {"state": state, "last": self.last, "error": self.error}


def _result(out: ToolOutput) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=out.text)],
                          structured_content=out.data)


def _error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=clip(message, MESSAGE_MAX))],
                          is_error=True)


class MemlensMCP:
    """The tools and resource of ``memlens mcp`` over one service."""

    def __init__(self, svc: MemoryService, watch: WatchState | None = None) -> None:
        self.worker = ServiceThread(svc)
        self.watch = watch
        self.server: MCPServer[Any] = _Server(
            "memlens", instructions=INSTRUCTIONS, log_level="WARNING")
        self._register()

    def run_tool(self, name: str, fn: Callable[..., ToolOutput], *args: Any) -> CallToolResult:
        """Run a tool on the service thread; bad input or a failure becomes a tool error."""
        try:
            return _result(self.worker.call(fn, *args))
        except ToolInputError as exc:
            return _error(str(exc))
        except LookupError as exc:
            return _error(scrub(str(exc)))
        except Exception as exc:  # never crash the server, never send a traceback
            log.exception("tool %s failed", name)
            return _error(f"{name} failed: {type(exc).__name__}: {clip(scrub(str(exc)), 300)}. "
                          "Check memory_status; the memlens database may need `memlens doctor`.")

    def _tool(self, fn: Callable[..., CallToolResult]) -> Callable[..., CallToolResult]:
        """Register ``fn`` as a read-only tool described by its dedented docstring."""
        return self.server.tool(annotations=_READ_ONLY, description=_describe(fn))(fn)

    def _register(self) -> None:
        self._register_search()
        self._register_documents()
        self._register_overview()
        self._register_resource()

    def _register_search(self) -> None:
        @self._tool
        def search_memory(
            query: Annotated[str, Field(description="Words or a question to look for.")],
            mode: Annotated[str, Field(
                description="hybrid (words and meaning; default), lexical (words only: "
                "exact names, flags, error strings) or vector (meaning only).",
                json_schema_extra={"enum": ["hybrid", "lexical", "vector"]})] = "hybrid",
            k: Annotated[int, Field(description=f"How many hits, {K_MIN} to {K_MAX}.",
                                    json_schema_extra={"minimum": K_MIN,
                                                       "maximum": K_MAX})] = 8,
            repository: Annotated[str | None, Field(
                description="Only this repository (a project slug from list_memories).")]
            = None,
            all_projects: Annotated[bool, Field(
                description="Rank all projects equally instead of the current one first.")]
            = False,
            include_pending: Annotated[bool, Field(
                description="Also name the notes in scope that are not searchable yet "
                "(pending, failed, vectors waiting), so no hit is not taken for no note.")]
            = True,
            explain: Annotated[bool, Field(
                description="Add a `why:` line per hit: its score as words + meaning parts,"
                " with bm25 and cosine ranks.")] = False,
        ) -> CallToolResult:
            """Search the user's saved Claude Code memory notes (all projects).

            Returns one line per hit, `repository/path#chunk › heading path [chars a-b]
            (match)`, then a snippet. match is lexical (shares a word with the query),
            semantic (close by meaning while other hits match words) or closest (nothing
            in memory contains a query word; only the nearest by meaning). When the
            server runs inside a project, that project's notes rank first. Notes in scope
            that are not searchable yet are listed after the hits (pending: not yet
            indexed; failed; vectors pending: words only), so an empty answer can be told
            from "not indexed yet". Follow up with read_memory(repository, path) for the
            whole note.
            """
            return self.run_tool("search_memory", tools.search_memory, query, mode, k,
                                 repository, all_projects, include_pending, explain)

    def _register_documents(self) -> None:
        @self._tool
        def read_memory(repository: RepoArg,
                        path: PathArg) -> CallToolResult:
            """Read one memory note in full: its current (redacted) Markdown text and its
            chunk spans (ordinal, heading path, start/end character) as used by search."""
            return self.run_tool("read_memory", tools.read_memory, repository, path)

        @self._tool
        def memory_history(
            repository: RepoArg, path: PathArg,
            limit: Annotated[int, Field(description="Most revisions to return, 1 to 100.",
                                        json_schema_extra={"minimum": 1, "maximum": 100})]
            = 10,
        ) -> CallToolResult:
            """How one memory note changed: revisions newest first with change kind
            (create, update, rename, delete, rechunk), time, summary and a bounded diff."""
            return self.run_tool("memory_history", tools.memory_history, repository, path,
                                 limit)

    def _register_overview(self) -> None:
        @self._tool
        def list_memories(
            repository: Annotated[str | None, Field(
                description="Only this repository; omit for every project.")] = None,
        ) -> CallToolResult:
            """List the memory notes memlens holds, grouped by repository, with each note's
            search status (ready, pending, failed…) and warnings about MEMORY.md index files
            (too long, broken links, notes the index does not link)."""
            return self.run_tool("list_memories", tools.list_memories, repository)

        @self._tool
        def memory_status() -> CallToolResult:
            """Health of the memory index: document and chunk counts, the projection queue
            (documents waiting to become searchable), failed documents and the embedder."""
            watch = self.watch.as_json() if self.watch is not None else None
            return self.run_tool("memory_status", tools.memory_status, watch)

    def _register_resource(self) -> None:
        @self.server.resource("memory://{repository}/{+path}", name="memory",
                              mime_type="text/markdown",
                              description="The current redacted text of one memory note.")
        def memory_resource(repository: str, path: str) -> str:
            try:
                return self.worker.call(tools.read_resource, repository, path)
            except ToolInputError as exc:
                raise ResourceNotFoundError(str(exc)) from None
            except Exception as exc:
                log.exception("reading memory://%s/%s failed", repository, path)
                raise ResourceError(f"could not read the note: {type(exc).__name__}: "
                                    f"{scrub(str(exc))}") from None

    def close(self) -> None:
        """Release the service thread's connection."""
        self.worker.close()


class _Events:
    """Watcher events to stderr (never stdout: it is the protocol stream)."""

    def __init__(self, state: WatchState) -> None:
        self.state = state

    def __call__(self, ev: WatchEvent) -> None:
        where = f"{ev.repository}/{ev.path}" if ev.path else (ev.repository or "")
        line = f"{ev.kind} {ev.change_kind or ''} {where} {ev.result or ''}".split()
        text = " ".join(line) if ev.kind in ("change", "projection") else ev.message
        if ev.kind in ("change", "projection"):
            self.state.last = text
        sys.stderr.write(f"memlens watch: {scrub(text)}\n")
        sys.stderr.flush()


def _start_watch(svc: MemoryService, factory: WatcherFactory, state: WatchState,
                 stop: threading.Event) -> threading.Thread:
    watcher = factory(_Events(state))
    state.watcher = watcher

    def body() -> None:
        try:
            watcher.run(stop)
        except Exception as exc:
            state.error = scrub(str(exc))
            log.exception("the watcher stopped")
        finally:
            svc.release_thread_connection()

    t = threading.Thread(target=body, name="memlens-mcp-watch", daemon=True)
    t.start()
    return t


def serve(svc: MemoryService, *, watcher: WatcherFactory | None = None) -> None:
    """Serve MCP on stdin/stdout until the client disconnects.

    Args:
        svc: The service to answer from (closed on return).
        watcher: With ``--watch``: builds the watcher from an event callback; it runs
            in a background thread while serving.
    """
    state = WatchState() if watcher is not None else None
    app = MemlensMCP(svc, state)
    stop = threading.Event()
    thread = _start_watch(svc, watcher, state, stop) if watcher and state else None
    app.worker.warm()
    try:
        app.server.run("stdio")
    finally:
        stop.set()
        if thread is not None:
            thread.join(timeout=10)
        app.close()
        svc.close()
