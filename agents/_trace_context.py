"""W3C trace context (`traceparent`, `tracestate`) carried across the durable hop in a turn
request's JSON: cleaned when read, injected from and extracted to OpenTelemetry contexts.

Only `opentelemetry-api` is used (a no-op until a provider is set)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

TRACE_CONTEXT_KEYS = ("traceparent", "tracestate")
"""The W3C trace context fields carried across the durable hop (in a turn request's JSON)."""
MAX_TRACE_FIELD = 512  # W3C: tracestate is at most 512 characters; traceparent is 55

_w3c = TraceContextTextMapPropagator()


def clean_trace_context(value: Any) -> dict[str, str] | None:
    """The traceparent/tracestate of ``value`` (a JSON object from anywhere), or None.

    Lenient on purpose: a malformed trace context must never fail a turn, so anything that is
    not a short string is dropped rather than refused."""
    if not isinstance(value, Mapping):
        return None
    kept = {
        key: item
        for key in TRACE_CONTEXT_KEYS
        if isinstance(item := value.get(key), str) and 0 < len(item) <= MAX_TRACE_FIELD
    }
    return kept if "traceparent" in kept else None


def current_trace_context() -> dict[str, str] | None:
    """The current span's W3C trace context (``{"traceparent", "tracestate"?}``), None without one."""
    carrier: dict[str, str] = {}
    _w3c.inject(carrier)
    return carrier or None


def context_from(trace_context: Any) -> Context | None:
    """An OpenTelemetry context whose parent is the span the W3C trace context ``trace_context``
    (``{"traceparent", "tracestate"?}``, from anywhere) names; None when it names none."""
    cleaned = clean_trace_context(trace_context)
    if cleaned is None:
        return None
    found = _w3c.extract(cleaned)
    # An unparsable traceparent extracts to an empty context, which would make a root span.
    return found if trace.get_current_span(found).get_span_context().is_valid else None
