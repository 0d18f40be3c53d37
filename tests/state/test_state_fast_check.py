"""The fast validity check agrees with the pydantic wire schema it stands in for."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from pydantic import ValidationError
from state_strategies import SETTINGS, mutated_doc, state_doc

from state import InvalidState, dump_state, load_state
from state._check import document_ok
from state._wire import ROOT


def _pydantic_accepts(doc: Any) -> bool:
    try:
        ROOT.validate_python(doc, strict=True)
    except ValidationError:
        return False
    return True


@SETTINGS
@given(state_doc)
def test_agrees_on_valid_documents(doc: dict[str, Any]) -> None:
    assert document_ok(doc) is True
    assert _pydantic_accepts(doc) is True


@SETTINGS
@given(mutated_doc())
def test_agrees_on_mutated_documents(doc: dict[str, Any]) -> None:
    assert document_ok(doc) is _pydantic_accepts(doc)


def test_agrees_on_hand_picked_edge_cases() -> None:
    base: dict[str, Any] = {"schemaVersion": "1.2.0", "data": {}}
    cases: list[Any] = [
        base,
        {**base, "data": {"conversationHistory": None}},
        {**base, "data": {"stateBag": None}},
        {**base, "data": {"runs": None}},
        {**base, "data": {"serviceThreadId": None}},
        {**base, "data": {"runs": {"a": {"status": "failed", "responseIndex": True}}}},
        {**base, "data": {"runs": {"a": {"status": "failed", "responseIndex": 1.0}}}},
        {**base, "data": {"runs": {"a": {"status": "failed", "responseIndex": 2**70}}}},
        {"schemaVersion": 1, "data": {}},
        {"data": {}},
        {"schemaVersion": "1.0.0"},
    ]

    def content(c: dict[str, Any]) -> dict[str, Any]:
        return {"$type": "request", "messages": [{"role": "u", "contents": [c]}]}

    entry_cases: list[Any] = [
        {"$type": "response", "usage": {"inputTokenCount": 2**70}},
        {"$type": "response", "usage": {"inputTokenCount": False}},
        {"$type": "response", "usage": None, "failure": None},
        {"$type": "response", "failure": {"code": "c", "message": "m", "retryable": None}},
        {"$type": "response", "failure": {"code": "c", "message": "m", "status": 1.5}},
        {"$type": "request", "messages": [{"role": "user", "contents": None}]},
        {"$type": "request", "messages": [{"role": "user", "authorName": None, "createdAt": None}]},
        {"$type": "request", "responseSchema": None, "orchestrationId": None},
        content({"$type": "unknown", "content": None}),
        content({"$type": "unknown"}),
        content({"$type": "usage", "usage": None}),
        content({"$type": "text", "text": None}),
        content({"$type": "functionCall", "callId": "c", "name": "n", "arguments": None}),
        content({"$type": "functionCall", "callId": "c", "name": "n", "arguments": []}),
        content({"$type": "error", "details": None}),
        content({"$type": ""}),
    ]
    cases += [{**base, "data": {"conversationHistory": [e]}} for e in entry_cases]
    for doc in cases:
        assert document_ok(doc) is _pydantic_accepts(doc), doc


@pytest.mark.parametrize(
    "text",
    [
        '{"schemaVersion": "1.1.0", "data": {"stateBag": {"n": -9223372036854775809}}}',
        '{"schemaVersion": "1.1.0", "data": {"stateBag": {"m": 18446744073709551616123}}}',
        '{"schemaVersion": "1.1.0", "data": {"stateBag": {"s": "\\ud800 lone surrogate"}}}',
    ],
)
def test_text_the_fast_parser_refuses_or_mangles_still_round_trips(text: str) -> None:
    out = dump_state(load_state(text))
    assert json.loads(out)["data"] == json.loads(text)["data"]
    out.encode()  # storable as UTF-8


def test_numbers_beyond_double_range_are_refused_on_the_slow_path() -> None:
    with pytest.raises(InvalidState, match="out of range"):
        load_state('{"schemaVersion": "1.1.0", "data": {"stateBag": {"x": 1e400}}, "bad": [')
