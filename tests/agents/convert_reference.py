"""The model-based state -> wire conversion that `agents._convert` used before it read wire dicts.

Kept only as the reference the wire-dict conversion is checked against (test_agents_convert_wire):
it works on pydantic `ChatMessage` models, exactly as the hot path did until the change.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from state import (
    ChatMessage,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    UriContent,
)

_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_INSTRUCTION_ROLES = {"system", "developer"}


def call_arguments_text(content: FunctionCallContent) -> str:
    extra = content.model_extra or {}
    raw = extra.get("rawArguments")
    if isinstance(raw, str):
        return raw
    return json.dumps(content.arguments or {}, ensure_ascii=False)


def result_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False)


def _is_image(content: DataContent | UriContent) -> bool:
    media = content.media_type or ""
    return media.startswith("image/") or content.uri.startswith("data:image/")


def balanced(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """Drop function calls without a result and results without a call.

    Model APIs reject an unanswered tool call; a trimmed window or an old state may hold one.
    """
    calls = {c.call_id for m in messages for c in m.contents if isinstance(c, FunctionCallContent)}
    results = {c.call_id for m in messages for c in m.contents if isinstance(c, FunctionResultContent)}
    out: list[ChatMessage] = []
    for message in messages:
        kept = [
            c
            for c in message.contents
            if not (isinstance(c, FunctionCallContent) and c.call_id not in results)
            and not (isinstance(c, FunctionResultContent) and c.call_id not in calls)
        ]
        if len(kept) == len(message.contents):
            out.append(message)
        elif kept:
            out.append(message.model_copy(update={"contents": kept}))
    return out


def to_chat_messages(messages: Iterable[ChatMessage]) -> list[dict[str, Any]]:
    """State messages as Chat Completions ``messages`` (tool results become ``tool`` messages)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = "system" if message.role in _INSTRUCTION_ROLES else message.role
        texts = [c.text for c in message.contents if isinstance(c, TextContent)]
        calls = [c for c in message.contents if isinstance(c, FunctionCallContent)]
        results = [c for c in message.contents if isinstance(c, FunctionResultContent)]
        if role == "assistant":
            if texts or calls:
                item: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
                if calls:
                    item["tool_calls"] = [
                        {
                            "id": c.call_id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": call_arguments_text(c)},
                        }
                        for c in calls
                    ]
                if message.author_name and _NAME_PATTERN.match(message.author_name):
                    item["name"] = message.author_name
                out.append(item)
        elif role in ("user", "system"):
            parts: list[dict[str, Any]] = []
            for c in message.contents:
                if isinstance(c, TextContent):
                    parts.append({"type": "text", "text": c.text})
                elif isinstance(c, (DataContent, UriContent)) and role == "user" and _is_image(c):
                    parts.append({"type": "image_url", "image_url": {"url": c.uri}})
            if parts:
                content: Any = parts[0]["text"] if len(parts) == 1 and parts[0]["type"] == "text" else parts
                item = {"role": role, "content": content}
                if message.author_name and _NAME_PATTERN.match(message.author_name):
                    item["name"] = message.author_name
                out.append(item)
        for r in results:
            out.append({"role": "tool", "tool_call_id": r.call_id, "content": result_text(r.result)})
    return out


def to_responses_input(messages: Iterable[ChatMessage]) -> list[dict[str, Any]]:
    """State messages as Responses API ``input`` items (calls and results are their own items)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = "system" if message.role in _INSTRUCTION_ROLES else message.role
        if role == "assistant":
            text = "".join(c.text for c in message.contents if isinstance(c, TextContent))
            if text:
                out.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    }
                )
        elif role in ("user", "system"):
            parts: list[dict[str, Any]] = []
            for c in message.contents:
                if isinstance(c, TextContent):
                    parts.append({"type": "input_text", "text": c.text})
                elif isinstance(c, (DataContent, UriContent)) and role == "user" and _is_image(c):
                    parts.append({"type": "input_image", "image_url": c.uri, "detail": "auto"})
            if parts:
                out.append({"type": "message", "role": role, "content": parts})
        for c in message.contents:
            if isinstance(c, FunctionCallContent):
                out.append(
                    {
                        "type": "function_call",
                        "call_id": c.call_id,
                        "name": c.name,
                        "arguments": call_arguments_text(c),
                    }
                )
            elif isinstance(c, FunctionResultContent):
                out.append(
                    {"type": "function_call_output", "call_id": c.call_id, "output": result_text(c.result)}
                )
    return out
