"""An MCP server's tools as the agent's tools: discovered, cached per process, called, answered.

`tools/list` runs at a server's first use in a process and again once `refresh_seconds` have
passed; a server that cannot be listed is tried again after `RETRY_DOWN_SECONDS`, and until then
its tools are missing from the turn's requests (the turn's record says so). What a server lists
is data from outside: names must be tool names, descriptions are cut to `MAX_DESCRIPTION` and
marked as the server's, schemas are checked as a Python tool's are (no remote references), and
only `allowed_tools` are offered. A call's result becomes the tool result the model sees and the
state stores; an error result, a protocol error, a timeout or an oversized result becomes an error
result, and the turn goes on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import AgentConfigurationError, ToolExecutionError
from .._per_loop import PerLoop
from .._schemas import UnsafeSchema, check_schema_references, schema_validator
from .._tool_call import current_tool_call
from .._tools import TOOL_NAME_PATTERN, FunctionTool, ToolSource
from ._server import MCPServer, MissingSetting, origin_of
from ._session import ForeignRequest, call_tool, list_tools

log = logging.getLogger("agents.mcp")

MAX_DESCRIPTION = 1024
MAX_SCHEMA_BYTES = 64 * 1024
MAX_ERROR_TEXT = 2000
RETRY_DOWN_SECONDS = 5.0


@dataclass(frozen=True)
class Discovery:
    """The tools a turn gets from its MCP servers, and what is missing from them, and why."""

    tools: list[FunctionTool]
    notes: list[str]
    """One line per server (or tool) left out: shown to the model and kept in the turn's record."""
    unavailable: list[str]
    """The names of the servers that could not be listed."""


@dataclass
class _Listing:
    expires: float
    tools: list[FunctionTool]
    notes: list[str]
    error: str | None = None


_LISTINGS: dict[MCPServer, _Listing] = {}
_LOCKS: PerLoop[dict[MCPServer, asyncio.Lock]] = PerLoop()
"""A lock per server on each loop (an asyncio lock belongs to one loop)."""


def forget_listings() -> None:
    """Drop every cached tool list (the next turn lists each server again)."""
    _LISTINGS.clear()


async def discover(servers: Sequence[MCPServer], taken: Mapping[str, str]) -> Discovery:
    """Each server's tools (listed now or cached), without a name another tool already has
    (`taken`: name -> who has it)."""
    owners = dict(taken)
    tools: list[FunctionTool] = []
    notes: list[str] = []
    unavailable: list[str] = []
    listings = await asyncio.gather(*(_listing(server) for server in servers))
    for server, listing in zip(servers, listings, strict=True):
        if listing.error is not None:
            unavailable.append(server.name)
            notes.append(
                f"The tools of MCP server {server.name!r} are unavailable in this turn: {listing.error}."
            )
            continue
        notes.extend(listing.notes)
        for t in listing.tools:
            if t.name in owners:
                notes.append(
                    f"Tool {t.name!r} of MCP server {server.name!r} is left out: "
                    f"{owners[t.name]} has that name."
                )
                continue
            owners[t.name] = f"MCP server {server.name!r}"
            tools.append(t)
    return Discovery(tools, notes, unavailable)


async def _listing(server: MCPServer) -> _Listing:
    cached = _LISTINGS.get(server)
    if cached is not None and cached.expires > time.monotonic():
        return cached
    lock = _LOCKS.get_or_make(dict).setdefault(server, asyncio.Lock())
    async with lock:  # turns side by side list a server once
        cached = _LISTINGS.get(server)
        if cached is not None and cached.expires > time.monotonic():
            return cached
        listing = await _list(server)
        _LISTINGS[server] = listing
        return listing


async def _list(server: MCPServer) -> _Listing:
    try:
        listed = await asyncio.wait_for(list_tools(server), server.timeout)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # an ExceptionGroup of the SDK's task group too
        reason = describe_failure(server, exc)
        log.warning("MCP server %s could not be listed: %s", server.name, reason)
        return _Listing(time.monotonic() + min(RETRY_DOWN_SECONDS, server.refresh_seconds), [], [], reason)
    tools: list[FunctionTool] = []
    notes: list[str] = []
    _, host, port = origin_of(server.resolved_url())  # it resolved a moment ago, for the listing
    source = ToolSource(server=server.name, address=host, port=port)
    allowed = set(server.allowed_tools) if server.allowed_tools is not None else None
    for listed_tool in listed:
        if allowed is not None and listed_tool.name not in allowed:
            continue  # a server cannot add tools beyond allowed_tools
        try:
            tools.append(_as_tool(server, listed_tool, source))
        except AgentConfigurationError as exc:
            notes.append(f"A tool of MCP server {server.name!r} is left out: {exc}.")
    return _Listing(time.monotonic() + server.refresh_seconds, tools, notes)


def _bounded(text: str | None, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _as_tool(server: MCPServer, listed: Any, source: ToolSource) -> FunctionTool:
    mcp_name = listed.name
    name = server.model_name(mcp_name) if isinstance(mcp_name, str) and len(mcp_name) <= 64 else ""
    if not TOOL_NAME_PATTERN.match(name):
        raise AgentConfigurationError(f"its name {_bounded(str(mcp_name), 80)!r} is not a tool name")
    schema = listed.input_schema
    if len(json.dumps(schema)) > MAX_SCHEMA_BYTES:
        raise AgentConfigurationError(
            f"tool {name!r}: its input schema is larger than {MAX_SCHEMA_BYTES} bytes"
        )
    output_schema = _output_schema(listed.output_schema)
    description = _bounded(listed.description or listed.title, MAX_DESCRIPTION)
    rule = server.requires_approval

    async def call(**arguments: Any) -> Any:
        return await _call(server, mcp_name, arguments, output_schema)

    approval: Any = rule if isinstance(rule, bool) else (lambda args: server.needs_approval(mcp_name, args))
    return FunctionTool(
        name=name,
        description=f"(a tool of MCP server {server.name!r}) {description}".strip(),
        parameters=dict(schema),
        func=call,
        requires_approval=approval,
        source=source,
    )


def _output_schema(schema: Any) -> dict[str, Any] | None:
    if not isinstance(schema, dict) or len(json.dumps(schema)) > MAX_SCHEMA_BYTES:
        return None
    try:
        check_schema_references(schema)
        schema_validator(schema)
    except (UnsafeSchema, Exception):
        return None  # a schema that cannot be checked safely is not checked
    return schema


async def _call(
    server: MCPServer, tool: str, arguments: dict[str, Any], output_schema: dict[str, Any] | None
) -> Any:
    running = current_tool_call()
    key = running.idempotency_key if running is not None else None
    try:
        result = await call_tool(server, tool, arguments, key)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        raise ToolExecutionError(
            f"MCP tool {tool!r} of server {server.name!r} failed: {describe_failure(server, exc)}"
        ) from None
    return tool_result(server, tool, result, output_schema)


def tool_result(server: MCPServer, tool: str, result: Any, output_schema: dict[str, Any] | None) -> Any:
    """A `CallToolResult` as the tool result's JSON value (ToolExecutionError for an error one)."""
    raw = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    size = len(json.dumps(raw, ensure_ascii=False).encode())
    if size > server.max_result_bytes:
        raise ToolExecutionError(
            f"MCP tool {tool!r} of server {server.name!r} answered {size} bytes, more than the "
            f"{server.max_result_bytes} it may send"
        )
    blocks = [_block(b) for b in raw.get("content") or []]
    texts = [b["text"] for b in blocks if b.get("$type") == "text"]
    if raw.get("isError"):
        text = _bounded(" ".join(texts), MAX_ERROR_TEXT) or "no details"
        raise ToolExecutionError(f"MCP tool {tool!r} of server {server.name!r} answered an error: {text}")
    structured = raw.get("structuredContent")
    if output_schema is not None:
        if structured is None:
            raise ToolExecutionError(
                f"MCP tool {tool!r} of server {server.name!r} declares an output schema but answered "
                "no structured content"
            )
        errors = list(schema_validator(output_schema).iter_errors(structured))
        if errors:
            raise ToolExecutionError(
                f"MCP tool {tool!r} of server {server.name!r} answered structured content its declared "
                f"output schema does not allow ({_bounded(errors[0].message, 200)})"
            )
    others = [b for b in blocks if b.get("$type") != "text"]
    if structured is not None:
        return structured if not others else {"structuredContent": structured, "content": blocks}
    if not others:
        return "\n".join(texts)
    return {"content": blocks}


def _block(block: Mapping[str, Any]) -> dict[str, Any]:
    """One content block in the state's content shapes (text, data, uri)."""
    kind = block.get("type")
    if kind == "text":
        return {"$type": "text", "text": str(block.get("text", ""))}
    if kind in ("image", "audio"):
        mime = str(block.get("mimeType") or "application/octet-stream")
        return {"$type": "data", "uri": f"data:{mime};base64,{block.get('data', '')}", "mediaType": mime}
    if kind == "resource_link":
        out = {
            "$type": "uri",
            "uri": str(block.get("uri", "")),
            "mediaType": str(block.get("mimeType") or "application/octet-stream"),
        }
        if block.get("name"):
            out["name"] = _bounded(str(block["name"]), 200)
        return out
    if kind == "resource":
        resource = block.get("resource") or {}
        if "text" in resource:
            return {"$type": "text", "text": str(resource["text"])}
        mime = str(resource.get("mimeType") or "application/octet-stream")
        return {"$type": "data", "uri": f"data:{mime};base64,{resource.get('blob', '')}", "mediaType": mime}
    return {"$type": "text", "text": f"(a {_bounded(str(kind), 40)} block)"}


def describe_failure(server: MCPServer, exc: BaseException) -> str:
    """Why a request to a server failed, in words that carry none of its URL, headers or
    secrets: the server's own error text only for a JSON-RPC error, cut short."""
    from mcp.shared.exceptions import MCPError

    exc = _leaf(exc)
    if isinstance(exc, MissingSetting):
        return str(exc)
    if isinstance(exc, ForeignRequest):
        return "it tried to send the app to another address, which is never followed"
    if isinstance(exc, MCPError):
        return f"it answered error {exc.error.code}: {_bounded(exc.error.message, 300)}"
    if isinstance(exc, TimeoutError):
        return f"it did not answer within {server.timeout:g} seconds"
    if isinstance(exc, ValueError):  # pydantic's ValidationError: not an MCP answer
        return "it answered something that is not a valid MCP message"
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int):
        return f"it answered HTTP {status}"
    return f"it could not be reached ({type(exc).__name__})"


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
