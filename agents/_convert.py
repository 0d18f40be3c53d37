"""State messages <-> model wire messages, for Chat Completions and the Responses API.

State -> wire drops what a model API cannot take (reasoning, usage, errors, hosted ids) but the
state keeps it; wire -> state keeps everything the model said, including unparseable tool
arguments (``arguments: {}`` plus the verbatim text in ``rawArguments``).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from state import (
    JSON,
    ChatMessage,
    FunctionCallContent,
    ReasoningContent,
    TextContent,
    Usage,
)

from ._tools import parse_arguments

RAW_ARGUMENTS = "rawArguments"
"""Extra property of a functionCall content holding argument text that was not a JSON object."""
_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_INSTRUCTION_ROLES = {"system", "developer"}
_TEXT_ROLES = {"assistant", "user", "system"}


Message = ChatMessage | Mapping[str, Any]
"""A state message: a model, or its wire dict (as `AgentState.replay_wire` yields them)."""
WireMessage = Mapping[str, Any]


def call_arguments_text(content: FunctionCallContent) -> str:
    """The argument text to send back to a model: the raw text when it was kept, else JSON."""
    extra = content.model_extra or {}
    raw = extra.get(RAW_ARGUMENTS)
    if isinstance(raw, str):
        return raw
    return json.dumps(content.arguments or {}, ensure_ascii=False)


def _arguments_text(call: WireMessage) -> str:
    # call_arguments_text on a wire functionCall content.
    raw = call.get(RAW_ARGUMENTS)
    if isinstance(raw, str):
        return raw
    return json.dumps(call.get("arguments") or {}, ensure_ascii=False)


def result_text(result: JSON) -> str:
    """A tool result as the string a model API expects."""
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False)


def wire_message(message: Message) -> WireMessage:
    """A state message as its wire dict (a dict is returned as it is)."""
    if isinstance(message, ChatMessage):
        # Python mode, no exclusions: the values the model holds, under their wire names.
        return message.model_dump(by_alias=True)
    return message


def _image_url(content: WireMessage) -> str | None:
    # The URI of a data/uri content that is an image, else None.
    uri: str = content["uri"]
    media = content.get("mediaType") or ""
    return uri if media.startswith("image/") or uri.startswith("data:image/") else None


_valid_names: dict[str, bool] = {}


def _author(message: WireMessage) -> str | None:
    # The author name, when it is a valid wire name. A long history repeats a few names, so the
    # verdicts are remembered (bounded: names come from stored data).
    name = message.get("authorName")
    if not name:
        return None
    ok = _valid_names.get(name)
    if ok is None:
        ok = _NAME_PATTERN.match(name) is not None
        if len(_valid_names) >= 1024:
            _valid_names.clear()
        _valid_names[name] = ok
    return name if ok else None


def balanced(messages: Sequence[Message]) -> list[WireMessage]:
    """The messages as wire dicts, without function calls lacking a result or results lacking a call.

    Model APIs reject an unanswered tool call; a trimmed window or an old state may hold one.
    """
    wire = [wire_message(m) for m in messages]
    calls: set[str] = set()
    results: set[str] = set()
    for m in wire:
        for c in m.get("contents", ()):
            kind = c["$type"]
            if kind == "functionCall":
                calls.add(c["callId"])
            elif kind == "functionResult":
                results.add(c["callId"])
    if calls == results:
        return wire  # every call has its result: nothing to drop (the usual case)
    out: list[WireMessage] = []
    for message in wire:
        contents = message.get("contents", ())
        kept = [
            c
            for c in contents
            if not (c["$type"] == "functionCall" and c["callId"] not in results)
            and not (c["$type"] == "functionResult" and c["callId"] not in calls)
        ]
        if len(kept) == len(contents):
            out.append(message)
        elif kept:
            out.append({**message, "contents": kept})
    return out


# --- state -> Chat Completions ------------------------------------------------------------------
# Both conversions read wire dicts: a long replayed history arrives as the stored dicts, and
# building a pydantic model per stored message cost more than the conversion itself.


def to_chat_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """State messages as Chat Completions ``messages`` (tool results become ``tool`` messages)."""
    out: list[dict[str, Any]] = []
    append = out.append
    item: dict[str, Any]
    for message in messages:
        m = message if type(message) is dict else wire_message(message)
        role = m["role"]
        if role in _INSTRUCTION_ROLES:
            role = "system"
        contents = m.get("contents", ())
        if len(contents) == 1 and contents[0]["$type"] == "text" and role in _TEXT_ROLES:
            # Most of a long history: one text content, sent as plain string content.
            item = {"role": role, "content": contents[0]["text"]}
            name = _author(m)
            if name:
                item["name"] = name
            append(item)
            continue
        results: list[WireMessage] = []
        if role == "assistant":
            texts: list[str] = []
            calls: list[WireMessage] = []
            for c in contents:
                kind = c["$type"]
                if kind == "text":
                    texts.append(c["text"])
                elif kind == "functionCall":
                    calls.append(c)
                elif kind == "functionResult":
                    results.append(c)
            if texts or calls:
                item = {"role": "assistant", "content": "".join(texts) if texts else None}
                if calls:
                    item["tool_calls"] = [
                        {
                            "id": c["callId"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": _arguments_text(c)},
                        }
                        for c in calls
                    ]
                name = _author(m)
                if name:
                    item["name"] = name
                append(item)
        else:
            parts: list[dict[str, Any]] = []
            for c in contents:
                kind = c["$type"]
                if kind == "text":
                    parts.append({"type": "text", "text": c["text"]})
                elif kind == "functionResult":
                    results.append(c)
                elif (kind == "data" or kind == "uri") and role == "user":
                    url = _image_url(c)
                    if url is not None:
                        parts.append({"type": "image_url", "image_url": {"url": url}})
            if parts and (role == "user" or role == "system"):
                content: Any = parts[0]["text"] if len(parts) == 1 and parts[0]["type"] == "text" else parts
                item = {"role": role, "content": content}
                name = _author(m)
                if name:
                    item["name"] = name
                append(item)
        for r in results:
            append({"role": "tool", "tool_call_id": r["callId"], "content": result_text(r.get("result"))})
    return out


# --- state -> Responses API input ----------------------------------------------------------------


def to_responses_input(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """State messages as Responses API ``input`` items (calls and results are their own items)."""
    out: list[dict[str, Any]] = []
    append = out.append
    for message in messages:
        m = message if type(message) is dict else wire_message(message)
        role = m["role"]
        if role in _INSTRUCTION_ROLES:
            role = "system"
        contents = m.get("contents", ())
        if len(contents) == 1 and contents[0]["$type"] == "text" and role in _TEXT_ROLES:
            # Most of a long history: one text content.
            text = contents[0]["text"]
            if role != "assistant":
                append({"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]})
            elif text:
                append({"type": "message", "role": role, "content": [{"type": "output_text", "text": text}]})
            continue
        if role == "assistant":
            text = "".join(c["text"] for c in contents if c["$type"] == "text")
            if text:
                append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    }
                )
        elif role == "user" or role == "system":
            parts: list[dict[str, Any]] = []
            for c in contents:
                kind = c["$type"]
                if kind == "text":
                    parts.append({"type": "input_text", "text": c["text"]})
                elif (kind == "data" or kind == "uri") and role == "user":
                    url = _image_url(c)
                    if url is not None:
                        parts.append({"type": "input_image", "image_url": url, "detail": "auto"})
            if parts:
                append({"type": "message", "role": role, "content": parts})
        for c in contents:
            kind = c["$type"]
            if kind == "functionCall":
                append(
                    {
                        "type": "function_call",
                        "call_id": c["callId"],
                        "name": c["name"],
                        "arguments": _arguments_text(c),
                    }
                )
            elif kind == "functionResult":
                output = result_text(c.get("result"))
                append({"type": "function_call_output", "call_id": c["callId"], "output": output})
    return out


# --- model output -> state ---------------------------------------------------------------------


def function_call_content(call_id: str | None, name: str, raw_arguments: str | None) -> FunctionCallContent:
    """A functionCall content; argument text that is not a JSON object is kept in ``rawArguments``."""
    arguments, _ = parse_arguments(raw_arguments)
    extra: dict[str, Any] = {}
    if arguments is None:
        arguments = {}
        extra[RAW_ARGUMENTS] = raw_arguments or ""
    return FunctionCallContent(
        call_id=call_id or f"call_{uuid.uuid4().hex[:24]}", name=name, arguments=arguments, **extra
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _usage(usage: Mapping[str, Any] | None, input_key: str, output_key: str) -> Usage | None:
    if not usage:
        return None
    return Usage(
        input_token_count=_int(usage.get(input_key)),
        output_token_count=_int(usage.get(output_key)),
        total_token_count=_int(usage.get("total_tokens")),
    )


def chat_usage(usage: Mapping[str, Any] | None) -> Usage | None:
    """Chat Completions usage as a state Usage."""
    return _usage(usage, "prompt_tokens", "completion_tokens")


def responses_usage(usage: Mapping[str, Any] | None) -> Usage | None:
    """Responses API usage as a state Usage."""
    return _usage(usage, "input_tokens", "output_tokens")


def add_usage(total: Usage | None, more: Usage | None) -> Usage | None:
    """Sum two usages field by field (a field absent on both stays absent)."""
    if more is None:
        return total
    if total is None:
        return more

    def plus(a: int | None, b: int | None) -> int | None:
        return None if a is None and b is None else (a or 0) + (b or 0)

    return Usage(
        input_token_count=plus(total.input_token_count, more.input_token_count),
        output_token_count=plus(total.output_token_count, more.output_token_count),
        total_token_count=plus(total.total_token_count, more.total_token_count),
    )


def from_chat_message(message: Mapping[str, Any], author_name: str, created_at: str) -> ChatMessage:
    """A Chat Completions ``choices[0].message`` as an assistant state message."""
    contents: list[Any] = []
    # OpenAI-compatible servers (vLLM, Ollama, DeepSeek) put reasoning here; the SDK keeps it as extra.
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        contents.append(ReasoningContent(text=reasoning))
    text = message.get("content")
    if isinstance(text, str) and text:
        contents.append(TextContent(text=text))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal and not text:
        contents.append(TextContent(text=refusal, refusal=True))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        contents.append(
            function_call_content(call.get("id"), str(function.get("name", "")), function.get("arguments"))
        )
    return ChatMessage(role="assistant", contents=contents, author_name=author_name, created_at=created_at)


def from_responses_output(
    output: Sequence[Mapping[str, Any]], author_name: str, created_at: str
) -> ChatMessage:
    """A Responses API ``output`` list as one assistant state message."""
    contents: list[Any] = []
    for item in output:
        kind = item.get("type")
        if kind == "reasoning":
            summary = "\n".join(
                str(part.get("text", "")) for part in item.get("summary") or () if isinstance(part, Mapping)
            )
            parts = item.get("content") or ()
            text = summary or "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, Mapping))
            contents.append(ReasoningContent(text=text or None))
        elif kind == "message":
            for part in item.get("content") or ():
                if part.get("type") == "output_text":
                    contents.append(TextContent(text=str(part.get("text", ""))))
                elif part.get("type") == "refusal":
                    contents.append(TextContent(text=str(part.get("refusal", "")), refusal=True))
        elif kind == "function_call":
            contents.append(
                function_call_content(
                    item.get("call_id") or item.get("id"), str(item.get("name", "")), item.get("arguments")
                )
            )
    return ChatMessage(role="assistant", contents=contents, author_name=author_name, created_at=created_at)
