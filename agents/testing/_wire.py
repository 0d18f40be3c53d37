"""Pieces shared by both wire APIs: request rejection, ids, usage, text splitting, SSE framing."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ._offline import count_tokens, input_tokens
from ._replies import ErrorSpec, Message, ModelRequest, Reply, ToolSpec

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_PIECE = re.compile(r"\S+\s*|\s+")


class RequestRejected(Exception):
    """A request the real service would refuse; carries the OpenAI-shaped error to answer with."""

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None, status: int = 400):
        super().__init__(message)
        error_type = "invalid_request_error"
        self.spec = ErrorSpec(
            status=status, message=message, type=error_type, code=code, param=param, retry_after=None
        )


def missing_parameter(param: str) -> RequestRejected:
    """The service's error for an absent required field (named by its path, e.g. ``messages[0].content``)."""
    return RequestRejected(
        f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter"
    )


def new_id(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(12)}"


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def compute_usage(reply: Reply, request: ModelRequest) -> Usage:
    """Deterministic word counts, unless the reply overrides them."""
    reasoning = count_tokens(reply.reasoning_text)
    output = count_tokens(reply.content) + sum(count_tokens(c.arguments) for c in reply.calls) + reasoning
    usage = Usage(input_tokens(request.messages), output, reasoning)
    override = reply.usage
    if override is None:
        return usage
    return Usage(
        usage.input_tokens if override.input_tokens is None else override.input_tokens,
        usage.output_tokens if override.output_tokens is None else override.output_tokens,
        usage.reasoning_tokens if override.reasoning_tokens is None else override.reasoning_tokens,
    )


def truncate_words(text: str, limit: int) -> str:
    """`text` cut after its first `limit` words, keeping the original spacing before the cut."""
    if limit <= 0:
        return ""
    words = list(re.finditer(r"\S+", text))
    if len(words) <= limit:
        return text
    return text[: words[limit - 1].end()]


def text_pieces(text: str) -> list[str]:
    """`text` split into word-sized stream deltas that concatenate back to it."""
    return _PIECE.findall(text) or ([text] if text else [])


def arg_pieces(arguments: str, size: int = 16) -> list[str]:
    return [arguments[i : i + size] for i in range(0, len(arguments), size)] or [""]


def sse(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def content_text(content: Any, *, where: str) -> str:
    """Joined text of a message content (a string or a list of parts); non-text parts are marked."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise RequestRejected(
            f"Invalid type for '{where}': expected a string or an array of parts.", param=where
        )
    texts: list[str] = []
    for index, part in enumerate(content):
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict) or "type" not in part:
            raise RequestRejected(f"Invalid content part at '{where}[{index}]'.", param=f"{where}[{index}]")
        kind = part["type"]
        if kind in ("text", "input_text", "output_text", "summary_text", "reasoning_text"):
            texts.append(str(part.get("text", "")))
        elif kind == "refusal":
            texts.append(str(part.get("refusal", "")))
        else:
            texts.append(f"[{kind}]")
    return "\n".join(texts)


def tool_spec(raw: Any, *, where: str, nested: bool) -> ToolSpec | None:
    """A function tool from a Chat (`nested`: under "function") or Responses tool; other kinds give None."""
    if not isinstance(raw, dict):
        raise RequestRejected(f"Invalid type for '{where}': expected an object.", param=where)
    if raw.get("type", "function") != "function":
        return None
    fn = raw.get("function") if nested else raw
    if not isinstance(fn, dict):
        raise missing_parameter(f"{where}.function")
    name = fn.get("name")
    if not isinstance(name, str):
        raise missing_parameter(f"{where}.name")
    if not _TOOL_NAME.match(name):
        raise RequestRejected(
            f"Invalid '{where}.name': string does not match pattern. Expected a string that matches the "
            "pattern '^[a-zA-Z0-9_-]+$'.",
            param=f"{where}.name",
            code="invalid_value",
        )
    params = fn.get("parameters") or {"type": "object", "properties": {}}
    if not isinstance(params, dict):
        raise RequestRejected(
            f"Invalid type for '{where}.parameters': expected an object.", param=f"{where}.parameters"
        )
    strict = fn.get("strict")
    return ToolSpec(
        name=name,
        description=fn.get("description"),
        parameters=params,
        strict=strict if isinstance(strict, bool) else None,
    )


def check_tool_sequence(messages: list[Message], where: str, *, api: str) -> None:
    """Every tool result answers an earlier call, and every call is answered, as the services demand."""
    pending: dict[str, int] = {}

    def unanswered(index: int) -> RequestRejected:
        missing = ", ".join(sorted(pending))
        if api == "responses":
            return RequestRejected(f"No tool output found for function call {missing}.", param=where)
        return RequestRejected(
            "An assistant message with 'tool_calls' must be followed by tool messages responding to "
            f"each 'tool_call_id'. The following tool_call_ids did not have response messages: {missing}",
            param=f"{where}[{index}].role",
        )

    for index, message in enumerate(messages):
        if message.role == "tool":
            if message.call_id not in pending:
                if api == "responses":
                    raise RequestRejected(
                        f"No tool call found for function call output with call_id {message.call_id}.",
                        param=where,
                    )
                raise RequestRejected(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                    "message with 'tool_calls'.",
                    param=f"{where}[{index}].role",
                )
            del pending[message.call_id or ""]
            continue
        if pending:
            raise unanswered(index)
        for call in message.tool_calls:
            pending[call.call_id or ""] = index
    if pending:
        raise unanswered(len(messages))


def iter_json_objects(items: list[Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise RequestRejected(
                f"Invalid type for 'input[{index}]': expected an object.", param=f"input[{index}]"
            )
        yield index, item


def tool_specs(body: dict[str, Any], *, nested: bool) -> list[ToolSpec]:
    """The function tools of a Chat (`nested`) or Responses request body, strict schemas checked."""
    tools: list[ToolSpec] = []
    raw_tools = body.get("tools") or []
    if not isinstance(raw_tools, list):
        raise RequestRejected(
            "Invalid type for 'tools': expected an array.", param="tools", code="invalid_type"
        )
    for index, raw in enumerate(raw_tools):
        spec = tool_spec(raw, where=f"tools[{index}]", nested=nested)
        if spec is not None:
            if spec.strict:
                check_strict_schema(
                    spec.parameters,
                    label=f"function '{spec.name}'",
                    param=f"tools[{index}].function.parameters" if nested else f"tools[{index}].parameters",
                )
            tools.append(spec)
    return tools


def check_strict_schema(schema: dict[str, Any], *, label: str, param: str) -> None:
    """Reject a `strict: true` schema the way OpenAI does: every object closed and fully required."""
    if schema.get("type") != "object":
        raise RequestRejected(
            f"Invalid schema for {label}: schema must be a JSON Schema of 'type: \"object\"', "
            f"got 'type: \"{schema.get('type')}\"'.",
            param=param,
            code="invalid_json_schema",
        )

    def walk(node: Any, context: tuple[str, ...]) -> None:
        if not isinstance(node, dict):
            return
        if node.get("type") == "object" or "properties" in node:
            if node.get("additionalProperties") is not False:
                raise RequestRejected(
                    f"Invalid schema for {label}: In context={context!r}, 'additionalProperties' is required "
                    "to be supplied and to be false.",
                    param=param,
                    code="invalid_json_schema",
                )
            required = node.get("required") or []
            missing = [name for name in node.get("properties", {}) if name not in required]
            if missing:
                raise RequestRejected(
                    f"Invalid schema for {label}: In context={context!r}, 'required' is required to be "
                    f"supplied and to be an array including every key in properties. Missing '{missing[0]}'.",
                    param=param,
                    code="invalid_json_schema",
                )
        for key in ("properties", "$defs", "definitions"):
            for name, sub in (node.get(key) or {}).items():
                walk(sub, (*context, key, name))
        if "items" in node:
            walk(node["items"], (*context, "items"))
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            for index, sub in enumerate(node.get(key) or []):
                walk(sub, (*context, key, str(index)))

    walk(schema, ())
