"""Runs a reset discarded get a terminal answer (410 run_discarded), and their Idempotency-Key is
never run again in the new history."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from hosting_support import ROOT, Api
from jsonschema import Draft202012Validator

from agents.testing import ModelServer, Reply
from state import load_state

RUN = "/api/agents/assistant/run"
SESSION = "reset-runs"


async def _stored(host: Any) -> str:
    text = await host._store.run(host._store.load_state, f"@dafx-assistant@{SESSION}")
    assert isinstance(text, str)
    return text


async def _reset(api: Api, host: Any) -> None:
    reset = await api.post(f"/api/agents/assistant/sessions/{SESSION}/reset")
    assert reset.status == 202
    deadline = time.monotonic() + 30
    while json.loads(await _stored(host))["data"]["conversationHistory"]:
        assert time.monotonic() < deadline, "the reset never ran"
        await asyncio.sleep(0.02)


async def test_runs_discarded_by_a_reset_answer_410_and_are_not_run_again(
    api: Api, host: Any, model: ModelServer
) -> None:
    model.script(Reply.text("first"))
    first = await api.post(RUN, json_body={"message": "hello", "session_id": SESSION},
                           headers={"Idempotency-Key": "key-1"})
    assert first.status == 200
    run_id = first.json()["correlation_id"]
    await _reset(api, host)

    started = time.monotonic()
    status = await api.get(f"/api/agents/assistant/sessions/{SESSION}/runs/{run_id}", params={"wait": "30"})
    assert status.status == 410, status.body  # at once, not pending until the wait runs out
    assert time.monotonic() - started < 10
    assert status.json()["code"] == "run_discarded" and status.mimetype == "application/problem+json"

    calls = len(model.requests)
    retry = await api.post(RUN, json_body={"message": "hello", "session_id": SESSION},
                           headers={"Idempotency-Key": "key-1"})
    assert retry.status == 410 and retry.json()["code"] == "run_discarded"
    assert len(model.requests) == calls  # the model was not called again
    assert json.loads(await _stored(host))["data"]["conversationHistory"] == []

    # New keys work in the new history; a second reset still remembers the first run.
    model.script(Reply.text("second"))
    fresh = await api.post(RUN, json_body={"message": "again", "session_id": SESSION},
                           headers={"Idempotency-Key": "key-2"})
    assert fresh.status == 200 and fresh.json()["response"]["text"] == "second"
    await _reset(api, host)
    text = await _stored(host)
    assert json.loads(text)["data"]["discardedRuns"] == [run_id, fresh.json()["correlation_id"]]
    load_state(text)  # the state package reads it
    for schema in (ROOT / "schemas" / "durable-agent-entity-state.json",
                   ROOT / "tests" / "state" / "fixtures" / "reference-1.1.0.schema.json"):
        assert not list(Draft202012Validator(json.loads(schema.read_text())).iter_errors(json.loads(text)))
