"""Chat Completions against the local server through the real openai client over HTTP."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from openai import AsyncOpenAI, BadRequestError, OpenAI
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageToolCallUnion,
)
from pydantic import BaseModel

from agents.testing import ModelServer, Reply

ADD_TOOL: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}
WEATHER_TOOL: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {
        "name": "weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def function_calls(
    calls: list[ChatCompletionMessageToolCallUnion] | None,
) -> list[ChatCompletionMessageFunctionToolCall]:
    """The tool calls of a reply, each required to be a function call (the server sends no custom calls)."""
    assert calls is not None
    for call in calls:
        assert isinstance(call, ChatCompletionMessageFunctionToolCall), call
    return [call for call in calls if isinstance(call, ChatCompletionMessageFunctionToolCall)]


def test_scripted_text_reply_with_usage(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.text("Hello from the script"))
    completion = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi"}],
        temperature=0.2,
    )
    choice = completion.choices[0]
    assert choice.message.content == "Hello from the script"
    assert choice.finish_reason == "stop"
    assert completion.model == "gpt-4o-mini"
    assert completion.usage is not None
    # Words: "Be brief." (2) + "Say hi" (2) in; "Hello from the script" (4) out.
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (4, 4)
    assert completion.usage.total_tokens == 8
    [request] = model.requests
    assert request.api == "chat"
    assert [(m.role, m.text) for m in request.messages] == [("system", "Be brief."), ("user", "Say hi")]
    assert request.body["temperature"] == 0.2
    assert model.pending_replies == 0


def test_usage_override(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.text("ok").with_usage(input_tokens=100, output_tokens=7))
    completion = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (100, 7)
    assert completion.usage.total_tokens == 107


def test_tool_round_trip(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.tool_call("add", {"a": 2, "b": 3}, call_id="call_1"), Reply.text("The sum is 5."))
    messages: list[Any] = [{"role": "user", "content": "What is 2 + 3?"}]
    first = client.chat.completions.create(model="m", messages=messages, tools=[ADD_TOOL])
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    assert message.content is None
    assert message.tool_calls is not None
    [call] = message.tool_calls
    assert call.type == "function"
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "call_1",
        "add",
        {"a": 2, "b": 3},
    )

    messages.append(message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "5"})
    second = client.chat.completions.create(model="m", messages=messages, tools=[ADD_TOOL])
    assert second.choices[0].message.content == "The sum is 5."

    request = model.requests[1]
    assert request.tool_names == ["add"]
    assistant, tool = request.messages[1], request.messages[2]
    assert assistant.role == "assistant" and assistant.tool_calls[0].call_id == "call_1"
    assert (tool.role, tool.call_id, tool.text) == ("tool", "call_1", "5")


def test_parallel_tool_calls_get_distinct_ids(client: OpenAI, model: ModelServer) -> None:
    model.script(
        Reply.tool_calls([("weather", {"city": "Oslo"}), ("weather", {"city": "Rome"}), ("add", {"a": 1})])
    )
    completion = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "weather?"}], tools=[WEATHER_TOOL, ADD_TOOL]
    )
    calls = function_calls(completion.choices[0].message.tool_calls)
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("weather", {"city": "Oslo"}),
        ("weather", {"city": "Rome"}),
        ("add", {"a": 1}),
    ]
    ids = [c.id for c in calls]
    assert len(set(ids)) == 3 and all(i.startswith("call_") for i in ids)


def test_malformed_tool_arguments_are_sent_verbatim(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.malformed_tool_call("add", '{"a": 1, "b": '))
    completion = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "add"}], tools=[ADD_TOOL]
    )
    calls = function_calls(completion.choices[0].message.tool_calls)
    assert calls[0].function.arguments == '{"a": 1, "b": '
    with pytest.raises(json.JSONDecodeError):
        json.loads(calls[0].function.arguments)


class Person(BaseModel):
    name: str
    age: int
    tags: list[str]


def test_structured_output_with_parse(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.json({"name": "Ada", "age": 36, "tags": ["math"]}))
    completion = client.chat.completions.parse(
        model="m", messages=[{"role": "user", "content": "who?"}], response_format=Person
    )
    assert completion.choices[0].message.parsed == Person(name="Ada", age=36, tags=["math"])
    fmt = model.requests[0].response_format
    assert fmt is not None and fmt["type"] == "json_schema" and fmt["name"] == "Person"


def test_offline_structured_output_validates_against_schema(offline_client: OpenAI) -> None:
    schema = Person.model_json_schema()
    completion = offline_client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "describe someone"}],
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": schema}},
    )
    content = completion.choices[0].message.content
    assert content is not None
    jsonschema.validate(json.loads(content), schema)


def test_json_object_mode_offline(offline_client: OpenAI) -> None:
    completion = offline_client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "give json"}],
        response_format={"type": "json_object"},
    )
    assert json.loads(completion.choices[0].message.content or "") == {"echo": "give json"}


def test_max_tokens_truncates_with_length_finish(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.text("one two three four five"), Reply.text("one two three four five"))
    first = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], max_tokens=2
    )
    assert (first.choices[0].message.content, first.choices[0].finish_reason) == ("one two", "length")
    second = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], max_completion_tokens=3
    )
    assert second.choices[0].message.content == "one two three"
    assert second.usage is not None and second.usage.completion_tokens == 3


def test_reasoning_is_reported(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.reasoning("think think", then=Reply.text("done")))
    completion = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    message = completion.choices[0].message
    assert message.content == "done"
    assert (message.model_extra or {}).get("reasoning_content") == "think think"
    assert completion.usage is not None and completion.usage.completion_tokens_details is not None
    assert completion.usage.completion_tokens_details.reasoning_tokens == 2


def test_streamed_text_and_usage_chunk(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.text("streamed words arrive in pieces"))
    stream = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "go"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "streamed words arrive in pieces"
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) == 5
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["stop"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (1, 5)
    assert all(c.usage is None for c in chunks[:-1])


def test_streamed_parallel_tool_calls_accumulate(client: OpenAI, model: ModelServer) -> None:
    long_city = "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch"
    model.script(Reply.tool_calls([("weather", {"city": long_city}), ("add", {"a": 1, "b": 2})]))
    with client.chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "go"}], tools=[WEATHER_TOOL, ADD_TOOL]
    ) as stream:
        argument_deltas = [e for e in stream if e.type == "tool_calls.function.arguments.delta"]
        final = stream.get_final_completion()
    calls = final.choices[0].message.tool_calls
    assert calls is not None
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("weather", {"city": long_city}),
        ("add", {"a": 1, "b": 2}),
    ]
    # The weather arguments are long enough to arrive in several deltas.
    assert sum(1 for e in argument_deltas if e.index == 0) > 1
    assert final.choices[0].finish_reason == "tool_calls"


async def test_async_client_text(aclient: AsyncOpenAI, model: ModelServer) -> None:
    model.script(Reply.text("async hello"))
    completion = await aclient.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.choices[0].message.content == "async hello"


async def test_async_streaming(aclient: AsyncOpenAI, model: ModelServer) -> None:
    model.script(Reply.text("a b c"))
    stream = await aclient.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    pieces = [chunk.choices[0].delta.content async for chunk in stream if chunk.choices]
    assert "".join(p or "" for p in pieces) == "a b c"


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ([], "empty array"),
        ([{"role": "wizard", "content": "x"}], "Invalid value: 'wizard'"),
        (
            [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "nope", "content": "1"}],
            "role 'tool'",
        ),
        (
            [
                {"role": "user", "content": "x"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
                    ],
                },
                {"role": "user", "content": "next"},
            ],
            "did not have response messages: c1",
        ),
    ],
)
def test_invalid_conversations_are_rejected_like_openai(
    client: OpenAI, model: ModelServer, messages: list[Any], fragment: str
) -> None:
    model.script(Reply.text("never sent"))
    with pytest.raises(BadRequestError) as caught:
        client.chat.completions.create(model="m", messages=messages)
    assert caught.value.status_code == 400
    assert fragment in caught.value.message
    assert isinstance(caught.value.body, dict) and caught.value.body["type"] == "invalid_request_error"
    # A rejected request consumes no scripted reply and is not recorded as a model call.
    assert model.pending_replies == 1 and model.requests == []


def test_tool_choice_without_tools_is_rejected(client: OpenAI, model: ModelServer) -> None:
    with pytest.raises(BadRequestError, match="tool_choice"):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], tool_choice="required"
        )


OPEN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "note": {"type": "string"}},
    "required": ["name", "note"],
}


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        (OPEN_SCHEMA, "In context=(), 'additionalProperties' is required to be supplied and to be false."),
        ({**OPEN_SCHEMA, "additionalProperties": False, "required": ["name"]}, "Missing 'note'."),
        (
            {
                "type": "object",
                "properties": {"inner": {"$ref": "#/$defs/Inner"}},
                "required": ["inner"],
                "additionalProperties": False,
                "$defs": {"Inner": {"type": "object", "properties": {}}},
            },
            "In context=('$defs', 'Inner'), 'additionalProperties'",
        ),
        ({"type": "array", "items": {"type": "string"}}, "must be a JSON Schema of 'type: \"object\"'"),
    ],
)
def test_strict_schemas_must_be_closed_and_fully_required(
    client: OpenAI, model: ModelServer, schema: dict[str, Any], fragment: str
) -> None:
    model.script(Reply.text("{}"))
    with pytest.raises(BadRequestError) as caught:
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "x"}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "thing", "schema": schema, "strict": True},
            },
        )
    # The server's own message, from the error body: older openai versions put the body's repr
    # (quotes escaped) into the exception text.
    body = caught.value.body
    assert isinstance(body, dict)
    message = body["message"]
    assert isinstance(message, str)
    assert message.startswith("Invalid schema for response_format 'thing'")
    assert fragment in message
    # The same schema without strict is accepted.
    client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "x"}],
        response_format={"type": "json_schema", "json_schema": {"name": "thing", "schema": schema}},
    )


def test_strict_tool_parameters_are_checked(client: OpenAI, model: ModelServer) -> None:
    tool: ChatCompletionFunctionToolParam = {
        "type": "function",
        "function": {"name": "f", "parameters": OPEN_SCHEMA, "strict": True},
    }
    with pytest.raises(BadRequestError, match="Invalid schema for function 'f'"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], tools=[tool])
    with pytest.raises(BadRequestError, match="Invalid schema for function 'f'"):
        client.responses.create(
            model="m",
            input="x",
            tools=[{"type": "function", "name": "f", "parameters": OPEN_SCHEMA, "strict": True}],
        )
