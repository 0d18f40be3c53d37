"""The replay protocol between the host and the Python Durable SDK's orchestrator functions.

One *episode* hands the orchestrator function the whole history of the current execution
(events of earlier episodes marked ``IsPlayed``) and reads back the actions it wants. The
SDK identifies each task by a sequence number it assigns in scheduling order; the host gives
the matching history events (``TaskScheduled``, ``TimerCreated``, ``EventSent``...) the same
``EventId`` and answers with completions that carry it (``TaskScheduledId``, ``TimerId``).
This module knows the wire shapes only; persistence and scheduling live in the engine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import IntEnum
from typing import Any

from azure.functions._durable_functions import OrchestrationContext

from ..worker import WorkerDied

# Newest replay schema of the installed SDK (ReplaySchema.V3): flat action lists with
# WhenAll/WhenAny compound actions. Long-timer splitting stays off because we pass no
# maximumShortTimerDuration, as the Durable Task Scheduler and MSSQL backends do.
UPPER_SCHEMA_VERSION = 2
OUT_OF_PROC_MARKER = "\n\n$OutOfProcData$:"


class EventType(IntEnum):
    """History event types (DurableTask's numbering, as the SDK expects)."""

    EXECUTION_STARTED = 0
    EXECUTION_COMPLETED = 1
    EXECUTION_FAILED = 2
    EXECUTION_TERMINATED = 3
    TASK_SCHEDULED = 4
    TASK_COMPLETED = 5
    TASK_FAILED = 6
    SUB_ORCHESTRATION_CREATED = 7
    SUB_ORCHESTRATION_COMPLETED = 8
    SUB_ORCHESTRATION_FAILED = 9
    TIMER_CREATED = 10
    TIMER_FIRED = 11
    ORCHESTRATOR_STARTED = 12
    ORCHESTRATOR_COMPLETED = 13
    EVENT_SENT = 14
    EVENT_RAISED = 15
    CONTINUE_AS_NEW = 16
    GENERIC = 17
    HISTORY_STATE = 18
    EXECUTION_SUSPENDED = 19
    EXECUTION_RESUMED = 20


EVENT_NAMES = {
    EventType.EXECUTION_STARTED: "ExecutionStarted",
    EventType.EXECUTION_COMPLETED: "ExecutionCompleted",
    EventType.EXECUTION_FAILED: "ExecutionFailed",
    EventType.EXECUTION_TERMINATED: "ExecutionTerminated",
    EventType.TASK_SCHEDULED: "TaskScheduled",
    EventType.TASK_COMPLETED: "TaskCompleted",
    EventType.TASK_FAILED: "TaskFailed",
    EventType.SUB_ORCHESTRATION_CREATED: "SubOrchestrationInstanceCreated",
    EventType.SUB_ORCHESTRATION_COMPLETED: "SubOrchestrationInstanceCompleted",
    EventType.SUB_ORCHESTRATION_FAILED: "SubOrchestrationInstanceFailed",
    EventType.TIMER_CREATED: "TimerCreated",
    EventType.TIMER_FIRED: "TimerFired",
    EventType.ORCHESTRATOR_STARTED: "OrchestratorStarted",
    EventType.ORCHESTRATOR_COMPLETED: "OrchestratorCompleted",
    EventType.EVENT_SENT: "EventSent",
    EventType.EVENT_RAISED: "EventRaised",
    EventType.CONTINUE_AS_NEW: "ContinueAsNew",
    EventType.GENERIC: "GenericEvent",
    EventType.HISTORY_STATE: "HistoryState",
    EventType.EXECUTION_SUSPENDED: "ExecutionSuspended",
    EventType.EXECUTION_RESUMED: "ExecutionResumed",
}


class ActionType(IntEnum):
    """Action types in the SDK's ``actions`` payload."""

    CALL_ACTIVITY = 0
    CALL_ACTIVITY_WITH_RETRY = 1
    CALL_SUB_ORCHESTRATOR = 2
    CALL_SUB_ORCHESTRATOR_WITH_RETRY = 3
    CONTINUE_AS_NEW = 4
    CREATE_TIMER = 5
    WAIT_FOR_EXTERNAL_EVENT = 6
    CALL_ENTITY = 7
    CALL_HTTP = 8
    SIGNAL_ENTITY = 9
    WHEN_ANY = 11
    WHEN_ALL = 12


# Actions to which the SDK gives a sequence number (an external event is keyed by its name).
_NUMBERED = frozenset(
    {
        ActionType.CALL_ACTIVITY,
        ActionType.CALL_ACTIVITY_WITH_RETRY,
        ActionType.CALL_SUB_ORCHESTRATOR,
        ActionType.CALL_SUB_ORCHESTRATOR_WITH_RETRY,
        ActionType.CONTINUE_AS_NEW,
        ActionType.CREATE_TIMER,
        ActionType.CALL_ENTITY,
        ActionType.CALL_HTTP,
        ActionType.SIGNAL_ENTITY,
    }
)


def utcnow() -> datetime:
    """The host clock (aware, UTC)."""
    return datetime.now(UTC)


def format_time(value: datetime) -> str:
    """The timestamp text used in history events and status payloads."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> datetime:
    """Parse a timestamp written by ``format_time`` or an SDK ``fireAt`` (naive means UTC)."""
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


def after(previous: datetime | None, now: datetime) -> datetime:
    """``now``, nudged past ``previous`` so replayed clocks never stand still or go back."""
    if previous is not None and now <= previous:
        return previous + timedelta(microseconds=1)
    return now


def event(kind: EventType, timestamp: datetime, *, event_id: int = -1, **fields: Any) -> dict[str, Any]:
    """A history event dict in the shape the SDK's ``HistoryEvent(**event)`` accepts."""
    body: dict[str, Any] = {
        "EventType": int(kind),
        "EventId": event_id,
        "Timestamp": format_time(timestamp),
    }
    body.update(fields)
    return body


@dataclass
class Action:
    """One leaf action of an episode's output; ``numbered`` ones carry an SDK sequence number."""

    type: ActionType
    body: dict[str, Any]

    @property
    def numbered(self) -> bool:
        return self.type in _NUMBERED

    @property
    def name(self) -> str:
        """What identifies the target, for the non-determinism check."""
        b = self.body
        if self.type in (ActionType.CALL_ENTITY, ActionType.SIGNAL_ENTITY):
            return f"{b.get('instanceId')}:{b.get('operation')}"
        if self.type == ActionType.CALL_HTTP:
            request = b.get("httpRequest") or {}
            return f"{request.get('method')} {request.get('uri')}"
        return str(b.get("functionName") or b.get("externalEventName") or "")


@dataclass
class EpisodeResult:
    """What the orchestrator function answered for one episode."""

    is_done: bool
    actions: list[Action] = field(default_factory=list)
    output: Any = None
    error: str | None = None
    custom_status: Any = None
    has_custom_status: bool = False


def flatten_actions(raw: Any) -> list[Action]:
    """Leaf actions in scheduling order, for both replay schemas (nested lists or compounds)."""
    found: list[Action] = []

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
            return
        if not isinstance(node, dict):
            return
        kind = ActionType(int(node["actionType"]))
        if kind in (ActionType.WHEN_ALL, ActionType.WHEN_ANY):
            walk(node.get("compoundActions") or [])
            return
        found.append(Action(kind, node))

    walk(raw or [])
    return found


def build_context(
    *,
    instance_id: str,
    parent_instance_id: str | None,
    input_text: str | None,
    history: list[dict[str, Any]],
    played: int,
    schema: int = UPPER_SCHEMA_VERSION,
) -> str:
    """The orchestration trigger's context JSON; events before index ``played`` are old."""
    marked = [{**e, "IsPlayed": i < played} for i, e in enumerate(history)]
    return json.dumps(
        {
            "history": marked,
            "input": input_text,
            "instanceId": instance_id,
            "isReplaying": played > 0,
            "parentInstanceId": parent_instance_id,
            "upperSchemaVersion": schema,
        }
    )


def parse_state(text: str) -> EpisodeResult:
    """Read the SDK's ``OrchestratorState`` JSON."""
    state = json.loads(text)
    return EpisodeResult(
        is_done=bool(state.get("isDone")),
        actions=flatten_actions(state.get("actions")),
        output=state.get("output"),
        error=state.get("error"),
        custom_status=state.get("customStatus"),
        has_custom_status="customStatus" in state,
    )


def run_episode(handle: Any, context_json: str) -> EpisodeResult:
    """Call the orchestrator function as the Python worker does and decode its answer.

    A failing orchestrator raises; its message carries the state after a marker, which is how
    the Durable extension learns the error and any custom status set before the failure.
    """
    try:
        answer = handle(OrchestrationContext(context_json))
    except WorkerDied:
        raise  # not the orchestrator's failure: the episode is run again on a new worker
    except Exception as exc:
        text = str(exc)
        message, marker, data = text.partition(OUT_OF_PROC_MARKER)
        if marker:
            try:
                result = parse_state(data)
            except (ValueError, KeyError):
                result = EpisodeResult(is_done=False)
            result.error = result.error or message
            result.is_done = False
            return result
        return EpisodeResult(is_done=False, error=text or type(exc).__name__)
    if not isinstance(answer, str):
        answer = json.dumps(answer)
    return parse_state(answer)
