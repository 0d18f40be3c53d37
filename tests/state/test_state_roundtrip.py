"""Property tests: generated states (unknown properties and content types included) round-trip
losslessly, and whatever the API writes validates against both schemas."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from state_helpers import our_validator, reference_validator, same_except_version
from state_strategies import SETTINGS, json_value, plain, state_doc, turn

from state import AgentRequest, AgentResponse, AgentState, ErrorContent, dump_state, load_state

OUR = our_validator()
REFERENCE = reference_validator()


@SETTINGS
@given(state_doc, st.booleans())
def test_generated_states_round_trip_losslessly(doc: dict[str, Any], as_bytes: bool) -> None:
    raw = json.dumps(doc, ensure_ascii=bool(as_bytes))
    state = load_state(raw.encode() if as_bytes else raw)
    out = dump_state(state)
    assert same_except_version(json.loads(out), doc)
    assert dump_state(load_state(out)) == out
    assert OUR.is_valid(json.loads(out))
    assert len(state) == len(doc["data"]["conversationHistory"])


@SETTINGS
@given(state_doc)
def test_models_see_what_is_stored(doc: dict[str, Any]) -> None:
    state = load_state(json.dumps(doc))
    for entry, raw in zip(state.entries, doc["data"]["conversationHistory"], strict=True):
        assert entry.type == raw["$type"]
        assert entry.created_at == raw.get("createdAt")
        wire = entry.model_dump(mode="json", by_alias=True, exclude_unset=True)
        assert wire == raw


@SETTINGS
@given(st.lists(turn, max_size=4), st.dictionaries(plain, json_value, max_size=2), st.none() | plain)
def test_everything_the_api_writes_validates_against_both_schemas(
    turns: list[Any], bag: dict[str, Any], thread: str | None
) -> None:
    state = AgentState.new()
    for cid, asked, answered, failed in turns:
        state.append_request(AgentRequest(correlation_id=cid, messages=asked, response_type="text"))
        state.append_response(AgentResponse(correlation_id=cid, messages=answered, failure=failed))
    state.state_bag.update(bag)
    state.service_thread_id = thread
    doc = json.loads(dump_state(state))
    assert [e.message for e in OUR.iter_errors(doc)] == []
    assert [e.message for e in REFERENCE.iter_errors(doc)] == []
    again = load_state(json.dumps(doc))
    for cid, *_ in turns:
        run = again.find_run(cid)
        assert run is not None
        expected_failed = run.response.failure is not None or (
            bool(cs := [c for m in run.response.messages for c in m.contents])
            and all(isinstance(c, ErrorContent) for c in cs)
        )
        assert (run.status == "failed") is expected_failed
