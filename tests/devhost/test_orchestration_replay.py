"""The replay protocol helpers against the real SDK executor, one episode at a time."""

from __future__ import annotations

import json
from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from typing import Any

import azure.durable_functions as df
import pytest

from devhost.orchestrations._replay import (
    ActionType,
    EventType,
    after,
    build_context,
    event,
    flatten_actions,
    format_time,
    parse_time,
    run_episode,
)

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def start(input_value: Any = None) -> list[dict[str, Any]]:
    return [
        event(EventType.ORCHESTRATOR_STARTED, T0),
        event(EventType.EXECUTION_STARTED, T0, Name="o", Input=json.dumps(input_value), Version=None),
    ]


def episode(fn: Any, history: list[dict[str, Any]], played: int, schema: int = 2) -> Any:
    handle = df.Orchestrator.create(fn)
    context = build_context(
        instance_id="i-1",
        parent_instance_id=None,
        input_text=None,
        history=history,
        played=played,
        schema=schema,
    )
    return run_episode(handle, context)


def fan(context: df.DurableOrchestrationContext) -> Generator[Any, Any, Any]:
    context.signal_entity(df.EntityId("Counter", "k"), "add", 1)
    first = context.call_activity("a", 1)
    timer = context.create_timer(context.current_utc_datetime + timedelta(seconds=5))
    event_task = context.wait_for_external_event("go")
    results = yield context.task_all([first, context.task_any([timer, event_task])])
    return results[0]


@pytest.mark.parametrize("schema", [0, 1, 2])
def test_actions_flatten_in_sequence_order_for_every_schema(schema: int) -> None:
    result = episode(fan, start(), 0, schema)
    assert not result.is_done and result.error is None
    kinds = [a.type for a in result.actions]
    assert kinds == [
        ActionType.SIGNAL_ENTITY,
        ActionType.CALL_ACTIVITY,
        ActionType.CREATE_TIMER,
        ActionType.WAIT_FOR_EXTERNAL_EVENT,
    ]
    assert [a.numbered for a in result.actions] == [True, True, True, False]
    assert result.actions[0].name == "@counter@k:add"
    assert parse_time(result.actions[2].body["fireAt"]) == T0 + timedelta(seconds=5)


def test_completions_are_matched_by_sequence_number() -> None:
    history = start()
    history += [
        event(EventType.EVENT_SENT, T0, event_id=0, InstanceId="@counter@k", Name="op", Input="{}"),
        event(EventType.TASK_SCHEDULED, T0, event_id=1, Name="a"),
        event(EventType.TIMER_CREATED, T0, event_id=2, FireAt=format_time(T0)),
        event(EventType.ORCHESTRATOR_COMPLETED, T0),
    ]
    played = len(history)
    later = T0 + timedelta(seconds=1)
    history += [
        event(EventType.ORCHESTRATOR_STARTED, later),
        event(EventType.TASK_COMPLETED, later, TaskScheduledId=1, Result=json.dumps("A")),
        event(EventType.EVENT_RAISED, later, Name="go", Input=json.dumps(None)),
    ]
    result = episode(fan, history, played)
    assert result.is_done and result.output == "A"


def test_entity_response_protocol() -> None:
    def calls(context: df.DurableOrchestrationContext) -> Generator[Any, Any, Any]:
        ok = yield context.call_entity(df.EntityId("Counter", "k"), "get")
        try:
            yield context.call_entity(df.EntityId("Counter", "k"), "boom")
        except Exception as exc:
            return [ok, str(exc)]
        return [ok, None]

    sent = {"op": "get", "signal": False, "input": None, "id": "req-1", "parent": "i-1"}
    history = start()
    history += [
        event(
            EventType.EVENT_SENT, T0, event_id=0, InstanceId="@counter@k", Name="op", Input=json.dumps(sent)
        ),
        event(EventType.ORCHESTRATOR_COMPLETED, T0),
        event(EventType.ORCHESTRATOR_STARTED, T0),
        event(EventType.EVENT_RAISED, T0, Name="req-1", Input=json.dumps({"result": json.dumps({"n": 3})})),
        event(
            EventType.EVENT_SENT,
            T0,
            event_id=1,
            InstanceId="@counter@k",
            Name="op",
            Input=json.dumps({"id": "req-2"}),
        ),
        event(EventType.ORCHESTRATOR_COMPLETED, T0),
    ]
    played = len(history)
    failure = {"result": json.dumps("counter exploded"), "exceptionType": "EntityOperationFailed"}
    history += [
        event(EventType.ORCHESTRATOR_STARTED, T0),
        event(EventType.EVENT_RAISED, T0, Name="req-2", Input=json.dumps(failure)),
    ]
    result = episode(calls, history, played)
    assert result.is_done
    assert result.output == [{"n": 3}, "counter exploded"]


def test_a_failing_orchestrator_reports_its_message_and_custom_status() -> None:
    def failing(context: df.DurableOrchestrationContext) -> Generator[Any, Any, Any]:
        context.set_custom_status({"step": 1})
        yield context.call_activity("a")
        raise ValueError("went wrong")

    history = start()
    history += [
        event(EventType.TASK_SCHEDULED, T0, event_id=0, Name="a"),
        event(EventType.ORCHESTRATOR_COMPLETED, T0),
    ]
    played = len(history)
    history += [
        event(EventType.ORCHESTRATOR_STARTED, T0),
        event(EventType.TASK_COMPLETED, T0, TaskScheduledId=0, Result="null"),
    ]
    result = episode(failing, history, played)
    assert not result.is_done
    assert result.error == "went wrong"
    assert result.custom_status == {"step": 1}


def test_context_marks_played_events_and_schema() -> None:
    history = start({"x": 1})
    context = json.loads(
        build_context(
            instance_id="i", parent_instance_id="p", input_text='{"x": 1}', history=history, played=1
        )
    )
    assert [e["IsPlayed"] for e in context["history"]] == [True, False]
    assert context["isReplaying"] is True
    assert context["parentInstanceId"] == "p"
    assert context["upperSchemaVersion"] == 2


def test_clock_helpers() -> None:
    assert after(T0, T0) == T0 + timedelta(microseconds=1)
    assert after(T0, T0 - timedelta(seconds=1)) > T0
    assert after(None, T0) == T0
    assert parse_time(format_time(T0)) == T0
    assert parse_time("2026-01-02T03:04:05") == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_flatten_ignores_compound_wrappers() -> None:
    raw = [
        [
            {
                "actionType": 12,
                "compoundActions": [
                    {"actionType": 0, "functionName": "a"},
                    {"actionType": 11, "compoundActions": [{"actionType": 5, "fireAt": "x"}]},
                ],
            },
            {"actionType": 4, "input": "null"},
        ]
    ]
    assert [a.type for a in flatten_actions(raw)] == [
        ActionType.CALL_ACTIVITY,
        ActionType.CREATE_TIMER,
        ActionType.CONTINUE_AS_NEW,
    ]
