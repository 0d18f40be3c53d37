"""The AG-UI route over real sockets, every event validated with ag-ui-protocol's own models: a
plain turn, a tool call, an approval as an interrupt answered by `resume`, a retried run id, a
dropped connection resumed with Last-Event-ID (no event lost or repeated), a failed run, bad input
(a problem naming the field, nothing stored) and another user's thread (not found)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import aiohttp
from ag_ui.core import Event
from e2e_support import FUNCTION_KEY, HostProcess
from pydantic import TypeAdapter

from agents.testing import ModelServer, Reply

EVENT: TypeAdapter[Any] = TypeAdapter(Event)
HEADERS = {"x-functions-key": FUNCTION_KEY, "accept": "text/event-stream"}


def run_input(thread: str, run: str, text: str | None = "Hi", **extra: Any) -> dict[str, Any]:
    messages = [] if text is None else [{"id": f"m-{run}", "role": "user", "content": text}]
    return {"threadId": thread, "runId": run, "messages": messages, "state": {}, "tools": [],
            "context": [], "forwardedProps": {}, **extra}  # fmt: skip


async def read_events(
    answer: aiohttp.ClientResponse, stop_after: int | None = None
) -> list[tuple[str | None, dict[str, Any]]]:
    """(id, event) of each SSE event, each checked against the protocol's models."""
    out: list[tuple[str | None, dict[str, Any]]] = []
    event_id: str | None = None
    data = ""
    async for raw in answer.content:
        line = raw.decode().rstrip("\n")
        if line.startswith("id: "):
            event_id = line[4:]
        elif line.startswith("data: "):
            data += line[6:]
        elif line == "" and data:
            event = json.loads(data)
            EVENT.validate_python(event)  # raises on anything that is not an AG-UI event
            out.append((event_id, event))
            event_id, data = None, ""
            if stop_after is not None and len(out) >= stop_after:
                break
    return out


async def post(
    http: aiohttp.ClientSession, host: HostProcess, body: Any, agent: str = "assistant", **headers: str
) -> aiohttp.ClientResponse:
    return await http.post(
        f"{host.url}/api/agents/{agent}/ag-ui", data=json.dumps(body), headers={**HEADERS, **headers}
    )


def kinds(events: list[tuple[str | None, dict[str, Any]]]) -> list[str]:
    return [e["type"] for _, e in events]


def text(events: list[tuple[str | None, dict[str, Any]]]) -> str:
    return "".join(e["delta"] for _, e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


async def test_a_turn_with_a_tool_call_is_the_ag_ui_event_stream(
    e2e_host: HostProcess, model: ModelServer
) -> None:
    thread, run = f"t-{uuid.uuid4().hex[:8]}", str(uuid.uuid4())
    model.script(Reply.tool_call("get_time", {"city": "Paris"}, call_id="call-1"), Reply.text("It is noon."))
    body = run_input(thread, run)
    async with aiohttp.ClientSession() as http, await post(http, e2e_host, body, "concierge") as a:
        assert a.status == 200 and a.headers["content-type"].startswith("text/event-stream")
        events = await read_events(a)
    seen = kinds(events)
    assert seen[0] == "RUN_STARTED" and seen[-1] == "RUN_FINISHED", seen
    assert seen.index("TOOL_CALL_START") < seen.index("TOOL_CALL_END") < seen.index("TOOL_CALL_RESULT")
    start = next(e for _, e in events if e["type"] == "TOOL_CALL_START")
    assert start["toolCallId"] == "call-1" and start["toolCallName"] == "get_time"
    args = "".join(e["delta"] for _, e in events if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args) == {"city": "Paris"}
    assert text(events) == "It is noon."
    assert events[-1][1]["outcome"] == {"type": "success"}
    assert events[0][1]["threadId"] == thread and events[0][1]["runId"] == run
    ids = [i for i, _ in events if i is not None]
    assert len(ids) == len(set(ids))  # every event resumable from


async def test_a_dropped_stream_resumes_after_its_last_event_and_a_retried_run_runs_once(
    e2e_host: HostProcess, model: ModelServer
) -> None:
    thread, run = f"t-{uuid.uuid4().hex[:8]}", str(uuid.uuid4())
    model.stream_delay = 0.02
    model.script(Reply.text("one two three four five six"))
    body = run_input(thread, run, "Count")
    async with aiohttp.ClientSession() as http:
        async with await post(http, e2e_host, body) as first:
            head = await read_events(first, stop_after=4)  # the connection drops here
        last_id = next(i for i, _ in reversed(head) if i is not None)
        async with await post(http, e2e_host, body, **{"Last-Event-ID": last_id}) as again:
            tail = await read_events(again)
        async with await post(http, e2e_host, body) as whole:
            replay = await read_events(whole)
    assert len(model.requests) == 1  # the same run id: the run once, followed three times
    assert tail[0][1]["type"] == "RUN_STARTED" and tail[-1][1]["type"] == "RUN_FINISHED"
    got = [e for i, e in head if i is not None] + [e for i, e in tail if i is not None]
    assert got == [e for i, e in replay if i is not None]  # nothing lost, nothing twice
    assert text(replay) == "one two three four five six"


async def test_an_approval_is_an_interrupt_and_resume_decides_it(
    e2e_host: HostProcess, model: ModelServer
) -> None:
    thread, run = f"t-{uuid.uuid4().hex[:8]}", str(uuid.uuid4())
    booking = {"city": "Paris", "nights": 2}
    model.script(Reply.tool_call("book_hotel", booking, call_id="call-b"), Reply.text("Booked."))
    async with aiohttp.ClientSession() as http:
        async with await post(http, e2e_host, run_input(thread, run, "book it"), "concierge") as a:
            paused = await read_events(a)
        finished = paused[-1][1]
        assert finished["type"] == "RUN_FINISHED" and finished["outcome"]["type"] == "interrupt", finished
        [interrupt] = finished["outcome"]["interrupts"]
        assert interrupt["toolCallId"] == "call-b" and interrupt["reason"] == "tool_approval"
        assert len(model.requests) == 1
        resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
        body = run_input(thread, str(uuid.uuid4()), None, resume=resume)
        async with await post(http, e2e_host, body, "concierge") as a:
            resumed = await read_events(a)
    assert kinds(resumed)[0] == "RUN_STARTED" and resumed[-1][1]["outcome"] == {"type": "success"}
    assert "TOOL_CALL_RESULT" in kinds(resumed) and text(resumed) == "Booked."
    assert len(model.requests) == 2


async def test_a_failed_run_ends_run_error(e2e_host: HostProcess, model: ModelServer) -> None:
    model.script(Reply.error(400, "The prompt was refused.", code="content_filter"))
    body = run_input(f"t-{uuid.uuid4().hex[:8]}", str(uuid.uuid4()))
    async with aiohttp.ClientSession() as http, await post(http, e2e_host, body) as a:
        events = await read_events(a)
    assert kinds(events)[0] == "RUN_STARTED" and events[-1][1]["type"] == "RUN_ERROR"
    assert events[-1][1]["code"] == "content_filter"


async def test_bad_input_is_a_problem_naming_the_field_and_nothing_is_stored(
    e2e_host: HostProcess, model: ModelServer
) -> None:
    thread = f"t-{uuid.uuid4().hex[:8]}"
    cases: list[tuple[Any, str]] = [
        ({"threadId": thread, "messages": []}, "runId"),
        (run_input(thread, "r1", tools=[{"name": "ui", "description": "front end"}]), "tools"),
        (run_input(thread, "r2", state={"x": 1}), "state"),
        (run_input(thread, "r3", context=[{"description": "d", "value": "v"}]), "context"),
        (run_input(thread, "r4", None), "messages"),
        (run_input("bad thread!", "r5"), "threadId"),
        ("not an object", "body"),
    ]
    async with aiohttp.ClientSession() as http:
        for body, field in cases:
            async with await post(http, e2e_host, body) as answer:
                problem = await answer.json(content_type=None)
                assert answer.status == 400, problem
                assert answer.headers["content-type"].startswith("application/problem+json")
                assert problem["field"] == field, (field, problem)
        stored = f"{e2e_host.url}/api/agents/assistant/sessions/{thread}"
        async with http.get(stored, headers={"x-functions-key": FUNCTION_KEY}) as session:
            assert session.status == 404
    assert model.requests == []


async def test_another_users_thread_is_not_found(e2e_host: HostProcess, model: ModelServer) -> None:
    thread = f"t-{uuid.uuid4().hex[:8]}"
    model.script(Reply.text("for alice only"))
    async with aiohttp.ClientSession() as http:
        url = f"{e2e_host.url}/api/agents/assistant/ag-ui"
        body = json.dumps(run_input(thread, str(uuid.uuid4())))
        async with http.post(url, params={"user_id": "alice"}, data=body, headers=HEADERS) as a:
            assert text(await read_events(a)) == "for alice only"
        body = json.dumps(run_input(thread, str(uuid.uuid4())))
        async with http.post(url, params={"user_id": "bob"}, data=body, headers=HEADERS) as b:
            problem = await b.json(content_type=None)
            assert b.status == 404, problem
    assert len(model.requests) == 1
