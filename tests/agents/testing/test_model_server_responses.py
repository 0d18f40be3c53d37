"""The Responses API against the local server through the real openai client over HTTP."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import openai
import pytest
from openai import AsyncOpenAI, OpenAI
from openai.types.responses import FunctionToolParam, ResponseInputParam
from pydantic import BaseModel

from agents.testing import ModelServer, Reply

ADD_TOOL: FunctionToolParam = {
    "type": "function",
    "name": "add",
    "description": "Add two integers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
    "strict": True,
}


def test_text_with_instructions_and_usage(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.text("Bonjour tout le monde"))
    response = client.responses.create(model="gpt-4.1", instructions="Answer in French.", input="Say hello")
    assert response.output_text == "Bonjour tout le monde"
    assert response.status == "completed"
    assert response.id.startswith("resp_")
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (
        5,
        4,
        9,
    )
    [request] = model.requests
    assert request.api == "responses"
    assert [(m.role, m.text) for m in request.messages] == [
        ("system", "Answer in French."),
        ("user", "Say hello"),
    ]


def test_previous_response_id_sees_history_without_old_instructions(
    client: OpenAI, model: ModelServer
) -> None:
    model.script(Reply.text("first answer"), Reply.text("second answer"))
    first = client.responses.create(model="m", instructions="old rules", input="first question")
    second = client.responses.create(
        model="m", instructions="new rules", input="second question", previous_response_id=first.id
    )
    assert second.output_text == "second answer"
    assert second.previous_response_id == first.id
    seen = [(m.role, m.text) for m in model.requests[1].messages]
    assert seen == [
        ("system", "new rules"),
        ("user", "first question"),
        ("assistant", "first answer"),
        ("user", "second question"),
    ]
    # Input tokens count the service-side history: 2 + 2 + 2 + 2 words.
    assert second.usage is not None and second.usage.input_tokens == 8


def test_function_call_round_trip_with_service_side_history(client: OpenAI, model: ModelServer) -> None:
    model.script(
        Reply.tool_calls([("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})]), Reply.text("3 and 7")
    )
    first = client.responses.create(model="m", input="two sums please", tools=[ADD_TOOL])
    calls = [item for item in first.output if item.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("add", {"a": 1, "b": 2}),
        ("add", {"a": 3, "b": 4}),
    ]
    assert len({c.call_id for c in calls}) == 2
    outputs: ResponseInputParam = [
        {
            "type": "function_call_output",
            "call_id": c.call_id,
            "output": str(sum(json.loads(c.arguments).values())),
        }
        for c in calls
    ]
    second = client.responses.create(
        model="m",
        input=outputs,
        previous_response_id=first.id,
        tools=[ADD_TOOL],
    )
    assert second.output_text == "3 and 7"
    tool_messages = [m for m in model.requests[1].messages if m.role == "tool"]
    assert [(m.name, m.text) for m in tool_messages] == [("add", "3"), ("add", "7")]


def test_offline_tool_results_are_reported_after_local_history(offline_client: OpenAI) -> None:
    first = offline_client.responses.create(
        model="m",
        input='call:add {"a": 20, "b": 22}',
        tools=[ADD_TOOL],
    )
    [call] = [item for item in first.output if item.type == "function_call"]
    # Local history mode: send the whole conversation again, without previous_response_id.
    history: list[Any] = [
        {"role": "user", "content": 'call:add {"a": 20, "b": 22}'},
        {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "42"},
    ]
    second = offline_client.responses.create(model="m", input=history, tools=[ADD_TOOL])
    assert second.output_text == "tool results: add: 42"


def test_unknown_previous_response_id_is_404(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.text("unused"))
    with pytest.raises(openai.NotFoundError) as caught:
        client.responses.create(model="m", input="x", previous_response_id="resp_missing")
    assert caught.value.status_code == 404
    assert caught.value.body == {
        "message": "Previous response with id 'resp_missing' not found.",
        "type": "invalid_request_error",
        "param": "previous_response_id",
        "code": "previous_response_not_found",
    }
    assert model.pending_replies == 1


def test_store_false_is_not_retrievable(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.text("ephemeral"), Reply.text("kept"))
    ephemeral = client.responses.create(model="m", input="x", store=False)
    kept = client.responses.create(model="m", input="y")
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="m", input="z", previous_response_id=ephemeral.id)
    assert client.responses.retrieve(kept.id).output_text == "kept"
    client.responses.delete(kept.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(kept.id)


def test_unanswered_function_call_is_rejected(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.tool_call("add", {"a": 1, "b": 1}))
    first = client.responses.create(model="m", input="sum", tools=[ADD_TOOL])
    with pytest.raises(openai.BadRequestError, match="No tool output found for function call"):
        client.responses.create(model="m", input="ignore the call", previous_response_id=first.id)
    with pytest.raises(openai.BadRequestError, match="No tool call found for function call output"):
        client.responses.create(
            model="m", input=[{"type": "function_call_output", "call_id": "call_nope", "output": "1"}]
        )


class Answer(BaseModel):
    verdict: bool
    score: float
    reasons: list[str]


def test_structured_output_with_text_format(client: OpenAI, model: ModelServer) -> None:
    model.script(
        Reply.json({"verdict": True, "score": 0.5, "reasons": ["clear"]}),
        Reply.json(Answer(verdict=False, score=1.5, reasons=[])),
    )
    response = client.responses.parse(model="m", input="judge", text_format=Answer)
    assert response.output_parsed == Answer(verdict=True, score=0.5, reasons=["clear"])
    again = client.responses.parse(model="m", input="judge", text_format=Answer)
    assert again.output_parsed == Answer(verdict=False, score=1.5, reasons=[])
    fmt = model.requests[0].response_format
    assert fmt is not None and fmt["type"] == "json_schema" and fmt["name"] == "Answer"


def test_offline_structured_output_is_schema_valid(offline_client: OpenAI) -> None:
    schema = Answer.model_json_schema()
    response = offline_client.responses.create(
        model="m",
        input="judge",
        text={"format": {"type": "json_schema", "name": "answer", "schema": schema, "strict": False}},
    )
    jsonschema.validate(json.loads(response.output_text), schema)


def test_max_output_tokens_makes_response_incomplete(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.text("a b c d e"))
    response = client.responses.create(model="m", input="x", max_output_tokens=2)
    assert response.status == "incomplete"
    assert (
        response.incomplete_details is not None and response.incomplete_details.reason == "max_output_tokens"
    )
    assert response.output_text == "a b"


def test_streamed_text_events_and_final_response(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.reasoning("let me think", then=Reply.text("streamed responses text")))
    with client.responses.stream(model="m", input="go") as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == "streamed responses text" and len(deltas) == 3
    assert "response.reasoning_summary_text.delta" in kinds
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert final.output_text == "streamed responses text"
    [reasoning] = [item for item in final.output if item.type == "reasoning"]
    assert reasoning.summary[0].text == "let me think"
    assert final.usage is not None and final.usage.output_tokens_details.reasoning_tokens == 3


def test_streamed_function_call_events(client: OpenAI, model: ModelServer) -> None:
    args = {"a": 123456789, "b": 987654321}
    model.script(Reply.tool_call("add", args, call_id="call_stream"))
    stream = client.responses.create(model="m", input="sum", tools=[ADD_TOOL], stream=True)
    events = list(stream)
    deltas = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert len(deltas) > 1 and json.loads("".join(deltas)) == args
    [done] = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert json.loads(done.arguments) == args
    completed = events[-1]
    assert completed.type == "response.completed"
    [call] = completed.response.output
    assert call.type == "function_call" and call.call_id == "call_stream"


async def test_async_stream_and_previous_response(aclient: AsyncOpenAI, model: ModelServer) -> None:
    model.script(Reply.text("one"), Reply.text("two"))
    first = await aclient.responses.create(model="m", input="x")
    async with aclient.responses.stream(model="m", input="y", previous_response_id=first.id) as stream:
        final = await stream.get_final_response()
    assert final.output_text == "two"
    assert [m.text for m in model.requests[1].messages] == ["x", "one", "y"]


def test_models_listing(client: OpenAI, model: ModelServer) -> None:
    assert [m.id for m in client.models.list()] == list(model.models)
    assert client.models.retrieve(model.models[0]).id == model.models[0]
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("no-such-model")


def test_conversation_keeps_service_side_history(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.text("noted"), Reply.text("you said hi"))
    conversation = client.conversations.create(items=[{"type": "message", "role": "user", "content": "seed"}])
    assert conversation.id.startswith("conv_")
    first = client.responses.create(model="m", input="hi", conversation=conversation.id)
    assert first.conversation is not None and first.conversation.id == conversation.id
    second = client.responses.create(model="m", input="what did I say?", conversation={"id": conversation.id})
    assert second.output_text == "you said hi"
    assert [m.text for m in model.requests[1].messages] == ["seed", "hi", "noted", "what did I say?"]
    items = client.conversations.items.list(conversation.id, order="asc")
    assert [item.type for item in items.data] == ["message"] * 5
    assert len({item.id for item in items.data}) == 5
    with pytest.raises(openai.BadRequestError, match="Mutually exclusive"):
        client.responses.create(
            model="m", input="x", conversation=conversation.id, previous_response_id=first.id
        )
    assert client.conversations.delete(conversation.id).deleted
    with pytest.raises(openai.NotFoundError, match="Conversation with id"):
        client.responses.create(model="m", input="x", conversation=conversation.id)
