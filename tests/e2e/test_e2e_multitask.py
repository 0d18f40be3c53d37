"""Runs sent to a busy session on the real host over real sockets, under concurrent requests:
`multitask_strategy` `enqueue` waits its turn, `reject` is answered 409 session_busy at once (by
the edge, from the stored state or the stream store's claim of the run in flight),
`interrupt` cancels the running and queued runs and then runs (`steer`: tests/e2e/test_e2e_steer.py);
an unknown strategy is a 400."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import httpx
from e2e_support import Client, HostProcess, eventually

from agents.testing import ModelRequest, ModelServer, Reply

AGENT = "concierge"  # has the get_weather tool: a turn of two steps


def slow_tools(first_step_seconds: float) -> Callable[[ModelRequest], Awaitable[Reply]]:
    """A model whose turn asks for a tool (after `first_step_seconds`), then never answers; any
    other message is answered at once with its own text upper-cased."""

    async def handler(request: ModelRequest) -> Reply:
        text = request.last_user_text or ""
        if text != "slow tools":
            return Reply.text(text.upper())
        if not any(m.role == "tool" for m in request.messages):
            await asyncio.sleep(first_step_seconds)
            return Reply.tool_call("get_weather", {"city": "Paris"})
        await asyncio.sleep(60)
        return Reply.text("too late")

    return handler


async def in_second_step(model: ModelServer) -> None:
    async def second_call() -> bool:
        return sum(1 for r in model.requests if r.last_user_text == "slow tools") >= 2

    await eventually(second_call, "the turn's second model call")


async def test_reject_answers_session_busy_at_once_while_a_turn_runs(
    client: Client, model: ModelServer
) -> None:
    model.handler = slow_tools(0)
    session = "mt-reject"
    first = await client.run(AGENT, "slow tools", session, correlation_id="long", wait_for_response=False)
    assert first.status == 202, first.body
    await in_second_step(model)
    started = time.monotonic()
    answers = await asyncio.gather(
        *(
            client.run(AGENT, f"no {i}", session, correlation_id=f"no-{i}", multitask_strategy="reject")
            for i in range(3)
        )
    )
    assert time.monotonic() - started < 5  # not after the turn (60 s)
    for answer in answers:
        assert answer.status == 409, answer.body
        assert answer.content_type == "application/problem+json"
        assert answer.json()["code"] == "session_busy", answer.body
    # Also through the query parameter.
    query = await client.post(
        f"/api/agents/{AGENT}/run?multitask_strategy=reject",
        json_body={"message": "q", "session_id": session},
    )
    assert query.status == 409 and query.json()["code"] == "session_busy", query.body
    assert not any(r.last_user_text.startswith("no ") for r in model.requests if r.last_user_text)
    assert (await client.post(f"/api/agents/{AGENT}/sessions/{session}/runs/long/cancel")).status == 202
    polled = await client.get(f"/api/agents/{AGENT}/sessions/{session}/runs/long?wait=20")
    assert polled.json()["status"] == "cancelled", polled.body
    # An idle session runs a `reject` run like any other.
    idle = await client.run(AGENT, "now", session, multitask_strategy="reject")
    assert idle.status == 200 and idle.json()["response"]["text"] == "NOW", idle.body


async def test_a_reject_during_a_first_step_the_stored_state_does_not_show_is_refused_at_once(
    client: Client, model: ModelServer
) -> None:
    # The turn's first step (3 s) is stored only when it ends: the stored state shows an idle
    # session, and the running run's claim in the stream store shows it in flight.
    model.handler = slow_tools(3)
    session = "mt-reject-entity"
    first = await client.run(AGENT, "slow tools", session, correlation_id="long", wait_for_response=False)
    assert first.status == 202, first.body

    async def first_call() -> bool:
        return bool(model.requests)

    await eventually(first_call, "the turn's first model call")
    started = time.monotonic()
    refused = await client.run(AGENT, "late", session, correlation_id="late", multitask_strategy="reject")
    assert refused.status == 409 and refused.json()["code"] == "session_busy", refused.body
    assert time.monotonic() - started < 1.5  # not after the first step
    assert not any(r.last_user_text == "late" for r in model.requests)
    await client.post(f"/api/agents/{AGENT}/sessions/{session}/runs/long/cancel")


async def test_a_streamed_reject_during_a_first_step_is_refused_409(
    client: Client, e2e_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    model.handler = slow_tools(3)
    session = "mt-reject-stream"
    first = await client.run(AGENT, "slow tools", session, correlation_id="long", wait_for_response=False)
    assert first.status == 202, first.body

    async def first_call() -> bool:
        return bool(model.requests)

    await eventually(first_call, "the turn's first model call")
    body = {"message": "late", "session_id": session, "multitask_strategy": "reject"}
    refused = await web.post(
        f"{e2e_host.url}/api/agents/{AGENT}/run", json=body, headers={"Accept": "text/event-stream"}
    )
    assert refused.status_code == 409, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.json()["code"] == "session_busy", refused.text
    await client.post(f"/api/agents/{AGENT}/sessions/{session}/runs/long/cancel")


async def test_interrupt_cancels_the_running_and_queued_runs_then_runs(
    client: Client, model: ModelServer
) -> None:
    # The queued run reaches the session during the turn's first step (1 s), so it is stored in
    # the session's queue when the interrupt comes, during the turn's second step.
    model.handler = slow_tools(1)
    session = "mt-interrupt"
    first = await client.run(AGENT, "slow tools", session, correlation_id="long", wait_for_response=False)
    assert first.status == 202, first.body

    async def first_call() -> bool:
        return bool(model.requests)

    await eventually(first_call, "the turn's first model call")
    queued = asyncio.create_task(client.run(AGENT, "queued", session, correlation_id="queued"))
    await in_second_step(model)

    async def reached() -> bool:
        state = await client.session_state(AGENT, session)
        queue = state["state"].get("data", {}).get("queuedRuns") or []
        return [q.get("correlationId") for q in queue] == ["queued"]

    await eventually(reached, "the queued run in the session's queue")
    started = time.monotonic()
    answer = await client.run(
        AGENT, "now please", session, correlation_id="now", multitask_strategy="interrupt"
    )
    took = time.monotonic() - started
    assert answer.status == 200 and answer.json()["response"]["text"] == "NOW PLEASE", answer.body
    assert took < 5, took  # the model call in flight (60 s) was abandoned
    waited = await asyncio.wait_for(queued, 20)
    assert waited.status == 409 and waited.json()["code"] == "run_cancelled", waited.body
    long = await client.get(f"/api/agents/{AGENT}/sessions/{session}/runs/long")
    assert long.json()["status"] == "cancelled", long.body
    assert not any(r.last_user_text == "queued" for r in model.requests)
    stored = await client.session_state(AGENT, session)
    assert [(t["correlation_id"], t["status"]) for t in stored["turns"]] == [
        ("long", "failed"), ("queued", "failed"), ("now", "succeeded")
    ]


async def test_enqueue_is_the_default_and_waits_its_turn(client: Client, model: ModelServer) -> None:
    model.handler = slow_tools(0)
    session = "mt-enqueue"
    await client.run(AGENT, "hello", session)
    answers = await asyncio.gather(
        client.run(AGENT, "one", session, multitask_strategy="enqueue"),
        client.run(AGENT, "two", session),
    )
    assert sorted(a.json()["response"]["text"] for a in answers) == ["ONE", "TWO"], [a.body for a in answers]


async def test_an_unknown_strategy_is_a_400_naming_the_field(client: Client, model: ModelServer) -> None:
    path = f"/api/agents/{AGENT}/run"
    cases = [
        (path, {"message": "x", "multitask_strategy": "rollback"}, "invalid_type"),
        (path, {"message": "x", "multitask_strategy": 3}, "invalid_type"),
        (path + "?multitask_strategy=steer-later", {"message": "x"}, "invalid_field"),
        (
            path + "?multitask_strategy=reject",
            {"message": "x", "multitask_strategy": "interrupt"},
            "conflicting_fields",
        ),
    ]
    for url, body, code in cases:
        answer = await client.post(url, json_body=body)
        assert answer.status == 400, (url, answer.body)
        problem = answer.json()
        assert problem["code"] == code and problem["field"] == "multitask_strategy", (url, problem)
    named = await client.post(path + "?multitask_strategy=steer-later", json_body={"message": "x"})
    assert "'enqueue', 'reject', 'interrupt', 'steer'" in named.json()["detail"], named.body
    body_named = await client.post(path, json_body={"message": "x", "multitask_strategy": "rollback"})
    assert "'enqueue', 'reject', 'interrupt' or 'steer'" in body_named.json()["detail"], body_named.body
    assert model.requests == []


async def test_interrupt_stops_a_turn_in_its_first_step(client: Client, model: ModelServer) -> None:
    # A one-step turn: its first (and only) step is stored only when it ends, so the stored state
    # shows nothing to cancel; the session's interrupt mark stops the model call in flight.
    model.handler = slow_tools(60)  # asks for its tool only after 60 s
    session = "mt-interrupt-first"
    first = await client.run(AGENT, "slow tools", session, correlation_id="long", wait_for_response=False)
    assert first.status == 202, first.body

    async def first_call() -> bool:
        return bool(model.requests)

    await eventually(first_call, "the turn's first model call")
    started = time.monotonic()
    answer = await client.run(
        AGENT, "instead", session, correlation_id="instead", multitask_strategy="interrupt"
    )
    assert answer.status == 200 and answer.json()["response"]["text"] == "INSTEAD", answer.body
    assert time.monotonic() - started < 5
    long = await client.get(f"/api/agents/{AGENT}/sessions/{session}/runs/long")
    assert long.json()["status"] == "cancelled", long.body
    # The mark is gone: the next runs of the session run (a turn of two steps included).
    model.handler = slow_tools(0)
    after = await client.run(AGENT, "after", session)
    assert after.status == 200 and after.json()["response"]["text"] == "AFTER", after.body
    model.script(Reply.tool_call("get_weather", {"city": "Paris"}), Reply.text("sunny"))
    model.handler = None
    two_steps = await client.run(AGENT, "weather?", session)
    assert two_steps.status == 200 and two_steps.json()["response"]["text"] == "sunny", two_steps.body
