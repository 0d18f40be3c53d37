"""The entity's side of `multitask_strategy` through the Durable JSON batch protocol: `reject`
records a failed turn `session_busy` while a turn is in progress or runs are queued, `interrupt`
cancels the turn in progress and the queued runs and then runs, and a redelivered signal of
either changes nothing."""

from __future__ import annotations

import json
import pathlib

import azure.durable_functions as df
from hosting_support import run_op
from test_turn_steps import _batch, _signalled, steps_app  # noqa: F401 (the app fixture)

from agents.testing import ModelServer, Reply
from hosting.stored import StoredDocument, active_turn
from state import load_state


def _busy(steps_app: df.DFApp, model: ModelServer) -> str:  # noqa: F811
    """A session whose turn `one` is between its steps (its tool call done) and `two` queued."""
    model.script(Reply.tool_call("charge", {"amount": 1}, call_id="c"))
    out = _batch(steps_app, None, [("run", run_op("one", "one")), ("run", run_op("two", "two"))])
    state = load_state(out["entityState"])
    assert state.active_turn is not None and len(state.queued_runs) == 1
    text: str = out["entityState"]
    return text


def test_reject_records_session_busy_and_leaves_the_session_as_it_was(
    steps_app: df.DFApp, model: ModelServer  # noqa: F811
) -> None:
    busy = _busy(steps_app, model)
    out = _batch(steps_app, busy, [("run", run_op("three", "three", multitaskStrategy="reject"))])
    answer = json.loads(out["results"][0]["result"])
    assert answer["status"] == "failed" and answer["error"]["code"] == "session_busy", answer
    assert "2 run(s) running or queued" in answer["error"]["message"]
    before, after = load_state(busy), load_state(out["entityState"])
    assert after.active_turn == before.active_turn and after.queued_runs == before.queued_runs
    assert after.find_run("three") is not None and out["signals"] == []
    assert [r.last_user_text for r in model.requests] == ["one"]  # no model call for it
    # Redelivered: answered from its record.
    op = run_op("three", "three", multitaskStrategy="reject")
    again = _batch(steps_app, out["entityState"], [("run", op)])
    assert json.loads(again["results"][0]["result"]) == answer
    assert again["entityState"] == out["entityState"]


def test_interrupt_cancels_the_turn_and_the_queue_then_runs(
    steps_app: df.DFApp, model: ModelServer  # noqa: F811
) -> None:
    busy = _busy(steps_app, model)
    model.script(Reply.text("three"))
    out = _batch(steps_app, busy, [("run", run_op("three", "three", multitaskStrategy="interrupt"))])
    answer = json.loads(out["results"][0]["result"])
    assert answer["status"] == "succeeded" and answer["text"] == "three", answer
    state = load_state(out["entityState"])
    assert state.active_turn is None and state.queued_runs == []
    for cid in ("one", "two"):
        run = state.find_run(cid)
        assert run is not None and run.status == "failed"
    [_request, response] = [e for e in state.entries if e.correlation_id == "one"]
    kinds = [c.type for m in response.messages for c in m.contents]
    assert kinds == ["functionCall", "error"], kinds  # its finished step is kept
    assert _signalled(out) == []  # nothing left to start, and no cancelled run starts
    # The cancelled and queued turns are not replayed to the model.
    assert [r.last_user_text for r in model.requests] == ["one", "three"]
    assert [m.text for m in model.requests[-1].messages if m.role == "user"] == ["three"]


def test_a_redelivered_interrupt_does_not_cancel_its_own_turn(
    steps_app: df.DFApp, model: ModelServer  # noqa: F811
) -> None:
    busy = _busy(steps_app, model)
    model.script(Reply.tool_call("charge", {"amount": 2}, call_id="d"))
    op = run_op("three", "three", multitaskStrategy="interrupt")
    out = _batch(steps_app, busy, [("run", op)])
    assert json.loads(out["results"][0]["result"])["status"] == "running"
    again = _batch(steps_app, out["entityState"], [("run", op)])
    assert json.loads(again["results"][0]["result"]) == {"correlationId": "three", "status": "pending"}
    assert again["entityState"] == out["entityState"] and again["signals"] == []


def test_an_unknown_strategy_fails_the_operation_and_stores_nothing(
    steps_app: df.DFApp, model: ModelServer  # noqa: F811
) -> None:
    busy = _busy(steps_app, model)
    out = _batch(steps_app, busy, [("run", run_op("three", "three", multitaskStrategy="bogus"))])
    assert out["results"][0]["isError"] is True
    assert out["entityState"] == busy and out["signals"] == []


def test_steer_joins_the_running_turn_at_its_next_model_step(
    steps_app: df.DFApp, model: ModelServer  # noqa: F811
) -> None:
    model.script(Reply.tool_call("charge", {"amount": 1}, call_id="c"))
    first = _batch(steps_app, None, [("run", run_op("one", "one"))])
    op = run_op("also this", "two", multitaskStrategy="steer")
    out = _batch(steps_app, first["entityState"], [("run", op)])
    answer = json.loads(out["results"][0]["result"])
    assert answer == {"correlationId": "two", "status": "steered", "steeredInto": "one"}, answer
    stored = load_state(out["entityState"])
    assert stored.queued_runs == [] and out["signals"] == []
    assert stored.active_turn is not None
    assert [s["correlationId"] for s in stored.active_turn["steered"]] == ["two"]
    # Redelivered: nothing changes.
    again = _batch(steps_app, out["entityState"], [("run", op)])
    assert json.loads(again["results"][0]["result"]) == answer and again["entityState"] == out["entityState"]
    # The tool step runs first (the tool result must follow its call); the steer waits.
    tool = _batch(steps_app, out["entityState"], [("step", {"correlationId": "one", "step": 1})])
    after_tool = load_state(tool["entityState"]).active_turn
    assert after_tool is not None and len(after_tool["steered"]) == 1
    assert len(model.requests) == 1
    model.script(Reply.text("done"))
    last = _batch(steps_app, tool["entityState"], [("step", {"correlationId": "one", "step": 2})])
    assert json.loads(last["results"][0]["result"])["status"] == "succeeded"
    sent = model.requests[-1].messages
    assert [m.role for m in sent][-2:] == ["tool", "user"] and sent[-1].text == "also this"
    state = load_state(last["entityState"])
    assert state.active_turn is None and state.find_run("two") is None
    [_request, response] = [e for e in state.entries if e.correlation_id == "one"]
    assert [(m.role, m.text) for m in response.messages if m.role == "user"] == [("user", "also this")]


def test_steer_with_no_turn_in_progress_runs_as_an_ordinary_run(
    steps_app: df.DFApp, model: ModelServer  # noqa: F811
) -> None:
    model.script(Reply.text("hello"))
    out = _batch(steps_app, None, [("run", run_op("hi", "one", multitaskStrategy="steer"))])
    answer = json.loads(out["results"][0]["result"])
    assert answer["status"] == "succeeded" and answer["text"] == "hello", answer


def test_the_1_7_0_fixture_names_the_run_a_steered_run_joined() -> None:
    fixture = pathlib.Path(__file__).parents[1] / "state" / "fixtures" / "state-1.7.0-awaiting-approval.json"
    state = load_state(fixture.read_bytes())
    turn = active_turn(state)
    assert turn is not None and [s.correlation_id for s in turn.steered] == ["run-3"]
    assert turn.waiting  # awaiting approval: its next step runs tools, the steer waits for the one after
    assert turn.with_steered_applied() is turn
    document = StoredDocument.of_state(state)
    assert document.steered_into("run-3") == "run-2" and document.steered_into("run-2") is None
