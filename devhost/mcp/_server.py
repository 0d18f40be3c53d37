"""The MCP extension's endpoints on the local host, served with the MCP SDK's transports.

* ``/runtime/webhooks/mcp``: streamable HTTP (the SDK's ``StreamableHTTPSessionManager``,
  stateless like the extension: each POST stands alone, answered as an SSE stream);
* ``/runtime/webhooks/mcp/sse`` + ``/runtime/webhooks/mcp/message``: the legacy SSE transport
  (the SDK's ``SseServerTransport``); the endpoint event carries the key as ``code=`` when the
  client gave one, as the extension's does.

Every path under ``/runtime/webhooks/mcp`` requires the extension's system key (the host's key
stands for it locally) as the ``x-functions-key`` header or the ``code`` query parameter. Foreign
``Host`` and ``Origin`` headers are refused before any of this, by the host's one rule for every
route (``devhost._origin``), so the SDK's own DNS-rebinding check stays off.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import mcp_types as types
from aiohttp import web
from mcp.server.lowlevel import Server
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from .._asgi import RAW_HEADERS, Message, Receive, Scope, Send, serve_asgi
from .._problems import problem
from ..functions import key_matches
from ._paths import MCP_PREFIX, MESSAGE_PATH, SSE_PATH
from ._tools import ToolRegistry

SERVER_NAME = "Azure Functions MCP server"
SERVER_VERSION = "1.0.0"

_SESSION_IN_ENDPOINT = re.compile(rb"(session_id=[0-9a-f]+)")


def _latin1(value: bytes | str) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def request_headers(request: Any) -> dict[str, str]:
    """The headers of the HTTP request that carried a call, as the MCP extension puts them in the
    tool call's context (``transport.properties.headers``): every header, a repeated one's values
    joined with commas, the name as the client wrote it, each name once whatever its case
    (azure-functions-mcp-extension, ``McpTriggerTransportHelper.GetTransportInformation``)."""
    state = getattr(request, "scope", {}).get("state") or {}
    raw = state.get(RAW_HEADERS)
    if raw is None:
        raw = list(getattr(request, "headers", {}).items())
    names: dict[str, str] = {}
    values: dict[str, list[str]] = {}
    for name, value in raw:
        text = _latin1(name)
        folded = text.lower()
        names.setdefault(folded, text)
        values.setdefault(folded, []).append(_latin1(value))
    return {names[folded]: ",".join(found) for folded, found in values.items()}


def _request_facts(ctx: Any) -> tuple[str, str | None]:
    """The transport name and MCP session id of the request a handler serves, when known."""
    request = getattr(ctx, "request", None)
    url = getattr(request, "url", None)
    path = str(getattr(url, "path", "") or "")
    headers = getattr(request, "headers", None) or {}
    if path.rstrip("/").endswith("/message"):
        query = getattr(request, "query_params", None) or {}
        return "http-sse", query.get("session_id")
    return "http-streamable", headers.get("mcp-session-id")


def _client_info(ctx: Any) -> dict[str, Any] | None:
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    return info.model_dump(mode="json", exclude_none=True) if info is not None else None


def _not_allowed(request: web.Request, allowed: str) -> web.Response:
    response = problem(405, "method_not_allowed", f"{request.method} is not allowed here",
                       allowed=[allowed])
    response.headers["Allow"] = allowed
    return response


class McpEndpoint:
    """The MCP extension emulation: mount it on the host's aiohttp app, start it, stop it."""

    def __init__(
        self, tools: ToolRegistry, *, key: Callable[[], str | None],
        logger: logging.Logger, instructions: str | None = None,
    ) -> None:
        self.tools = tools
        self._key = key
        self._log = logger
        self.server: Server[Any] = Server(
            SERVER_NAME, version=SERVER_VERSION, instructions=instructions,
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
        )
        self._manager = StreamableHTTPSessionManager(app=self.server, stateless=True)
        self._sse = SseServerTransport(MESSAGE_PATH)
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    # -- MCP handlers ----------------------------------------------------------------------

    async def _list_tools(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools.tools())

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        transport, session_id = _request_facts(ctx)
        request = getattr(ctx, "request", None)
        return await self.tools.call(
            params, transport=transport, session_id=session_id, client_info=_client_info(ctx),
            headers=request_headers(request) if request is not None else {},
        )

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Run the session manager's task group for the host's lifetime (in a task of its own:
        anyio wants the group entered and left by the same task)."""
        ready = asyncio.Event()

        async def run() -> None:
            async with self._manager.run():
                ready.set()
                await self._stop.wait()

        self._task = asyncio.create_task(run(), name="devhost-mcp")
        waiter = asyncio.create_task(ready.wait())
        await asyncio.wait({self._task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if self._task.done():
            self._task.result()  # raise what stopped it

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(self._task, 5)
            self._task = None

    # -- HTTP ------------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        response = await self._handle(request)
        self._log.info("%s %s -> %d (%.0fms)", request.method, request.path, response.status,
                       (time.monotonic() - started) * 1000)
        return response

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if not key_matches(request, self._key()):
            return problem(401, "unauthorized", "the MCP extension's system key is required "
                           "(x-functions-key header or code= query parameter)")
        path = request.path.rstrip("/")
        if path.lower() == MCP_PREFIX:
            if request.method != "POST":
                # As the extension: stateless streamable HTTP has no GET stream and no session to
                # DELETE (the SDK would otherwise hold a GET open with nothing ever to send).
                return _not_allowed(request, "POST")
            return await serve_asgi(self._manager.handle_request, request)
        if path.lower() == SSE_PATH:
            if request.method != "GET":
                return _not_allowed(request, "GET")
            given = request.query.get("code") or request.headers.get("x-functions-key")
            return await serve_asgi(self._sse_app(given), request)
        if path.lower() == MESSAGE_PATH:
            return await serve_asgi(self._sse.handle_post_message, request)
        return problem(404, "not_found", f"no MCP endpoint at {request.path}")

    def _sse_app(self, key: str | None) -> Callable[[Scope, Receive, Send], Any]:
        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            announced = False

            async def send_with_key(message: Message) -> None:
                nonlocal announced
                body = message.get("body")
                if key and not announced and message["type"] == "http.response.body" and body:
                    announced = True  # the first event is the endpoint event
                    # The extension appends the caller's key to the message endpoint it announces.
                    code = quote(key, safe="").encode()
                    body = _SESSION_IN_ENDPOINT.sub(rb"\1&code=" + code, body, count=1)
                    message = {**message, "body": body}
                await send(message)

            try:
                async with self._sse.connect_sse(scope, receive, send_with_key) as (read, write):
                    await self.server.run(read, write, self.server.create_initialization_options())
            except ValueError:
                pass  # refused by the transport's request validation, which has answered already

        return app
