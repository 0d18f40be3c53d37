"""Serve one aiohttp request with an ASGI application: the MCP SDK's transports (devhost.mcp) and
the app's functions on the Functions HTTP streams types (devhost.functions._http_stream).

Written here rather than taken from aiohttp-asgi: that adapter answers every ``receive()`` after
the body with another empty ``http.request`` and never with ``http.disconnect``, so a streaming
response that listens for the client going away (the SDK's SSE streams do) would spin on the CPU
for as long as the stream is open. This bridge delivers the body, then blocks until the client
disconnects or the response is complete.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from aiohttp import web

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DISCONNECT_POLL_SECONDS = 0.25
"""How often a finished body read checks whether the client is still connected."""

_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding"})


RAW_HEADERS = "devhost.raw_headers"
"""Where a scope's ``state`` holds the request's headers as received: (name, value) bytes pairs."""


def _scope(request: web.Request, root_path: str) -> Scope:
    peer = request.transport.get_extra_info("peername") if request.transport else None
    host, port = (request.url.host or "", request.url.port or 0)
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1", errors="replace"),
        "root_path": root_path,
        # As sent (percent-encoded), as ASGI servers pass it; the decoded text may not survive bytes.
        "query_string": request.rel_url.raw_query_string.encode("latin-1", errors="replace"),
        "headers": [(k.lower(), v) for k, v in request.raw_headers],
        "client": (peer[0], peer[1]) if isinstance(peer, tuple) and len(peer) >= 2 else None,
        "server": (host, port),
        # The names as the client wrote them (ASGI's are lower case): what ASP.NET Core hands the
        # Functions host's extensions, which may pass them on (the MCP extension does).
        "state": {RAW_HEADERS: list(request.raw_headers)},
    }


class _Exchange:
    """One request/response pair between aiohttp and the ASGI application."""

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.response: web.StreamResponse | None = None
        self.finished = asyncio.Event()
        self.body_sent = False

    async def receive(self) -> Message:
        if not self.body_sent:
            # The body first, in chunks; an empty one too (an app reading the body of a GET must
            # get its end, not a wait for the client to go away).
            content = self.request.content
            chunk = b"" if content.at_eof() else await content.readany()
            self.body_sent = content.at_eof()
            return {"type": "http.request", "body": chunk, "more_body": not self.body_sent}
        while not self.finished.is_set():
            transport = self.request.transport
            if transport is None or transport.is_closing():
                break
            try:
                await asyncio.wait_for(self.finished.wait(), DISCONNECT_POLL_SECONDS)
            except TimeoutError:
                continue
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            response = web.StreamResponse(status=int(message["status"]))
            for name, value in message.get("headers", ()):
                key = name.decode("latin-1")
                if key.lower() in _HOP_BY_HOP:
                    continue
                response.headers.add(key, value.decode("latin-1"))
            if "Content-Length" not in response.headers:
                response.enable_chunked_encoding()
            self.response = response
            await response.prepare(self.request)
        elif kind == "http.response.body":
            if self.response is None:
                raise RuntimeError("the ASGI application sent a body before starting the response")
            if self.finished.is_set():
                return
            body = bytes(message.get("body", b""))
            try:
                if body:
                    await self.response.write(body)
                if not message.get("more_body", False):
                    await self.response.write_eof()
                    self.finished.set()
            except ConnectionResetError:
                # The client has gone (it may close as soon as it has read its answer): what is
                # left to send has no reader, as with any ASGI server.
                self.finished.set()


async def serve_asgi(app: AsgiApp, request: web.Request, root_path: str = "") -> web.StreamResponse:
    """Run ``app`` for ``request`` and return the aiohttp response it produced."""
    exchange = _Exchange(request)
    try:
        await app(_scope(request, root_path), exchange.receive, exchange.send)
    finally:
        exchange.finished.set()
    if exchange.response is None:
        return web.Response(status=500, text="the MCP transport sent no response")
    return exchange.response
