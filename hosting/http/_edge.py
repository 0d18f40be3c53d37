"""The app's HTTP functions on the Functions HTTP streaming types (`azurefunctions-extensions-http-fastapi`).

The Python worker streams a response only when the function takes the extension's request type
and returns a FastAPI/Starlette response; and once the extension is imported, the worker serves
*every* HTTP function that way (its docs: the classic `func.HttpRequest` functions stop working).
So every HTTP function of the app is declared with `Request` and returns a `Response`; the
handlers keep working on `func.HttpRequest`/`func.HttpResponse`, converted here at the edge.
Streaming handlers return a `StreamingResponse`, passed through unchanged.

Settings the deployed app needs: `PYTHON_ENABLE_INIT_INDEXING=1` (docs/streaming.md): the Python
worker indexes the app at worker init and starts the HTTP server streamed requests are proxied to
only then. Without it every HTTP function would fail, so `build_app` refuses to start instead.
"""

from __future__ import annotations

from typing import Any

import azure.functions as func
from azurefunctions.extensions.http.fastapi import Request, Response
from starlette.responses import Response as StarletteResponse
from starlette.responses import StreamingResponse

from .._errors import HostingConfigurationError
from .._handlers import ContextHandler
from .._settings import INIT_INDEXING_SETTING

__all__ = ["INIT_INDEXING_SETTING", "Request", "Response", "check_init_indexing", "serve"]

_TRUE = frozenset({"1", "true", "t", "yes", "y"})  # what the Functions Python runtime counts as true


def check_init_indexing(value: str | None) -> None:
    """Raise `HostingConfigurationError` unless `value`, the app's `PYTHON_ENABLE_INIT_INDEXING`
    (`HttpSettings.init_indexing`), is true."""
    if value is None or value.strip().lower() not in _TRUE:
        raise HostingConfigurationError(
            f"the app setting {INIT_INDEXING_SETTING} must be 1 (it is {value!r}): the app's HTTP "
            "functions use the Functions HTTP streams types, which the Python worker serves only "
            "when it indexes the app at worker init (local.settings.sample.json sets it)"
        )


async def serve(
    handler: ContextHandler,
    req: Request | func.HttpRequest,
    client: Any,
    max_body_bytes: int,
    invocation: Any = None,
) -> StarletteResponse | func.HttpResponse:
    """Run a handler for a request of either protocol and answer in that protocol.

    A host that calls the function with a classic `func.HttpRequest` (one without the HTTP
    streaming extension, or a test calling it directly) gets a classic `func.HttpResponse`; an
    event stream is then delivered whole, once the run has ended.
    """
    if isinstance(req, func.HttpRequest):
        answer = await handler(req, client, invocation)
        return await buffered(answer) if isinstance(answer, StarletteResponse) else answer
    classic = await from_streaming_request(req, max_body_bytes)
    return to_streaming_response(await handler(classic, client, invocation))


async def buffered(answer: StarletteResponse) -> func.HttpResponse:
    """A Starlette response read to its end, as a classic response."""
    if isinstance(answer, StreamingResponse):
        chunks = [c if isinstance(c, bytes) else str(c).encode() async for c in answer.body_iterator]
        body = b"".join(chunks)
    else:
        body = bytes(answer.body)
    headers = {
        k: v for k, v in answer.headers.items() if k.lower() not in ("content-length", "transfer-encoding")
    }
    return func.HttpResponse(body, status_code=answer.status_code, headers=headers)


async def from_streaming_request(req: Request, max_body_bytes: int) -> func.HttpRequest:
    """The classic request the handlers take. The body is read up to one byte past
    `max_body_bytes`: enough for the handler to refuse it (413) without holding a huge upload."""
    body = bytearray()
    async for chunk in req.stream():
        body += chunk
        if len(body) > max_body_bytes:
            break
    return func.HttpRequest(
        method=req.method,
        url=_url(req),
        headers=dict(req.headers),
        params=dict(req.query_params),
        route_params={k: str(v) for k, v in req.path_params.items()},
        body=bytes(body),
    )


def _url(req: Request) -> str:
    """The request URL. Not `req.url`: Starlette decodes the query string as strict UTF-8 there, and
    a caller's query may be any bytes (the handlers refuse what they cannot read, with a 400)."""
    scope = req.scope
    query = bytes(scope.get("query_string") or b"").decode("utf-8", "replace")
    host = req.headers.get("host") or "localhost"
    url = f"{scope.get('scheme', 'http')}://{host}{scope.get('root_path', '')}{scope.get('path', '')}"
    return f"{url}?{query}" if query else url


def to_streaming_response(answer: func.HttpResponse | StarletteResponse) -> StarletteResponse:
    """The handler's answer as a Starlette response (the Functions HTTP streaming response type)."""
    if isinstance(answer, StarletteResponse):
        return answer
    headers = dict(answer.headers.items())
    if not any(name.lower() == "content-type" for name in headers):
        mimetype = str(answer.mimetype)
        # Same rule as azure.functions' HttpResponseConverter.
        headers["Content-Type"] = (
            f"{mimetype}; charset={answer.charset}" if mimetype.startswith("text/") else mimetype
        )
    return StarletteResponse(content=answer.get_body(), status_code=answer.status_code, headers=headers)
