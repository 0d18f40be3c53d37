"""The app's MCP tool trigger functions as MCP tools: listed and invoked as the extension does.

What the Azure Functions MCP extension does with a ``mcpToolTrigger`` (docs/mcp.md):

* lists the tool with the binding's ``toolName`` and ``description`` and an input schema built
  from ``toolProperties`` (``type: object``, one property per entry, ``required`` always present);
* refuses a call that lacks a required property with the JSON-RPC error ``-32602``;
* invokes the function with the tool invocation context as JSON text (``name``, ``arguments``,
  ``sessionid``, ``clientinfo``, ``transport``: its ``properties.headers`` hold every header of
  the HTTP request that carried the call, App Service Authentication's among them);
* turns the return value into the ``CallToolResult``: as one text block, or (``useResultSchema``)
  by reading it as an ``McpToolResult`` document;
* answers a function that raised with an ``isError`` result naming the tool.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter, ValidationError

from ..functions import McpToolFunction
from ..worker import Workers, invocation

ClientBinding = Callable[[dict[str, Any]], str]

_BLOCK = TypeAdapter[types.ContentBlock](types.ContentBlock)
_BLOCKS = TypeAdapter[list[types.ContentBlock]](list[types.ContentBlock])


def _properties(function: McpToolFunction) -> list[dict[str, Any]]:
    raw = function.tool_properties
    if not raw:
        return []
    try:
        parsed = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(parsed, list):
        return []
    return [p for p in parsed if isinstance(p, dict) and str(p.get("propertyName") or "").strip()]


def input_schema(function: McpToolFunction) -> dict[str, Any]:
    """The tool's input schema, built from ``toolProperties`` the way the extension builds it."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for prop in _properties(function):
        name = str(prop["propertyName"])
        kind: dict[str, Any] = {"type": str(prop.get("propertyType") or "string")}
        if isinstance(prop.get("enumValues"), list) and prop["enumValues"]:
            kind["enum"] = [str(v) for v in prop["enumValues"]]
        entry = {"type": "array", "items": kind} if prop.get("isArray") else dict(kind)
        entry["description"] = str(prop.get("description") or "")
        properties[name] = entry
        if prop.get("isRequired") and name not in required:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}


def to_call_result(value: Any, use_result_schema: bool) -> types.CallToolResult:
    """What the extension makes of the function's return value (raises ValueError when unusable)."""
    if value is None or value == "":
        return types.CallToolResult(content=[])
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("utf-8", errors="replace")
    text = value if isinstance(value, str) else str(value)
    if not use_result_schema:
        return types.CallToolResult(content=[types.TextContent(text=text)])
    document = json.loads(text)
    if not isinstance(document, dict) or not isinstance(document.get("type"), str):
        raise ValueError("the function's result is not an McpToolResult document")
    kind = document["type"].lower()
    content = document.get("content")
    if not isinstance(content, str):
        raise ValueError("the McpToolResult has no content")
    if kind == "call_tool_result":
        return types.CallToolResult.model_validate_json(content)
    if kind == "multi_content_result":
        blocks = _BLOCKS.validate_json(content)
    else:
        blocks = [_BLOCK.validate_json(content)]
    if not blocks:
        raise ValueError("the McpToolResult produced no content")
    structured = document.get("structuredContent")
    return types.CallToolResult(
        content=blocks, structured_content=json.loads(structured) if isinstance(structured, str) else None
    )


class ToolRegistry:
    """Lists the app's tool triggers and invokes one for a ``tools/call``, like the worker would."""

    def __init__(
        self,
        functions: list[McpToolFunction],
        *,
        client_binding: ClientBinding,
        workers: Workers,
        logger: logging.Logger,
    ) -> None:
        self._by_name = {f.tool_name: f for f in functions}
        self._client_binding = client_binding
        self._workers = workers
        self._log = logger

    @property
    def functions(self) -> list[McpToolFunction]:
        return list(self._by_name.values())

    def tools(self) -> list[types.Tool]:
        return [
            types.Tool(name=f.tool_name, description=f.description or None, input_schema=input_schema(f))
            for f in self._by_name.values()
        ]

    def _function(self, params: types.CallToolRequestParams) -> McpToolFunction:
        function = self._by_name.get(params.name)
        if function is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: '{params.name}'")
        arguments = params.arguments or {}
        missing = [
            str(p["propertyName"]) for p in _properties(function)
            if p.get("isRequired") and arguments.get(str(p["propertyName"])) is None
        ]
        if missing:
            raise MCPError(
                types.INVALID_PARAMS,
                "One or more required tool properties are missing values. Please provide: "
                + ", ".join(missing),
            )
        return function

    async def call(
        self, params: types.CallToolRequestParams, *, transport: str, session_id: str | None,
        client_info: dict[str, Any] | None, headers: dict[str, str],
    ) -> types.CallToolResult:
        """Run the tool's function for one call and shape its answer; ``headers``: those of the
        HTTP request that carried the call (``request_headers``)."""
        function = self._function(params)
        context: dict[str, Any] = {
            "name": params.name,
            "arguments": params.arguments or {},
            "sessionid": session_id,
            "clientinfo": client_info,
            "transport": {"name": transport, "sessionId": session_id, "properties": {"headers": headers}},
        }
        inputs = {function.trigger_param: invocation.string(json.dumps(context, ensure_ascii=False))}
        for param, binding in function.client_params.items():
            inputs[param] = invocation.string(self._client_binding(binding))
        try:
            call = invocation.request(function.function_id, inputs)
            answer = await self._workers.invoke("mcpToolTrigger", call)
            return to_call_result(invocation.text_of(invocation.returned(answer)), function.use_result_schema)
        except (ValueError, ValidationError):
            self._log.exception("MCP tool %s (function %s) returned an unusable result",
                                params.name, function.name)
        except Exception:
            self._log.exception("MCP tool %s (function %s) failed", params.name, function.name)
        return types.CallToolResult(
            content=[types.TextContent(text=f"An error occurred invoking '{params.name}'.")], is_error=True
        )
