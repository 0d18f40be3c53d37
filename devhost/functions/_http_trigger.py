"""HTTP triggers: route, authorize and invoke the user's function like the Python worker."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import hmac
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import azure.functions as func
from aiohttp import web

from .._problems import problem
from .._redact import loggable_url
from ._body import BodyTooLarge, body_limit_from_env, read_limited, read_unless_declared
from ._http_stream import serve_streaming
from ._index import HttpFunction
from ._trace_context import InvocationTraceContext, invocation_trace_context

KEY_ENV = "DEVHOST_FUNCTION_KEY"


class InvocationContext(func.Context):
    """The ``context`` argument the worker passes to functions that declare one."""

    def __init__(
        self, function_name: str, function_directory: str, trace_context: InvocationTraceContext | None = None
    ) -> None:
        self._invocation_id = str(uuid.uuid4())
        self._function_name = function_name
        self._function_directory = function_directory
        self._trace_context = trace_context
        self._tls = threading.local()

    @property
    def invocation_id(self) -> str:
        return self._invocation_id

    @property
    def thread_local_storage(self) -> Any:
        return self._tls

    @property
    def function_name(self) -> str:
        return self._function_name

    @property
    def function_directory(self) -> str:
        return self._function_directory

    @property
    def trace_context(self) -> Any:  # InvocationTraceContext (None only when built without one)
        return self._trace_context

    @property
    def retry_context(self) -> Any:
        return None


def key_matches(request: web.Request, key: str | None) -> bool:
    """Whether the request carries ``key`` (always true when the host runs without a key)."""
    if not key:
        return True
    given = request.headers.get("x-functions-key") or request.query.get("code") or ""
    # Header bytes that are not UTF-8 arrive surrogate-escaped: compare those raw bytes (they
    # never match a key) instead of failing to encode them.
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), key.encode())


def to_aiohttp(result: Any) -> web.Response:
    """Turn what the function returned into the HTTP answer, unchanged."""
    if result is None:
        return web.Response(status=204)
    if isinstance(result, str | bytes):
        result = func.HttpResponse(result)
    if not isinstance(result, func.HttpResponse):
        raise TypeError(f"HTTP function returned {type(result).__name__}, not an HttpResponse")
    response = web.Response(status=result.status_code, body=result.get_body())
    has_type = False
    for name, value in result.headers.items():
        if name.lower() == "content-type":
            has_type = True
        response.headers.add(name, value)
    if not has_type:
        # Same rule as azure.functions' HttpResponseConverter.
        mimetype = str(result.mimetype)
        text = mimetype.startswith("text/")
        response.headers["Content-Type"] = f"{mimetype}; charset={result.charset}" if text else mimetype
    return response


class HttpDispatcher:
    """The catch-all handler serving every HTTP trigger of the app."""

    def __init__(
        self,
        *,
        functions: list[HttpFunction],
        route_prefix: str,
        function_key: Callable[[], str | None],
        client_binding: Callable[[dict[str, Any]], str],
        executor: concurrent.futures.Executor,
        project_dir: str,
        logger: logging.Logger,
        log_hidden: tuple[str, ...] = (),
        max_body_bytes: int | None = None,
    ) -> None:
        self._functions = functions
        self._prefix = route_prefix.strip("/")
        self._key = function_key
        self._client_binding = client_binding
        self._executor = executor
        self._project_dir = project_dir
        self._log = logger
        self._log_hidden = log_hidden
        self._max_body = max_body_bytes if max_body_bytes is not None else body_limit_from_env()

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

    def _bindings(self, function: HttpFunction, trace: InvocationTraceContext) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        for param, binding in function.client_params.items():
            kwargs[param] = self._client_binding(binding)
        if function.wants_context:
            kwargs["context"] = InvocationContext(function.name, self._project_dir, trace)
        return kwargs

    async def _streaming(
        self,
        request: web.Request,
        function: HttpFunction,
        params: dict[str, str],
        trace: InvocationTraceContext,
        body: bytes | None,
    ) -> web.StreamResponse:
        """A function on the HTTP streaming types: its response goes out as it is produced (its
        request body too, unless ``body`` holds it already)."""
        kwargs = self._bindings(function, trace)

        async def call(framework_request: Any) -> Any:
            kwargs[function.request_param] = framework_request
            if function.is_async:
                return await function.func(**kwargs)
            loop = asyncio.get_running_loop()
            bound = functools.partial(contextvars.copy_context().run, function.func, **kwargs)
            return await loop.run_in_executor(self._executor, bound)

        try:
            return await serve_streaming(request, params, call, body)
        except Exception as exc:
            self._log.exception("function %s failed", function.name)
            return problem(500, "function_failed", f"function {function.name!r} raised {type(exc).__name__}")

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
        if function.streaming:
            try:
                read = await read_unless_declared(request, self._max_body)
            except BodyTooLarge as refused:
                return refused.response()
            return await self._streaming(request, function, params, trace, read)
        try:
            body = await read_limited(request, self._max_body)
        except BodyTooLarge as refused:
            return refused.response()
        req = func.HttpRequest(
            method=request.method,
            url=str(request.url),
            headers=dict(request.headers),
            params=dict(request.query),
            route_params=params,
            body=body,
        )
        kwargs = {**self._bindings(function, trace), function.request_param: req}
        try:
            if function.is_async:
                result = await function.func(**kwargs)
            else:
                loop = asyncio.get_running_loop()
                call = functools.partial(contextvars.copy_context().run, function.func, **kwargs)
                result = await loop.run_in_executor(self._executor, call)
            return to_aiohttp(result)
        except Exception as exc:
            self._log.exception("function %s failed", function.name)
            return problem(500, "function_failed",
                           f"function {function.name!r} raised {type(exc).__name__}")
