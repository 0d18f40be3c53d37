"""HTTP functions on the Functions HTTP streaming types (the ``azurefunctions-extensions-http-*``
packages), served the way the Python worker serves them: as an ASGI request and response.

The worker switches a function to this protocol when its request parameter's type is the one the
imported web extension registered (``azurefunctions.extensions.base.RequestTrackerMeta``); the
function gets that framework's request (FastAPI's, a Starlette request) with the route parameters
as ``path_params``, and its response is run as an ASGI app, so a streaming response reaches the
client chunk by chunk. Nothing here knows the app: only the extension protocol.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from .._asgi import Receive, Scope, Send, serve_asgi


def streaming_request_type(annotation: Any) -> bool:
    """Whether a request parameter's type is the registered HTTP streaming request type."""
    try:
        from azurefunctions.extensions.base import RequestTrackerMeta
    except ImportError:  # no web extension installed: classic HTTP functions only
        return False
    return bool(RequestTrackerMeta.check_type(annotation))


async def serve_streaming(
    request: web.Request,
    params: dict[str, str],
    call: Callable[[Any], Awaitable[Any]],
    body: bytes | None = None,
) -> web.StreamResponse:
    """Call a streaming HTTP function: ``call(framework_request)`` returns its response, which is
    then run as an ASGI app writing straight to the client (a disconnect reaches it as
    ``http.disconnect``). ``body``: the request body when already read, else it streams."""
    from azurefunctions.extensions.base import RequestTrackerMeta, ResponseTrackerMeta

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        scope["path_params"] = dict(params)
        result = await call(RequestTrackerMeta.get_request_type()(scope, receive))
        if not ResponseTrackerMeta.check_type(type(result)) or not callable(result):
            raise TypeError(f"HTTP streaming function returned {type(result).__name__}, not a response")
        await result(scope, receive, send)

    return await serve_asgi(app, request, body=body)
