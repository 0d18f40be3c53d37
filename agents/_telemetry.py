"""OpenTelemetry spans of a turn, after the semantic conventions for generative AI.

Only `opentelemetry-api` is used here. Until a tracer provider is set (an SDK, by
`hosting.configure_telemetry` or the Functions worker) no span is started at all: every wrapper
below first checks `tracing_enabled()` (an isinstance check) and just awaits the work. With a
provider, attributes are computed only for recording spans.

Spans: ``invoke_agent {agent}`` around a turn, ``chat {model}`` (or ``responses``'s ``chat``) per
model call, ``execute_tool {tool}`` per tool call. Message content (prompts, answers, tool
arguments and results) is recorded only when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`
is ``true``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, StatusCode

from state import ChatMessage, FunctionCallContent, FunctionResultContent, TextContent

from ._errors import ModelCallError
from ._trace_context import context_from
from ._turns import TurnResult

if TYPE_CHECKING:
    from ._settings import Endpoint, ModelSettings
    from ._tools import FunctionTool, ToolSource
    from ._turns import TurnRequest

T = TypeVar("T")
R = TypeVar("R")


class DescribedAgent(Protocol):
    """What the `invoke_agent` span records of an agent."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def model(self) -> ModelSettings: ...

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""Set to ``true`` to record message content on the spans (off by default: prompts and answers
may hold personal data)."""

_tracer = trace.get_tracer("agents")  # a proxy: follows whatever provider is set later
_PROVIDERS = {"openai": "openai", "azure": "azure.ai.openai"}


_MISSING = object()
_ENV_PROVIDER = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
_enabled = False


def tracing_enabled() -> bool:
    """Whether a tracer provider is set; until one is, spans are skipped entirely (not even the
    API's no-op spans are made), so telemetry costs nothing when nothing is configured."""
    global _enabled
    if _enabled:
        return True  # a provider, once set, stays set
    # `trace.get_tracer_provider()` looks the provider variable up in os.environ on every call
    # (microseconds, six times a turn); the module attribute it guards gives the same answer.
    if not _ENV_PROVIDER and getattr(trace, "_TRACER_PROVIDER", _MISSING) is None:
        return False
    _enabled = not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    return _enabled


def capture_content() -> bool:
    """Whether message content goes on the spans (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`)."""
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"


def _parent(trace_context: Mapping[str, str] | None) -> Context | None:
    # A span already current (the host's) wins; a request's own context is for callers outside one.
    if trace.get_current_span().get_span_context().is_valid:
        return None
    return context_from(trace_context)


def mark_failed(span: Span, error_type: str, description: str | None = None) -> None:
    """Status ERROR with ``error.type`` (a failure code, a problem code or an exception class).

    ``description`` (a failure's message) goes out only with content capture on: messages quote
    what the model sent or was sent (a tool's argument, a prompt a model service echoes).
    """
    span.set_attribute("error.type", error_type)
    span.set_status(StatusCode.ERROR, description if capture_content() else None)


def mark_raised(span: Span, error: BaseException) -> None:
    """``mark_failed`` for an exception: its class as ``error.type``; its message and the exception
    event (message and traceback) only with content capture on. Spans are started with
    ``record_exception=False, set_status_on_exception=False`` and end through here instead, since
    the SDK's own recording would export the message whatever the setting."""
    mark_failed(span, type(error).__qualname__, str(error))
    if capture_content():
        span.record_exception(error)


def note_exception_type(error: BaseException) -> None:
    """The class of an exception handled inside the current span (a tool's), as ``exception.type``."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute("exception.type", type(error).__qualname__)


# -- invoke_agent ------------------------------------------------------------------------------------


async def invoke_agent(
    agent: DescribedAgent, request: TurnRequest, turn: Awaitable[R], step: int | None = None
) -> R:
    """Await ``turn`` (one run of ``agent``, or its step number ``step``) inside its
    ``invoke_agent`` span; a step that leaves the turn going on has no usage or failure to show."""
    if not tracing_enabled():
        return await turn
    with _tracer.start_as_current_span(
        f"invoke_agent {agent.name}",
        context=_parent(request.trace_context),
        kind=SpanKind.INTERNAL,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        if span.is_recording():
            span.set_attributes(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": agent.name,
                    "dafx.correlation_id": request.correlation_id,
                }
            )
            if agent.description:
                span.set_attribute("gen_ai.agent.description", agent.description)
            if agent.model.model:
                span.set_attribute("gen_ai.request.model", agent.model.model)
            if request.orchestration_id:
                span.set_attribute("dafx.orchestration_id", request.orchestration_id)
            if step is not None:
                span.set_attribute("dafx.turn.step", step)
        try:
            result = await turn
        except BaseException as error:
            if span.is_recording():
                mark_raised(span, error)
            raise
        if span.is_recording() and isinstance(result, TurnResult):
            usage = result.usage or {}
            _set_usage(span, usage.get("inputTokenCount"), usage.get("outputTokenCount"))
            if result.error is not None:
                mark_failed(span, result.error.code, result.error.message)
        return result


# -- chat -------------------------------------------------------------------------------------------


async def model_call(endpoint: Endpoint, path: str, body: Mapping[str, Any], call: Awaitable[T]) -> T:
    """Await ``call`` (one model request, retries included) inside its ``chat {model}`` span."""
    if not tracing_enabled():
        return await call
    model = str(body.get("model") or endpoint.model)
    with _tracer.start_as_current_span(
        f"chat {model}", kind=SpanKind.CLIENT, record_exception=False, set_status_on_exception=False
    ) as span:
        if span.is_recording():
            _chat_request(span, endpoint, path, body, model)
        try:
            output = await call
        except ModelCallError as error:
            if span.is_recording():
                mark_failed(span, error.code, error.message)
            raise
        except BaseException as error:
            if span.is_recording():
                mark_raised(span, error)
            raise
        if span.is_recording():
            _chat_response(span, output)
        return output


def _chat_request(span: Span, endpoint: Endpoint, path: str, body: Mapping[str, Any], model: str) -> None:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": _PROVIDERS.get(endpoint.provider, "openai"),
        "gen_ai.request.model": model,
        "dafx.wire_api": "responses" if path.endswith("/responses") else "chat_completions",
    }
    url = urlsplit(endpoint.url)
    if url.hostname:
        attributes["server.address"] = url.hostname
        attributes["server.port"] = url.port or (443 if url.scheme == "https" else 80)
    for key, name in (
        ("temperature", "gen_ai.request.temperature"),
        ("max_completion_tokens", "gen_ai.request.max_tokens"),
        ("max_output_tokens", "gen_ai.request.max_tokens"),
    ):
        value = body.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            attributes[name] = value
    structured = "response_format" in body or "text" in body
    attributes["gen_ai.output.type"] = "json" if structured else "text"
    span.set_attributes(attributes)
    if capture_content():
        instructions = body.get("instructions")
        wire = body.get("messages") if "messages" in body else body.get("input")
        messages = [m for m in wire or () if isinstance(m, Mapping)]
        if not instructions and messages and messages[0].get("role") == "system":
            instructions = messages[0].get("content")
            messages = messages[1:]
        if isinstance(instructions, str) and instructions:
            span.set_attribute(
                "gen_ai.system_instructions", _json([{"type": "text", "content": instructions}])
            )
        span.set_attribute("gen_ai.input.messages", _json(_input_messages(messages)))


def _chat_response(span: Span, output: Any) -> None:
    model = getattr(output, "model", None)
    if model:
        span.set_attribute("gen_ai.response.model", str(model))
    response_id = getattr(output, "response_id", None)
    if response_id:
        span.set_attribute("gen_ai.response.id", str(response_id))
    message: ChatMessage | None = getattr(output, "message", None)
    calls = message is not None and any(isinstance(c, FunctionCallContent) for c in message.contents)
    finish = getattr(output, "finish_reason", None) or ("tool_calls" if calls else "stop")
    span.set_attribute("gen_ai.response.finish_reasons", [str(finish)])
    usage = getattr(output, "usage", None)
    if usage is not None:
        _set_usage(span, usage.input_token_count, usage.output_token_count)
    if message is not None and capture_content():
        span.set_attribute(
            "gen_ai.output.messages",
            _json([{"role": "assistant", "parts": _parts(message), "finish_reason": str(finish)}]),
        )


def _set_usage(span: Span, input_tokens: Any, output_tokens: Any) -> None:
    if isinstance(input_tokens, int):
        span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
    if isinstance(output_tokens, int):
        span.set_attribute("gen_ai.usage.output_tokens", output_tokens)


# -- execute_tool ------------------------------------------------------------------------------------


async def execute_tool(
    call: FunctionCallContent, tool: FunctionTool | None, run: Awaitable[FunctionResultContent]
) -> FunctionResultContent:
    """Await ``run`` (one tool call; it never raises, failures are error results) in its span."""
    if not tracing_enabled():
        return await run
    with _tracer.start_as_current_span(
        f"execute_tool {call.name}", kind=SpanKind.INTERNAL, record_exception=False,
        set_status_on_exception=False,
    ) as span:
        if span.is_recording():
            span.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": call.name,
                    "gen_ai.tool.call.id": call.call_id,
                    "gen_ai.tool.type": "function" if tool is None or tool.source is None else "extension",
                }
            )
            if tool is not None and tool.source is not None:
                span.set_attributes(_source_attributes(tool.source))
            if tool is not None and tool.description:
                span.set_attribute("gen_ai.tool.description", tool.description)
            if capture_content():
                span.set_attribute("gen_ai.tool.call.arguments", _json(call.arguments or {}))
        result = await run
        if span.is_recording():
            if capture_content():
                span.set_attribute("gen_ai.tool.call.result", _json(result.result))
            if (result.model_extra or {}).get("isError"):
                # The tool's exception class is on the span already (note_exception_type).
                mark_failed(span, "tool_error", str(result.result)[:200])
        return result


def _source_attributes(source: ToolSource) -> dict[str, Any]:
    """An MCP server's tool: the server by name, where it is, and the MCP method (the GenAI and
    MCP semantic conventions' attributes)."""
    out: dict[str, Any] = {"mcp.method.name": "tools/call", "gen_ai.tool.server.name": source.server}
    if source.address:
        out["server.address"] = source.address
    if source.port:
        out["server.port"] = source.port
    return out


# -- message content (only when capture is on) ---------------------------------------------------------


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _parts(message: ChatMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for content in message.contents:
        if isinstance(content, TextContent):
            parts.append({"type": "text", "content": content.text})
        elif isinstance(content, FunctionCallContent):
            call = {"id": content.call_id, "name": content.name, "arguments": content.arguments}
            parts.append({"type": "tool_call", **call})
        elif isinstance(content, FunctionResultContent):
            parts.append({"type": "tool_call_response", "id": content.call_id, "response": content.result})
    return parts


def _text_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts = []
    for item in content if isinstance(content, list) else ():
        if isinstance(item, Mapping) and isinstance(item.get("text"), str):
            parts.append({"type": "text", "content": item["text"]})
    return parts


def _input_messages(wire: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Chat Completions messages or Responses input items as the conventions' message list."""
    out: list[dict[str, Any]] = []
    for item in wire:
        kind = item.get("type")
        if kind == "function_call":  # Responses input item
            part = {
                "type": "tool_call",
                "id": item.get("call_id"),
                "name": item.get("name"),
                "arguments": item.get("arguments"),
            }
            out.append({"role": "assistant", "parts": [part]})
        elif kind == "function_call_output":
            part = {"type": "tool_call_response", "id": item.get("call_id"), "response": item.get("output")}
            out.append({"role": "tool", "parts": [part]})
        elif item.get("role") == "tool":  # Chat Completions tool result
            part = {"type": "tool_call_response", "id": item.get("tool_call_id")}
            part["response"] = item.get("content")
            out.append({"role": "tool", "parts": [part]})
        else:
            parts = _text_parts(item.get("content"))
            for call in item.get("tool_calls") or ():
                function = call.get("function") or {}
                parts.append(
                    {
                        "type": "tool_call",
                        "id": call.get("id"),
                        "name": function.get("name"),
                        "arguments": function.get("arguments"),
                    }
                )
            out.append({"role": str(item.get("role") or "user"), "parts": parts})
    return out
