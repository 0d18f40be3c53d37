"""State messages <-> wire messages, both wire APIs, lossless through save/load."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agents._convert import (
    add_usage,
    balanced,
    chat_usage,
    from_chat_message,
    from_responses_output,
    responses_usage,
    to_chat_messages,
    to_responses_input,
)
from state import (
    AgentRequest,
    AgentResponse,
    AgentState,
    ChatMessage,
    DataContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
    Usage,
    UsageContent,
    dump_state,
    load_state,
)

NOW = "2026-01-01T00:00:00+00:00"


def _tool_turn() -> list[ChatMessage]:
    return [
        ChatMessage(role="user", contents=[TextContent(text="Weather in Paris and Oslo?")]),
        ChatMessage(
            role="assistant",
            author_name="concierge",
            contents=[
                ReasoningContent(text="need two lookups"),
                FunctionCallContent(call_id="c1", name="get_weather", arguments={"city": "Paris"}),
                FunctionCallContent(
                    call_id="c2", name="get_weather", arguments={}, rawArguments='{"city": Oslo'
                ),
            ],
        ),
        ChatMessage(
            role="tool",
            contents=[
                FunctionResultContent(call_id="c1", result={"temp": 18}),
                FunctionResultContent(call_id="c2", result="Error: bad JSON", isError=True),
            ],
        ),
        ChatMessage(
            role="assistant",
            author_name="concierge",
            contents=[TextContent(text="Paris: 18C."), UsageContent(usage=Usage(input_token_count=3))],
        ),
    ]


def test_state_to_chat() -> None:
    assert to_chat_messages(_tool_turn()) == [
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "name": "concierge",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": Oslo'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 18}'},
        {"role": "tool", "tool_call_id": "c2", "content": "Error: bad JSON"},
        {"role": "assistant", "content": "Paris: 18C.", "name": "concierge"},
    ]


def test_state_to_responses() -> None:
    assert to_responses_input(_tool_turn()) == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Weather in Paris and Oslo?"}],
        },
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call", "call_id": "c2", "name": "get_weather", "arguments": '{"city": Oslo'},
        {"type": "function_call_output", "call_id": "c1", "output": '{"temp": 18}'},
        {"type": "function_call_output", "call_id": "c2", "output": "Error: bad JSON"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Paris: 18C."}]},
    ]


def test_what_models_cannot_take_is_not_sent() -> None:
    messages = [
        ChatMessage(role="system", contents=[TextContent(text="be brief")]),
        ChatMessage(role="developer", contents=[TextContent(text="dev")]),
        ChatMessage(
            role="user",
            contents=[
                TextContent(text="look"),
                DataContent(uri="data:image/png;base64,AAAA", media_type="image/png"),
            ],
            author_name="Ann Lee",  # not a valid wire name: dropped, kept in the state
        ),
        ChatMessage(role="assistant", contents=[ReasoningContent(text="hmm"), ErrorContent(message="x")]),
    ]
    assert to_chat_messages(messages) == [
        {"role": "system", "content": "be brief"},
        {"role": "system", "content": "dev"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
    ]
    items = to_responses_input(messages)
    assert [i["role"] for i in items] == ["system", "system", "user"]
    assert items[2]["content"][1] == {
        "type": "input_image",
        "image_url": "data:image/png;base64,AAAA",
        "detail": "auto",
    }


def test_balanced_drops_unanswered_calls_and_orphan_results() -> None:
    messages = [
        ChatMessage(role="tool", contents=[FunctionResultContent(call_id="old", result="x")]),
        ChatMessage(
            role="assistant",
            contents=[
                TextContent(text="let me check"),
                FunctionCallContent(call_id="open", name="f", arguments={}),
            ],
        ),
        ChatMessage(role="user", contents=[TextContent(text="hi")]),
    ]
    out = balanced(messages)
    assert [m["role"] for m in out] == ["assistant", "user"]
    assert out[0]["contents"] == [TextContent(text="let me check").model_dump(by_alias=True)]
    assert balanced(_tool_turn()) == [m.model_dump(by_alias=True) for m in _tool_turn()]


def test_chat_answer_to_state() -> None:
    message = from_chat_message(
        {
            "role": "assistant",
            "content": "checking",
            "reasoning_content": "think",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
                {"id": "b", "type": "function", "function": {"name": "g", "arguments": "[1,2]"}},
                {"type": "function", "function": {"name": "h", "arguments": ""}},
            ],
        },
        "bot",
        NOW,
    )
    assert message.author_name == "bot" and message.role == "assistant" and message.created_at == NOW
    reasoning, text, a, b, h = message.contents
    assert reasoning == ReasoningContent(text="think")
    assert text == TextContent(text="checking")
    assert isinstance(a, FunctionCallContent) and isinstance(b, FunctionCallContent)
    assert isinstance(h, FunctionCallContent)
    assert (a.call_id, a.name, a.arguments, a.model_extra) == ("a", "f", {"x": 1}, {})
    assert (b.arguments, b.model_extra) == ({}, {"rawArguments": "[1,2]"})
    assert h.call_id.startswith("call_") and h.arguments == {}


def test_responses_output_to_state() -> None:
    message = from_responses_output(
        [
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{bad"},
        ],
        "bot",
        NOW,
    )
    reasoning, text, call = message.contents
    assert reasoning == ReasoningContent(text="plan")
    assert text == TextContent(text="Hi")
    assert isinstance(call, FunctionCallContent)
    assert (call.call_id, call.arguments, call.model_extra) == ("call_1", {}, {"rawArguments": "{bad"})


def test_usage_mapping_and_sum() -> None:
    chat = chat_usage({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})
    resp = responses_usage({"input_tokens": 1, "output_tokens": 2, "total_tokens": 3})
    assert chat == Usage(input_token_count=10, output_token_count=5, total_token_count=15)
    assert add_usage(chat, resp) == Usage(input_token_count=11, output_token_count=7, total_token_count=18)
    assert add_usage(None, resp) is resp and add_usage(chat, None) is chat
    assert chat_usage(None) is None and responses_usage({}) is None


def _through_storage(messages: list[ChatMessage]) -> list[ChatMessage]:
    state = AgentState.new()
    state.append_request(AgentRequest(correlation_id="t", created_at=NOW, messages=messages[:1]))
    state.append_response(AgentResponse(correlation_id="t", created_at=NOW, messages=messages[1:]))
    return list(load_state(dump_state(state)).replay_messages())


def test_lossless_through_save_and_load() -> None:
    turn = _tool_turn()
    stored = _through_storage(turn)
    assert stored == turn
    assert to_chat_messages(stored) == to_chat_messages(turn)
    assert to_responses_input(stored) == to_responses_input(turn)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(max_size=40),
    raw_args=st.one_of(
        st.dictionaries(st.text(max_size=6), _json_values, max_size=4).map(json.dumps), st.text(max_size=20)
    ),
    result=_json_values,
)
def test_model_output_round_trips_to_the_same_wire_message(text: str, raw_args: str, result: Any) -> None:
    wire_call = {"id": "call_x", "type": "function", "function": {"name": "f", "arguments": raw_args}}
    answer = from_chat_message(
        {"role": "assistant", "content": text or None, "tool_calls": [wire_call]}, "bot", NOW
    )
    tool_message = ChatMessage(role="tool", contents=[FunctionResultContent(call_id="call_x", result=result)])
    user = ChatMessage(role="user", contents=[TextContent(text="q")])
    stored = _through_storage([user, answer, tool_message])
    assistant, tool = to_chat_messages(stored)[1:]
    sent = assistant["tool_calls"][0]["function"]["arguments"]
    try:
        original = json.loads(raw_args)
    except json.JSONDecodeError:
        original = None
    if isinstance(original, dict):
        assert json.loads(sent) == original
    elif not raw_args.strip():
        assert sent == "{}"  # no arguments at all means an empty object
    else:
        assert sent == raw_args  # kept verbatim
    assert assistant["content"] == (text or None)
    assert tool["content"] == (result if isinstance(result, str) else json.dumps(result, ensure_ascii=False))
