"""The Azure Functions MCP extension on the local host: the app's MCP tool triggers served at
``/runtime/webhooks/mcp`` (streamable HTTP and legacy SSE) with the MCP SDK (docs/mcp.md)."""

from ._asgi import serve_asgi
from ._server import MCP_PREFIX, MESSAGE_PATH, SSE_PATH, McpEndpoint
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
