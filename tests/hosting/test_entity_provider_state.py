"""A session whose stored provider state does not fit the provider's model: the entity records a
failed turn (`provider_error`, naming the provider) instead of crashing, and keeps the bag."""

from __future__ import annotations

import json

from hosting_support import run_batch, run_op

from agents import Agent, MemoryProvider, ModelSettings, RetryPolicy
from agents.testing import ModelServer
from hosting import build_app
from state import AgentState, dump_state, load_state


def test_unfit_provider_state_is_a_failed_turn_and_stays_stored(model: ModelServer) -> None:
    settings = ModelSettings(
        model="m", base_url=model.base_url, api_key="k", retry=RetryPolicy(max_attempts=1)
    )
    app = build_app([Agent(name="memo", model=settings, context_providers=[MemoryProvider()])])
    state = AgentState.new()
    state.state_bag["memory"] = {"facts": "not a list", "nextId": 1}
    stored = dump_state(state)
    out = run_batch(
        app, "dafx-memo", "s", stored, [("run", run_op("hi", "c1")), ("run", run_op("again", "c2"))]
    )
    for result in out.results:
        assert result.is_error is False  # an answer, not a crashed operation
        assert result.value["status"] == "failed"
        assert result.value["error"]["code"] == "provider_error"
        assert "'memory'" in result.value["error"]["message"]
    assert out.state is not None
    after = load_state(out.state)
    assert after.state_bag == {"memory": {"facts": "not a list", "nextId": 1}}
    assert [r.status for r in (after.find_run("c1"), after.find_run("c2")) if r] == ["failed", "failed"]
    assert json.loads(out.state)["data"]["stateBag"] == json.loads(stored)["data"]["stateBag"]
    assert model.requests == []
