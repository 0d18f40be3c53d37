"""The product's run events as AG-UI events (ag-ui-protocol's own models, so every event is
the protocol's shape), with resumable ids.

One product event can become several AG-UI events (its first text delta opens a text message;
a tool call is START, ARGS and END), so an AG-UI event's id is `<product event id>.<n>`: a
reconnect names the last one it had (`Last-Event-ID`) and the stream goes on right after it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

APPROVAL_REASON = "tool_approval"
"""The `reason` of the interrupt a tool call waiting for a person's decision is."""


def interrupt_id(correlation_id: str, seq: int, call_id: str) -> str:
    """An interrupt's id: the paused run, the event it paused at, the call (ids never hold '|')."""
    return f"{correlation_id}|{seq}|{call_id}"


def parse_interrupt_id(value: str) -> tuple[str, int, str] | None:
    parts = value.split("|", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1]), parts[2]


def event_position(value: str | None) -> tuple[int, int] | None:
    """A `Last-Event-ID` of this stream as (product event id, n); None if absent or not ours."""
    if not value:
        return None
    seq, _, n = value.strip().partition(".")
    if not seq.isdigit() or not (n or "0").isdigit() or len(seq) > 12 or len(n) > 6:
        return None
    return int(seq), int(n or 0)


@dataclass
class AgUiEvents:
    """Turns one run's product events into AG-UI events, in order."""

    thread_id: str
    run_id: str
    """The AG-UI run (RUN_STARTED / RUN_FINISHED name it)."""
    correlation_id: str
    """The product run whose events these are (the AG-UI run itself, or the paused run it resumes)."""
    _open: str | None = field(default=None, init=False)

    def started(self) -> RunStartedEvent:
        return RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id)

    def _close(self) -> Iterator[BaseEvent]:
        if self._open is not None:
            yield TextMessageEndEvent(message_id=self._open)
            self._open = None

    def convert(self, seq: int, kind: str, data: dict[str, Any]) -> list[BaseEvent]:
        """The AG-UI events of one product event (none for one AG-UI has no use for)."""
        return list(self._convert(seq, kind, data))

    def _convert(self, seq: int, kind: str, data: dict[str, Any]) -> Iterator[BaseEvent]:
        if kind == "text.delta":
            text = str(data.get("text") or "")
            if not text:
                return
            if self._open is None:
                self._open = f"{self.correlation_id}-text-{seq}"
                yield TextMessageStartEvent(message_id=self._open, role="assistant")
            yield TextMessageContentEvent(message_id=self._open, delta=text)
        elif kind == "tool.call":
            yield from self._close()
            call = str(data.get("call_id") or "")
            yield ToolCallStartEvent(tool_call_id=call, tool_call_name=str(data.get("name") or ""))
            arguments = data.get("arguments")
            if arguments:
                yield ToolCallArgsEvent(tool_call_id=call, delta=str(arguments))
            yield ToolCallEndEvent(tool_call_id=call)
        elif kind == "tool.result":
            yield from self._close()
            call = str(data.get("call_id") or "")
            result = data.get("result")
            content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
            message = f"{self.correlation_id}-result-{call}"
            yield ToolCallResultEvent(message_id=message, tool_call_id=call, content=content, role="tool")
        elif kind in ("step.started", "run.restarted"):
            yield from self._close()  # a restarted step's text is sent again, as a new message
        elif kind == "approval.required":
            yield from self._close()
            interrupts = [
                Interrupt(
                    id=interrupt_id(self.correlation_id, seq, str(a.get("call_id"))),
                    reason=APPROVAL_REASON,
                    message=f"the agent asks to call {a.get('name')!r} with {a.get('arguments')}",
                    tool_call_id=str(a.get("call_id")),
                    response_schema=DECISION_SCHEMA,
                )
                for a in data.get("approvals") or []
            ]
            yield self._finished(RunFinishedInterruptOutcome(interrupts=interrupts))
        elif kind == "run.completed":
            yield from self._close()
            response = data.get("response") or {}
            result = response.get("structured")
            yield self._finished(RunFinishedSuccessOutcome(), result=result)
        elif kind == "run.cancelled":
            yield from self._close()
            yield self._finished(RunFinishedCancelledOutcome())
        elif kind == "run.failed":
            yield from self._close()
            yield RunErrorEvent(message=str(data.get("detail") or "the run failed"), code=data.get("code"))

    def _finished(self, outcome: Any, result: Any = None) -> RunFinishedEvent:
        return RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, outcome=outcome, result=result)

    def lost(self) -> RunErrorEvent:
        """The end of a stream that ended without the run's end (the run goes on: follow it again)."""
        return RunErrorEvent(
            message="the run's stream ended before the run did; send the same run again to follow it",
            code="stream_ended",
        )


DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}
"""The `payload` of a `resume` entry that answers an approval interrupt."""


def frame(event_id: str | None, event: BaseEvent) -> bytes:
    """One SSE frame of the AG-UI stream (the event's JSON as the protocol's encoder writes it)."""
    data = event.model_dump_json(by_alias=True, exclude_none=True)
    head = "" if event_id is None else f"id: {event_id}\n"
    return f"{head}data: {data}\n\n".encode()
