"""The W3C trace context of an invocation, as the Functions host hands it to the Python worker.

The host starts an activity for every invocation and passes its `traceparent`/`tracestate` on the
invocation's ``context.trace_context``. The local host exports no spans of its own, so it passes
the caller's trace context through unchanged when the request carries a valid one (the caller's
span becomes the parent of the app's), and otherwise starts a new trace: a fresh trace id and an
invocation span id, which the request's log line names.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field

from azure.functions._abc import TraceContext

# version 00: 32 hex trace id, 16 hex parent id, 2 hex flags (https://www.w3.org/TR/trace-context/)
_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
_MAX_TRACESTATE = 512


@dataclass(frozen=True)
class InvocationTraceContext(TraceContext):
    """``context.trace_context``: `trace_parent`, `trace_state`, `attributes` (azure.functions'
    names), and `Traceparent`, `Tracestate`, `Attributes` (the worker's)."""

    traceparent: str
    tracestate: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def trace_parent(self) -> str:
        return self.traceparent

    @property
    def trace_state(self) -> str:
        return self.tracestate

    @property
    def attributes(self) -> dict[str, str]:
        return dict(self.extra)

    # The Python worker's TraceContext spells them so; code written against it keeps working.
    Traceparent = trace_parent
    Tracestate = trace_state
    Attributes = attributes

    @property
    def trace_id(self) -> str:
        """The 32 hex digits of the trace id (for log lines)."""
        return self.traceparent.split("-")[1]


def invocation_trace_context(traceparent: str | None, tracestate: str | None) -> InvocationTraceContext:
    """The trace context of one invocation from the request's `traceparent`/`tracestate` headers."""
    found = _TRACEPARENT.fullmatch((traceparent or "").strip().lower())
    if found is not None and set(found[1]) != {"0"} and set(found[2]) != {"0"}:
        state = (tracestate or "").strip()
        return InvocationTraceContext(found[0], state if len(state) <= _MAX_TRACESTATE else "")
    return InvocationTraceContext(f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01")
