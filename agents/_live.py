"""The turn events built from what a turn already holds: usage, complete tool calls, tool results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from state import FunctionCallContent, FunctionResultContent, Usage

from ._convert import call_arguments_text
from ._events import EventEmitter, TurnEventType
from ._tools import FunctionTool


async def announce_usage(emitter: EventEmitter, usage: Usage | None) -> None:
    """A `usage` event for one model call's usage (none when the model reported none)."""
    if usage is None:
        return
    await emitter.emit(
        TurnEventType.USAGE,
        input_tokens=usage.input_token_count,
        output_tokens=usage.output_token_count,
        total_tokens=usage.total_token_count,
    )


async def announce_calls(
    emitter: EventEmitter, calls: Sequence[FunctionCallContent], tools: Mapping[str, FunctionTool]
) -> None:
    """A `tool.call` event per complete function call, with the argument text the model sent
    (and `server`, the MCP server's name, for a tool of one)."""
    for call in calls:
        tool = tools.get(call.name)
        extra = {"server": tool.source.server} if tool is not None and tool.source is not None else {}
        await emitter.emit(
            TurnEventType.TOOL_CALL,
            call_id=call.call_id,
            name=call.name,
            arguments=call_arguments_text(call),
            **extra,
        )


async def announce_results(emitter: EventEmitter, results: Sequence[FunctionResultContent]) -> None:
    """A `tool.result` event per tool answer (``is_error`` for a failed call)."""
    for result in results:
        extra = result.model_extra or {}
        data = {"call_id": result.call_id, "result": result.result}
        if extra.get("isError"):
            data["is_error"] = True
        await emitter.emit(TurnEventType.TOOL_RESULT, **data)
