"""`multitask_strategy` `steer` on the real host over real sockets: a run steered into a running
turn is given to the model at the turn's next model call (after the tool results, never between
a tool call and its result), its caller is answered with the running run's answer, its own run
resource points at that run; with no turn running it is an ordinary run; a turn awaiting approval
sees it after the decision; the four strategies sent concurrently are each answered as they say."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from e2e_support import Client, eventually

from agents.testing import ModelRequest, ModelServer, Reply

AGENT = "concierge"  # has the get_weather tool (no approval) and book_hotel (needs approval)


def users(request: ModelRequest) -> list[str]:
    return [m.text for m in request.messages if m.role == "user"]


def slow_first_step(seconds: float) -> Callable[[ModelRequest], Awaitable[Reply]]:
    """A turn "slow steer" asks for get_weather after `seconds`, then answers with the last user
    message it sees (the one after the tool result, when one was steered in); any other turn is
    answered at once with its text upper-cased."""

    async def handler(request: ModelRequest) -> Reply:
        messages = request.messages
        if messages[-1].role == "user" and messages[-1].text == "slow steer":
            await asyncio.sleep(seconds)
            return Reply.tool_call("get_weather", {"city": "Paris"})
        if messages[-1].role == "tool" or (len(messages) > 1 and messages[-2].role == "tool"):
            return Reply.text("seen: " + users(request)[-1])  # the slow turn's second model call
        return Reply.text((request.last_user_text or "").upper())

    return handler


async def first_call(model: ModelServer) -> None:
    async def called() -> bool:
        return bool(model.requests)

    await eventually(called, "the turn's first model call")


async def test_a_steer_joins_the_running_turn_after_its_tool_results(
    client: Client, model: ModelServer
) -> None:
    model.handler = slow_first_step(3)
    session = "steer-tool"
    first = await client.run(AGENT, "slow steer", session, correlation_id="long", wait_for_response=False)
    assert first.status == 202, first.body
    await first_call(model)
    steer = await client.run(
        AGENT, "also in Lyon", session, correlation_id="st-1", multitask_strategy="steer"
    )
    assert steer.status == 200, steer.body
    assert steer.json()["correlation_id"] == "long", steer.body  # the running run's answer
    assert steer.json()["response"]["text"] == "seen: also in Lyon", steer.body
    last = model.requests[-1].messages
    assert [m.role for m in last][-2:] == ["tool", "user"] and last[-1].text == "also in Lyon"
    assert len(model.requests) == 2  # no turn of its own
    # Its own run resource answers as the run it joined.
    own = await client.get(f"/api/agents/{AGENT}/sessions/{session}/runs/st-1")
    assert own.status == 200 and own.json()["correlation_id"] == "long", own.body
    # Sent again: the same answer, nothing runs again.
    again = await client.run(
        AGENT, "also in Lyon", session, correlation_id="st-1", multitask_strategy="steer"
    )
    assert again.status == 200 and again.json()["correlation_id"] == "long", again.body
    assert len(model.requests) == 2
    # The history keeps it in the running run's response, after the tool result.
    state = await client.session_state(AGENT, session)
    assert "also in Lyon" in str(state), state


async def test_a_steer_with_nothing_running_is_an_ordinary_run(client: Client, model: ModelServer) -> None:
    model.handler = slow_first_step(0)
    answer = await client.run(AGENT, "hello", "steer-idle", correlation_id="idle", multitask_strategy="steer")
    assert answer.status == 200, answer.body
    assert answer.json()["correlation_id"] == "idle" and answer.json()["response"]["text"] == "HELLO"


async def test_a_streamed_steer_is_a_400_naming_the_field(client: Client, model: ModelServer) -> None:
    answer = await client.post(
        f"/api/agents/{AGENT}/run",
        json_body={"message": "x", "session_id": "steer-sse", "multitask_strategy": "steer"},
        headers={"Accept": "text/event-stream"},
    )
    assert answer.status == 400 and answer.json()["field"] == "multitask_strategy", answer.body
    assert "JSON only" in answer.json()["detail"], answer.body  # not an unknown strategy
    assert not model.requests


async def test_a_steer_into_a_turn_awaiting_approval_is_seen_after_the_decision(
    client: Client, model: ModelServer
) -> None:
    model.script(Reply.tool_call("book_hotel", {"city": "Paris", "nights": 2}, call_id="call-1"))
    session, run = "steer-approval", "booking"
    paused = await client.run(AGENT, "book it", session, correlation_id=run)
    assert paused.status == 202 and paused.json()["status"] == "awaiting_approval", paused.body
    steer = await client.run(
        AGENT, "two nights only", session, correlation_id="st-a", multitask_strategy="steer"
    )
    assert steer.status == 202, steer.body
    assert steer.headers["location"].endswith(f"/sessions/{session}/runs/{run}"), steer.headers
    assert steer.json()["status"] == "awaiting_approval", steer.body
    model.script(Reply.text("Booked, two nights."))
    path = f"/api/agents/{AGENT}/sessions/{session}/runs/{run}"
    decided = await client.post(path + "/approvals", json_body={"call_id": "call-1", "approved": True})
    assert decided.status == 200, decided.body
    done = await client.get(f"/api/agents/{AGENT}/sessions/{session}/runs/st-a?wait=20")
    assert done.json()["status"] == "succeeded" and done.json()["correlation_id"] == run, done.body
    last = model.requests[-1].messages
    assert [m.role for m in last][-2:] == ["tool", "user"] and last[-1].text == "two nights only"


async def test_the_four_strategies_sent_concurrently(client: Client, model: ModelServer) -> None:
    model.handler = slow_first_step(3)
    sessions = [f"steer-four-{s}" for s in ("enqueue", "reject", "interrupt", "steer")]
    for session in sessions:
        first = await client.run(AGENT, "slow steer", session, correlation_id="long", wait_for_response=False)
        assert first.status == 202, first.body
    await first_call(model)
    enqueued, rejected, interrupting, steered = await asyncio.gather(
        *(
            client.run(AGENT, f"now {s}", session, correlation_id=f"c-{s}", multitask_strategy=s)
            for s, session in zip(("enqueue", "reject", "interrupt", "steer"), sessions, strict=True)
        )
    )
    assert enqueued.status == 200 and enqueued.json()["response"]["text"] == "NOW ENQUEUE", enqueued.body
    assert rejected.status == 409 and rejected.json()["code"] == "session_busy", rejected.body
    assert interrupting.status == 200, interrupting.body
    assert interrupting.json()["response"]["text"] == "NOW INTERRUPT", interrupting.body
    assert steered.status == 200 and steered.json()["correlation_id"] == "long", steered.body
    assert steered.json()["response"]["text"] == "seen: now steer", steered.body
    # Every run has exactly one terminal answer; the rejected one was refused at the edge during
    # the first step (the run in flight's claim) and never sent.
    expected = {
        "steer-four-enqueue": {"long": "succeeded", "c-enqueue": "succeeded"},
        "steer-four-reject": {"long": "succeeded"},
        "steer-four-interrupt": {"long": "cancelled", "c-interrupt": "succeeded"},
        "steer-four-steer": {"long": "succeeded", "c-steer": "succeeded"},
    }
    for session, runs in expected.items():
        for cid, status in runs.items():
            polled = await client.get(f"/api/agents/{AGENT}/sessions/{session}/runs/{cid}?wait=20")
            assert polled.json()["status"] == status, (session, cid, polled.body)
    assert not any(r.last_user_text == "now reject" for r in model.requests)
