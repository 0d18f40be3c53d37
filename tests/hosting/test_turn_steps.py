"""A turn of steps through the entity function and the Durable JSON batch protocol: each step is
one operation that records the turn in progress and signals the entity to run the next step."""

from __future__ import annotations

import json
from typing import Any

import azure.durable_functions as df
import pytest
from hosting_support import batch_request, call_entity, functions, run_op

from agents import Agent, ModelSettings, RetryPolicy, TurnProgress, current_tool_call, tool
from agents.testing import ModelServer, Reply
from hosting import build_app
from hosting.stored import ActiveTurn
from state import load_state

ENTITY = "dafx-payer"
CALLS: list[str] = []


@tool
def charge(amount: int) -> str:
    """Charge the card.

    Args:
        amount: How much.
    """
    call = current_tool_call()
    assert call is not None
    CALLS.append(call.idempotency_key)
    return f"charged {amount}"


@pytest.fixture(scope="module")
def steps_app(model_server: ModelServer) -> df.DFApp:
    settings = ModelSettings(
        model="test-model", base_url=model_server.base_url, api_key="k", retry=RetryPolicy(max_attempts=1)
    )
    payer = Agent(name="payer", instructions="Pay.", model=settings, tools=[charge])
    return build_app([payer], console=False)


def _batch(app: df.DFApp, state: str | None, operations: list[tuple[str, Any]]) -> dict[str, Any]:
    handle = functions(app)[ENTITY].get_user_function()
    request = json.dumps(batch_request(ENTITY, "s", state, operations))
    output: dict[str, Any] = json.loads(call_entity(handle, request))
    return output


def _signalled(output: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    signals = output["signals"]
    assert all(s["target"] == {"name": ENTITY, "key": "s"} for s in signals), signals
    return [(s["name"], json.loads(s["input"])) for s in signals]


def test_each_step_is_recorded_and_signals_the_next(steps_app: df.DFApp, model: ModelServer) -> None:
    CALLS.clear()
    model.script(Reply.tool_call("charge", {"amount": 5}, call_id="call-1"), Reply.text("paid"))
    first = _batch(steps_app, None, [("run", run_op("pay 5", "pay-1"))])
    running = {"correlationId": "pay-1", "status": "running", "step": 1}
    assert json.loads(first["results"][0]["result"]) == running
    assert _signalled(first) == [("step", {"correlationId": "pay-1", "step": 1})]
    state = load_state(first["entityState"])
    assert len(state) == 0 and state.find_run("pay-1") is None  # nothing in the history yet
    turn = ActiveTurn.from_json(state.active_turn)
    assert turn.correlation_id == "pay-1" and turn.progress.steps == 1 and CALLS == []

    # The tool step, then the last model call; a stale or repeated signal changes nothing.
    tools = _batch(steps_app, first["entityState"], [("step", {"correlationId": "pay-1", "step": 1})])
    assert CALLS == ["pay-1:call-1"]
    assert _signalled(tools) == [("step", {"correlationId": "pay-1", "step": 2})]
    stale = _batch(steps_app, tools["entityState"], [("step", {"correlationId": "pay-1", "step": 1})])
    assert stale["entityState"] == tools["entityState"] and stale["signals"] == []
    assert CALLS == ["pay-1:call-1"]
    last = _batch(steps_app, tools["entityState"], [("step", {"correlationId": "pay-1", "step": 2})])
    assert json.loads(last["results"][0]["result"])["text"] == "paid"
    assert last["signals"] == []
    done = load_state(last["entityState"])
    assert done.active_turn is None
    assert [e.type for e in done.entries] == ["request", "response"]
    assert [m.role for m in done.entries[1].messages] == ["assistant", "tool", "assistant"]
    assert len(model.requests) == 2


def test_a_run_sent_during_a_turn_waits_in_the_queue_then_starts(
    steps_app: df.DFApp, model: ModelServer
) -> None:
    model.script(Reply.tool_call("charge", {"amount": 1}, call_id="c"), Reply.text("one"), Reply.text("two"))
    first = _batch(steps_app, None, [("run", run_op("one", "r1")), ("run", run_op("two", "r2"))])
    assert json.loads(first["results"][1]["result"]) == {"correlationId": "r2", "status": "pending"}
    state = load_state(first["entityState"])
    assert [q["correlationId"] for q in state.queued_runs] == ["r2"]
    # A redelivered run of the queued id is not queued twice.
    again = _batch(steps_app, first["entityState"], [("run", run_op("two", "r2"))])
    assert load_state(again["entityState"]).queued_runs == state.queued_runs
    tools = _batch(steps_app, first["entityState"], [("step", {"correlationId": "r1", "step": 1})])
    end = _batch(steps_app, tools["entityState"], [("step", {"correlationId": "r1", "step": 2})])
    assert _signalled(end) == [("step", {"correlationId": "r2", "step": 0})]
    second = _batch(steps_app, end["entityState"], [("step", {"correlationId": "r2", "step": 0})])
    assert json.loads(second["results"][0]["result"])["text"] == "two"
    done = load_state(second["entityState"])
    assert [(e.type, e.correlation_id) for e in done.entries] == [
        ("request", "r1"), ("response", "r1"), ("request", "r2"), ("response", "r2"),
    ]
    assert done.queued_runs == [] and done.active_turn is None


def test_a_reset_discards_the_turn_in_progress(steps_app: df.DFApp, model: ModelServer) -> None:
    model.script(Reply.tool_call("charge", {"amount": 1}, call_id="c"))
    first = _batch(steps_app, None, [("run", run_op("one", "r-reset"))])
    reset = _batch(steps_app, first["entityState"], [("reset", None)])
    document = json.loads(reset["entityState"])
    assert "activeTurn" not in document["data"] and "r-reset" in document["data"]["discardedRuns"]
    # Its next step's signal finds no turn: nothing runs.
    stale = _batch(steps_app, reset["entityState"], [("step", {"correlationId": "r-reset", "step": 1})])
    assert stale["entityState"] == reset["entityState"] and stale["signals"] == []


def test_progress_round_trips_and_refuses_what_it_did_not_write() -> None:
    progress = TurnProgress(steps=1, messages=[{"role": "assistant", "contents": []}], rounds=0)
    assert TurnProgress.from_json(progress.to_json()) == progress
    for bad in ({"steps": -1}, {"steps": 1, "messages": [{"contents": []}]}, {"steps": "1"}):
        with pytest.raises(ValueError):
            TurnProgress.from_json(bad)


def test_another_request_under_the_id_of_a_running_turn_is_a_conflict(
    steps_app: df.DFApp, model: ModelServer
) -> None:
    model.script(Reply.tool_call("charge", {"amount": 1}, call_id="c"))
    first = _batch(steps_app, None, [("run", run_op("pay 1", "r-conflict"))])
    other = _batch(steps_app, first["entityState"], [("run", run_op("something else", "r-conflict"))])
    [result] = other["results"]
    assert result["isError"] is True and "r-conflict" in json.loads(result["result"])
    assert other["entityState"] == first["entityState"] and other["signals"] == []


def test_a_step_in_a_batch_the_sdk_fails_records_its_turn_as_failed(
    steps_app: df.DFApp, model: ModelServer
) -> None:
    model.script(Reply.tool_call("charge", {"amount": 1}, call_id="c"))
    first = _batch(steps_app, None, [("run", run_op("pay 1", "r-sdk")), ("run", run_op("next", "r-next"))])
    # A request property the SDK does not know makes it raise before any operation runs.
    request = {
        **batch_request(ENTITY, "s", first["entityState"], [("step", {"correlationId": "r-sdk", "step": 1})]),
        "newerProperty": True,
    }
    handle = functions(steps_app)[ENTITY].get_user_function()
    out = json.loads(call_entity(handle, json.dumps(request)))
    [result] = out["results"]
    answer = json.loads(result["result"])
    assert result["isError"] is False and answer["status"] == "failed"
    assert answer["error"]["code"] == "internal_error"
    state = load_state(out["entityState"])
    run = state.find_run("r-sdk")
    assert run is not None and run.status == "failed" and state.active_turn is None
    # The queued run is not left behind: it is signalled to start.
    assert _signalled(out) == [("step", {"correlationId": "r-next", "step": 0})]


def test_an_owned_sessions_turn_accepts_only_its_owners_runs_and_its_steps_need_no_user(
    steps_app: df.DFApp, model: ModelServer
) -> None:
    model.script(Reply.tool_call("charge", {"amount": 1}, call_id="c"), Reply.text("one"), Reply.text("two"))
    first = _batch(steps_app, None, [("run", run_op("one", "o1", userId="u1"))])
    assert load_state(first["entityState"]).user_id == "u1"
    # Another user's run (or one of no user) during the turn is refused: nothing is queued or stored.
    for intruder in ({"userId": "u2"}, {}):
        other = _batch(steps_app, first["entityState"], [("run", run_op("mine", "o-x", **intruder))])
        [result] = other["results"]
        assert result["isError"] is True and "another user" in json.loads(result["result"])
        assert other["entityState"] == first["entityState"] and other["signals"] == []
    queued = _batch(steps_app, first["entityState"], [("run", run_op("two", "o2", userId="u1"))])
    assert [q["correlationId"] for q in load_state(queued["entityState"]).queued_runs] == ["o2"]
    # The steps carry the run's id only, the owner is not asked again; the queued run starts.
    tools = _batch(steps_app, queued["entityState"], [("step", {"correlationId": "o1", "step": 1})])
    end = _batch(steps_app, tools["entityState"], [("step", {"correlationId": "o1", "step": 2})])
    assert _signalled(end) == [("step", {"correlationId": "o2", "step": 0})]
    second = _batch(steps_app, end["entityState"], [("step", {"correlationId": "o2", "step": 0})])
    assert json.loads(second["results"][0]["result"])["text"] == "two"
    done = load_state(second["entityState"])
    assert done.user_id == "u1" and [e.correlation_id for e in done.entries] == ["o1", "o1", "o2", "o2"]


def test_a_reset_of_an_owned_session_discards_its_turn_and_queue_and_keeps_its_owner(
    steps_app: df.DFApp, model: ModelServer
) -> None:
    model.script(Reply.tool_call("charge", {"amount": 1}, call_id="c"))
    ops = [("run", run_op("one", "q1", userId="u1")), ("run", run_op("two", "q2", userId="u1"))]
    first = _batch(steps_app, None, ops)
    reset = _batch(steps_app, first["entityState"], [("reset", None)])
    data = json.loads(reset["entityState"])["data"]
    assert "activeTurn" not in data and "queuedRuns" not in data
    assert {"q1", "q2"} <= set(data["discardedRuns"]) and data["userId"] == "u1"
    for stale in ({"correlationId": "q1", "step": 1}, {"correlationId": "q2", "step": 0}):
        out = _batch(steps_app, reset["entityState"], [("step", stale)])
        assert out["entityState"] == reset["entityState"] and out["signals"] == []
