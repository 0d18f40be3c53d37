"""The entity's `cancel` operation through the Durable JSON batch protocol: a queued run never
starts, a turn between its steps ends `run_cancelled` keeping the steps it finished, a finished
run is answered unchanged."""

from __future__ import annotations

import json

import azure.durable_functions as df
from hosting_support import run_op
from test_turn_steps import _batch, _signalled, steps_app  # noqa: F401 (the app fixture)

from agents.testing import ModelServer, Reply
from state import load_state


def test_a_queued_run_cancelled_never_starts(steps_app: df.DFApp, model: ModelServer) -> None:  # noqa: F811
    model.script(Reply.tool_call("charge", {"amount": 1}, call_id="c"), Reply.text("one"))
    first = _batch(steps_app, None, [("run", run_op("one", "q-1")), ("run", run_op("two", "q-2"))])
    out = _batch(steps_app, first["entityState"], [("cancel", {"correlationId": "q-2"})])
    answer = json.loads(out["results"][0]["result"])
    assert answer["status"] == "failed" and answer["error"]["code"] == "run_cancelled", answer
    state = load_state(out["entityState"])
    assert state.queued_runs == [] and state.active_turn is not None  # the running turn goes on
    run = state.find_run("q-2")
    assert run is not None and run.status == "failed"
    assert out["signals"] == []  # the turn in progress is not disturbed
    # It ends as usual, and nothing is left to start.
    tools = _batch(steps_app, out["entityState"], [("step", {"correlationId": "q-1", "step": 1})])
    end = _batch(steps_app, tools["entityState"], [("step", {"correlationId": "q-1", "step": 2})])
    assert json.loads(end["results"][0]["result"])["text"] == "one" and end["signals"] == []
    assert [r.last_user_text for r in model.requests] == ["one", "one"]


def test_a_turn_cancelled_between_steps_keeps_its_finished_steps_and_starts_the_next(
    steps_app: df.DFApp, model: ModelServer  # noqa: F811
) -> None:
    model.script(Reply.tool_call("charge", {"amount": 1}, call_id="c"))
    first = _batch(steps_app, None, [("run", run_op("one", "b-1")), ("run", run_op("two", "b-2"))])
    out = _batch(steps_app, first["entityState"], [("cancel", {"correlationId": "b-1"})])
    answer = json.loads(out["results"][0]["result"])
    assert answer["error"]["code"] == "run_cancelled", answer
    state = load_state(out["entityState"])
    assert state.active_turn is None
    [_request, response] = [e for e in state.entries if e.correlation_id == "b-1"]
    # The model's finished step (its tool call) is kept, then the cancellation.
    kinds = [c.type for m in response.messages for c in m.contents]
    assert kinds == ["functionCall", "error"], kinds
    assert _signalled(out) == [("step", {"correlationId": "b-2", "step": 0})]
    # The step signal sent before the cancel finds no turn: the tool never runs.
    stale = _batch(steps_app, out["entityState"], [("step", {"correlationId": "b-1", "step": 1})])
    assert stale["entityState"] == out["entityState"] and stale["signals"] == []
    # A cancelled turn, like a failed one, is not replayed to the model.
    model.script(Reply.text("two"))
    second = _batch(steps_app, out["entityState"], [("step", {"correlationId": "b-2", "step": 0})])
    assert json.loads(second["results"][0]["result"])["text"] == "two"
    assert [m.text for m in model.requests[-1].messages if m.role == "user"] == ["two"]


def test_cancelling_a_finished_or_unknown_run_changes_nothing(
    steps_app: df.DFApp, model: ModelServer  # noqa: F811
) -> None:
    model.script(Reply.text("done"))
    first = _batch(steps_app, None, [("run", run_op("one", "f-1"))])
    out = _batch(
        steps_app,
        first["entityState"],
        [("cancel", {"correlationId": "f-1"}), ("cancel", {"correlationId": "nobody"})],
    )
    finished, unknown = (json.loads(r["result"]) for r in out["results"])
    assert finished["status"] == "succeeded" and finished["text"] == "done"
    assert unknown is None
    assert out["entityState"] == first["entityState"] and out["signals"] == []
    bad = _batch(steps_app, first["entityState"], [("cancel", "f-1")])
    assert bad["results"][0]["isError"] is True and bad["entityState"] == first["entityState"]
