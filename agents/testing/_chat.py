"""The Chat Completions wire format: request parsing/validation and reply rendering (JSON and SSE)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from ._replies import Message, ModelRequest, Reply, ToolCall, ToolSpec
from ._wire import (
    RequestRejected,
    Usage,
    arg_pieces,
    check_strict_schema,
    check_tool_sequence,
    content_text,
    missing_parameter,
    new_id,
    text_pieces,
    tool_specs,
)

_ROLES = ("system", "developer", "user", "assistant", "tool")


def parse_chat(body: dict[str, Any]) -> tuple[list[Message], list[ToolSpec]]:
    """Normalised messages and tools of a Chat Completions request; rejects what OpenAI rejects."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise missing_parameter("model")
    raw_messages = body.get("messages")
    if raw_messages is None:
        raise missing_parameter("messages")
    if not isinstance(raw_messages, list):
        raise RequestRejected(
            "Invalid type for 'messages': expected an array.", param="messages", code="invalid_type"
        )
    if not raw_messages:
        raise RequestRejected(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty "
            "array instead.",
            param="messages",
            code="empty_array",
        )
    messages = [_message(raw, f"messages[{i}]") for i, raw in enumerate(raw_messages)]
    check_tool_sequence(messages, "messages", api="chat")

    tools = tool_specs(body, nested=True)
    _check_tool_choice(body.get("tool_choice"), tools)
    _check_response_format(body.get("response_format"))
    return messages, tools


def _message(raw: Any, where: str) -> Message:
    if not isinstance(raw, dict):
        raise RequestRejected(f"Invalid type for '{where}': expected an object.", param=where)
    role = raw.get("role")
    if role not in _ROLES:
        raise RequestRejected(
            f"Invalid value: '{role}'. Supported values are: {', '.join(repr(r) for r in _ROLES)}.",
            param=f"{where}.role",
            code="invalid_value",
        )
    text = content_text(raw.get("content"), where=f"{where}.content")
    if role == "tool":
        call_id = raw.get("tool_call_id")
        if not isinstance(call_id, str):
            raise missing_parameter(f"{where}.tool_call_id")
        return Message(role="tool", text=text, call_id=call_id, name=raw.get("name"))
    calls: list[ToolCall] = []
    if role == "assistant":
        for index, call in enumerate(raw.get("tool_calls") or []):
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict) or not isinstance(call.get("id"), str) or "name" not in fn:
                raise RequestRejected(
                    f"Invalid '{where}.tool_calls[{index}]': needs id and function.name.",
                    param=f"{where}.tool_calls[{index}]",
                )
            calls.append(
                ToolCall(name=str(fn["name"]), arguments=str(fn.get("arguments", "")), call_id=call["id"])
            )
    elif raw.get("content") is None:
        raise missing_parameter(f"{where}.content")
    return Message(role=role, text=text, tool_calls=tuple(calls), name=raw.get("name"))


def _check_tool_choice(choice: Any, tools: list[ToolSpec]) -> None:
    if choice is None or choice in ("auto", "none"):
        return
    if not tools:
        raise RequestRejected(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
            param="tool_choice",
        )
    if choice == "required":
        return
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        if name not in {t.name for t in tools}:
            raise RequestRejected(
                f"Invalid value for 'tool_choice': no function named {name!r} in 'tools'.",
                param="tool_choice",
            )
        return
    raise RequestRejected(
        f"Invalid value for 'tool_choice': {choice!r}.", param="tool_choice", code="invalid_value"
    )


def _check_response_format(fmt: Any) -> None:
    if fmt is None:
        return
    if not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_object", "json_schema"):
        raise RequestRejected(
            "Invalid value for 'response_format.type'.", param="response_format.type", code="invalid_value"
        )
    if fmt["type"] == "json_schema":
        inner = fmt.get("json_schema")
        if not isinstance(inner, dict) or not isinstance(inner.get("name"), str):
            raise missing_parameter("response_format.json_schema.name")
        if "schema" in inner and not isinstance(inner["schema"], dict):
            raise RequestRejected(
                "Invalid type for 'response_format.json_schema.schema': expected an object.",
                param="response_format.json_schema.schema",
            )
        if inner.get("strict") is True:
            check_strict_schema(
                inner.get("schema") or {},
                label=f"response_format '{inner['name']}'",
                param="response_format",
            )


# -- rendering --------------------------------------------------------------------------------


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": usage.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _call_json(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def chat_completion(reply: Reply, request: ModelRequest, usage: Usage) -> dict[str, Any]:
    """A non-streamed `chat.completion` object. `reply` has its call ids assigned."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.content if reply.content is not None or not reply.calls else None,
        "refusal": None,
        "annotations": [],
    }
    if reply.calls:
        message["tool_calls"] = [_call_json(call) for call in reply.calls]
    if reply.reasoning_text is not None:
        # Not part of OpenAI's schema; the name vLLM, DeepSeek and others use for reasoning text.
        message["reasoning_content"] = reply.reasoning_text
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}],
        "usage": _usage(usage),
        "service_tier": "default",
        "system_fingerprint": "fp_agents_testing",
    }


def chat_chunks(reply: Reply, request: ModelRequest, usage: Usage) -> Iterator[dict[str, Any]]:
    """The `chat.completion.chunk` objects of a streamed reply (the caller adds `data: [DONE]`)."""
    options = request.body.get("stream_options")
    include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
    base: dict[str, Any] = {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": request.model,
        "service_tier": "default",
        "system_fingerprint": "fp_agents_testing",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        out = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        if include_usage:
            out["usage"] = None
        return out

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    for piece in text_pieces(reply.reasoning_text or ""):
        yield chunk({"reasoning_content": piece})
    for piece in text_pieces(reply.content or ""):
        yield chunk({"content": piece})
    for index, call in enumerate(reply.calls):
        head = {
            "index": index,
            "id": call.call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        for piece in arg_pieces(call.arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, reply.finish_reason)
    if include_usage:
        yield {**base, "choices": [], "usage": _usage(usage)}
