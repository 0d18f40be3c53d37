"""A session's first turn while its first step runs (the stored state does not show it until the
step ends; for an agent without tools that is the whole turn), on every stream store: a `reject`
run is refused 409 at once, and another user's run routes (interrupt, cancel, status) answer 404
and change nothing, as their session does once stored. The run's claim in the stream store is
what knows the run is in flight and whose it is."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import aiohttp
import pytest
from e2e_support import Client, HostProcess, eventually

from agents.testing import ModelServer, Reply

AGENT = "assistant"  # no tools: a turn is one step
RUN = f"/api/agents/{AGENT}/run"


@pytest.fixture
async def sclient(http: aiohttp.ClientSession, stream_host: HostProcess) -> AsyncIterator[Client]:
    yield Client(http, stream_host.url)


def _sid() -> str:
    return "first-" + uuid.uuid4().hex[:12]


def _as(user: str | None) -> str:
    return "" if user is None else f"?user_id={user}"


async def _first_turn_running(client: Client, model: ModelServer, session: str, user: str | None) -> None:
    """Start `session`'s first turn (4 s at the model) for `user` and wait until it is 1 s in."""
    model.script(Reply.delay(4.0, then=Reply.text("first answer")), Reply.text("later"))
    body = {"message": "hi", "session_id": session, "correlation_id": "first", "wait_for_response": False}
    if user is not None:
        body["user_id"] = user
    assert (await client.post(RUN, json_body=body)).status == 202

    async def at_model() -> bool:
        return bool(model.requests)

    await eventually(at_model, "the first turn's model call")
    await asyncio.sleep(1.0)  # into the first step, as the scenario has it


async def test_reject_during_a_first_step_is_refused_at_once(sclient: Client, model: ModelServer) -> None:
    session = _sid()
    await _first_turn_running(sclient, model, session, None)
    started = time.monotonic()
    refused = await sclient.run(AGENT, "now?", session, correlation_id="rej", multitask_strategy="reject")
    elapsed = time.monotonic() - started
    assert refused.status == 409 and refused.json()["code"] == "session_busy", refused.body
    assert elapsed < 0.5, elapsed
    done = await sclient.get(f"/api/agents/{AGENT}/sessions/{session}/runs/first?wait=20")
    assert done.json()["status"] == "succeeded", done.body
    assert not any(r.last_user_text == "now?" for r in model.requests)
    # Once the turn is over, the same strategy runs.
    idle = await sclient.run(AGENT, "now", session, multitask_strategy="reject")
    assert idle.status == 200, idle.body


@pytest.mark.parametrize("intruder", ["bob", None])
async def test_another_users_interrupt_leaves_a_first_turn_alone(
    sclient: Client, model: ModelServer, intruder: str | None
) -> None:
    session = _sid()
    await _first_turn_running(sclient, model, session, "alice")
    body = {"message": "stop that", "session_id": session, "multitask_strategy": "interrupt"}
    if intruder is not None:
        body["user_id"] = intruder
    refused = await sclient.post(RUN, json_body=body)
    assert refused.status == 404 and refused.json()["code"] == "session_not_found", refused.body
    done = await sclient.get(f"/api/agents/{AGENT}/sessions/{session}/runs/first?wait=20&user_id=alice")
    assert done.status == 200 and done.json()["status"] == "succeeded", done.body
    assert done.json()["response"]["text"] == "first answer"
    assert not any(r.last_user_text == "stop that" for r in model.requests)


@pytest.mark.parametrize("intruder", ["bob", None])
async def test_another_users_cancel_and_status_of_a_first_turn_are_404(
    sclient: Client, model: ModelServer, intruder: str | None
) -> None:
    session = _sid()
    await _first_turn_running(sclient, model, session, "alice")
    run = f"/api/agents/{AGENT}/sessions/{session}/runs/first"
    status = await sclient.get(run + _as(intruder))
    assert status.status == 404 and status.json()["code"] == "session_not_found", status.body
    cancel = await sclient.post(f"{run}/cancel{_as(intruder)}")
    assert cancel.status == 404 and cancel.json()["code"] == "session_not_found", cancel.body
    done = await sclient.get(f"{run}?wait=20&user_id=alice")
    assert done.status == 200 and done.json()["status"] == "succeeded", done.body
    # Once stored, the session's owner decides: still 404 to them.
    after = await sclient.get(run + _as(intruder))
    assert after.status == 404, after.body


async def test_another_users_refused_run_leaves_no_busy_session_behind(
    sclient: Client, model: ModelServer
) -> None:
    # Bob's run, sent while alice's first turn was pending, is refused by the entity once her
    # session is stored; its claim stays in the store, yet it is no run of her session.
    session = _sid()
    await _first_turn_running(sclient, model, session, "alice")
    body = {"message": "mine now", "session_id": session, "user_id": "bob", "wait_for_response": False}
    assert (await sclient.post(RUN, json_body=body)).status in (202, 404)
    done = await sclient.get(f"/api/agents/{AGENT}/sessions/{session}/runs/first?wait=20&user_id=alice")
    assert done.json()["status"] == "succeeded", done.body
    free = await sclient.run(AGENT, "now", session, user_id="alice", multitask_strategy="reject")
    assert free.status == 200 and free.json()["response"]["text"] == "later", free.body
    assert not any(r.last_user_text == "mine now" for r in model.requests)
