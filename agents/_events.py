"""What a turn tells a listener while it runs: text as it arrives, tool calls and results, usage.

``Agent.run(state, request, on_event=sink)`` streams from the model and calls ``sink`` with each
`TurnEvent`. The events are a live view only: what the turn records in the state is exactly what
it records without a sink. A sink that raises is logged and ignored; it never fails the turn.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

log = logging.getLogger("agents.events")


class TurnEventType(StrEnum):
    """The kinds of event a turn emits (the SSE `event:` names hosting sends on)."""

    TEXT_DELTA = "text.delta"
    """``{"text"}``: the next piece of the model's answer text."""
    REASONING_DELTA = "reasoning.delta"
    """``{"text"}``: the next piece of a reasoning summary, where the service sends one."""
    TOOL_CALL = "tool.call"
    """``{"call_id", "name", "arguments"}``: a complete function call the model asked for
    (``arguments`` is the raw JSON text the model sent)."""
    TOOL_RESULT = "tool.result"
    """``{"call_id", "result"}`` (and ``"is_error": true`` for a failed call): a tool's answer."""
    USAGE = "usage"
    """``{"input_tokens", "output_tokens", "total_tokens"}`` of one model call."""


@dataclass(frozen=True)
class TurnEvent:
    """One event of a running turn: its type and a JSON object."""

    type: TurnEventType
    data: dict[str, Any] = field(default_factory=dict)


class TurnEventSink(Protocol):
    """Receives a turn's events in order, on the turn's event loop."""

    async def __call__(self, event: TurnEvent) -> None: ...


class EventEmitter:
    """Sends events to an optional sink; a failing sink is logged once and then left alone."""

    def __init__(self, sink: TurnEventSink | None) -> None:
        self.sink = sink
        self.sent = 0

    @property
    def active(self) -> bool:
        """Whether anyone listens (the model is streamed only then)."""
        return self.sink is not None

    async def emit(self, kind: TurnEventType, **data: Any) -> None:
        """Send one event (nothing when there is no sink)."""
        if self.sink is None:
            return
        self.sent += 1
        try:
            await self.sink(TurnEvent(kind, data))
        except Exception:
            # The turn's durability does not depend on its listeners.
            log.exception("turn event sink failed; no more events are sent for this turn")
            self.sink = None
