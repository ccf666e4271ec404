"""``memlens mcp``: an MCP server (stdio) over the memory database.

:mod:`memlens.mcp.tools` holds what the tools do (plain functions over
:class:`~memlens.core.service.MemoryService`, no SDK needed);
:mod:`memlens.mcp.server` wires them into the official MCP Python SDK. Like the
TUI and the CLI, this package enters the core only through
``memlens.core.service`` and ``memlens.core.types``.
"""

SDK_MISSING = ("memlens mcp needs the MCP SDK: uv sync --extra mcp "
               "(or pip install 'memlens[mcp]')")

__all__ = ["SDK_MISSING"]
