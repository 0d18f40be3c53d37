"""The official MCP Python client connected to the local host's MCP endpoints (both transports)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any, Literal

import httpx2
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

Transport = Literal["streamable-http", "sse"]
TRANSPORTS: tuple[Transport, ...] = ("streamable-http", "sse")
MCP_PATH = "/runtime/webhooks/mcp"


@contextlib.asynccontextmanager
async def mcp_session(
    base_url: str, transport: Transport, key: str | None, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialised MCP client session. Streamable HTTP sends the key as the `x-functions-key`
    header; SSE as `?code=` on the SSE URL (the message endpoint the server announces carries it).
    `headers` go with every request (a stand-in for what App Service Authentication adds)."""
    url = base_url + MCP_PATH
    extra = dict(headers or {})
    if transport == "streamable-http":
        headers = {"x-functions-key": key, **extra} if key else extra
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120)) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session
    else:
        sse_url = f"{url}/sse" + (f"?code={key}" if key else "")
        async with sse_client(sse_url, headers=extra, timeout=30, sse_read_timeout=120) as (
            read, write
        ), ClientSession(
            read, write
        ) as session:
            await session.initialize()
            yield session


def texts_of(result: Any) -> list[str]:
    """The text blocks of a tool result."""
    return [str(block.text) for block in result.content if getattr(block, "type", None) == "text"]


def text_of(result: Any) -> str:
    """The first text block of a tool result."""
    return texts_of(result)[0]
