"""The offline model: deterministic answers with no key and no network.

Protocol (also in docs/model-server.md):

* Tool results last in the conversation (the model asked for calls and the client answered):
  reply ``tool results: NAME: RESULT; NAME: RESULT`` with every result of that round, in order.
* Otherwise take the last user message text ``T``:
  * each ``call:NAME {json args}`` in ``T`` is a function call request (several = parallel calls).
    ``NAME`` must be one of the request's tools, else the reply is the text
    ``unknown tool: NAME (available: a, b)``. Arguments that are not valid JSON are sent verbatim
    (a way to produce malformed tool arguments offline); no ``{`` after the name means ``{}``.
  * with a ``json_schema`` response format: a deterministic minimal instance of the schema; after
    tool calls, each of its fields that a tool result (a JSON object) also has takes the result's
    value (when the answer still validates);
    with ``json_object``: ``{"echo": T}``;
  * otherwise ``echo: T`` (``echo:`` alone when there is no user message).
* ``tool_choice``: ``"none"`` disables calls; ``"required"`` or a named function with no ``call:``
  trigger calls that function (or the first tool) with a minimal instance of its parameters.
* Tokens are whitespace-separated words (`count_tokens`): input = words of every message text and
  tool-call argument text the model sees; output = words of the reply text, tool-call arguments and
  reasoning. ``max_tokens`` / ``max_output_tokens`` truncate the text to that many words
  (finish reason ``length``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from .._schemas import schema_validator
from ._replies import Message, ModelRequest, Reply, ToolCall, ToolSpec

_TRIGGER = re.compile(r"call:([A-Za-z0-9_.\-]+)")
_MAX_DEPTH = 32

# Values for well-known string formats, so format-aware validators accept the instance.
_FORMATS: dict[str, str] = {
    "date-time": "1970-01-01T00:00:00Z",
    "date": "1970-01-01",
    "time": "00:00:00Z",
    "email": "user@example.com",
    "uri": "https://example.com",
    "hostname": "example.com",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "duration": "PT0S",
}


class SchemaInstanceError(ValueError):
    """The schema cannot be satisfied by the minimal-instance generator (e.g. unbounded recursion)."""


def count_tokens(text: str | None) -> int:
    """The server's deterministic token count: whitespace-separated words."""
    return len(text.split()) if text else 0


def input_tokens(messages: Iterable[Message]) -> int:
    """Words of every message text and tool-call argument text in `messages`."""
    total = 0
    for message in messages:
        total += count_tokens(message.text)
        total += sum(count_tokens(call.arguments) for call in message.tool_calls)
    return total


# -- minimal schema instances -----------------------------------------------------------------


def schema_instance(schema: dict[str, Any]) -> Any:
    """A deterministic minimal JSON value that validates against `schema` (JSON Schema 2020-12 subset).

    Handles object/required/properties, array/minItems, string/minLength/format, enum/const,
    number/integer with bounds, boolean, null, anyOf/oneOf/allOf and local `$ref`s into
    `$defs`/`definitions`. `pattern` is not honoured.
    """
    return _instance(schema, schema, 0)


def _resolve(root: dict[str, Any], ref: str) -> dict[str, Any]:
    if not ref.startswith("#"):
        raise SchemaInstanceError(f"only local $ref are supported, not {ref!r}")
    node: Any = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            raise SchemaInstanceError(f"$ref {ref!r} does not resolve")
        node = node[part]
    if not isinstance(node, dict):
        raise SchemaInstanceError(f"$ref {ref!r} does not point at a schema")
    return node


def _valid(root: dict[str, Any], schema: dict[str, Any], value: Any) -> bool:
    # Validate a sub-schema with the root's definitions in scope so nested $refs resolve.
    probe = {**schema}
    for key in ("$defs", "definitions"):
        if key in root and key not in probe:
            probe[key] = root[key]
    return bool(schema_validator(probe).is_valid(value))


def _instance(root: dict[str, Any], schema: Any, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise SchemaInstanceError("schema recursion too deep for a minimal instance")
    if schema is True or schema == {}:
        return None
    if not isinstance(schema, dict):
        raise SchemaInstanceError(f"not a schema: {schema!r}")
    if "$ref" in schema:
        target = _resolve(root, schema["$ref"])
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return _instance(root, {**target, **rest} if rest else target, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "allOf" in schema:
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            part = _resolve(root, part["$ref"]) if isinstance(part, dict) and "$ref" in part else part
            for key, value in part.items():
                if key == "properties":
                    merged["properties"] = {**merged.get("properties", {}), **value}
                elif key == "required":
                    merged["required"] = [*merged.get("required", []), *value]
                else:
                    merged.setdefault(key, value)
        return _instance(root, merged, depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            rest = {k: v for k, v in schema.items() if k != key}
            last_error: Exception | None = None
            for branch in schema[key]:
                try:
                    candidate = _instance(root, {**rest, **branch} if rest else branch, depth + 1)
                except SchemaInstanceError as err:
                    last_error = err
                    continue
                if _valid(root, schema, candidate):
                    return candidate
            raise SchemaInstanceError(f"no {key} branch yields a valid instance") from last_error
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0] if kind else None
    if kind is None:
        kind = _guess_type(schema)
    return _typed(root, schema, kind, depth)


def _guess_type(schema: dict[str, Any]) -> str:
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return "null"


def _typed(root: dict[str, Any], schema: dict[str, Any], kind: str, depth: int) -> Any:
    if kind == "object":
        props: dict[str, Any] = schema.get("properties", {})
        return {name: _instance(root, props.get(name, {}), depth + 1) for name in schema.get("required", [])}
    if kind == "array":
        count = int(schema.get("minItems", 0))
        prefix = schema.get("prefixItems", [])
        items = [_instance(root, s, depth + 1) for s in prefix[:count]]
        while len(items) < count:
            items.append(_instance(root, schema.get("items", {}), depth + 1))
        return items
    if kind == "string":
        fmt = schema.get("format")
        value = _FORMATS.get(fmt, "") if isinstance(fmt, str) else ""
        return value + "x" * max(0, int(schema.get("minLength", 0)) - len(value))
    if kind in ("number", "integer"):
        return _number(schema, integer=kind == "integer")
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    raise SchemaInstanceError(f"unsupported schema type {kind!r}")


def _number(schema: dict[str, Any], *, integer: bool) -> int | float:
    low = schema.get("minimum")
    exclusive_low = schema.get("exclusiveMinimum")
    high = schema.get("maximum")
    exclusive_high = schema.get("exclusiveMaximum")
    value: float = 0
    if low is not None and value < low:
        value = low
    if exclusive_low is not None and value <= exclusive_low:
        value = exclusive_low + 1 if integer else exclusive_low + 0.5
    if high is not None and value > high:
        value = high
    if exclusive_high is not None and value >= exclusive_high:
        value = exclusive_high - 1 if integer else exclusive_high - 0.5
    if integer:
        value = math.ceil(value) if low is not None or exclusive_low is not None else math.floor(value)
        return int(value)
    return value


# -- the offline answer -----------------------------------------------------------------------


def _trailing_tool_results(messages: list[Message]) -> list[Message]:
    results: list[Message] = []
    for message in reversed(messages):
        if message.role != "tool":
            break
        results.append(message)
    return list(reversed(results))


def _tool_names(messages: list[Message]) -> dict[str, str]:
    return {call.call_id: call.name for m in messages for call in m.tool_calls if call.call_id}


def _parse_triggers(text: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    matches = list(_TRIGGER.finditer(text))
    decoder = json.JSONDecoder()
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        rest = text[match.end() : end]
        stripped = rest.lstrip()
        if not stripped.startswith("{"):
            found.append((match.group(1), "{}"))
            continue
        start = match.end() + (len(rest) - len(stripped))
        try:
            value, stop = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            found.append((match.group(1), text[start:end].strip()))
            continue
        found.append((match.group(1), json.dumps(value) if isinstance(value, dict) else text[start:stop]))
    return found


def _forced_tool(request: ModelRequest) -> ToolSpec | None:
    choice = request.body.get("tool_choice")
    if not request.tools:
        return None
    if choice == "required":
        return request.tools[0]
    if isinstance(choice, dict):
        name = choice.get("name") or (choice.get("function") or {}).get("name")
        for tool in request.tools:
            if tool.name == name:
                return tool
    return None


def with_results(schema: dict[str, Any], instance: Any, results: list[Message]) -> Any:
    """A structured answer after tool calls reports what the tools said: each field of a tool
    result (a JSON object) that the answer's schema also has replaces the minimal value, when the
    answer still validates (a receipt says `saved: true` once the tool saved)."""
    if not isinstance(instance, dict):
        return instance
    answer = dict(instance)
    for message in results:
        try:
            fields = json.loads(message.text or "")
        except ValueError:
            continue
        if not isinstance(fields, dict):
            continue
        for name, value in fields.items():
            if name in answer:
                candidate = {**answer, name: value}
                if _valid(schema, schema, candidate):
                    answer = candidate
    return answer


def offline_reply(request: ModelRequest) -> Reply:
    """The deterministic answer of the offline model to `request` (see the module docstring)."""
    messages = request.messages
    results = _trailing_tool_results(messages)
    fmt = request.response_format
    if results and not (fmt and fmt.get("type") in ("json_schema", "json_object")):
        names = _tool_names(messages)
        parts = [f"{m.name or names.get(m.call_id or '', 'tool')}: {m.text}" for m in results]
        return Reply.text("tool results: " + "; ".join(parts))

    text = request.last_user_text
    calls_allowed = request.body.get("tool_choice") != "none" and not results
    triggers = _parse_triggers(text) if text is not None and calls_allowed else []
    if triggers:
        unknown = [name for name, _ in triggers if name not in request.tool_names]
        if unknown:
            available = ", ".join(request.tool_names) or "none"
            return Reply.text(f"unknown tool: {unknown[0]} (available: {available})")
        if request.body.get("parallel_tool_calls") is False:
            triggers = triggers[:1]
        return Reply.tool_calls([ToolCall(name=name, arguments=args) for name, args in triggers])

    forced = _forced_tool(request) if calls_allowed else None
    if forced is not None:
        args = schema_instance(forced.parameters or {"type": "object"})
        return Reply.tool_call(forced.name, args if isinstance(args, dict) else {})

    if fmt and fmt.get("type") == "json_schema":
        schema = fmt.get("schema") or {}
        return Reply.json(with_results(schema, schema_instance(schema), results))
    if fmt and fmt.get("type") == "json_object":
        return Reply.json({"echo": text or ""})
    return Reply.text(f"echo: {text}" if text is not None else "echo:")
