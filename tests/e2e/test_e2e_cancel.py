"""Cancelling runs on the real host over real sockets: a model call in flight is abandoned within
a second and the stream ends `run.cancelled`; a queued run never starts; a finished run, an
unknown run and another user's run are refused with a problem that names why."""

from __future__ import annotations

import asyncio
import time

import httpx
from e2e_support import Client, HostProcess, eventually
from httpx_sse import aconnect_sse
from stream_support import TERMINAL, Seen, check_sequence, run_url, seen, streaming

from agents.testing import ModelRequest, ModelServer, Reply

AGENT = "assistant"


def cancel_path(session: str, run: str) -> str:
    return f"/api/agents/{AGENT}/sessions/{session}/runs/{run}/cancel"


async def never_answers(request: ModelRequest) -> Reply:
    await asyncio.sleep(60)
    return Reply.text("too late")


async def test_a_streamed_run_cancelled_mid_model_call_ends_within_a_second(
    client: Client, e2e_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    streaming(model, delay=0.5)  # 24 words, one every half second: 12 s if left alone
    session, run = "cancel-live", "cancel-live-1"
    body = {"message": "talk slowly", "session_id": session, "correlation_id": run}
    events: list[Seen] = []
    asked_at = 0.0
    async with aconnect_sse(
        web, "POST", run_url(e2e_host), json=body, headers={"Accept": "text/event-stream"}
    ) as source:
        async for sse in source.aiter_sse():
            if not sse.data:
                continue
            events.append(seen(sse))
            if events[-1].event == "text.delta" and not asked_at:
                asked_at = time.monotonic()
                answer = await client.post(cancel_path(session, run))
                assert answer.status == 202, answer.body
                assert answer.json()["status"] == "cancel_requested"
                assert answer.headers["location"].endswith(f"/sessions/{session}/runs/{run}")
            if events[-1].event in TERMINAL:
                break
    took = time.monotonic() - asked_at
    check_sequence(events)
    assert events[-1].event == "run.cancelled", events[-3:]
    assert events[-1].data["code"] == "run_cancelled" and events[-1].data["status"] == 409
    # Well before the model's answer would have ended (12 s); the bound is the store check's
    # quarter second plus the commit the terminal event waits for, on a loaded machine.
    assert took < 3.0, took
    assert sum(1 for e in events if e.event == "text.delta") < 10
    status = await client.get(f"/api/agents/{AGENT}/sessions/{session}/runs/{run}")
    assert status.status == 200 and status.json()["status"] == "cancelled", status.body
    assert status.json()["error"]["code"] == "run_cancelled"
    again = await client.post(cancel_path(session, run))
    assert again.status == 200 and again.json()["status"] == "cancelled", again.body
    # The session goes on; the cancelled turn is not replayed to the model.
    model.handler = lambda request: Reply.text("fresh")
    model.stream_delay = 0
    after = await client.run(AGENT, "a new question", session)
    assert after.status == 200 and after.json()["response"]["text"] == "fresh", after.body
    asked = [m.text for m in model.requests[-1].messages if m.role == "user"]
    assert asked == ["a new question"], asked


async def test_a_queued_run_cancelled_never_starts_and_its_caller_is_answered(
    client: Client, model: ModelServer
) -> None:
    model.handler = never_answers
    session = "cancel-queued"
    first = await client.run(AGENT, "the slow one", session, correlation_id="slow", wait_for_response=False)
    assert first.status == 202, first.body
    async def asked() -> bool:
        return bool(model.requests)

    await eventually(asked, "the first turn's model call")
    waiting = asyncio.create_task(client.run(AGENT, "the queued one", session, correlation_id="queued"))

    async def cancel_accepted() -> bool:
        answer = await client.post(cancel_path(session, "queued"))
        assert answer.status in (202, 404), answer.body  # 404 until the run reaches its session
        return answer.status == 202

    await eventually(cancel_accepted, "the queued run's cancel")
    # The session's operations wait for the step in flight; cancelling it (its model call is
    # abandoned within a second) lets the queued run's cancel be recorded at once after it.
    started = time.monotonic()
    assert (await client.post(cancel_path(session, "slow"))).status == 202
    polled = await client.get(f"/api/agents/{AGENT}/sessions/{session}/runs/slow?wait=20")
    assert polled.json()["status"] == "cancelled", polled.body
    answered = await asyncio.wait_for(waiting, 30)
    assert answered.status == 409 and answered.json()["code"] == "run_cancelled", answered.body
    assert time.monotonic() - started < 5
    assert [r.last_user_text for r in model.requests] == ["the slow one"]  # the queued one never ran
    stored = await client.session_state(AGENT, session)
    assert [t["correlation_id"] for t in stored["turns"]] == ["slow", "queued"]


async def test_what_cannot_be_cancelled_is_refused_by_name(client: Client, model: ModelServer) -> None:
    model.handler = lambda request: Reply.text("done")
    session = "cancel-refused"
    done = await client.run(AGENT, "quick", session, correlation_id="done", user_id="u-cancel")
    assert done.status == 200, done.body
    user = "?user_id=u-cancel"
    cases = {
        cancel_path(session, "done") + user: (409, "run_finished"),
        cancel_path(session, "never-sent") + user: (404, "run_not_found"),
        cancel_path("no-such-session", "done") + user: (404, "session_not_found"),
        cancel_path(session, "bad%20id") + user: (400, "invalid_correlation_id"),
        # Another user's session is no session at all to them.
        cancel_path(session, "done") + "?user_id=u-other": (404, "session_not_found"),
        f"/api/agents/nobody/sessions/{session}/runs/done/cancel": (404, "unknown_agent"),
    }
    for path, (status, code) in cases.items():
        answer = await client.post(path)
        assert answer.status == status, (path, answer.body)
        assert answer.content_type == "application/problem+json", (path, answer.body)
        assert answer.json()["code"] == code, (path, answer.body)
    run = await client.get(f"/api/agents/{AGENT}/sessions/{session}/runs/done{user}")
    assert run.json()["status"] == "succeeded"  # nothing changed
