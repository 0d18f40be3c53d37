"""The bad-state matrix: every kind of unreadable state gives its typed error naming what was
found, and the input is never modified."""

from __future__ import annotations

import json
from typing import Any

import pytest

from state import (
    IncompatibleStateVersion,
    InvalidState,
    StateError,
    check_root,
    check_state,
    load_state,
    parse_state_json,
    response_failed,
)


def _doc(history: Any = None, version: Any = "1.1.0", **data: Any) -> str:
    body: dict[str, Any] = {"conversationHistory": [] if history is None else history, **data}
    return json.dumps({"schemaVersion": version, "data": body})


def _req(**over: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "$type": "request",
        "correlationId": "c",
        "messages": [{"role": "user", "contents": [{"$type": "text", "text": "hi"}]}],
    }
    entry.update(over)
    return entry


def _resp(**over: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "$type": "response",
        "correlationId": "c",
        "messages": [{"role": "assistant", "contents": [{"$type": "text", "text": "yo"}]}],
    }
    entry.update(over)
    return entry


def _with_content(content: Any) -> str:
    return _doc([_req(messages=[{"role": "user", "contents": [content]}])])


SUPPORTED = "this build reads 1.x (current 1.8.0)"
H = "data.conversationHistory"

VERSION_CASES: list[tuple[str, str, str]] = [
    ("other major", _doc(version="2.0.0"), f"schemaVersion '2.0.0' is not supported: {SUPPORTED}"),
    ("major zero", _doc(version="0.9.1"), f"schemaVersion '0.9.1' is not supported: {SUPPORTED}"),
    ("missing", json.dumps({"data": {"conversationHistory": []}}), f"schemaVersion is missing: {SUPPORTED}"),
    ("empty", _doc(version=""), f"schemaVersion is empty: {SUPPORTED}"),
    ("blank", _doc(version="  "), "schemaVersion is empty"),
    ("two parts", _doc(version="1.2"), "schemaVersion '1.2' is not a <major>.<minor>.<patch> version"),
    ("prefixed", _doc(version="v1.2.0"), "schemaVersion 'v1.2.0' is not a <major>.<minor>.<patch> version"),
    ("prerelease", _doc(version="1.2.0-beta"), "'1.2.0-beta' is not a <major>.<minor>.<patch>"),
    ("letters", _doc(version="one"), "schemaVersion 'one' is not a <major>.<minor>.<patch> version"),
    ("leading zero", _doc(version="01.2.0"), "'01.2.0' is not a <major>.<minor>.<patch>"),
    ("number", _doc(version=1.2), "schemaVersion 1.2 (a number) is not a version string"),
    ("null", _doc(version=None), "schemaVersion null (null) is not a version string"),
    ("object", _doc(version={"major": 1}), "(an object) is not a version string"),
    # The version is checked before the data: a 2.x state is "incompatible", never "invalid".
    ("major 2, data of another shape", json.dumps({"schemaVersion": "2.0.0", "data": [1]}), "'2.0.0'"),
]

INVALID_CASES: list[tuple[str, str | bytes, str]] = [
    ("array root", "[]", "the state root must be an object with 'schemaVersion' and 'data', found an array"),
    ("string root", '"state"', "found a string"),
    ("number root", "42", "found a number"),
    ("null root", "null", "found null"),
    ("truncated", _doc([_req()])[:-7], "the state is not valid JSON: "),
    ("cut after brace", "{", "the state is not valid JSON"),
    ("empty text", "", "the state is not valid JSON"),
    ("empty bytes", b"", "the state is not valid JSON"),
    ("not utf-8", b'{"schemaVersion": "1.1.0", "data": {"x": "\xff\xfe"}}', "the state is not valid JSON"),
    ("NaN", '{"schemaVersion": "1.1.0", "data": {"x": NaN}}', "the state is not valid JSON"),
    ("Infinity", '{"schemaVersion": "1.1.0", "data": {"x": -Infinity}}', "the state is not valid JSON"),
    ("data missing", json.dumps({"schemaVersion": "1.1.0"}), "data: required property is missing"),
    (
        "data array",
        json.dumps({"schemaVersion": "1.1.0", "data": []}),
        "data: expected an object, found an array",
    ),
    ("history object", _doc({"0": _req()}), f"{H}: expected an array, found an object"),
    ("history string", _doc("[]"), f"{H}: expected an array, found a string"),
    ("history null", _doc(None).replace("[]", "null"), f"{H}: expected an array, found null"),
    ("entry not object", _doc([_req(), 5]), f"{H}[1]"),
    (
        "unknown entry type",
        _doc([_req(), _resp(), _req(), {"$type": "foo"}]),
        f"{H}[3].$type: unknown entry type 'foo'",
    ),
    ("entry without type", _doc([{"correlationId": "c"}]), f"{H}[0].$type: entry has no '$type'"),
    (
        "entry type number",
        _doc([_req(**{"$type": 7})]),
        f"{H}[0].$type: entry '$type' must be 'request' or 'response', found a number 7",
    ),
    (
        "correlationId number",
        _doc([_req(correlationId=5)]),
        f"{H}[0].correlationId: expected a string, found a number 5",
    ),
    ("createdAt number", _doc([_req(createdAt=20260101)]), f"{H}[0].createdAt: expected a string"),
    ("messages object", _doc([_req(messages={})]), f"{H}[0].messages: expected an array, found an object"),
    ("message not object", _doc([_req(messages=["hi"])]), f"{H}[0].messages[0]"),
    (
        "message without role",
        _doc([_req(messages=[{"contents": []}])]),
        f"{H}[0].messages[0].role: required property is missing",
    ),
    ("role number", _doc([_req(messages=[{"role": 1}])]), f"{H}[0].messages[0].role: expected a string"),
    (
        "contents object",
        _doc([_req(messages=[{"role": "user", "contents": {}}])]),
        f"{H}[0].messages[0].contents: expected an array",
    ),
    (
        "text without text",
        _with_content({"$type": "text"}),
        f"{H}[0].messages[0].contents[0].text: required property is missing",
    ),
    (
        "text number",
        _with_content({"$type": "text", "text": 5}),
        f"{H}[0].messages[0].contents[0].text: expected a string, found a number 5",
    ),
    (
        "content not object",
        _with_content("hi"),
        f"{H}[0].messages[0].contents[0]: "
        "expected a content object with a string '$type', found a string \"hi\"",
    ),
    (
        "content without type",
        _with_content({"text": "hi"}),
        f"{H}[0].messages[0].contents[0].$type: content needs a string '$type', found null",
    ),
    (
        "content type number",
        _with_content({"$type": 3, "text": "hi"}),
        "contents[0].$type: content needs a string '$type', found a number 3",
    ),
    (
        "functionCall without name",
        _with_content({"$type": "functionCall", "callId": "x"}),
        f"{H}[0].messages[0].contents[0].name: required property is missing",
    ),
    (
        "functionCall arguments list",
        _with_content({"$type": "functionCall", "callId": "x", "name": "f", "arguments": []}),
        "contents[0].arguments: expected an object",
    ),
    ("uri without mediaType", _with_content({"$type": "uri", "uri": "https://x"}), "contents[0].mediaType"),
    ("usage content without usage", _with_content({"$type": "usage"}), "contents[0].usage: required"),
    ("unknown without content", _with_content({"$type": "unknown"}), "contents[0].content: required"),
    (
        "usage string count",
        _doc([_resp(usage={"inputTokenCount": "5"})]),
        f'{H}[0].usage.inputTokenCount: expected an integer, found a string "5"',
    ),
    ("usage bool count", _doc([_resp(usage={"outputTokenCount": True})]), f"{H}[0].usage.outputTokenCount"),
    ("usage float count", _doc([_resp(usage={"totalTokenCount": 1.5})]), f"{H}[0].usage.totalTokenCount"),
    ("usage list", _doc([_resp(usage=[1])]), f"{H}[0].usage"),
    ("responseSchema list", _doc([_req(responseSchema=[])]), f"{H}[0].responseSchema"),
    ("failure without code", _doc([_resp(failure={"message": "x"})]), f"{H}[0].failure.code: required"),
    (
        "failure retryable string",
        _doc([_resp(failure={"code": "c", "message": "m", "retryable": "yes"})]),
        f"{H}[0].failure.retryable: expected a boolean",
    ),
    ("stateBag list", _doc(stateBag=[]), "data.stateBag: expected an object, found an array"),
    ("serviceThreadId number", _doc(serviceThreadId=5), "data.serviceThreadId: expected a string"),
    ("runs list", _doc(runs=[]), "data.runs: expected an object"),
    (
        "run bad status",
        _doc([_req(), _resp()], runs={"c": {"status": "meh", "responseIndex": 1}}),
        "data.runs.c.status: expected 'succeeded' or 'failed'",
    ),
    (
        "run without responseIndex",
        _doc(runs={"c": {"status": "failed"}}),
        "data.runs.c.responseIndex: required",
    ),
]


@pytest.mark.parametrize(
    ("text", "message"), [c[1:] for c in VERSION_CASES], ids=[c[0] for c in VERSION_CASES]
)
def test_incompatible_versions(text: str, message: str) -> None:
    raw = bytearray(text.encode())
    before = bytes(raw)
    with pytest.raises(IncompatibleStateVersion) as info:
        load_state(raw)  # type: ignore[arg-type]
    assert message in str(info.value)
    assert SUPPORTED in str(info.value)
    assert info.value.supported == SUPPORTED
    assert bytes(raw) == before
    with pytest.raises(IncompatibleStateVersion):
        load_state(text)


@pytest.mark.parametrize(
    ("text", "message"), [c[1:] for c in INVALID_CASES], ids=[c[0] for c in INVALID_CASES]
)
def test_invalid_states(text: str | bytes, message: str) -> None:
    raw = text if isinstance(text, bytes) else text.encode()
    buffer = bytearray(raw)  # a mutable input: any write by the loader would show
    with pytest.raises(InvalidState) as info:
        load_state(buffer)  # type: ignore[arg-type]
    assert message in str(info.value), str(info.value)
    assert isinstance(info.value, StateError)
    assert bytes(buffer) == raw
    with pytest.raises(InvalidState):
        load_state(raw)
    if isinstance(text, str):
        with pytest.raises(InvalidState) as again:
            load_state(text)
        assert str(again.value) == str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [c[1:] for c in INVALID_CASES + VERSION_CASES],
    ids=[c[0] for c in INVALID_CASES + VERSION_CASES],
)
def test_check_state_refuses_what_load_state_refuses_with_the_same_error(
    text: str | bytes, message: str
) -> None:
    # The HTTP side parses the text it reads with parse_state_json and checks the document with
    # check_state; the entity loads the text with load_state: neither may accept what the other
    # refuses, and both say it in the same words.
    with pytest.raises(StateError) as loaded:
        load_state(text)
    try:
        document = parse_state_json(text)
    except StateError as parsed:
        # Not JSON to a strict parser (NaN and Infinity included): refused at the parse.
        assert "not valid JSON" in str(loaded.value)
        assert type(parsed) is type(loaded.value) and str(parsed) == str(loaded.value)
        return
    with pytest.raises(StateError) as checked:
        check_state(document)
    assert type(checked.value) is type(loaded.value)
    assert str(checked.value) == str(loaded.value)


def test_error_path_is_data() -> None:
    with pytest.raises(InvalidState) as info:
        load_state(_doc([_req(), _resp(), _req(), {"$type": "foo"}]))
    assert info.value.path == "data.conversationHistory[3].$type"
    assert str(info.value) == (
        "data.conversationHistory[3].$type: unknown entry type 'foo' (expected 'request' or 'response')"
    )


def test_version_error_carries_what_was_found() -> None:
    with pytest.raises(IncompatibleStateVersion) as info:
        load_state(_doc(version="3.1.4"))
    assert info.value.found == "3.1.4"
    assert str(info.value) == "schemaVersion '3.1.4' is not supported: this build reads 1.x (current 1.8.0)"


def test_the_first_problem_in_history_order_is_reported() -> None:
    text = _doc([_req(), _req(correlationId=1), {"$type": "foo"}])
    with pytest.raises(InvalidState) as info:
        load_state(text)
    assert info.value.path == "data.conversationHistory[1].correlationId"


def test_not_text_at_all_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        load_state({"schemaVersion": "1.1.0"})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "message"), [c[1:] for c in VERSION_CASES], ids=[c[0] for c in VERSION_CASES]
)
def test_check_root_refuses_every_version_load_state_refuses(text: str, message: str) -> None:
    # Pollers (the HTTP side) look only at the root; they must refuse exactly what load_state does.
    with pytest.raises(IncompatibleStateVersion) as info:
        check_root(json.loads(text))
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("root", "message"),
    [
        (["not", "an", "object"], "the state root must be an object"),
        ({"schemaVersion": "1.2.0"}, "data: required property is missing"),
        ({"schemaVersion": "1.2.0", "data": []}, "data: expected an object"),
        ({"schemaVersion": "1.2.0", "data": {"conversationHistory": {}}}, f"{H}: expected an array"),
    ],
)
def test_check_root_names_the_root_problem(root: Any, message: str) -> None:
    with pytest.raises(InvalidState) as info:
        check_root(root)
    assert message in str(info.value)


def test_check_root_accepts_a_readable_root_without_reading_entries() -> None:
    # Entries are load_state's business: a bad entry behind a good root passes this cheap check.
    root = json.loads(_doc([_req(), {"$type": "nonsense"}], version="1.9.3"))
    check_root(root)
    with pytest.raises(InvalidState):
        load_state(json.dumps(root))


@pytest.mark.parametrize(
    ("response", "failed"),
    [
        (_resp(), False),
        (_resp(failure={"code": "c", "message": "m"}), True),
        (_resp(messages=[{"role": "assistant", "contents": [{"$type": "error", "message": "x"}]}]), True),
        (
            _resp(messages=[{"role": "assistant", "contents": [{"$type": "error"}, {"$type": "text"}]}]),
            False,
        ),
        (_resp(messages=[]), False),
        # Not validated: odd shapes answer without raising.
        (_resp(messages=["x", {"contents": "y"}]), False),
        (_resp(messages=[{"contents": [None]}]), False),
    ],
)
def test_response_failed(response: dict[str, Any], failed: bool) -> None:
    assert response_failed(response) is failed
