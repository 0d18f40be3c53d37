"""JSON Schema checks: what we write validates against our schema and the published reference
schema; our schema really checks entries while letting unknown properties through."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from state_helpers import FIXTURES, STATE_FIXTURES, every_content, full_state, sparse_contents

from state import AgentRequest, AgentState, ChatMessage, dump_state, load_state


def _errors(validator: Draft202012Validator, doc: Any) -> list[str]:
    return [e.message for e in validator.iter_errors(doc)]


def _one_entry(entry: dict[str, Any]) -> dict[str, Any]:
    return {"schemaVersion": "1.2.0", "data": {"conversationHistory": [entry]}}


def _with_content(content: dict[str, Any]) -> dict[str, Any]:
    return _one_entry({"$type": "request", "messages": [{"role": "user", "contents": [content]}]})


def test_full_state_validates_against_both(
    our_schema: Draft202012Validator, reference_schema: Draft202012Validator
) -> None:
    doc = json.loads(dump_state(full_state()))
    assert _errors(our_schema, doc) == []
    assert _errors(reference_schema, doc) == []


@pytest.mark.parametrize("content", every_content() + sparse_contents(), ids=lambda c: repr(c)[:60])
def test_each_written_content_matches_exactly_one_reference_branch(
    content: Any, our_schema: Draft202012Validator, reference_schema: Draft202012Validator
) -> None:
    state = AgentState.new()
    state.append_request(
        AgentRequest(correlation_id="c", messages=[ChatMessage(role="user", contents=[content])])
    )
    doc = json.loads(dump_state(state))
    written = doc["data"]["conversationHistory"][0]["messages"][0]["contents"][0]
    # Optional fields left None are omitted (the reference types them as strings/objects);
    # only `unknown` content must carry `content` even when it is null.
    assert None not in [v for k, v in written.items() if k != "content"]
    assert _errors(our_schema, doc) == []
    assert _errors(reference_schema, doc) == []
    reference = reference_schema.schema
    assert isinstance(reference, dict)
    branches = reference["$defs"]["chatContentItem"]["oneOf"]
    matching = [
        b["$ref"]
        for b in branches
        if Draft202012Validator({"$defs": reference["$defs"], "$ref": b["$ref"]}).is_valid(
            written
        )
    ]
    assert len(matching) == 1, matching


@pytest.mark.parametrize("path", STATE_FIXTURES, ids=lambda p: p.name)
def test_what_we_write_for_every_fixture_validates(
    path: Any, our_schema: Draft202012Validator, reference_schema: Draft202012Validator
) -> None:
    doc = json.loads(dump_state(load_state(path.read_bytes())))
    assert _errors(our_schema, doc) == []
    if path.name != "state-1.9.0-newer-minor.json":
        assert _errors(reference_schema, doc) == []
    else:
        # The one exemption: content of a type from a newer minor cannot fit the reference's oneOf.
        (content,) = [e.instance for e in reference_schema.iter_errors(doc)]
        assert content["$type"] == "hologram"


REJECTED: list[tuple[str, dict[str, Any]]] = [
    ("entry with unknown $type", _one_entry({"$type": "foo", "messages": []})),
    ("entry without $type", _one_entry({"messages": []})),
    ("message without role", _one_entry({"$type": "response", "messages": [{"contents": []}]})),
    ("role not a string", _one_entry({"$type": "response", "messages": [{"role": 3}]})),
    ("text content without text", _with_content({"$type": "text"})),
    ("text content with number", _with_content({"$type": "text", "text": 1})),
    ("content without $type", _with_content({"text": "x"})),
    ("content with number $type", _with_content({"$type": 5})),
    ("content not an object", _with_content("x")),  # type: ignore[arg-type]
    ("functionCall without callId", _with_content({"$type": "functionCall", "name": "f"})),
    ("uri without mediaType", _with_content({"$type": "uri", "uri": "u"})),
    ("usage count as string", _one_entry({"$type": "response", "usage": {"inputTokenCount": "1"}})),
    ("failure without code", _one_entry({"$type": "response", "failure": {"message": "m"}})),
    ("history not an array", {"schemaVersion": "1.2.0", "data": {"conversationHistory": {}}}),
    ("no data", {"schemaVersion": "1.2.0"}),
    ("garbled version", {"schemaVersion": "1.2", "data": {}}),
    ("stateBag not an object", {"schemaVersion": "1.2.0", "data": {"stateBag": []}}),
    (
        "run with bad status",
        {"schemaVersion": "1.2.0", "data": {"runs": {"c": {"status": "x", "responseIndex": 0}}}},
    ),
]


@pytest.mark.parametrize(("name", "doc"), REJECTED, ids=[r[0] for r in REJECTED])
def test_our_schema_rejects(name: str, doc: dict[str, Any], our_schema: Draft202012Validator) -> None:
    assert _errors(our_schema, doc) != []


ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("opaque content", _with_content({"$type": "hologram", "frames": [1, 2]})),
    ("unknown property on content", _with_content({"$type": "text", "text": "x", "lang": "en"})),
    (
        "unknown properties everywhere",
        {
            "schemaVersion": "1.7.3",
            "root": 1,
            "data": {
                "more": {},
                "conversationHistory": [
                    {
                        "$type": "response",
                        "x": 1,
                        "usage": {"cached": 2},
                        "messages": [{"role": "tool", "y": []}],
                    }
                ],
            },
        },
    ),
    ("empty data", {"schemaVersion": "1.0.0", "data": {}}),
]


@pytest.mark.parametrize(("name", "doc"), ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_our_schema_accepts(name: str, doc: dict[str, Any], our_schema: Draft202012Validator) -> None:
    assert _errors(our_schema, doc) == []
    load_state(json.dumps(doc))  # and so does the loader


def test_loader_and_schema_agree_on_the_reference_fixtures(our_schema: Draft202012Validator) -> None:
    doc = json.loads((FIXTURES / "state-1.1.0-with-error-entry.json").read_text())
    assert _errors(our_schema, doc) == []
    broken = copy.deepcopy(doc)
    del broken["data"]["conversationHistory"][2]["messages"][0]["role"]
    assert _errors(our_schema, broken) != []
    with pytest.raises(Exception, match=r"conversationHistory\[2\]\.messages\[0\]\.role"):
        load_state(json.dumps(broken))
