"""Status objects in the shape of the Durable Functions HTTP API (``GET .../instances/{id}``)."""

from __future__ import annotations

import json
from typing import Any

from ._replay import EVENT_NAMES, EventType
from ._store import Instance

# Bookkeeping events the Durable HTTP API leaves out of ``historyEvents``; a completion is
# shown with the name and time of the event that scheduled it instead.
_HIDDEN = frozenset(
    {
        EventType.ORCHESTRATOR_STARTED,
        EventType.ORCHESTRATOR_COMPLETED,
        EventType.TASK_SCHEDULED,
        EventType.SUB_ORCHESTRATION_CREATED,
    }
)
_PAYLOAD_FIELDS = ("Input", "Result")


def _decode(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def render_history(history: list[dict[str, Any]], *, show_output: bool) -> list[dict[str, Any]]:
    """The ``historyEvents`` array: readable event names, decoded payloads on request."""
    scheduled: dict[int, dict[str, Any]] = {}
    rendered: list[dict[str, Any]] = []
    for raw in history:
        kind = EventType(raw["EventType"])
        if kind in (EventType.TASK_SCHEDULED, EventType.SUB_ORCHESTRATION_CREATED):
            scheduled[int(raw["EventId"])] = raw
        if kind in _HIDDEN:
            continue
        shown: dict[str, Any] = {"EventType": EVENT_NAMES[kind]}
        for key, value in raw.items():
            if key in ("EventType", "EventId", "IsPlayed"):
                continue
            if key in _PAYLOAD_FIELDS:
                if show_output:
                    shown[key] = _decode(value)
                continue
            shown[key] = value
        task_id = raw.get("TaskScheduledId")
        origin = scheduled.get(int(task_id)) if task_id is not None else None
        if origin is not None:
            shown["FunctionName"] = origin.get("Name")
            shown["ScheduledTime"] = origin.get("Timestamp")
        if kind == EventType.EXECUTION_STARTED:
            shown["FunctionName"] = raw.get("Name")
        rendered.append(shown)
    return rendered


def render_status(
    inst: Instance,
    history: list[dict[str, Any]] | None,
    *,
    show_input: bool,
    show_history_output: bool,
) -> dict[str, Any]:
    """``{name, instanceId, runtimeStatus, input, customStatus, output, createdTime,
    lastUpdatedTime[, historyEvents]}`` with JSON values decoded."""
    status: dict[str, Any] = {
        "name": inst.name,
        "instanceId": inst.instance_id,
        "runtimeStatus": inst.status,
        "input": _decode(inst.input) if show_input else None,
        "customStatus": _decode(inst.custom_status),
        "output": _decode(inst.output),
        "createdTime": inst.created_time,
        "lastUpdatedTime": inst.last_updated_time,
    }
    if history is not None:
        status["historyEvents"] = render_history(history, show_output=show_history_output)
    return status
