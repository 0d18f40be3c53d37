"""The wire-dict conversion (stored dicts -> model API input) gives exactly what the model-based
conversion gave, for both wire APIs: on every fixture state, on generated states and on messages
built with the API (fresh models and models mixed with stored dicts, as a turn sends them)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import convert_reference as ref
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents._convert import Message, balanced, to_chat_messages, to_responses_input
from state import AgentState, ChatMessage, FunctionCallContent, TextContent, load_state

_STATE_TESTS = Path(__file__).resolve().parents[1] / "state"
if str(_STATE_TESTS) not in sys.path:
    sys.path.insert(0, str(_STATE_TESTS))

# Imported by name at run time: the module lives in tests/state, outside this suite's mypy path.
_strategies = importlib.import_module("state_strategies")
SETTINGS = _strategies.SETTINGS
api_message = _strategies.api_message
content = _strategies.content
json_value = _strategies.json_value
request_entry = _strategies.request_entry
response_entry = _strategies.response_entry
text = _strategies.text

STATE_FIXTURES = sorted((_STATE_TESTS / "fixtures").glob("state-*.json"))


def _assert_same_as_reference(state: AgentState) -> None:
    models = list(state.replay_messages())
    wire = list(state.replay_wire())
    assert len(wire) == len(models)
    assert to_chat_messages(wire) == ref.to_chat_messages(models)
    assert to_responses_input(wire) == ref.to_responses_input(models)
    assert to_chat_messages(balanced(wire)) == ref.to_chat_messages(ref.balanced(models))
    assert to_responses_input(balanced(wire)) == ref.to_responses_input(ref.balanced(models))


@pytest.mark.parametrize("path", STATE_FIXTURES, ids=lambda p: p.name)
def test_fixture_states_convert_as_the_model_path_did(path: Path) -> None:
    state = load_state(path.read_text(encoding="utf-8"))
    assert len(list(state.replay_wire())) > 0 or "error" in path.name or "deleted" in path.name
    _assert_same_as_reference(state)


# Contents that exercise every branch of the conversion (generic generated content rarely hits a
# valid image, a matching call id, a kept rawArguments or a valid author name).
_call_id = st.sampled_from(["c1", "c2", "c3"])
_targeted_content = st.one_of(
    st.builds(
        lambda cid, name, args, raw: {
            "$type": "functionCall",
            "callId": cid,
            "name": name,
            **({} if args is None else {"arguments": args}),
            **({} if raw is None else {"rawArguments": raw}),
        },
        _call_id,
        text,
        st.none() | st.dictionaries(text, json_value, max_size=2),
        st.none() | text | json_value,
    ),
    st.builds(
        lambda cid, result, is_error: {
            "$type": "functionResult",
            "callId": cid,
            **({} if result is None else {"result": result}),
            **({} if is_error is None else {"isError": is_error}),
        },
        _call_id,
        st.none() | json_value,
        st.none() | st.booleans(),
    ),
    st.builds(
        lambda kind, uri, media: {
            "$type": kind,
            "uri": uri,
            **({} if media is None and kind == "data" else {"mediaType": media or "image/png"}),
        },
        st.sampled_from(["data", "uri"]),
        st.sampled_from(["data:image/png;base64,AAAA", "https://example.test/a.png", "data:text/plain,x"])
        | text,
        st.sampled_from([None, "image/jpeg", "text/plain", ""]),
    ),
    st.builds(
        lambda t, refusal: {"$type": "text", "text": t, **refusal},
        text,
        st.sampled_from([{}, {"refusal": True}]),
    ),
    st.builds(lambda t: {"$type": "reasoning", "text": t}, text),
    st.just({"$type": "error", "message": "boom", "errorCode": "x"}),
)
_message = st.builds(
    lambda role, contents, author: {
        "role": role,
        "contents": contents,
        **({} if author is None else {"authorName": author}),
    },
    st.sampled_from(["user", "assistant", "system", "developer", "tool"]) | text,
    st.lists(_targeted_content | content, max_size=4),
    st.sampled_from([None, "Bot", "weather_agent-2", "has space", "x" * 65, "ok\n", ""]) | text,
)
_entry = st.one_of(
    request_entry,
    response_entry,
    st.builds(
        lambda kind, cid, messages, failed: {
            "$type": kind,
            "correlationId": cid,
            "messages": messages,
            **({"failure": {"code": "x", "message": "y"}} if failed and kind == "response" else {}),
        },
        st.sampled_from(["request", "response", "response"]),
        st.sampled_from(["a", "b", "c"]),
        st.lists(_message, max_size=3),
        st.booleans(),
    ),
)
_state_doc = st.builds(
    lambda version, history: {"schemaVersion": version, "data": {"conversationHistory": history}},
    st.sampled_from(["1.0.0", "1.1.0", "1.2.0"]),
    st.lists(_entry, max_size=8),
)


@SETTINGS
@given(doc=_state_doc)
def test_generated_states_convert_as_the_model_path_did(doc: dict[str, Any]) -> None:
    _assert_same_as_reference(load_state(json.dumps(doc)))


@SETTINGS
@given(history=st.lists(_message, max_size=4), fresh=st.lists(api_message, max_size=4))
def test_models_and_stored_dicts_mixed_convert_as_the_model_path_did(
    history: list[dict[str, Any]], fresh: list[ChatMessage]
) -> None:
    # A turn sends the stored history as dicts followed by freshly built models.
    request = {"$type": "request", "correlationId": "h", "messages": history}
    response = {"$type": "response", "correlationId": "h", "messages": []}
    state = load_state(
        json.dumps({"schemaVersion": "1.2.0", "data": {"conversationHistory": [request, response]}})
    )
    mixed: list[Message] = [*state.replay_wire(), *fresh]
    models = [*state.replay_messages(), *fresh]
    assert to_chat_messages(balanced(mixed)) == ref.to_chat_messages(ref.balanced(models))
    assert to_responses_input(balanced(mixed)) == ref.to_responses_input(ref.balanced(models))
    assert to_chat_messages(mixed) == ref.to_chat_messages(models)
    assert to_responses_input(mixed) == ref.to_responses_input(models)


def test_kept_raw_arguments_are_sent_from_a_fresh_model_too() -> None:
    call = FunctionCallContent.model_validate(
        {"callId": "c", "name": "f", "arguments": {}, "rawArguments": "[1, 2]"}, by_alias=True
    )
    messages = [ChatMessage(role="assistant", contents=[TextContent(text="t"), call])]
    assert to_chat_messages(messages)[0]["tool_calls"][0]["function"]["arguments"] == "[1, 2]"
    assert to_chat_messages(messages) == ref.to_chat_messages(messages)
    assert to_responses_input(messages) == ref.to_responses_input(messages)


def _turn(cid: str, request: list[dict[str, Any]], response: list[dict[str, Any]], **extra: Any) -> list[Any]:
    return [
        {"$type": "request", "correlationId": cid, "messages": request},
        {"$type": "response", "correlationId": cid, "messages": response, **extra},
    ]


def test_every_branch_converts_as_the_model_path_did() -> None:
    image = {"$type": "uri", "uri": "https://example.test/a.png", "mediaType": "image/png"}
    history = [
        *_turn(
            "t1",
            [
                {"role": "developer", "contents": [{"$type": "text", "text": "be brief"}]},
                {
                    "role": "user",
                    "authorName": "ann",
                    "contents": [
                        {"$type": "text", "text": "look"},
                        image,
                        {"$type": "data", "uri": "data:image/gif;base64,R0lG"},
                        {"$type": "data", "uri": "data:text/plain,x", "mediaType": "text/plain"},
                        {"$type": "hologram", "payload": [1, 2]},
                    ],
                },
            ],
            [
                {
                    "role": "assistant",
                    "authorName": "Weather Bot",
                    "contents": [
                        {"$type": "reasoning", "text": "hidden"},
                        {"$type": "text", "text": "checking"},
                        {
                            "$type": "functionCall",
                            "callId": "a",
                            "name": "f",
                            "arguments": {},
                            "rawArguments": "[1]",
                        },
                        {"$type": "functionCall", "callId": "b", "name": "g", "arguments": {"x": 10**30}},
                        {"$type": "functionCall", "callId": "open", "name": "h"},
                    ],
                },
                {
                    "role": "tool",
                    "contents": [
                        {"$type": "functionResult", "callId": "a", "result": "Error: bad", "isError": True},
                        {"$type": "functionResult", "callId": "b", "result": {"ok": [1, 2.5, None]}},
                        {"$type": "functionResult", "callId": "orphan"},
                    ],
                },
                {"role": "assistant", "authorName": "bot_1", "contents": [{"$type": "text", "text": "done"}]},
                {"role": "assistant", "contents": [{"$type": "text", "text": ""}]},
                {"role": "user", "authorName": "ann", "contents": [{"$type": "text", "text": "thanks"}]},
            ],
        ),
        *_turn("t2", [{"role": "user", "contents": [image]}], [], failure={"code": "x", "message": "y"}),
        *_turn(
            "t3",
            [{"role": "user", "contents": [{"$type": "text", "text": "lost"}]}],
            [{"role": "assistant", "contents": [{"$type": "error", "message": "boom"}]}],
        ),
        {"$type": "request", "correlationId": "t4", "messages": [{"role": "user", "contents": [image]}]},
    ]
    state = load_state(json.dumps({"schemaVersion": "1.1.0", "data": {"conversationHistory": history}}))
    roles = ["developer", "user", "assistant", "tool", "assistant", "assistant", "user"]
    assert [m["role"] for m in state.replay_wire()] == roles
    _assert_same_as_reference(state)
    sent = to_chat_messages(balanced(list(state.replay_wire())))
    assert sent[1]["content"][1:] == [
        {"type": "image_url", "image_url": {"url": "https://example.test/a.png"}},
        {"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lG"}},
    ]
    assert [c["function"]["arguments"] for c in sent[2]["tool_calls"]] == [
        "[1]",
        '{"x": ' + "1" + "0" * 30 + "}",
    ]
    assert "name" not in sent[2] and sent[1]["name"] == "ann" and sent[-3]["name"] == "bot_1"
    assert sent[-2:] == [
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "thanks", "name": "ann"},
    ]
    items = to_responses_input(list(state.replay_wire()))
    assert items[-2:] == [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
    ]
