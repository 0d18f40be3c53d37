"""HTTP streams: the request goes to the worker's own HTTP server, as the Functions host proxies it.

A worker whose runtime serves HTTP streams (the ``HttpUri`` capability it answers worker init
with) gets each HTTP invocation twice: the invocation message, carrying the route parameters,
and the request itself forwarded to ``HttpUri`` with the invocation id in ``x-ms-invocation-id``.
The runtime pairs the two, runs the function and answers the forwarded request with the
function's response, which goes back to the client chunk by chunk. A client that goes away
closes the forwarded request, which the function sees as a disconnect.

The runtime starts its HTTP server as it answers worker init, so the server of a worker just
(re)started may not listen yet when the first request is forwarded. A connection that fails is
tried again as the Functions host does (azure-functions-host,
`Microsoft.Azure.WebJobs.Script.Http.RetryProxyHandler`): up to 10 attempts, 50 ms apart doubling
to 250 ms, and no more once the invocation itself has failed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from .._problems import problem
from ..worker import FunctionFailed, InvocationRequest, Worker, WorkerDied, invocation

INVOCATION_ID_HEADER = "x-ms-invocation-id"
# How long the invocation's own answer may lag behind its finished response. The runtime answers
# right after the function's response; one whose request its HTTP server answered itself (a path
# its router refuses, before the function runs) never answers at all, and must not hold this.
SETTLE_SECONDS = 5.0
# Hop-by-hop headers (RFC 9110 7.6.1) and what the forwarder sets itself.
_NOT_FORWARDED = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
    "transfer-encoding", "upgrade", "host", "content-length",
})
_SET_BY_THIS_SERVER = frozenset({"date", "server"})
IDLE_SECONDS = 2.0
"""How long a connection to a worker's HTTP server stays pooled unused. The runtime's server
(uvicorn, through the HTTP streams extension) closes a connection idle for 5 s
(`timeout_keep_alive`); a connection it closed just as the host reused it would fail a request
the function never saw, so the host lets go of it well before."""
CONNECT_ATTEMPTS = 10
"""Attempts to reach the worker's HTTP server (the Functions host's RetryProxyHandler.MaxRetries)."""
RETRY_DELAYS = (0.05, 0.25)
"""The first pause between attempts and its cap, in seconds (doubling from the first)."""


class HttpProxy:
    """Forwards HTTP invocations to a worker's HTTP server."""

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # No total timeout: a stream lasts as long as the function writes it. Connections are
            # pooled, as the Functions host pools them; one idle for `IDLE_SECONDS` is dropped before
            # the worker's server would close it (see IDLE_SECONDS).
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
                auto_decompress=False,
                connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=IDLE_SECONDS),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def forward(
        self, request: web.Request, body: bytes, worker: Worker, call: InvocationRequest
    ) -> web.StreamResponse:
        # A multidict: a header the client sent twice (Cookie, X-Forwarded-For) reaches it twice.
        headers = CIMultiDict((k, v) for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED)
        headers[INVOCATION_ID_HEADER] = call.invocation_id
        headers["X-Forwarded-Host"] = request.host
        headers["X-Forwarded-Proto"] = request.scheme
        if request.remote:
            headers["X-Forwarded-For"] = request.remote
        invoked = asyncio.ensure_future(worker.invoke(call))
        target = f"{worker.http_uri}{request.raw_path}"
        response: web.StreamResponse | None = None
        try:
            upstream = await self._connect(request.method, target, headers, body, worker, invoked)
            async with upstream:
                response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
                for name, value in upstream.headers.items():
                    if name.lower() not in _NOT_FORWARDED | _SET_BY_THIS_SERVER:
                        response.headers.add(name, value)
                length = upstream.headers.get("Content-Length")
                if length is not None and "chunked" not in upstream.headers.get("Transfer-Encoding", ""):
                    response.content_length = int(length)
                await response.prepare(request)
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
        except asyncio.CancelledError:
            # Leaving the block closes the forwarded request, which the function sees as a disconnect.
            invoked.cancel()
            raise
        except (ConnectionResetError, aiohttp.ClientError) as exc:
            if _client_gone(request):
                # The client went away (a health check that gave up, a closed stream): leaving the
                # block closes the forwarded request, which the function sees as a disconnect. The
                # client's choice, not a server error: one debug line, no traceback from the server.
                invoked.cancel()
                self._log.debug("the client of %s %s went away: %s", request.method, request.path, exc)
                return response if response is not None else web.Response(status=499)
            if not isinstance(exc, aiohttp.ClientError):
                invoked.cancel()
                raise
            self._log.error("forwarding to %s failed: %s", worker.name, exc)
            if response is None:
                invoked.cancel()
                return problem(500, "function_failed", "the function's worker process did not answer")
        await self._settle(invoked, call)
        return response if response is not None else web.Response(status=500)

    async def _connect(
        self,
        method: str,
        target: str,
        headers: CIMultiDict[str],
        body: bytes,
        worker: Worker,
        invoked: asyncio.Future[Any],
    ) -> aiohttp.ClientResponse:
        """The worker's response to the forwarded request, its connection tried again while the
        worker's server does not accept it yet (see the module)."""
        delay, cap = RETRY_DELAYS
        for attempt in range(1, CONNECT_ATTEMPTS + 1):
            try:
                return await self._client().request(method, target, headers=headers, data=body,
                                                    allow_redirects=False)
            except aiohttp.ClientConnectorError as exc:
                if attempt == CONNECT_ATTEMPTS or _failed(invoked):
                    raise
                self._log.warning("forwarding to %s: %s; trying again in %.0f ms (attempt %d of %d)",
                                  worker.name, exc, delay * 1000, attempt, CONNECT_ATTEMPTS)
                await asyncio.sleep(delay)
                delay = min(delay * 2, cap)
        raise AssertionError("unreachable")

    async def _settle(self, invoked: asyncio.Future[Any], call: InvocationRequest) -> None:
        """The invocation's own answer (its failure is logged; the response has gone out)."""
        done, _ = await asyncio.wait({invoked}, timeout=SETTLE_SECONDS)
        if not done:
            invoked.cancel()
            self._log.warning("invocation %s sent no answer %.0f s after its response; not waiting for it",
                              call.invocation_id, SETTLE_SECONDS)
            return
        try:
            invocation.returned(invoked.result())
        except FunctionFailed as exc:
            self._log.error("invocation %s failed: %s\n%s", call.invocation_id, exc.message, exc.stack_trace)
        except WorkerDied as exc:
            self._log.error("invocation %s: %s", call.invocation_id, exc)
        except asyncio.CancelledError:
            pass


def _client_gone(request: web.Request) -> bool:
    """Whether the client's connection is closed (the transport gone or closing)."""
    return request.transport is None or request.transport.is_closing()


def _failed(invoked: asyncio.Future[Any]) -> bool:
    """Whether the invocation has already failed (the host stops forwarding then)."""
    if not invoked.done():
        return False
    if invoked.cancelled() or invoked.exception() is not None:
        return True
    try:
        invocation.returned(invoked.result())
    except FunctionFailed:
        return True
    return False
