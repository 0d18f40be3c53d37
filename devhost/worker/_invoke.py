"""Invocations as the host builds them: inputs as typed data, the answer's value or failure."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping

from ._messages import (
    InvocationRequest,
    InvocationResponse,
    ParameterBinding,
    RpcHttp,
    RpcTraceContext,
    StatusResult,
    TypedData,
)


class FunctionFailed(Exception):
    """The function (or the runtime's binding conversion) raised; the runtime's own message."""

    def __init__(self, message: str, stack_trace: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.stack_trace = stack_trace


def string(value: str) -> TypedData:
    return TypedData(string=value)


def json_text(value: str) -> TypedData:
    return TypedData(json=value)


def http(
    *, method: str, url: str, headers: Mapping[str, str], query: Mapping[str, str],
    params: Mapping[str, str], body: bytes | None,
) -> TypedData:
    """An HTTP trigger's input, as the host sends it (the body as raw bytes: RawHttpBodyBytes)."""
    return TypedData(http=RpcHttp(
        method=method, url=url, headers=dict(headers), query=dict(query), params=dict(params),
        # An unset message field reads as its empty default in protobuf; the runtime relies on it.
        body=TypedData(bytes=body) if body is not None else TypedData(),
    ))


def request(
    function_id: str, inputs: Mapping[str, TypedData], *, trace_parent: str = "", trace_state: str = "",
    invocation_id: str | None = None,
) -> InvocationRequest:
    return InvocationRequest(
        invocation_id=invocation_id or str(uuid.uuid4()),
        function_id=function_id,
        input_data=[ParameterBinding(name=name, data=data) for name, data in inputs.items()],
        trace_context=RpcTraceContext(trace_parent=trace_parent, trace_state=trace_state),
    )


def returned(response: InvocationResponse) -> TypedData | None:
    """The function's return value, or ``FunctionFailed`` with the runtime's message."""
    result = response.result
    if result is None or result.status != StatusResult.Success:
        exception = result.exception if result is not None else None
        raise FunctionFailed(exception.message if exception else "the invocation failed",
                             exception.stack_trace if exception else "")
    return response.return_value


def text_of(data: TypedData | None) -> str | None:
    """A string or JSON return value as text (what entity, orchestrator and activity functions give)."""
    if data is None:
        return None
    kind = data.WhichOneof("data")
    if kind in ("string", "json"):
        return str(getattr(data, kind))
    if kind in ("bytes", "stream"):
        raw: bytes = getattr(data, kind)
        return raw.decode("utf-8")
    if kind in ("int", "double"):
        return json.dumps(getattr(data, kind))
    if kind is None:
        return None
    raise FunctionFailed(f"the function returned {kind} data where text was expected")
