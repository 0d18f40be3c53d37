"""Streamed model answers, folded back into the answer the non-streamed call would have returned.

Each reader consumes the SDK's server-sent events, emits text and reasoning deltas as they
arrive, and returns the answer in the non-streamed wire shape (a ``chat.completion`` object, or
the ``response`` object of ``response.completed``), so the stored turn is built by the very same
code whichever way the model was called.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Mapping
from typing import Any

from ._errors import FailureCode, ModelCallError, streamed_failure
from ._events import EventEmitter, TurnEventType
from ._unicode import without_lone_surrogates


def _mapping(value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped = dump(mode="json")
        if isinstance(dumped, Mapping):
            return dumped
    raise TypeError(f"a stream chunk is not a JSON object: {type(value).__name__}")


def _clean(piece: str) -> str:
    # A lone surrogate may be half of a pair split across two chunks; listeners get U+FFFD, the
    # stored answer is cleaned from the joined text as the non-streamed one is.
    result = without_lone_surrogates(piece, "the model's answer")
    return result if isinstance(result, str) else piece


class _ChatCall:
    """One tool call assembled from its deltas (they arrive by index, arguments in pieces)."""

    def __init__(self) -> None:
        self.id: str | None = None
        self.name = ""
        self.arguments: list[str] = []

    def add(self, delta: Mapping[str, Any]) -> None:
        if delta.get("id"):
            self.id = str(delta["id"])
        function = delta.get("function") or {}
        if function.get("name"):
            self.name += str(function["name"])
        if function.get("arguments"):
            self.arguments.append(str(function["arguments"]))

    def wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": "".join(self.arguments)},
        }


async def read_chat_stream(chunks: AsyncIterable[Any], emitter: EventEmitter) -> dict[str, Any]:
    """A ``chat.completion.chunk`` stream as the ``chat.completion`` object it adds up to."""
    text: list[str] = []
    reasoning: list[str] = []
    refusal: list[str] = []
    calls: dict[int, _ChatCall] = {}
    completion_id: str | None = None
    finish: str | None = None
    usage: Any = None
    seen_choice = False
    async for raw in chunks:
        chunk = _mapping(raw)
        completion_id = completion_id or chunk.get("id")
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            seen_choice = True
            delta = choice.get("delta") or {}
            piece = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(piece, str) and piece:
                reasoning.append(piece)
                await emitter.emit(TurnEventType.REASONING_DELTA, text=_clean(piece))
            piece = delta.get("content")
            if isinstance(piece, str) and piece:
                text.append(piece)
                await emitter.emit(TurnEventType.TEXT_DELTA, text=_clean(piece))
            piece = delta.get("refusal")
            if isinstance(piece, str) and piece:
                refusal.append(piece)
            for call in delta.get("tool_calls") or ():
                index = call.get("index", 0)
                calls.setdefault(index if isinstance(index, int) else 0, _ChatCall()).add(call)
            if choice.get("finish_reason"):
                finish = str(choice["finish_reason"])
    if not seen_choice:
        raise ModelCallError(
            FailureCode.INVALID_MODEL_RESPONSE,
            "the model's stream ended without an answer",
            retryable=True,
            status=200,
        )
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) if text or not calls else None}
    if refusal:
        message["refusal"] = "".join(refusal)
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = [calls[i].wire() for i in sorted(calls)]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }


_FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")


async def read_responses_stream(events: AsyncIterable[Any], emitter: EventEmitter) -> dict[str, Any]:
    """A Responses API event stream as its final ``response`` object."""
    async for raw in events:
        event = _mapping(raw)
        kind = event.get("type")
        if kind == "response.output_text.delta":
            piece = event.get("delta")
            if isinstance(piece, str) and piece:
                await emitter.emit(TurnEventType.TEXT_DELTA, text=_clean(piece))
        elif kind == "response.reasoning_summary_text.delta":
            piece = event.get("delta")
            if isinstance(piece, str) and piece:
                await emitter.emit(TurnEventType.REASONING_DELTA, text=_clean(piece))
        elif kind == "error":
            message = str(event.get("message") or "the model failed while streaming")
            raise streamed_failure(event.get("code"), None, message)
        elif kind in _FINAL_EVENTS:
            response = event.get("response")
            if not isinstance(response, Mapping):
                break
            return dict(response)
    raise ModelCallError(
        FailureCode.INVALID_MODEL_RESPONSE,
        "the model's stream ended before the response was complete",
        retryable=True,
        status=200,
    )
