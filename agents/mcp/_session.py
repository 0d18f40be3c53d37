"""The one adapter over the MCP SDK's client: a session to a server, its tool list, one call.

Each operation opens its own session (initialize, the request, close): nothing is held between
turns, which may run on another instance, and a server restarted between two calls is no
different from one that stayed up. Every request the session makes is checked against the
server's origin first, so a server cannot send the app anywhere else (an SSE endpoint event, a
redirect). The SDK is imported on first use: an app whose agents use no MCP server never loads it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ._server import MCPServer, origin_of

if TYPE_CHECKING:
    import httpx2
    import mcp_types
    from mcp import ClientSession

MAX_LISTED_TOOLS = 512
"""A server listing more tools than this is cut there (pages beyond it are not asked for)."""
MAX_PAGES = 32


class ForeignRequest(Exception):
    """The session was about to make a request to another origin than the server's."""


async def _entra_header(server: MCPServer) -> dict[str, str]:
    if server.auth is None:
        return {}
    from azure.identity.aio import DefaultAzureCredential

    async with DefaultAzureCredential(managed_identity_client_id=server.auth.client_id) as credential:
        token = await credential.get_token(server.auth.scope)
    return {"Authorization": f"Bearer {token.token}"}


def _origin_guard(url: str) -> Any:
    allowed = origin_of(url)

    async def check(request: httpx2.Request) -> None:
        if origin_of(str(request.url)) != allowed:
            raise ForeignRequest("the server sent the client to another origin")

    return check


def _client(url: str, headers: dict[str, str], timeout: float, **_: Any) -> httpx2.AsyncClient:
    import httpx2

    return httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(timeout, read=timeout),
        follow_redirects=False,
        event_hooks={"request": [_origin_guard(url)]},
    )


@contextlib.asynccontextmanager
async def connect(
    server: MCPServer, extra_headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialised session to `server` (its app settings resolved now)."""
    from mcp import ClientSession
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client

    url = server.resolved_url()
    headers = {**server.resolved_headers(), **await _entra_header(server), **(extra_headers or {})}
    # The SSE event buffer is bounded by the result limit (with room for the JSON-RPC envelope).
    max_event = server.max_result_bytes * 2 + 65536
    async with contextlib.AsyncExitStack() as stack:
        if server.transport == "sse":

            def factory(headers: Any = None, timeout: Any = None, auth: Any = None) -> httpx2.AsyncClient:
                return _client(url, dict(headers or {}), server.timeout)

            read, write = await stack.enter_async_context(
                sse_client(
                    url,
                    headers=headers,
                    timeout=server.timeout,
                    sse_read_timeout=server.timeout,
                    httpx_client_factory=factory,
                )
            )
        else:
            http = await stack.enter_async_context(_client(url, headers, server.timeout))
            read, write = await stack.enter_async_context(
                streamable_http_client(url, http_client=http, max_sse_event_size=max_event)
            )
        session = await stack.enter_async_context(
            ClientSession(read, write, read_timeout_seconds=server.timeout)
        )
        await session.initialize()
        yield session


async def list_tools(server: MCPServer) -> list[mcp_types.Tool]:
    """Every tool the server lists (following its pages, up to MAX_LISTED_TOOLS)."""
    import mcp_types

    tools: list[mcp_types.Tool] = []
    async with connect(server) as session:
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor or len(tools) >= MAX_LISTED_TOOLS:
                break
    return tools[:MAX_LISTED_TOOLS]


async def call_tool(
    server: MCPServer, name: str, arguments: dict[str, Any], idempotency_key: str | None
) -> mcp_types.CallToolResult:
    """One `tools/call`. The run's idempotency key goes in `_meta` and as the `Idempotency-Key`
    header, so a server can tell a repeat (a step run again after a crash) from a new call. A
    cancelled call (the turn's deadline, a cancel) sends the server `notifications/cancelled`."""
    import mcp_types

    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
    meta: dict[str, Any] = {"idempotencyKey": idempotency_key} if idempotency_key else {}
    async with connect(server, headers) as session:
        # The request itself rather than session.call_tool, which lists the tools again on every
        # session to check the output schema: the cached listing is checked instead (_tools).
        request = mcp_types.CallToolRequest(
            params=mcp_types.CallToolRequestParams(name=name, arguments=arguments, _meta=meta or None)
        )
        return await session.send_request(request, mcp_types.CallToolResult)
