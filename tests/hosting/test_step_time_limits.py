"""The time limits of a turn of steps (hosting.entity._deadline, hosting.entity._steps): the turn's
deadline is counted from its start across its steps; a step its batch's budget ends is run again
in a later batch when it started late in its batch, and fails the turn when it had the whole
budget."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import azure.durable_functions as df
import pytest
from hosting_support import run_op
from test_turn_steps import _batch, _signalled, steps_app  # noqa: F401 (the app fixture)

from agents.testing import ModelRequest, ModelServer, Reply
from hosting.entity import _deadline, _steps
from hosting.entity._deadline import StepTime, TimeLimits, batch_clock, step_time
from state import load_state


class Clock:
    """`time.monotonic` for _deadline, moved on by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_the_turn_deadline_is_counted_from_the_turns_start() -> None:
    limits = TimeLimits(turn_deadline=180, function_timeout=None)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    started = (now - timedelta(seconds=100)).isoformat()
    time = step_time(limits, started, now)
    assert time == StepTime(80.0, 80.0) and not time.batch_bound and not time.deferrable
    late = step_time(limits, (now - timedelta(seconds=200)).isoformat(), now)
    assert late.seconds == -20.0 and not late.deferrable
    # An unreadable start keeps the whole deadline rather than failing the turn.
    assert step_time(limits, "not a time", now).seconds == 180.0


def test_a_step_late_in_its_batch_is_deferrable_and_one_at_its_start_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock()
    monkeypatch.setattr(_deadline, "time", clock)
    limits = TimeLimits(turn_deadline=180, function_timeout=100)  # a budget of 80 s
    now = datetime.now(UTC)
    with batch_clock(limits):
        clock.now += 0.5  # quick operations before it
        first = step_time(limits, now.isoformat(), now)
        assert first.seconds == 79.5 and first.batch_bound and first.fresh and not first.deferrable
        clock.now += 20  # a slow operation before it
        later = step_time(limits, now.isoformat(), now)
        assert later.seconds == 59.5 and later.deferrable
    # The turn's deadline ends it first: failed, never deferred.
    with batch_clock(limits):
        clock.now += 20
        ending = step_time(limits, (now - timedelta(seconds=150)).isoformat(), now)
        assert ending.seconds == 30.0 and not ending.batch_bound and not ending.deferrable


def _started_turn(app: df.DFApp, model: ModelServer, cid: str) -> dict[str, Any]:
    """A turn whose first step asked for a tool: its next step is 1."""
    model.script(Reply.tool_call("charge", {"amount": 1}, call_id="c"))
    return _batch(app, None, [("run", run_op("pay 1", cid)), ("run", run_op("next", f"{cid}-next"))])


def _aged(entity_state: str, seconds: float) -> str:
    """The state with its turn in progress started `seconds` ago."""
    document = json.loads(entity_state)
    started = datetime.now(UTC) - timedelta(seconds=seconds)
    document["data"]["activeTurn"]["startedAt"] = started.isoformat()
    return json.dumps(document)


def test_a_step_past_the_turns_deadline_fails_the_turn_and_starts_the_next(
    steps_app: df.DFApp, model: ModelServer  # noqa: F811
) -> None:
    first = _started_turn(steps_app, model, "t-old")
    asked = len(model.requests)
    op = {"correlationId": "t-old", "step": 1}
    out = _batch(steps_app, _aged(first["entityState"], 181), [("step", op)])
    answer = json.loads(out["results"][0]["result"])
    assert answer["status"] == "failed" and answer["error"]["code"] == "timeout", answer
    assert "DURABLE_AGENTS_TURN_DEADLINE_SECONDS" in answer["error"]["message"]
    assert len(model.requests) == asked  # no model call for a turn out of time
    state = load_state(out["entityState"])
    run = state.find_run("t-old")
    assert run is not None and run.status == "failed" and state.active_turn is None
    assert _signalled(out) == [("step", {"correlationId": "t-old-next", "step": 0})]


def test_a_step_with_no_time_left_in_a_busy_batch_is_signalled_again_unchanged(
    steps_app: df.DFApp, model: ModelServer, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    first = _started_turn(steps_app, model, "t-busy")
    asked = len(model.requests)
    monkeypatch.setattr(_steps, "step_time", lambda limits, started: StepTime(0.0, 100.0, fresh=False))
    op = {"correlationId": "t-busy", "step": 1}
    out = _batch(steps_app, first["entityState"], [("step", op)])
    assert json.loads(out["results"][0]["result"]) == {**op, "status": "running"}
    assert _signalled(out) == [("step", op)]
    assert out["entityState"] == first["entityState"] and len(model.requests) == asked


@pytest.mark.parametrize("fresh", [False, True])
def test_a_step_its_batch_ends_midway_is_deferred_if_late_in_its_batch_else_failed(
    steps_app: df.DFApp, model: ModelServer, monkeypatch: pytest.MonkeyPatch, fresh: bool  # noqa: F811
) -> None:
    first = _started_turn(steps_app, model, f"t-mid-{fresh}")

    async def slow(request: ModelRequest) -> Reply:
        await asyncio.sleep(30)
        return Reply.text("too late")

    model.handler = slow
    monkeypatch.setattr(_steps, "step_time", lambda limits, started: StepTime(0.3, 100.0, fresh=fresh))
    op = {"correlationId": f"t-mid-{fresh}", "step": 1}
    # Step 1 runs the tool, then step 2 calls the slow model.
    tools = _batch(steps_app, first["entityState"], [("step", op)])
    assert _signalled(tools) == [("step", {**op, "step": 2})]
    out = _batch(steps_app, tools["entityState"], [("step", {**op, "step": 2})])
    answer = json.loads(out["results"][0]["result"])
    if fresh:
        assert answer["status"] == "failed" and answer["error"]["code"] == "timeout", answer
        assert "functionTimeout" in answer["error"]["message"]
        assert _signalled(out) == [("step", {"correlationId": f"t-mid-{fresh}-next", "step": 0})]
    else:
        assert answer == {**op, "status": "running", "step": 2}
        assert _signalled(out) == [("step", {**op, "step": 2})]
        assert out["entityState"] == tools["entityState"]  # nothing of the attempt is stored


def test_a_new_turn_deferred_at_its_first_step_is_stored_so_its_signal_runs_it(
    steps_app: df.DFApp, model: ModelServer, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    with monkeypatch.context() as patched:
        patched.setattr(_steps, "step_time", lambda limits, started: StepTime(0.0, 100.0, fresh=False))
        out = _batch(steps_app, None, [("run", run_op("pay 1", "t-new"))])
    op = {"correlationId": "t-new", "step": 0}
    assert json.loads(out["results"][0]["result"]) == {**op, "status": "running"}
    assert _signalled(out) == [("step", op)] and model.requests == []
    state = load_state(out["entityState"])
    assert state.active_turn is not None and state.active_turn["request"]["correlationId"] == "t-new"
    # The signal, in the next batch with time again, runs the turn's first step.
    model.script(Reply.text("paid"))
    ran = _batch(steps_app, out["entityState"], [("step", op)])
    assert json.loads(ran["results"][0]["result"])["text"] == "paid"
    assert load_state(ran["entityState"]).active_turn is None
