"""The OpenAI Responses API with the official `openai` SDK against the real host: a plain turn, a
streamed one, a continued conversation, background runs retrieved and cancelled, the input items,
structured output, and the API's own errors for what the agent cannot honour (nothing stored),
and another user's response as unknown."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator

import openai
import pytest
from e2e_support import FUNCTION_KEY, Client, HostProcess, eventually

from agents.testing import ModelRequest, ModelServer, Reply

AGENT = "assistant"


@pytest.fixture
async def oai(e2e_host: HostProcess, model: ModelServer) -> AsyncIterator[openai.AsyncOpenAI]:
    """The SDK as any caller configures it: the app's `/api/v1` and its function key."""
    async with openai.AsyncOpenAI(
        base_url=f"{e2e_host.url}/api/v1",
        api_key="unused",
        default_headers={"x-functions-key": FUNCTION_KEY},
        max_retries=0,
    ) as sdk:
        yield sdk


def said(request: ModelRequest) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in request.messages if m.role not in ("system", "developer")]


async def test_a_turn_answers_a_completed_response(oai: openai.AsyncOpenAI, model: ModelServer) -> None:
    model.script(Reply.text("Hello from the agent."))
    response = await oai.responses.create(model=AGENT, input="Hi there")
    assert response.status == "completed", response
    assert response.output_text == "Hello from the agent."
    assert response.model == AGENT and response.id.startswith("resp_")
    assert said(model.requests[-1]) == [("user", "Hi there")]
    again = await oai.responses.retrieve(response.id)
    assert again.status == "completed" and again.output_text == "Hello from the agent."


async def test_previous_response_id_continues_the_session(
    oai: openai.AsyncOpenAI, model: ModelServer
) -> None:
    model.script(Reply.text("Nice to meet you, Ada."), Reply.text("You are Ada."))
    first = await oai.responses.create(model=AGENT, input="My name is Ada.")
    second = await oai.responses.create(model=AGENT, input="Who am I?", previous_response_id=first.id)
    assert second.output_text == "You are Ada."
    assert second.previous_response_id == first.id
    assert second.conversation is not None and first.conversation is not None
    assert second.conversation.id == first.conversation.id
    assert said(model.requests[-1]) == [
        ("user", "My name is Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "Who am I?"),
    ]
    # `conversation` names the session just as well.
    model.script(Reply.text("Still Ada."))
    third = await oai.responses.create(model=AGENT, input="And now?", conversation=first.conversation.id)
    assert third.output_text == "Still Ada." and len(said(model.requests[-1])) == 5


async def test_a_streamed_turn_gives_the_responses_events(
    oai: openai.AsyncOpenAI, model: ModelServer
) -> None:
    model.stream_delay = 0.01
    model.script(Reply.text("one two three four"))
    stream = await oai.responses.create(model=AGENT, input="Count", stream=True)
    events = [event async for event in stream]
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"], kinds
    assert kinds[2:4] == ["response.output_item.added", "response.content_part.added"], kinds
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ], kinds
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) > 1 and "".join(deltas) == "one two three four"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    done = events[-1]
    assert done.type == "response.completed" and done.response.output_text == "one two three four"
    stored = await oai.responses.retrieve(done.response.id)
    assert stored.output_text == "one two three four"


async def test_a_failed_turn_streams_response_failed(oai: openai.AsyncOpenAI, model: ModelServer) -> None:
    model.script(Reply.error(400, "the model refused", code="invalid_prompt"))
    stream = await oai.responses.create(model=AGENT, input="fail please", stream=True)
    events = [event async for event in stream]
    assert events[-1].type == "response.failed", [e.type for e in events]
    assert events[-1].response.error is not None and events[-1].response.status == "failed"


async def test_background_then_retrieve_until_done(oai: openai.AsyncOpenAI, model: ModelServer) -> None:
    model.script(Reply.delay(0.5, Reply.text("done in the background")))
    queued = await oai.responses.create(model=AGENT, input="take your time", background=True)
    assert queued.status == "queued" and queued.background is True

    async def finished() -> openai.types.responses.Response | None:
        current = await oai.responses.retrieve(queued.id)
        return current if current.status == "completed" else None

    done = await eventually(finished, "the background response completes")
    assert done.output_text == "done in the background"
    items = await oai.responses.input_items.list(queued.id)
    assert [i.type for i in items.data] == ["message"]
    assert items.model_dump()["data"][0]["content"][0]["text"] == "take your time"


async def test_cancel_a_slow_background_response(oai: openai.AsyncOpenAI, model: ModelServer) -> None:
    async def slow(request: ModelRequest) -> Reply:
        await asyncio.sleep(60)
        return Reply.text("too late")

    model.handler = slow
    queued = await oai.responses.create(model=AGENT, input="never mind", background=True)

    async def called() -> bool:
        return len(model.requests) >= 1

    await eventually(called, "the model is called")
    cancelled = await oai.responses.cancel(queued.id)
    assert cancelled.status == "cancelled", cancelled
    assert (await oai.responses.retrieve(queued.id)).status == "cancelled"


async def test_text_format_json_schema_is_the_runs_response_format(
    oai: openai.AsyncOpenAI, model: ModelServer
) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    model.script(Reply.json({"city": "Paris"}))
    response = await oai.responses.create(
        model=AGENT,
        input="Where?",
        text={"format": {"type": "json_schema", "name": "place", "schema": schema, "strict": True}},
    )
    assert json.loads(response.output_text) == {"city": "Paris"}
    sent = model.requests[-1].body
    asked = json.dumps(sent.get("response_format") or sent.get("text"))
    assert '"place"' in asked and '"city"' in asked, sent


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"instructions": "be a pirate"}, "instructions"),
        ({"tools": [{"type": "function", "name": "f", "parameters": {}}]}, "tools"),
        ({"store": False}, "store"),
        ({"top_p": 0.5}, "top_p"),
        ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}, "input"),
        ({"text": {"format": {"type": "json_object"}}}, "text.format"),
        ({"temperature": 9}, "temperature"),
        ({"input": "   "}, "input"),
        ({"input": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}, "input"),
        ({"text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": 1}}}}, "text.format"),
        ({"user": "not a valid id!"}, "user"),
        ({"previous_response_id": "resp_x", "conversation": "c"}, "conversation"),
    ],
)
async def test_what_the_agent_cannot_honour_is_a_bad_request_and_nothing_is_stored(
    oai: openai.AsyncOpenAI, model: ModelServer, client: Client, fields: dict[str, object], param: str
) -> None:
    session = f"responses-refused-{param.replace('.', '-')}"
    body = {"model": AGENT, "input": "hello", "conversation": session, **fields}
    with pytest.raises(openai.BadRequestError) as raised:
        await oai.responses.create(**body)  # type: ignore[call-overload]
    error = raised.value
    assert error.status_code == 400 and error.param == param, error.body
    assert error.message and error.code, error.body
    assert model.requests == []
    assert (await client.get(f"/api/agents/{AGENT}/sessions/{session}")).status == 404


async def test_unknown_agent_and_unknown_response_are_not_found(oai: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as raised:
        await oai.responses.create(model="no-such-agent", input="hi")
    assert raised.value.code == "model_not_found"
    with pytest.raises(openai.NotFoundError):
        await oai.responses.retrieve("resp_bm90LWFuLWlk")
    with pytest.raises(openai.NotFoundError):
        await oai.responses.retrieve("resp_" + "YXNzaXN0YW50CmFub3RoZXIKcnVu")  # assistant / another / run
    forged = base64.urlsafe_b64encode(b"assistant\n../other\nrun").decode().rstrip("=")
    with pytest.raises(openai.NotFoundError):  # a session id the product refuses reaches no entity
        await oai.responses.retrieve("resp_" + forged)


async def test_another_users_response_is_not_found(oai: openai.AsyncOpenAI, model: ModelServer) -> None:
    model.script(Reply.text("for alice only"))
    mine = await oai.responses.create(model=AGENT, input="secret", user="alice")
    assert mine.output_text == "for alice only"
    bob = {"user_id": "bob"}
    with pytest.raises(openai.NotFoundError):
        await oai.responses.retrieve(mine.id, extra_query=bob)
    with pytest.raises(openai.NotFoundError):
        await oai.responses.input_items.list(mine.id, extra_query=bob)
    with pytest.raises(openai.NotFoundError):
        await oai.responses.cancel(mine.id, extra_query=bob)
    with pytest.raises(openai.NotFoundError):
        await oai.responses.create(model=AGENT, input="let me in", previous_response_id=mine.id, user="bob")
    assert len(model.requests) == 1
    alice = await oai.responses.retrieve(mine.id, extra_query={"user_id": "alice"})
    assert alice.output_text == "for alice only"


async def test_a_paused_run_is_approval_requests_and_an_approval_response_decides_it(
    oai: openai.AsyncOpenAI, model: ModelServer
) -> None:
    booking = {"city": "Paris", "nights": 2}
    model.script(Reply.tool_call("book_hotel", booking, call_id="call-r1"), Reply.text("Booked."))
    paused = await oai.responses.create(model="concierge", input="book it", user="alice")
    assert paused.status == "in_progress", paused
    [request] = paused.output
    assert request.type == "mcp_approval_request" and request.id == "call-r1"
    assert request.name == "book_hotel" and json.loads(request.arguments) == booking
    assert request.server_label == "concierge"
    assert len(model.requests) == 1  # the call waits for its decision
    with pytest.raises(openai.NotFoundError):  # another user cannot decide it
        await oai.responses.create(
            model="concierge",
            previous_response_id=paused.id,
            input=[{"type": "mcp_approval_response", "approval_request_id": "call-r1", "approve": True}],
            user="mallory",
        )
    done = await oai.responses.create(
        model="concierge",
        previous_response_id=paused.id,
        input=[{"type": "mcp_approval_response", "approval_request_id": "call-r1", "approve": True}],
        user="alice",
    )
    assert done.id == paused.id and done.status == "completed", done
    assert done.output_text == "Booked."
    assert any(m.role == "tool" and "confirmation" in m.text for m in model.requests[1].messages)


async def test_an_idempotency_key_makes_a_retried_create_run_once(
    oai: openai.AsyncOpenAI, model: ModelServer
) -> None:
    model.script(Reply.text("only once"))
    key = {"Idempotency-Key": "responses-retry-1"}
    first = await oai.responses.create(model=AGENT, input="do it once", extra_headers=key)
    again = await oai.responses.create(model=AGENT, input="do it once", extra_headers=key)
    assert again.id == first.id and again.output_text == "only once"
    assert len(model.requests) == 1


async def test_a_failed_turn_is_a_failed_response(oai: openai.AsyncOpenAI, model: ModelServer) -> None:
    model.script(Reply.error(400, "the model refused", code="invalid_prompt"))
    response = await oai.responses.create(model=AGENT, input="fail please")
    assert response.status == "failed" and response.error is not None, response
    assert response.output == []
    assert (await oai.responses.retrieve(response.id)).status == "failed"


async def test_a_streamed_turn_that_pauses_ends_with_the_approval_requests(
    oai: openai.AsyncOpenAI, model: ModelServer
) -> None:
    booking = {"city": "Rome", "nights": 1}
    model.script(Reply.tool_call("book_hotel", booking, call_id="call-s1"), Reply.text("Booked Rome."))
    stream = await oai.responses.create(model="concierge", input="book it", stream=True, user="alice")
    events = [event async for event in stream]
    added = [e.item for e in events if e.type == "response.output_item.added"]
    requests = [item for item in added if item.type == "mcp_approval_request"]
    assert [(r.id, r.name, json.loads(r.arguments)) for r in requests] == [("call-s1", "book_hotel", booking)]
    created = next(e for e in events if e.type == "response.created")
    done = await oai.responses.create(
        model="concierge",
        previous_response_id=created.response.id,
        input=[{"type": "mcp_approval_response", "approval_request_id": "call-s1", "approve": True}],
        user="alice",
    )
    assert done.status == "completed" and done.output_text == "Booked Rome."
