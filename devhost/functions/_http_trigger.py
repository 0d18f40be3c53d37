"""HTTP triggers: route and authorize as the Functions host does, then invoke in a worker."""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from aiohttp import web

from .._problems import problem
from .._redact import loggable_url
from ..worker import FunctionFailed, FunctionTimedOut, TypedData, WorkerDied, Workers, invocation
from ._body import BodyTooLarge, body_limit_from_env, read_limited
from ._http_proxy import HttpProxy
from ._index import HttpFunction
from ._trace_context import InvocationTraceContext, invocation_trace_context


def key_matches(request: web.Request, key: str | None) -> bool:
    """Whether the request carries ``key`` (always true when the host runs without a key)."""
    if not key:
        return True
    given = request.headers.get("x-functions-key") or request.query.get("code") or ""
    # Header bytes that are not UTF-8 arrive surrogate-escaped: compare those raw bytes (they
    # never match a key) instead of failing to encode them.
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), key.encode())


def to_aiohttp(data: TypedData | None) -> web.Response:
    """The HTTP answer from the function's returned ``RpcHttp`` (its status, headers and body)."""
    if data is None:
        return web.Response(status=204)
    kind = data.WhichOneof("data")
    if kind != "http" or data.http is None:
        raise FunctionFailed(f"the HTTP function returned {kind} data, not an HTTP response")
    answer = data.http
    body = answer.body
    raw: bytes = b""
    if body is not None:
        text = invocation.text_of(body) if body.WhichOneof("data") != "bytes" else None
        raw = body.bytes if text is None and body.bytes is not None else (text or "").encode()
    response = web.Response(status=int(answer.status_code or 200), body=raw)
    for name, value in answer.headers.items():
        response.headers.add(name, value)
    return response



def rpc_query(query: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The query as the Functions host puts it in RpcHttp.query (azure-functions-host,
    GrpcMessageConversionExtensions.ToRpcHttp): one entry per key, a repeated key's values joined
    with commas (ASP.NET Core's StringValues.ToString), a key whose value is empty left out (the
    Python worker does not ask for UseNullableValueDictionaryForHttp)."""
    return {name: value for name, value in _joined(query).items() if value}


def rpc_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The headers as the Functions host puts them in RpcHttp.headers (``ToRpcHttp``): names
    lower-cased, a repeated header's values joined with commas, empty values kept (the Python
    worker does not ask for IgnoreEmptyValuedRpcHttpHeaders)."""
    return _joined((name.lower(), value) for name, value in headers)


def _joined(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    values: dict[str, list[str]] = {}
    for name, value in pairs:
        values.setdefault(name, []).append(value)
    return {name: ",".join(found) for name, found in values.items()}


class HttpDispatcher:
    """The catch-all handler serving every HTTP trigger of the app."""

    def __init__(
        self,
        *,
        functions: list[HttpFunction],
        route_prefix: str,
        function_key: Callable[[], str | None],
        client_binding: Callable[[dict[str, Any]], str],
        workers: Workers,
        logger: logging.Logger,
        log_hidden: tuple[str, ...] = (),
        max_body_bytes: int | None = None,
    ) -> None:
        self._functions = functions
        self._prefix = route_prefix.strip("/")
        self._key = function_key
        self._client_binding = client_binding
        self._workers = workers
        self._proxy = HttpProxy(logger)
        self._log = logger
        self._log_hidden = log_hidden
        self._max_body = max_body_bytes if max_body_bytes is not None else body_limit_from_env()

    async def close(self) -> None:
        await self._proxy.close()

    def _strip_prefix(self, path: str) -> str | None:
        path = path.strip("/")
        if not self._prefix:
            return path
        lower, prefix = path.lower(), self._prefix.lower()
        if lower == prefix:
            return ""
        if lower.startswith(prefix + "/"):
            return path[len(prefix) + 1 :]
        return None

    def resolve(self, method: str, raw_path: str) -> tuple[HttpFunction, dict[str, str]] | list[str]:
        """The function and route params for a request, or the allowed methods (maybe none)."""
        local = self._strip_prefix(raw_path)
        allowed: list[str] = []
        if local is None:
            return allowed
        for function in self._functions:
            params = function.route.match(local)
            if params is None:
                continue
            if function.methods is None or method in function.methods:
                return function, params
            allowed.extend(sorted(function.methods))
        return allowed

    async def handle(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        headers = request.headers
        trace = invocation_trace_context(headers.get("traceparent"), headers.get("tracestate"))
        response = await self._handle(request, trace)
        self._log.info(
            "%s %s -> %d (%.0fms) trace=%s", request.method, loggable_url(request, self._log_hidden),
            response.status, (time.monotonic() - started) * 1000, trace.trace_id,
        )
        return response

    def _inputs(
        self, request: web.Request, function: HttpFunction, params: dict[str, str], body: bytes | None
    ) -> dict[str, TypedData]:
        inputs = {
            function.request_param: invocation.http(
                method=request.method, url=str(request.url), headers=rpc_headers(request.headers.items()),
                query=rpc_query(request.query.items()), params=params, body=body,
            )
        }
        for param, binding in function.client_params.items():
            inputs[param] = invocation.string(self._client_binding(binding))
        return inputs

    async def _handle(self, request: web.Request, trace: InvocationTraceContext) -> web.StreamResponse:
        found = self.resolve(request.method.upper(), request.raw_path.split("?", 1)[0])
        if isinstance(found, list):
            if not found and request.path == "/" and request.method in ("GET", "HEAD"):
                # The Functions host answers its root with a landing page; so do we.
                names = ", ".join(f.name for f in self._functions) or "none"
                return web.Response(text=f"devhost is up and running. HTTP functions: {names}\n")
            if found:
                # The Functions host answers 404 (not 405) for a route served with other methods:
                # its routes carry the methods as a constraint. Same answer, with the methods named.
                methods = sorted(set(found))
                return problem(404, "not_found", f"no function serves {request.method} "
                               f"{request.path}; this route takes {', '.join(methods)}",
                               allowed=methods)
            return problem(404, "not_found", f"no function serves {request.path}")
        function, params = found
        if function.auth_level != "anonymous" and not key_matches(request, self._key()):
            return problem(401, "unauthorized", "a valid function key is required (code= query "
                           "parameter or x-functions-key header)")
        try:
            body = await read_limited(request, self._max_body)
        except BodyTooLarge as refused:
            return refused.response()
        try:
            worker = await self._workers.group("httpTrigger").pick()
            if worker.http_uri:
                # The worker serves HTTP streams: the invocation carries the route and the request
                # itself is proxied to the worker's own HTTP server, as the Functions host does.
                call = invocation.request(function.function_id, self._inputs(request, function, params, None),
                                          trace_parent=trace.trace_parent, trace_state=trace.trace_state)
                return await self._proxy.forward(request, body, worker, call)
            call = invocation.request(function.function_id, self._inputs(request, function, params, body),
                                      trace_parent=trace.trace_parent, trace_state=trace.trace_state)
            return to_aiohttp(invocation.returned(await worker.invoke(call)))
        except FunctionFailed as exc:
            self._log.error("function %s failed: %s\n%s", function.name, exc.message, exc.stack_trace)
            raised = exc.message.split(":", 1)[0]
            return problem(500, "function_failed", f"function {function.name!r} raised {raised}")
        except FunctionTimedOut as exc:
            return problem(500, "function_failed", f"function {function.name!r} failed: {exc}")
        except WorkerDied as exc:
            self._log.error("function %s failed: %s", function.name, exc)
            return problem(500, "function_failed",
                           f"function {function.name!r} failed: its worker process exited")
