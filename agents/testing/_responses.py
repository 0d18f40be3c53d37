"""The Responses wire format: input items, the in-memory response store, rendering (JSON and SSE)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ._conversations import ConversationStore, conversation_id_of
from ._replies import Message, ModelRequest, Reply, ToolCall, ToolSpec
from ._wire import (
    RequestRejected,
    Usage,
    arg_pieces,
    check_strict_schema,
    check_tool_sequence,
    content_text,
    iter_json_objects,
    missing_parameter,
    new_id,
    text_pieces,
    tool_specs,
)

_ROLES = ("system", "developer", "user", "assistant")


@dataclass
class StoredResponse:
    """A completed response kept for `previous_response_id`: its whole context and its JSON."""

    items: list[dict[str, Any]]
    response: dict[str, Any]


class ResponseStore:
    """Responses kept in memory (thread-safe: the test thread may reset while the server runs)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, StoredResponse] = {}

    def get(self, response_id: str) -> StoredResponse | None:
        with self._lock:
            return self._items.get(response_id)

    def put(self, response_id: str, stored: StoredResponse) -> None:
        with self._lock:
            self._items[response_id] = stored

    def delete(self, response_id: str) -> bool:
        with self._lock:
            return self._items.pop(response_id, None) is not None

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


def not_found(response_id: str, param: str | None = None) -> RequestRejected:
    return RequestRejected(
        f"Previous response with id '{response_id}' not found."
        if param
        else f"Response with id '{response_id}' not found.",
        param=param,
        code="previous_response_not_found" if param else None,
        status=404,
    )


def input_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's `input` as a list of item objects (a string is one user message)."""
    raw = body.get("input")
    if raw is None:
        return []
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    if not isinstance(raw, list):
        raise RequestRejected(
            "Invalid type for 'input': expected a string or an array.", param="input", code="invalid_type"
        )
    return [item for _, item in iter_json_objects(raw)]


def items_to_messages(items: list[dict[str, Any]]) -> list[Message]:
    """Normalised messages of Responses items; function calls join the preceding assistant message."""
    messages: list[Message] = []
    names: dict[str, str] = {}
    for index, item in enumerate(items):
        kind = item.get("type", "message")
        where = f"input[{index}]"
        if kind == "message" or (kind is None and "role" in item):
            role = item.get("role")
            if role not in _ROLES:
                raise RequestRejected(
                    f"Invalid value: '{role}'. Supported values are: 'assistant', 'system', 'developer', "
                    "and 'user'.",
                    param=f"{where}.role",
                    code="invalid_value",
                )
            messages.append(
                Message(role=role, text=content_text(item.get("content"), where=f"{where}.content"))
            )
        elif kind == "function_call":
            call_id, name = item.get("call_id"), item.get("name")
            if not isinstance(call_id, str) or not isinstance(name, str):
                raise RequestRejected(
                    f"Missing required parameter: '{where}.call_id' / '{where}.name'.",
                    param=where,
                    code="missing_required_parameter",
                )
            names[call_id] = name
            call = ToolCall(name=name, arguments=str(item.get("arguments", "")), call_id=call_id)
            last = messages[-1] if messages else None
            if last is not None and last.role == "assistant":
                messages[-1] = Message(role="assistant", text=last.text, tool_calls=(*last.tool_calls, call))
            else:
                messages.append(Message(role="assistant", text="", tool_calls=(call,)))
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if not isinstance(call_id, str):
                raise missing_parameter(f"{where}.call_id")
            output = content_text(item.get("output"), where=f"{where}.output")
            messages.append(Message(role="tool", text=output, call_id=call_id, name=names.get(call_id)))
        # Reasoning and other item kinds carry nothing the offline model reads.
    return messages


def parse_responses(
    body: dict[str, Any], store: ResponseStore, conversations: ConversationStore
) -> tuple[list[Message], list[ToolSpec], list[dict[str, Any]], list[dict[str, Any]]]:
    """Messages (history included), tools, earlier context items and this request's input items.

    The context comes from `previous_response_id` (the stored chain) or `conversation` (its items).
    """
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise missing_parameter("model")
    new_items = input_items(body)
    context: list[dict[str, Any]] = []
    previous = body.get("previous_response_id")
    if previous is not None:
        stored = store.get(str(previous))
        if stored is None:
            raise not_found(str(previous), param="previous_response_id")
        context = stored.items
    conversation_id = conversation_id_of(body.get("conversation"))
    if conversation_id is not None:
        if previous is not None:
            raise RequestRejected(
                "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' "
                "or 'conversation'.",
                param="conversation",
                code="mutually_exclusive_parameters",
            )
        context = conversations.items(conversation_id)
    conversation = items_to_messages(context + new_items)
    check_tool_sequence(conversation, "input", api="responses")
    if not any(m.role in ("user", "tool", "system", "developer") for m in conversation) and not body.get(
        "instructions"
    ):
        raise missing_parameter("input")
    instructions = body.get("instructions")
    messages = ([Message(role="system", text=str(instructions))] if instructions else []) + conversation

    tools = tool_specs(body, nested=False)
    choice = body.get("tool_choice")
    if (
        isinstance(choice, dict)
        and choice.get("type") == "function"
        and choice.get("name") not in {t.name for t in tools}
    ):
        raise RequestRejected(
            f"Tool choice '{choice.get('name')}' not found in 'tools' parameter.", param="tool_choice"
        )
    text = body.get("text")
    fmt = text.get("format") if isinstance(text, dict) else None
    if fmt is not None and (
        not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_object", "json_schema")
    ):
        raise RequestRejected(
            "Invalid value for 'text.format.type'.", param="text.format.type", code="invalid_value"
        )
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and not isinstance(fmt.get("name"), str):
        raise missing_parameter("text.format.name")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and fmt.get("strict") is True:
        schema = fmt.get("schema")
        check_strict_schema(
            schema if isinstance(schema, dict) else {},
            label=f"response_format '{fmt['name']}'",
            param="text.format.schema",
        )
    return messages, tools, context, new_items


# -- rendering --------------------------------------------------------------------------------


def output_items(reply: Reply) -> list[dict[str, Any]]:
    """The finished `output` items of a message reply (reasoning, message, function calls)."""
    status = "completed"
    items: list[dict[str, Any]] = []
    if reply.reasoning_text is not None:
        items.append(
            {
                "id": new_id("rs_"),
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": reply.reasoning_text}],
                "status": status,
            }
        )
    if reply.content is not None or not reply.calls:
        part = {"type": "output_text", "text": reply.content or "", "annotations": [], "logprobs": []}
        items.append(
            {
                "id": new_id("msg_"),
                "type": "message",
                "role": "assistant",
                "status": "incomplete" if reply.finish_reason == "length" else status,
                "content": [part],
            }
        )
    for call in reply.calls:
        items.append(
            {
                "id": new_id("fc_"),
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
                "status": status,
            }
        )
    return items


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


def response_object(
    request: ModelRequest,
    response_id: str,
    output: list[dict[str, Any]],
    usage: Usage | None,
    *,
    status: str,
    created_at: float,
) -> dict[str, Any]:
    body = request.body
    raw_text = body.get("text")
    text: dict[str, Any] = raw_text if isinstance(raw_text, dict) else {}
    conversation = conversation_id_of(body.get("conversation"))
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(created_at),
        "completed_at": int(time.time()) if status in ("completed", "incomplete") else None,
        "conversation": {"id": conversation} if conversation else None,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": None,
        "metadata": body.get("metadata") or {},
        "model": request.model,
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": body.get("store", True) is not False,
        "temperature": body.get("temperature", 1.0),
        "text": {"format": {"type": "text"}, **text},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "usage": _usage(usage) if usage is not None else None,
        "user": None,
    }


def response_events(
    request: ModelRequest, response_id: str, reply: Reply, final: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    """The SSE events of a streamed response, ending with `response.completed` carrying `final`."""
    created_at = float(final["created_at"])
    seq = 0

    def event(kind: str, **fields: Any) -> dict[str, Any]:
        nonlocal seq
        seq += 1
        return {"type": kind, "sequence_number": seq - 1, **fields}

    snapshot = response_object(request, response_id, [], None, status="in_progress", created_at=created_at)
    yield event("response.created", response=snapshot)
    yield event("response.in_progress", response=snapshot)
    for index, item in enumerate(final["output"]):
        item_id = item["id"]
        kind = item["type"]
        if kind == "reasoning":
            yield event(
                "response.output_item.added",
                output_index=index,
                item={**item, "summary": [], "status": "in_progress"},
            )
            text = item["summary"][0]["text"] if item["summary"] else ""
            part = {"type": "summary_text", "text": ""}
            yield event(
                "response.reasoning_summary_part.added",
                item_id=item_id,
                output_index=index,
                summary_index=0,
                part=part,
            )
            for piece in text_pieces(text):
                yield event(
                    "response.reasoning_summary_text.delta",
                    item_id=item_id,
                    output_index=index,
                    summary_index=0,
                    delta=piece,
                )
            yield event(
                "response.reasoning_summary_text.done",
                item_id=item_id,
                output_index=index,
                summary_index=0,
                text=text,
            )
            yield event(
                "response.reasoning_summary_part.done",
                item_id=item_id,
                output_index=index,
                summary_index=0,
                part={**part, "text": text},
            )
        elif kind == "message":
            yield event(
                "response.output_item.added",
                output_index=index,
                item={**item, "content": [], "status": "in_progress"},
            )
            part = item["content"][0]
            empty = {**part, "text": ""}
            yield event(
                "response.content_part.added",
                item_id=item_id,
                output_index=index,
                content_index=0,
                part=empty,
            )
            for piece in text_pieces(part["text"]):
                yield event(
                    "response.output_text.delta",
                    item_id=item_id,
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
            yield event(
                "response.output_text.done",
                item_id=item_id,
                output_index=index,
                content_index=0,
                text=part["text"],
                logprobs=[],
            )
            yield event(
                "response.content_part.done", item_id=item_id, output_index=index, content_index=0, part=part
            )
        elif kind == "function_call":
            yield event(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            for piece in arg_pieces(item["arguments"]):
                yield event(
                    "response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=piece
                )
            yield event(
                "response.function_call_arguments.done",
                item_id=item_id,
                output_index=index,
                name=item["name"],
                arguments=item["arguments"],
            )
        yield event("response.output_item.done", output_index=index, item=item)
    terminal = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    yield event(terminal, response=final)
