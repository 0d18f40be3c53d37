"""Where the MCP extension serves: known without loading the MCP SDK (the host mounts these routes
at start and loads the SDK on the first request to them)."""

MCP_PREFIX = "/runtime/webhooks/mcp"
"""Where the extension serves MCP (streamable HTTP here; legacy SSE at ``/sse`` and ``/message``)."""
SSE_PATH = MCP_PREFIX + "/sse"
MESSAGE_PATH = MCP_PREFIX + "/message"
