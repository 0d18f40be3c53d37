"""A2A 1.0 (and 0.3) with the official `a2a-sdk` client against the real host: the card, a
message sent and streamed, a task read and cancelled, a context continued, an approval through
`input-required`, a retried messageId that runs once, another user's task as not found, a 0.3
client, and the protocol's own errors for bad input (nothing stored)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable

import httpx
import pytest
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from a2a.utils.constants import VERSION_HEADER
from a2a.utils.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from e2e_support import FUNCTION_KEY, HostProcess, eventually

from agents.testing import ModelRequest, ModelServer, Reply

AGENT = "assistant"
Connect = Callable[..., "AsyncIterator[Client]"]


def _http(user: str | None = None, version: str | None = None) -> httpx.AsyncClient:
    headers = {"x-functions-key": FUNCTION_KEY}
    if version is not None:
        headers[VERSION_HEADER] = version
    params = {"user_id": user} if user else None
    return httpx.AsyncClient(headers=headers, params=params, timeout=60)


async def _client(
    host: HostProcess, agent: str = AGENT, *, user: str | None = None, streaming: bool = False
) -> tuple[Client, httpx.AsyncClient]:
    http = _http(user)
    factory = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming))
    return await factory.create_from_url(f"{host.url}/api/a2a/{agent}"), http


@pytest.fixture
async def a2a(e2e_host: HostProcess, model: ModelServer) -> AsyncIterator[Client]:
    client, http = await _client(e2e_host)
    try:
        yield client
    finally:
        await client.close()
        await http.aclose()


def message(
    text: str = "", *, context: str = "", task: str = "", data: dict | None = None, mid: str = ""
) -> pb.Message:
    parts = [pb.Part(text=text)] if text else []
    if data is not None:
        part = pb.Part()
        part.data.struct_value.update(data)
        parts.append(part)
    return pb.Message(
        message_id=mid or uuid.uuid4().hex, role=pb.ROLE_USER, parts=parts, context_id=context, task_id=task
    )


async def send(
    client: Client, msg: pb.Message, *, return_immediately: bool = False
) -> list[pb.StreamResponse]:
    configuration = pb.SendMessageConfiguration(return_immediately=return_immediately)
    request = pb.SendMessageRequest(message=msg, configuration=configuration)
    return [event async for event in client.send_message(request)]


def final_task(events: list[pb.StreamResponse]) -> pb.Task:
    tasks = [e.task for e in events if e.HasField("task")]
    assert tasks, events
    return tasks[-1]


def answer(task: pb.Task) -> str:
    return "".join(p.text for a in task.artifacts for p in a.parts)


def said(request: ModelRequest) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in request.messages if m.role not in ("system", "developer")]


async def test_the_card_names_the_agent_its_endpoint_and_security(
    e2e_host: HostProcess, model: ModelServer
) -> None:
    async with _http() as http:
        from a2a.client import A2ACardResolver

        card = await A2ACardResolver(http, f"{e2e_host.url}/api/a2a/concierge").get_agent_card()
        assert card.name == "concierge"
        [interface] = card.supported_interfaces
        assert interface.url == f"{e2e_host.url}/api/a2a/concierge"
        assert interface.protocol_binding == "JSONRPC" and interface.protocol_version == "1.0"
        assert card.capabilities.streaming and not card.capabilities.push_notifications
        assert "book_hotel" in [s.id for s in card.skills]
        scheme = card.security_schemes["functionKey"].api_key_security_scheme
        assert scheme.name == "x-functions-key" and scheme.location == "header"
        missing = await http.get(f"{e2e_host.url}/api/a2a/nobody/.well-known/agent-card.json")
        assert missing.status_code == 404 and missing.json()["code"] == "unknown_agent"


async def test_send_answers_a_completed_task_and_get_reads_it(a2a: Client, model: ModelServer) -> None:
    model.script(Reply.text("Hello from the agent."))
    task = final_task(await send(a2a, message("Hi there")))
    assert task.status.state == pb.TASK_STATE_COMPLETED, task
    assert answer(task) == "Hello from the agent."
    assert task.context_id and task.id.startswith(task.context_id + ":")
    assert said(model.requests[-1]) == [("user", "Hi there")]
    again = await a2a.get_task(pb.GetTaskRequest(id=task.id))
    assert again.status.state == pb.TASK_STATE_COMPLETED and answer(again) == "Hello from the agent."


async def test_a_context_continues_the_session(a2a: Client, model: ModelServer) -> None:
    model.script(Reply.text("Nice to meet you, Ada."), Reply.text("You are Ada."))
    first = final_task(await send(a2a, message("My name is Ada.")))
    second = final_task(await send(a2a, message("Who am I?", context=first.context_id)))
    assert second.context_id == first.context_id and second.id != first.id
    assert answer(second) == "You are Ada."
    assert said(model.requests[-1]) == [
        ("user", "My name is Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "Who am I?"),
    ]


async def test_a_streamed_message_appends_the_answer_and_ends_completed(
    e2e_host: HostProcess, model: ModelServer
) -> None:
    model.stream_delay = 0.01
    model.script(Reply.text("one two three four"))
    client, http = await _client(e2e_host, streaming=True)
    try:
        events = await send(client, message("Count"))
    finally:
        await client.close()
        await http.aclose()
    assert events[0].HasField("task") and events[0].task.status.state == pb.TASK_STATE_WORKING
    chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
    assert (
        len(chunks) > 1 and "".join(p.text for c in chunks for p in c.artifact.parts) == "one two three four"
    )
    assert not chunks[0].append and all(c.append for c in chunks[1:])
    last = events[-1]
    assert last.HasField("status_update") and last.status_update.status.state == pb.TASK_STATE_COMPLETED


async def test_cancel_a_slow_task(a2a: Client, model: ModelServer) -> None:
    model.script(Reply.delay(30, Reply.text("too late")))
    submitted = final_task(await send(a2a, message("take your time"), return_immediately=True))
    assert submitted.status.state in (pb.TASK_STATE_SUBMITTED, pb.TASK_STATE_WORKING), submitted
    cancelled = await a2a.cancel_task(pb.CancelTaskRequest(id=submitted.id))

    async def canceled() -> pb.Task | None:
        current = await a2a.get_task(pb.GetTaskRequest(id=submitted.id))
        return current if current.status.state == pb.TASK_STATE_CANCELED else None

    if cancelled.status.state != pb.TASK_STATE_CANCELED:
        await eventually(canceled, "the task is canceled")
    with pytest.raises(TaskNotCancelableError):
        await a2a.cancel_task(pb.CancelTaskRequest(id=submitted.id))


async def test_an_approval_goes_through_input_required(e2e_host: HostProcess, model: ModelServer) -> None:
    booking = {"city": "Paris", "nights": 2}
    model.script(Reply.tool_call("book_hotel", booking, call_id="call-a1"), Reply.text("Booked."))
    alice, http = await _client(e2e_host, "concierge", user="alice")
    mallory, http2 = await _client(e2e_host, "concierge", user="mallory")
    try:
        paused = final_task(await send(alice, message("book it")))
        assert paused.status.state == pb.TASK_STATE_INPUT_REQUIRED, paused
        assert "call-a1" in paused.status.message.parts[0].text
        assert len(model.requests) == 1
        with pytest.raises(TaskNotFoundError):
            await send(mallory, message("approve", task=paused.id))
        with pytest.raises(InvalidParamsError, match="awaits decisions"):
            await send(alice, message("maybe later", task=paused.id))
        decision = {"approvals": [{"id": "call-a1", "approved": True}]}
        done = final_task(await send(alice, message(task=paused.id, data=decision)))
        assert done.id == paused.id and done.status.state == pb.TASK_STATE_COMPLETED, done
        assert answer(done) == "Booked."
    finally:
        for c, h in ((alice, http), (mallory, http2)):
            await c.close()
            await h.aclose()


async def test_a_retried_message_id_runs_once(a2a: Client, model: ModelServer) -> None:
    model.script(Reply.text("only once"))
    mid = f"a2a-retry-{uuid.uuid4().hex}"
    first = final_task(await send(a2a, message("do it once", mid=mid)))
    again = final_task(await send(a2a, message("do it once", mid=mid)))
    assert again.id == first.id and answer(again) == "only once"
    assert len(model.requests) == 1


async def test_another_users_task_and_context_are_not_found(
    e2e_host: HostProcess, model: ModelServer
) -> None:
    model.script(Reply.text("for alice only"))
    alice, http = await _client(e2e_host, user="alice")
    bob, http2 = await _client(e2e_host, user="bob")
    try:
        mine = final_task(await send(alice, message("secret")))
        with pytest.raises(TaskNotFoundError):
            await bob.get_task(pb.GetTaskRequest(id=mine.id))
        with pytest.raises(TaskNotFoundError):
            await bob.cancel_task(pb.CancelTaskRequest(id=mine.id))
        with pytest.raises(TaskNotFoundError):
            await send(bob, message("let me in", context=mine.context_id))
        assert len(model.requests) == 1
        assert answer(await alice.get_task(pb.GetTaskRequest(id=mine.id))) == "for alice only"
    finally:
        for c, h in ((alice, http), (bob, http2)):
            await c.close()
            await h.aclose()


async def test_a_0_3_client_sends_and_reads(e2e_host: HostProcess, model: ModelServer) -> None:
    model.script(Reply.text("old protocol"))
    async with _http() as http:
        from a2a.client import A2ACardResolver

        card = await A2ACardResolver(http, f"{e2e_host.url}/api/a2a/{AGENT}").get_agent_card()
        card.supported_interfaces[0].protocol_version = "0.3"  # as a 0.3 agent would say
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        task = final_task(await send(client, message("hello")))
        assert task.status.state == pb.TASK_STATE_COMPLETED and answer(task) == "old protocol"
        assert (await client.get_task(pb.GetTaskRequest(id=task.id))).status.state == pb.TASK_STATE_COMPLETED


@pytest.mark.parametrize(
    ("body", "code", "text"),
    [
        (b"{not json", -32700, ""),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "SendMessage"}', -32600, "jsonrpc"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "Nope", "params": {}}', -32601, ""),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": 5}}', -32602, ""),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}', -32602, "messageId"),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": '
            b'{"messageId": "m-empty", "role": "ROLE_USER", "parts": []}}}',
            -32602,
            "no text",
        ),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x:y"}}', -32001, ""),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "CreateTaskPushNotificationConfig", "params": {}}',
            -32003,
            "",
        ),
    ],
)
async def test_bad_input_is_the_protocols_error_and_nothing_runs(
    e2e_host: HostProcess, model: ModelServer, body: bytes, code: int, text: str
) -> None:
    async with _http(version="1.0") as http:
        reply = await http.post(
            f"{e2e_host.url}/api/a2a/{AGENT}", content=body, headers={"content-type": "application/json"}
        )
    assert reply.status_code == 200, reply.text
    error = reply.json()["error"]
    assert error["code"] == code, error
    assert text in str(error), error
    assert model.requests == []


async def test_a_streamed_approval_pauses_input_required_and_subscribe_follows_it(
    e2e_host: HostProcess, model: ModelServer
) -> None:
    model.script(
        Reply.tool_call("book_hotel", {"city": "Rome", "nights": 1}, call_id="call-s1"), Reply.text("Done.")
    )
    client, http = await _client(e2e_host, "concierge", user="alice", streaming=True)
    try:
        events = await send(client, message("book Rome"))
        last = events[-1]
        assert last.HasField("status_update"), events
        assert last.status_update.status.state == pb.TASK_STATE_INPUT_REQUIRED
        task_id = last.status_update.task_id
        data = last.status_update.status.message.parts[1].data.struct_value
        assert (
            data.fields["approvals"].list_value.values[0].struct_value.fields["id"].string_value == "call-s1"
        )
        done = await send(client, message("approve", task=task_id))
        states = [e.status_update.status.state for e in done if e.HasField("status_update")]
        tasks = [e.task for e in done if e.HasField("task")]
        assert pb.TASK_STATE_COMPLETED in states or (
            tasks and tasks[-1].status.state == pb.TASK_STATE_COMPLETED
        )
        final = await client.get_task(pb.GetTaskRequest(id=task_id))
        assert final.status.state == pb.TASK_STATE_COMPLETED and answer(final) == "Done."
    finally:
        await client.close()
        await http.aclose()


async def test_subscribe_follows_a_running_task_to_its_end(e2e_host: HostProcess, model: ModelServer) -> None:
    release = asyncio.Event()

    async def slow(request: ModelRequest) -> Reply:
        await release.wait()
        return Reply.text("finally")

    model.handler = slow
    plain, http = await _client(e2e_host)
    streaming, http2 = await _client(e2e_host, streaming=True)
    try:
        submitted = final_task(await send(plain, message("wait for it"), return_immediately=True))
        updates = streaming.subscribe(pb.SubscribeToTaskRequest(id=submitted.id))
        first = await anext(updates)
        assert first.task.id == submitted.id and first.task.status.state == pb.TASK_STATE_WORKING
        release.set()
        rest = [e async for e in updates]
        assert rest and rest[-1].status_update.status.state == pb.TASK_STATE_COMPLETED, rest
        with pytest.raises(UnsupportedOperationError):  # a finished task is read, not followed
            await anext(streaming.subscribe(pb.SubscribeToTaskRequest(id=submitted.id)))
    finally:
        for c, h in ((plain, http), (streaming, http2)):
            await c.close()
            await h.aclose()


async def test_a_0_3_request_on_the_wire_gets_0_3_shapes(e2e_host: HostProcess, model: ModelServer) -> None:
    model.script(Reply.text("hi from 0.3"))
    body = {
        "jsonrpc": "2.0",
        "id": "r1",
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "messageId": uuid.uuid4().hex,
                "role": "user",
                "parts": [{"kind": "text", "text": "hello"}],
            }
        },
    }
    async with _http(version="0.3") as http:
        reply = (await http.post(f"{e2e_host.url}/api/a2a/{AGENT}", json=body)).json()
        result = reply["result"]
        assert result["kind"] == "task" and result["status"]["state"] == "completed", reply
        assert result["artifacts"][0]["parts"][0] == {"kind": "text", "text": "hi from 0.3"}
        got = await http.post(
            f"{e2e_host.url}/api/a2a/{AGENT}",
            json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": "no:such"}},
        )
        assert got.json()["error"]["code"] == -32001


async def test_a_context_is_a_session_of_the_products_own_api(
    a2a: Client, e2e_host: HostProcess, model: ModelServer
) -> None:
    model.script(Reply.text("Hi Ada."), Reply.text("Noted."), Reply.text("You are Ada, and you like tea."))
    first = final_task(await send(a2a, message("I am Ada.")))
    session = first.context_id
    async with httpx.AsyncClient(headers={"x-functions-key": FUNCTION_KEY}, timeout=60) as http:
        seen = await http.get(f"{e2e_host.url}/api/agents/{AGENT}/sessions/{session}")
        assert seen.status_code == 200, seen.text
        assert len(seen.json()["turns"]) == 1
        # Continued over the HTTP API, then over A2A again: one conversation.
        run = await http.post(
            f"{e2e_host.url}/api/agents/{AGENT}/run", json={"message": "I like tea.", "session_id": session}
        )
        assert run.status_code == 200 and run.json()["response"]["text"] == "Noted.", run.text
    third = final_task(await send(a2a, message("Who am I?", context=session)))
    assert answer(third) == "You are Ada, and you like tea."
    assert [text for role, text in said(model.requests[-1]) if role == "user"] == [
        "I am Ada.",
        "I like tea.",
        "Who am I?",
    ]
