"""OpenTelemetry in the hosted app: the exporters (chosen from the environment, once), the spans of
HTTP requests and entity operations, the W3C trace context carried across the durable hop, and
trace ids on log records. See docs/telemetry.md.

Only `configure_telemetry` touches the SDK, and only when an exporter is configured; the spans use
`opentelemetry-api`, whose no-op tracer costs next to nothing when nothing is configured.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

import azure.functions as func
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, StatusCode
from starlette.responses import Response as StarletteResponse

from agents import context_from, current_trace_context, mark_failed, mark_raised, tracing_enabled

from ._handlers import ContextHandler, Handler

log = logging.getLogger("hosting.telemetry")

TRACE_CONTEXT_FIELD = "traceContext"
"""Where a W3C trace context travels in a JSON input (a turn request, an orchestration input)."""

CONNECTION_STRING_ENV = "APPLICATIONINSIGHTS_CONNECTION_STRING"
AUTHENTICATION_STRING_ENV = "APPLICATIONINSIGHTS_AUTHENTICATION_STRING"
"""`Authorization=AAD` (and `ClientId=<a user-assigned identity's client id>`): send with Entra ID,
as the Functions host does with the same setting; what a resource with local auth off accepts."""
OTLP_ENDPOINT_ENVS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")

SHUTDOWN_FLUSH_SECONDS = 2.0
"""The longest a stopping process spends sending the spans still queued. A collector that accepts
and never answers would otherwise hold the exit for the exporter's timeout and its retries (over
10 s); this stays well inside the grace time a host gives a stopping worker."""

_tracer = trace.get_tracer("hosting")
_lock = threading.Lock()
_configured: str | None = None



# -- configuration -------------------------------------------------------------------------------------


def configure_telemetry(environ: Mapping[str, str] | None = None) -> str:
    """Set up trace export from the environment, once per process; returns what was set up.

    * ``"existing"``: a tracer provider was already set (the Functions worker with
      `PYTHON_APPLICATIONINSIGHTS_ENABLE_TELEMETRY=true`, or the app's own code): it is used as is,
      plus an OTLP exporter when `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT` is set.
    * ``"azure_monitor"``: `APPLICATIONINSIGHTS_CONNECTION_STRING` is set; the Azure Monitor
      distro (`azure-monitor-opentelemetry`, imported only now) exports traces and logs; with
      `APPLICATIONINSIGHTS_AUTHENTICATION_STRING` (`ClientId=<id>;Authorization=AAD`) it sends
      with that managed identity's Entra ID token, which a resource with local auth off requires.
    * ``"otlp"``: `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT` is set; spans go over OTLP/HTTP
      (protobuf), configured by the standard `OTEL_EXPORTER_OTLP_*` variables.
    * ``"none"``: neither (or `OTEL_SDK_DISABLED=true`): no SDK is loaded at all.

    Both Azure Monitor and OTLP may be set; then spans go to both. Log records get the current
    trace and span ids (`otelTraceID`, `otelSpanID`) in every case.
    """
    global _configured
    with _lock:
        if _configured is None:
            _install_log_ids()
            _configured = _configure(os.environ if environ is None else environ)
            if _configured != "none":
                log.info("telemetry: traces export via %s", _configured)
        return _configured


def _configure(environ: Mapping[str, str]) -> str:
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return "none"
    otlp = any(environ.get(name, "").strip() for name in OTLP_ENDPOINT_ENVS) and (
        environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() != "none"
    )
    existing = not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    how = "existing" if existing else "none"
    if not existing and environ.get(CONNECTION_STRING_ENV, "").strip():
        # Heavy (it brings instrumentations and the Azure SDK): imported only when asked for.
        from azure.monitor.opentelemetry import configure_azure_monitor

        credential = _monitor_credential(environ)
        extra: dict[str, Any] = {} if credential is None else {"credential": credential}
        configure_azure_monitor(connection_string=environ[CONNECTION_STRING_ENV].strip(), **extra)
        how = "azure_monitor"
    if otlp:
        protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get(
            "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
        )
        if protocol.strip().lower() != "http/protobuf":
            log.warning("telemetry: OTLP protocol %r is not supported; sending http/protobuf", protocol)
        _add_otlp(environ)
        how = "otlp" if how == "none" else f"{how}+otlp"
    return how


def _monitor_credential(environ: Mapping[str, str]) -> Any:
    """The managed identity's credential the authentication string names, or None (the connection
    string's key alone). One credential for the trace, log and metric exporters: one token cache
    (left to themselves, they read the setting each and make three)."""
    raw = environ.get(AUTHENTICATION_STRING_ENV, "").strip()
    if not raw:
        return None
    fields = dict(part.partition("=")[::2] for part in raw.split(";") if part.strip())
    fields = {key.strip().lower(): value.strip() for key, value in fields.items()}
    if fields.get("authorization", "").lower() != "aad":
        log.warning("telemetry: %s has no Authorization=AAD; sending with the connection string's key",
                    AUTHENTICATION_STRING_ENV)
        return None
    from azure.identity import ManagedIdentityCredential

    client_id = fields.get("clientid") or None  # none: the app's system-assigned identity
    return ManagedIdentityCredential(client_id=client_id)


def _add_otlp(environ: Mapping[str, str]) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider: Any = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider):
        attributes = environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
        named = "OTEL_SERVICE_NAME" in environ or "service.name=" in attributes
        site = environ.get("WEBSITE_SITE_NAME", "").strip() or "durable-agents"
        provider = TracerProvider(resource=Resource.create({} if named else {"service.name": site}))
        trace.set_tracer_provider(provider)
    class BoundedShutdown(BatchSpanProcessor):
        """A batch processor whose shutdown (the final flush, at process exit) gives up after
        `SHUTDOWN_FLUSH_SECONDS`, whoever's provider shuts it down."""

        def shutdown(self) -> None:
            worker = threading.Thread(target=super().shutdown, name="otlp-shutdown", daemon=True)
            worker.start()
            worker.join(SHUTDOWN_FLUSH_SECONDS)
            if worker.is_alive():
                log.warning("telemetry: the OTLP collector did not take the last spans within %gs; "
                            "they are dropped", SHUTDOWN_FLUSH_SECONDS)

    # The exporter reads the endpoint, headers, timeout and compression from OTEL_EXPORTER_OTLP_*.
    provider.add_span_processor(BoundedShutdown(OTLPSpanExporter()))


# -- logs ----------------------------------------------------------------------------------------------

_INVALID_TRACE = "0" * 32
_INVALID_SPAN = "0" * 16


def _install_log_ids() -> None:
    """Every log record gets `otelTraceID` and `otelSpanID` (the names OpenTelemetry's logging
    instrumentation uses; zeros outside a span), for formats and handlers to print."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, "_dafx_trace_ids", False):
        return

    current_span = trace.get_current_span

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            span_context = current_span().get_span_context()
        except (AttributeError, TypeError):
            # At interpreter exit the modules' globals are cleared while a __del__ (an unclosed
            # aiohttp session's warning) may still log: that record gets no ids, not an error.
            record.otelTraceID, record.otelSpanID = _INVALID_TRACE, _INVALID_SPAN
            return record
        if span_context.is_valid:
            record.otelTraceID = format(span_context.trace_id, "032x")
            record.otelSpanID = format(span_context.span_id, "016x")
        else:
            record.otelTraceID = _INVALID_TRACE
            record.otelSpanID = _INVALID_SPAN
        return record

    factory._dafx_trace_ids = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


# -- trace context across the durable hop -----------------------------------------------------------------


def with_trace_context(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` (an orchestration input) with the current W3C trace context under `traceContext`,
    so the turns the orchestration runs join the trace of the request that started it."""
    current = current_trace_context()
    return {**value, TRACE_CONTEXT_FIELD: current} if current else value


def orchestration_trace_context(context: Any) -> Mapping[str, Any] | None:
    """The trace context an orchestration's input carries (see `with_trace_context`), or None.

    Read from the input, never from the clock or the process, so every replay gets the same."""
    try:
        value = context.get_input()
    except Exception:  # an input that is not JSON is the orchestrator's problem, not ours
        return None
    if not isinstance(value, Mapping):
        return None
    found = value.get(TRACE_CONTEXT_FIELD)
    return found if isinstance(found, Mapping) else None


# -- spans -------------------------------------------------------------------------------------------------


def _incoming(req: func.HttpRequest, invocation: Any) -> Context | None:
    """The parent of an HTTP request's span: the host's invocation (``context.trace_context``, as
    the Python worker passes it), else the caller's `traceparent` header."""
    trace_context = getattr(invocation, "trace_context", None)
    if trace_context is not None:
        # azure.functions names them trace_parent/trace_state; the worker's own class Traceparent.
        parent = getattr(trace_context, "trace_parent", None) or getattr(trace_context, "Traceparent", None)
        state = getattr(trace_context, "trace_state", None) or getattr(trace_context, "Tracestate", None)
        found = context_from({"traceparent": parent, "tracestate": state})
        if found is not None:
            return found
    headers = req.headers
    return context_from({"traceparent": headers.get("traceparent"), "tracestate": headers.get("tracestate")})


def traced_http(route: str, handler: Handler) -> ContextHandler:
    """``handler`` inside a SERVER span named ``{method} {route}``; the response's problem code is
    the span's `error.type`, and a 5xx sets its status to ERROR."""

    async def run(
        req: func.HttpRequest, client: Any, invocation: Any = None
    ) -> func.HttpResponse | StarletteResponse:
        if not tracing_enabled():
            return await handler(req, client)
        with _tracer.start_as_current_span(
            f"{req.method} {route}", context=_incoming(req, invocation), kind=SpanKind.SERVER,
            record_exception=False, set_status_on_exception=False,
        ) as span:
            if span.is_recording():
                span.set_attributes(
                    {"http.request.method": req.method, "http.route": route, "url.path": _path(req.url)}
                )
                agent = req.route_params.get("agent")
                if agent:
                    span.set_attribute("gen_ai.agent.name", agent)
            try:
                response = await handler(req, client)
            except BaseException as error:
                if span.is_recording():
                    mark_raised(span, error)
                raise
            if span.is_recording():
                _http_outcome(span, response)
            return response

    return run


def _path(url: str) -> str:
    rest = url.split("://", 1)[-1]
    slash = rest.find("/")
    return "/" if slash < 0 else rest[slash:].split("?", 1)[0]


def _http_outcome(span: Any, response: func.HttpResponse | StarletteResponse) -> None:
    status = response.status_code
    span.set_attribute("http.response.status_code", status)
    if status < 400:
        return
    code = str(status)
    # Only our problem responses (classic ones) carry a code; an event stream has none.
    if isinstance(response, func.HttpResponse) and "problem+json" in (response.mimetype or ""):
        with contextlib.suppress(ValueError, AttributeError):
            code = str(json.loads(response.get_body()).get("code") or code)
    span.set_attribute("error.type", code)
    if status >= 500:
        span.set_status(StatusCode.ERROR)


def traced_entity_run(
    entity: str,
    agent: str,
    key: str,
    operation_input: Any,
    run: Callable[[], dict[str, Any]],
    operation: str = "run",
) -> dict[str, Any]:
    """``run()`` (the `run` operation of `entity@key`, or a `step` of its turn, given the turn's
    request) inside its CONSUMER span, whose parent is the trace context the turn request
    carries; a failed turn sets ERROR with the failure's code."""
    if not tracing_enabled():
        return run()
    carried = operation_input.get(TRACE_CONTEXT_FIELD) if isinstance(operation_input, Mapping) else None
    with _tracer.start_as_current_span(
        f"{entity} {operation}", context=context_from(carried), kind=SpanKind.CONSUMER,
        record_exception=False, set_status_on_exception=False,
    ) as span:
        if span.is_recording():
            span.set_attributes(
                {
                    "dafx.entity.name": entity,
                    "dafx.entity.key": key,
                    "dafx.entity.operation": operation,
                    "gen_ai.agent.name": agent,
                    "gen_ai.conversation.id": key,
                }
            )
            fields = operation_input if isinstance(operation_input, Mapping) else {}
            correlation = fields.get("correlationId")
            if isinstance(correlation, str):
                span.set_attribute("dafx.correlation_id", correlation)
        try:
            result = run()
        except BaseException as exc:
            if span.is_recording():
                mark_raised(span, exc)
            raise
        error = result.get("error") if result.get("status") == "failed" else None
        if isinstance(error, Mapping) and span.is_recording():
            mark_failed(span, str(error.get("code")), str(error.get("message") or ""))
        return result
