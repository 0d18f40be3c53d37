"""The one adapter over ``azure-functions-runtime``: the Python execution runtime Azure runs.

The worker side of the protocol. Requests go to the runtime's own handlers
(``worker_init_request``, ``functions_metadata_request``, ``invocation_request``) wrapped as the
proxy worker wraps them (``request.request`` is the ``StreamingMessage``, ``request.properties``
carries ``protos`` and ``host``). Everything that reaches into the runtime's module state lives in
this module.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from . import _messages as protos
from ._messages import StatusResult, StreamingMessage

log = logging.getLogger("devhost.worker")


@dataclass
class _Envelope:
    """What the runtime's handlers take: the message and the host's properties."""

    request: StreamingMessage
    properties: dict[str, Any] = field(default_factory=dict)


def _runtime() -> Any:
    import azure_functions_runtime

    return azure_functions_runtime


def start_threads() -> None:
    """The runtime's thread pool for sync functions (``PYTHON_THREADPOOL_THREAD_COUNT``)."""
    runtime = _runtime()
    if runtime.get_threadpool_executor() is None:
        runtime.start_threadpool_executor()


class RuntimeHandlers:
    """Answers one ``StreamingMessage`` request with the runtime's own handler."""

    def __init__(self, host_address: str = "127.0.0.1", app: Any = None) -> None:
        self._properties = {"protos": protos, "host": host_address}
        # An app object (a test embedding the host) is indexed as the runtime indexes the
        # FunctionApp it imports from the script file; everything else is the runtime's own.
        self._app = app

    async def handle(self, message: StreamingMessage) -> StreamingMessage:
        runtime = _runtime()
        envelope = _Envelope(message, self._properties)
        kind = message.WhichOneof("content")
        reply = StreamingMessage(request_id=message.request_id)
        if kind == "worker_init_request":
            start_threads()
            if self._app is not None:
                reply.worker_init_response = await self._init_with_app(envelope)
            else:
                reply.worker_init_response = await runtime.worker_init_request(envelope)
        elif kind == "functions_metadata_request":
            reply.function_metadata_response = await runtime.functions_metadata_request(envelope)
        elif kind == "function_load_request":
            reply.function_load_response = await runtime.function_load_request(envelope)
        elif kind == "invocation_request":
            reply.invocation_response = await runtime.invocation_request(envelope)
        else:
            raise ValueError(f"the worker takes no {kind!r} message")
        return reply

    async def _init_with_app(self, envelope: _Envelope) -> Any:
        """Worker init for an app object: the runtime's indexing applied to ``app.get_functions()``.

        The runtime's ``worker_init_request`` imports the FunctionApp from the script file; an app
        object has none, so its functions go through the same ``process_indexed_function`` (the
        checks that refuse a function) and the HTTP proxy server starts the same way.
        """
        from azure_functions_runtime import handle_event, http_v2
        from azure_functions_runtime.bindings.meta import load_binding_registry
        from azure_functions_runtime.functions import Registry
        from azure_functions_runtime.loader import process_indexed_function
        from azure_functions_runtime.utils.constants import HTTP_URI, REQUIRES_ROUTE_PARAMETERS
        from azure_functions_runtime.utils.helpers import get_worker_metadata
        from azure_functions_runtime.utils.tracing import serialize_exception

        handle_event.protos = protos
        handle_event._host = self._properties["host"]
        handle_event._functions = registry = Registry()
        capabilities: dict[str, str] = {}
        try:
            load_binding_registry()
            directory = envelope.request.worker_init_request.function_app_directory  # type: ignore[union-attr]
            functions = list_functions(self._app)
            _decide_http_streams(functions)
            results, _ = process_indexed_function(protos, registry, functions, directory)
            handle_event._metadata_result = results
            if http_v2.HttpV2Registry.http_v2_enabled():
                capabilities[HTTP_URI] = http_v2.initialize_http_server(self._properties["host"])
                capabilities[REQUIRES_ROUTE_PARAMETERS] = "true"
        except Exception as exc:
            return protos.WorkerInitResponse(
                capabilities=capabilities,
                worker_metadata=get_worker_metadata(protos),
                result=StatusResult(status=StatusResult.Failure, exception=serialize_exception(exc, protos)),
            )
        return protos.WorkerInitResponse(
            capabilities=capabilities,
            worker_metadata=get_worker_metadata(protos),
            result=StatusResult(status=StatusResult.Success),
        )


def _decide_http_streams(functions: list[Any]) -> None:
    """Whether the runtime serves HTTP streams, as a worker process loading this app alone decides.

    The runtime decides it once per process, from whether an HTTP streams extension was ever
    imported there; in a process that hosts several app objects one after another (a test run),
    that would carry one app's choice over to the next. Here it follows this app's own HTTP
    functions: streams exactly when one takes the extension's request type.
    """
    from azure_functions_runtime.http_v2 import HttpV2Registry

    try:
        import azurefunctions.extensions.base as ext_base
    except ImportError:
        ext_base = None
    uses = ext_base is not None and any(_takes_stream_request(f, ext_base) for f in functions)
    HttpV2Registry._http_v2_enabled_checked = True
    HttpV2Registry._http_v2_enabled = uses
    HttpV2Registry._ext_base = ext_base if uses else None


def _takes_stream_request(function: Any, ext_base: Any) -> bool:
    import json
    import typing

    for raw in function.get_raw_bindings():
        binding = json.loads(raw)
        if binding.get("type") == "httpTrigger":
            try:
                hints = typing.get_type_hints(function.get_user_function())
            except Exception:  # an annotation that does not resolve is not the request type
                return False
            return bool(ext_base.RequestTrackerMeta.check_type(hints.get(binding.get("name"))))
    return False


def list_functions(app: Any) -> list[Any]:
    """``app.get_functions()``, callable more than once.

    The FunctionApp records the names it returned and refuses a second call as duplicates (the
    worker indexes an app once); an in-process worker indexes the app again at each start, and
    tests list the same app's functions, so the record is set aside for each call and put back.
    """
    saved = getattr(app, "functions_bindings", None)
    app.functions_bindings = None
    try:
        return list(app.get_functions())
    finally:
        app.functions_bindings = saved


def worker_environment_ok() -> str | None:
    """Why the runtime cannot start here, or None."""
    try:
        _runtime()
    except ImportError as exc:
        return f"azure-functions-runtime is not installed ({exc})"
    return None
