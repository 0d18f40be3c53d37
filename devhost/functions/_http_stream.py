"""HTTP functions on the Functions HTTP streaming types (the ``azurefunctions-extensions-http-*``
packages), served the way the Python worker serves them: as an ASGI request and response.

The worker switches a function to this protocol when its request parameter's type is the one the
imported web extension registered (``azurefunctions.extensions.base.RequestTrackerMeta``); the
function gets that framework's request (FastAPI's, a Starlette request) with the route parameters
as ``path_params``, and its response is run as an ASGI app, so a streaming response reaches the
client chunk by chunk. Nothing here knows the app: only the extension protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

_DISCONNECT_POLL_SECONDS = 0.25
_log = logging.getLogger("devhost")


def streaming_request_type(annotation: Any) -> bool:
    """Whether a request parameter's type is the registered HTTP streaming request type."""
    try:
        from azurefunctions.extensions.base import RequestTrackerMeta
    except ImportError:  # no web extension installed: classic HTTP functions only
        return False
    return bool(RequestTrackerMeta.check_type(annotation))


def _scope(request: web.Request, params: dict[str, str]) -> dict[str, Any]:
    transport = request.transport
    sockname = transport.get_extra_info("sockname") if transport is not None else None
    peer = transport.get_extra_info("peername") if transport is not None else None
    raw_path, _, query = request.raw_path.partition("?")
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": raw_path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "server": tuple(sockname[:2]) if sockname else None,
        "client": tuple(peer[:2]) if peer else None,
        "path_params": dict(params),
    }


class _Exchange:
    """The ASGI receive/send pair over one aiohttp request."""

    def __init__(self, request: web.Request, body: bytes) -> None:
        self.request = request
        self.body: bytes | None = body
        self.response: web.StreamResponse | None = None

    async def receive(self) -> dict[str, Any]:
        if self.body is not None:
            body, self.body = self.body, None
            return {"type": "http.request", "body": body, "more_body": False}
        # Then only a disconnect is left to report (a streaming response listens for it).
        while True:
            transport = self.request.transport
            if transport is None or transport.is_closing():
                return {"type": "http.disconnect"}
            await asyncio.sleep(_DISCONNECT_POLL_SECONDS)

    async def send(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            response = web.StreamResponse(status=int(message["status"]))
            for name, value in message.get("headers") or ():
                response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            self.response = response
            await response.prepare(self.request)
        elif kind == "http.response.body" and self.response is not None:
            body = message.get("body") or b""
            if body:
                await self.response.write(body)
            if not message.get("more_body", False):
                await self.response.write_eof()


async def serve_streaming(
    request: web.Request,
    params: dict[str, str],
    call: Callable[[Any], Awaitable[Any]],
) -> web.StreamResponse:
    """Call a streaming HTTP function: ``call(framework_request)`` returns its response, which is
    then run as an ASGI app writing straight to the client."""
    from azurefunctions.extensions.base import RequestTrackerMeta, ResponseTrackerMeta

    body = await request.read()
    exchange = _Exchange(request, body)
    scope = _scope(request, params)
    request_type = RequestTrackerMeta.get_request_type()
    framework_request = request_type(scope, exchange.receive)
    result = await call(framework_request)
    if not ResponseTrackerMeta.check_type(type(result)) or not callable(result):
        raise TypeError(f"HTTP streaming function returned {type(result).__name__}, not a response")
    try:
        await result(scope, exchange.receive, exchange.send)
    except (ConnectionError, OSError):
        pass  # the client went away; the function's work is its own business
    except Exception:
        if exchange.response is None:
            raise
        # The status line is out: all that is left is to end the body.
        _log.exception("HTTP streaming response broke off")
    if exchange.response is None:
        raise TypeError("the HTTP streaming function's response sent nothing")
    with contextlib.suppress(ConnectionError):
        await exchange.response.write_eof()
    return exchange.response
