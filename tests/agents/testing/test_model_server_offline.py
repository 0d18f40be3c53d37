"""The offline model's protocol: echo, `call:` triggers, tool results, schema instances, token counts."""

from __future__ import annotations

import enum
import json
from typing import Any, Literal, cast

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import OpenAI
from openai.types.chat import ChatCompletionMessageFunctionToolCall
from openai.types.responses import FunctionToolParam
from pydantic import BaseModel, Field

from agents.testing import ModelServer, SchemaInstanceError, count_tokens, schema_instance

TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "ping",
            "parameters": {
                "type": "object",
                "properties": {
                    "count": {"type": "integer", "minimum": 3},
                    "label": {"type": "string", "minLength": 2},
                },
                "required": ["count", "label"],
            },
        },
    },
]


def ask(client: OpenAI, content: str, **kwargs: Any) -> Any:
    return client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": content}], **kwargs
    )


def test_echo_of_last_user_message(offline_client: OpenAI) -> None:
    completion = offline_client.chat.completions.create(
        model="m",
        messages=[
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "echo: first"},
            {"role": "user", "content": [{"type": "text", "text": "second part"}]},
        ],
    )
    assert completion.choices[0].message.content == "echo: second part"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (5, 3)


def test_trigger_calls_tool_then_reports_results(offline_client: OpenAI) -> None:
    messages: list[Any] = [{"role": "user", "content": 'please call:lookup {"key": "colour"} now'}]
    first = offline_client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
    calls = first.choices[0].message.tool_calls
    assert calls is not None
    [call] = calls
    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
    assert (call.function.name, json.loads(call.function.arguments)) == ("lookup", {"key": "colour"})
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "blue"})
    second = offline_client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
    assert second.choices[0].message.content == "tool results: lookup: blue"


def test_a_structured_answer_after_tool_calls_reports_the_tools_fields(offline_client: OpenAI) -> None:
    receipt = {
        "type": "object",
        "properties": {
            "saved": {"type": "boolean"},
            "path": {"type": "string"},
            "bytes": {"type": "integer"},
        },
        "required": ["saved", "path", "bytes"],
        "additionalProperties": False,
    }
    messages: list[Any] = [{"role": "user", "content": 'call:lookup {"key": "notes.txt"}'}]
    first = offline_client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
    [call] = first.choices[0].message.tool_calls or []
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    # The tool saved the file; one field of its result has a type the answer's schema refuses.
    result = {"saved": True, "path": "notes.txt", "bytes": "twelve", "extra": 1}
    messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    second = offline_client.chat.completions.create(
        model="m",
        messages=messages,
        tools=TOOLS,
        response_format={"type": "json_schema", "json_schema": {"name": "receipt", "schema": receipt}},
    )
    answer = json.loads(second.choices[0].message.content or "")
    assert answer == {"saved": True, "path": "notes.txt", "bytes": 0}
    jsonschema.validate(answer, receipt)


def test_several_triggers_are_parallel_calls(offline_client: OpenAI) -> None:
    text = 'call:lookup {"key": "a"} and call:ping {"count": 1, "label": "x"} and call:lookup'
    calls = ask(offline_client, text, tools=TOOLS).choices[0].message.tool_calls
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("lookup", {"key": "a"}),
        ("ping", {"count": 1, "label": "x"}),
        ("lookup", {}),
    ]
    only_first = (
        ask(offline_client, text, tools=TOOLS, parallel_tool_calls=False).choices[0].message.tool_calls
    )
    assert [c.function.name for c in only_first] == ["lookup"]


def test_trigger_with_invalid_json_sends_raw_arguments(offline_client: OpenAI) -> None:
    calls = ask(offline_client, "call:lookup {key: oops", tools=TOOLS).choices[0].message.tool_calls
    assert calls[0].function.arguments == "{key: oops"


def test_unknown_tool_is_answered_in_text(offline_client: OpenAI) -> None:
    message = ask(offline_client, "call:delete_everything {}", tools=TOOLS).choices[0].message
    assert message.tool_calls is None
    assert message.content == "unknown tool: delete_everything (available: lookup, ping)"
    assert ask(offline_client, "call:x").choices[0].message.content == "unknown tool: x (available: none)"


def test_tool_choice_none_and_forced(offline_client: OpenAI) -> None:
    none = ask(offline_client, "call:lookup {}", tools=TOOLS, tool_choice="none").choices[0].message
    assert none.tool_calls is None and none.content == "echo: call:lookup {}"
    forced = ask(
        offline_client,
        "no trigger",
        tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "ping"}},
    ).choices[0]
    [call] = forced.message.tool_calls
    args = json.loads(call.function.arguments)
    assert call.function.name == "ping" and args == {"count": 3, "label": "xx"}
    jsonschema.validate(args, TOOLS[1]["function"]["parameters"])
    required = ask(offline_client, "no trigger", tools=TOOLS, tool_choice="required").choices[0].message
    assert [c.function.name for c in required.tool_calls] == ["lookup"]


def test_offline_responses_echo_and_trigger(offline: ModelServer, offline_client: OpenAI) -> None:
    assert offline_client.responses.create(model="m", input="plain words").output_text == "echo: plain words"
    # The SDK's TypedDict marks `strict` required; the wire lets it be left out, which this exercises.
    parameters = TOOLS[0]["function"]["parameters"]
    tool = cast(FunctionToolParam, {"type": "function", "name": "lookup", "parameters": parameters})
    response = offline_client.responses.create(model="m", input='call:lookup {"key": "k"}', tools=[tool])
    [call] = response.output
    assert call.type == "function_call" and json.loads(call.arguments) == {"key": "k"}
    assert [r.api for r in offline.requests] == ["responses", "responses"]


# -- minimal schema instances -----------------------------------------------------------------


class Colour(enum.StrEnum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    street: str
    postcode: str = Field(min_length=4)


class Order(BaseModel):
    id: int = Field(ge=10)
    price: float = Field(gt=0, lt=1)
    colour: Colour
    kind: Literal["a", "b"]
    address: Address
    backup: Address | None
    lines: list[Address] = Field(min_length=2)
    tags: set[str]
    note: str | None = None
    children: list[Order] = []


SCHEMAS: list[dict[str, Any]] = [
    Order.model_json_schema(),
    {
        "type": "object",
        "properties": {"a": {"type": "null"}, "b": {"type": "boolean"}},
        "required": ["a", "b"],
    },
    {"type": "array", "items": {"type": "integer", "exclusiveMinimum": 5}, "minItems": 3},
    {"type": "string", "format": "date-time"},
    {"type": "string", "format": "email", "minLength": 30},
    {"oneOf": [{"type": "integer", "minimum": 1}, {"type": "integer", "maximum": 0}]},
    {
        "allOf": [
            {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
            {"required": ["y"]},
        ]
    },
    {"type": ["integer", "null"], "maximum": -3},
    {
        "$defs": {"N": {"type": "number", "minimum": 2.5}},
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/N"}},
        "required": ["n"],
    },
    {"definitions": {"S": {"enum": ["only"]}}, "$ref": "#/definitions/S"},
    {"const": {"fixed": [1, 2]}},
    {"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}], "minItems": 2},
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_schema_instance_validates(schema: dict[str, Any]) -> None:
    instance = schema_instance(schema)
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(instance)
    assert schema_instance(schema) == instance  # deterministic


def test_schema_instance_is_minimal() -> None:
    order = schema_instance(Order.model_json_schema())
    assert "note" not in order and "children" not in order
    assert order["id"] == 10 and order["colour"] == "red" and order["kind"] == "a"
    assert order["address"] == {"street": "", "postcode": "xxxx"}
    assert len(order["lines"]) == 2 and order["tags"] == []


def test_unsatisfiable_schemas_raise() -> None:
    with pytest.raises(SchemaInstanceError):
        schema_instance({"$ref": "#/$defs/missing"})
    loop = {
        "$defs": {
            "L": {"type": "object", "properties": {"next": {"$ref": "#/$defs/L"}}, "required": ["next"]}
        },
        "$ref": "#/$defs/L",
    }
    with pytest.raises(SchemaInstanceError, match="recursion"):
        schema_instance(loop)


def test_count_tokens_is_word_count() -> None:
    assert count_tokens("") == 0
    assert count_tokens(None) == 0
    assert count_tokens("  one\ttwo\nthree  ") == 3
    assert count_tokens('{"a": 1}') == 2


def _bounded_number() -> st.SearchStrategy[dict[str, Any]]:
    def build(kind: str, low: int, width: int, exclusive: bool) -> dict[str, Any]:
        if exclusive:
            return {"type": kind, "exclusiveMinimum": low, "exclusiveMaximum": low + width + 1}
        return {"type": kind, "minimum": low, "maximum": low + width}

    return st.builds(
        build, st.sampled_from(["integer", "number"]), st.integers(-50, 50), st.integers(1, 5), st.booleans()
    )


_LEAVES = st.one_of(
    _bounded_number(),
    st.builds(lambda n: {"type": "string", "minLength": n}, st.integers(0, 5)),
    st.builds(
        lambda f: {"type": "string", "format": f}, st.sampled_from(["date-time", "email", "uuid", "ipv4"])
    ),
    st.just({"type": "boolean"}),
    st.just({"type": "null"}),
    st.builds(
        lambda values: {"enum": values}, st.lists(st.integers() | st.text(max_size=3), min_size=1, max_size=3)
    ),
)


def _compound(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    def obj(props: dict[str, dict[str, Any]], data: st.DataObject) -> dict[str, Any]:
        required = data.draw(st.lists(st.sampled_from(sorted(props)), unique=True)) if props else []
        return {"type": "object", "properties": props, "required": required}

    objects = st.builds(
        obj, st.dictionaries(st.text("abcdef", min_size=1, max_size=4), children, max_size=4), st.data()
    )
    arrays = st.builds(
        lambda items, n: {"type": "array", "items": items, "minItems": n}, children, st.integers(0, 3)
    )
    unions = st.builds(lambda options: {"anyOf": options}, st.lists(children, min_size=1, max_size=3))
    return st.one_of(objects, arrays, unions)


@settings(max_examples=60, deadline=None)
@given(st.recursive(_LEAVES, _compound, max_leaves=12))
def test_generated_schemas_get_valid_instances(schema: dict[str, Any]) -> None:
    instance = schema_instance(schema)
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    assert validator.is_valid(instance), (schema, instance)
