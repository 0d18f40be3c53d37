"""The Azure Functions MCP extension on the local host: the app's MCP tool triggers served at
``/runtime/webhooks/mcp`` (streamable HTTP and legacy SSE) with the MCP SDK (docs/mcp.md).

Importing this package loads only the paths: the endpoint and the tool registry, which need the
MCP SDK (over half a second of CPU to import), load on first use, so a host whose MCP endpoint is
never called never loads the SDK (devhost._host mounts the routes and loads it on the first request)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .._asgi import serve_asgi
from ._paths import MCP_PREFIX, MESSAGE_PATH, SSE_PATH

if TYPE_CHECKING:
    from ._server import McpEndpoint
    from ._tools import ToolRegistry, input_schema, to_call_result

__all__ = [
    "MCP_PREFIX",
    "MESSAGE_PATH",
    "SSE_PATH",
    "McpEndpoint",
    "ToolRegistry",
    "input_schema",
    "serve_asgi",
    "to_call_result",
]

_LAZY = {"McpEndpoint": "._server", "ToolRegistry": "._tools", "input_schema": "._tools",
         "to_call_result": "._tools"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # once loaded, an ordinary attribute
    return value
