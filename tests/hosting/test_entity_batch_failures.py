"""A batch the Durable SDK itself fails still answers its runs: each `run` is recorded as a failed
turn `internal_error` (hosting.entity._batch), through the JSON batch protocol."""

from __future__ import annotations

import json
from typing import Any

import azure.durable_functions as df
import pytest
from hosting_support import batch_request, call_entity, functions, run_batch, run_op

from agents.testing import ModelServer, Reply
from state import load_state

ENTITY = "dafx-assistant"


def sdk_failing_batch(app: df.DFApp, key: str, state: str | None, operations: list[tuple[str, Any]]) -> Any:
    """A batch request the SDK cannot read: it builds its context from every top-level property
    (`DurableEntityContext(**request)`), so one it does not know makes it raise before any
    operation runs, as a newer extension's request could."""
    request = {**batch_request(ENTITY, key, state, operations), "newerProperty": True}
    handle = functions(app)[ENTITY].get_user_function()
    return json.loads(call_entity(handle, json.dumps(request)))


def test_the_sdk_really_fails_on_such_a_request() -> None:
    request = batch_request(ENTITY, "k", None, [])
    with pytest.raises(TypeError):
        df.Entity.create(lambda context: None)(json.dumps({**request, "newerProperty": 1}))


def test_runs_of_a_batch_the_sdk_fails_are_recorded_as_internal_error(
    app: df.DFApp, model: ModelServer
) -> None:
    model.script(Reply.text("before"))
    first = run_batch(app, ENTITY, "sdk-fails", None, [("run", run_op("hello", "done"))])
    assert first.state is not None
    calls = len(model.requests)
    out = sdk_failing_batch(
        app, "sdk-fails", first.state,
        [("run", run_op("again", "lost")), ("get", None), ("run", run_op("hello", "done"))],
    )
    assert len(model.requests) == calls  # nothing ran
    assert out["entityExists"] is True
    results = [(r["isError"], json.loads(r["result"])) for r in out["results"]]
    (ok, lost), (get_failed, get_error), (done_ok, done) = results
    assert ok is False and lost["status"] == "failed"
    assert lost["error"]["code"] == "internal_error" and "Durable Functions SDK" in lost["error"]["message"]
    assert "TypeError" in lost["error"]["message"]
    assert get_failed is True and "Durable Functions SDK" in get_error
    assert done_ok is False and done["status"] == "succeeded"  # answered from the history, not re-recorded
    state = load_state(out["entityState"])
    lost_run, done_run = state.find_run("lost"), state.find_run("done")
    assert lost_run is not None and lost_run.status == "failed"
    assert done_run is not None and done_run.status == "succeeded"
    assert len(state.entries) == 4


def test_a_new_session_in_a_failed_batch_is_created_with_the_failed_run(app: df.DFApp) -> None:
    out = sdk_failing_batch(app, "sdk-fails-new", None, [("run", run_op("hi", "first"))])
    assert out["entityExists"] is True
    [result] = out["results"]
    assert result["isError"] is False and json.loads(result["result"])["error"]["code"] == "internal_error"
    run = load_state(out["entityState"]).find_run("first")
    assert run is not None and run.status == "failed"


def test_a_request_that_is_not_json_is_left_to_the_hosts_retries(app: df.DFApp) -> None:
    handle = functions(app)[ENTITY].get_user_function()
    with pytest.raises(ValueError):
        call_entity(handle, "{not json")
