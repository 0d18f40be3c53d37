"""AgentState operations: append, the runs index, find_run, replay, state bag, thread id."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from pydantic import ValidationError
from state_helpers import failed_response, full_state, request, response, same_except_version

from state import (
    AgentRequest,
    AgentResponse,
    AgentState,
    ChatMessage,
    ErrorContent,
    InvalidState,
    OpaqueContent,
    TextContent,
    dump_state,
    load_state,
    request_hash,
)


def _reload(state: AgentState) -> AgentState:
    return load_state(dump_state(state))


def _texts(state: AgentState) -> list[str]:
    texts = [m.text for m in state.replay_messages()]
    # replay_wire filters exactly like replay_messages (every replay test below checks both).
    wire = [
        "".join(c["text"] for c in m.get("contents", ()) if c["$type"] == "text") for m in state.replay_wire()
    ]
    assert wire == texts
    return texts


def test_replay_wire_yields_the_stored_message_dicts_of_replayable_turns() -> None:
    history = [
        {"$type": "request", "correlationId": "a", "messages": [{"role": "user", "contents": [], "x": 1}]},
        {"$type": "response", "correlationId": "a", "messages": [{"role": "assistant", "authorName": "b"}]},
        {"$type": "request", "correlationId": "legacy", "messages": [{"role": "user"}]},
        {
            "$type": "response",
            "correlationId": "legacy",
            "messages": [{"role": "assistant", "contents": [{"$type": "error", "message": "m"}]}],
        },
        {"$type": "request", "correlationId": "open", "messages": [{"role": "user"}]},
    ]
    state = load_state(json.dumps({"schemaVersion": "1.1.0", "data": {"conversationHistory": history}}))
    stored = state.to_document()["data"]["conversationHistory"]
    wire = list(state.replay_wire())
    assert wire == [history[0]["messages"][0], history[1]["messages"][0]]
    assert wire[0] is stored[0]["messages"][0] and wire[1] is stored[1]["messages"][0]
    assert [ChatMessage.model_validate(m, by_alias=True) for m in wire] == list(state.replay_messages())


def test_new_state_is_an_empty_current_state() -> None:
    state = AgentState.new()
    assert len(state) == 0
    assert list(state.replay_messages()) == []
    assert state.state_bag == {}
    assert state.service_thread_id is None
    assert json.loads(dump_state(state)) == {
        "schemaVersion": "1.8.0",
        "data": {"conversationHistory": [], "runs": {}},
    }


def test_append_records_runs_and_survives_reload() -> None:
    state = AgentState.new()
    state.append_request(request("c1", "hi", 1))
    assert state.find_run("c1") is None  # not finished yet
    state.append_response(response("c1", "hello", 2))
    for s in (state, _reload(state)):
        run = s.find_run("c1")
        assert run is not None
        assert run.status == "succeeded"
        assert run.request is not None and run.request.messages[0].text == "hi"
        assert run.response.messages[0].text == "hello"
        assert run.request_hash == request_hash(json.loads(dump_state(s))["data"]["conversationHistory"][0])
    run = state.find_run("c1")
    assert run is not None
    doc = json.loads(dump_state(state))
    assert doc["data"]["runs"]["c1"] == {
        "status": "succeeded",
        "requestIndex": 0,
        "responseIndex": 1,
        "requestHash": run.request_hash,
    }


def test_request_hash_ignores_timestamps_and_ids_but_not_content() -> None:
    a = request("x", "same", 1).model_dump(by_alias=True, exclude_none=True)
    b = request("y", "same", 59).model_dump(by_alias=True, exclude_none=True)
    c = request("x", "different", 1).model_dump(by_alias=True, exclude_none=True)
    d = request("x", "same", 1, response_type="json").model_dump(by_alias=True, exclude_none=True)
    assert request_hash(a) == request_hash(b)
    assert request_hash(a) != request_hash(c)
    assert request_hash(a) != request_hash(d)
    assert request_hash(a).startswith("sha256:")


def test_failed_turn_is_kept_but_never_replayed() -> None:
    state = AgentState.new()
    state.append_request(request("c1", "one", 1))
    state.append_response(response("c1", "reply one", 2))
    state.append_request(request("c2", "two", 3))
    state.append_response(failed_response("c2", 4))
    state.append_request(request("c3", "three", 5))
    state.append_response(response("c3", "reply three", 6))
    for s in (state, _reload(state)):
        assert _texts(s) == ["one", "reply one", "three", "reply three"]
        run = s.find_run("c2")
        assert run is not None and run.status == "failed"
        assert run.response.failure is not None
        assert run.response.failure.code == "model_error"
        assert run.response.failure.retryable is True
    stored = json.loads(dump_state(state))["data"]["conversationHistory"][3]
    # Reference-format readers still see the error as content.
    assert stored["messages"][0]["contents"][0]["$type"] == "error"
    assert stored["failure"] == {
        "code": "model_error",
        "message": "the model failed",
        "retryable": True,
        "status": 503,
    }


@pytest.mark.parametrize(
    ("contents", "failed"),
    [
        ([[ErrorContent(message="x")]], True),
        ([[ErrorContent(message="x")], [ErrorContent(error_code="y")]], True),
        ([[ErrorContent(message="x"), TextContent(text="but also this")]], False),
        ([[]], False),
        ([], False),
    ],
)
def test_legacy_all_error_response_counts_as_failed(contents: list[list[Any]], failed: bool) -> None:
    legacy = {
        "schemaVersion": "1.1.0",
        "data": {
            "conversationHistory": [
                {"$type": "request", "correlationId": "c", "messages": [{"role": "user", "contents": []}]},
                {
                    "$type": "response",
                    "correlationId": "c",
                    "messages": [
                        {"role": "assistant", "contents": [x.model_dump(by_alias=True) for x in cs]}
                        for cs in contents
                    ],
                },
            ]
        },
    }
    text = json.dumps(legacy)
    state = load_state(text)
    run = state.find_run("c")
    assert run is not None
    assert run.status == ("failed" if failed else "succeeded")
    assert run.response.failed is failed
    assert (list(state.replay_messages()) == []) is failed
    assert same_except_version(json.loads(dump_state(state)), legacy)


def test_retry_with_the_same_correlation_id_after_a_failure() -> None:
    state = AgentState.new()
    state.append_request(request("c", "ask", 1))
    state.append_response(failed_response("c", 2))
    state.append_request(request("c", "ask", 3))
    state.append_response(response("c", "answer", 4))
    run = state.find_run("c")
    assert run is not None and run.status == "succeeded"
    assert run.request is not None and run.request.created_at == state.entries[2].created_at
    assert _texts(state) == ["ask", "answer"]
    assert json.loads(dump_state(state))["data"]["runs"]["c"]["requestIndex"] == 2


def test_unfinished_turn_is_not_replayed() -> None:
    state = AgentState.new()
    state.append_request(request("a", "first", 1))
    state.append_response(response("a", "done", 2))
    state.append_request(request("b", "pending", 3))
    assert _texts(state) == ["first", "done"]
    assert state.find_run("b") is None
    assert _texts(_reload(state)) == ["first", "done"]


def test_interleaved_turns_replay_request_before_its_response() -> None:
    state = AgentState.new()
    state.append_request(request("a", "qa", 1))
    state.append_request(request("b", "qb", 2))
    state.append_response(response("b", "rb", 3))
    state.append_response(response("a", "ra", 4))
    assert _texts(state) == ["qb", "rb", "qa", "ra"]
    run = state.find_run("a")
    assert run is not None and run.request is not None and run.request.messages[0].text == "qa"


def test_response_without_request() -> None:
    state = AgentState.new()
    state.append_response(response("lonely", "hi", 1))
    for s in (state, _reload(state)):
        run = s.find_run("lonely")
        assert run is not None and run.request is None and run.request_hash is None
        assert _texts(s) == ["hi"]


def test_find_run_on_a_legacy_state_scans_and_append_writes_a_complete_index() -> None:
    raw = json.dumps(
        {
            "schemaVersion": "1.0.0",
            "data": {
                "conversationHistory": [
                    json.loads(request("old", "q", 1).model_dump_json(by_alias=True, exclude_none=True)),
                    json.loads(response("old", "r", 2).model_dump_json(by_alias=True, exclude_none=True)),
                ]
            },
        }
    )
    state = load_state(raw)
    assert "runs" not in json.loads(dump_state(state))["data"]  # lossless until something changes
    old = state.find_run("old")
    assert old is not None and old.status == "succeeded"
    state.append_request(request("new", "q2", 3))
    state.append_response(response("new", "r2", 4))
    runs = json.loads(dump_state(state))["data"]["runs"]
    assert set(runs) == {"old", "new"}
    assert runs["old"]["responseIndex"] == 1 and runs["new"]["responseIndex"] == 3


def test_inconsistent_runs_index_is_rebuilt_not_trusted() -> None:
    state = full_state()
    doc = json.loads(dump_state(state))
    history = doc["data"]["conversationHistory"]
    doc["data"]["runs"]["c3"]["responseIndex"] = 1  # points at c1's response
    state = load_state(json.dumps(doc))
    run = state.find_run("c3")
    assert run is not None and run.response.messages[0].text == "fine"
    out = json.loads(dump_state(state))
    assert out["data"]["runs"]["c3"]["responseIndex"] == 5
    assert out["data"]["conversationHistory"] == history


def test_out_of_range_runs_index_is_rebuilt() -> None:
    doc = json.loads(dump_state(full_state()))
    doc["data"]["runs"]["c1"]["requestIndex"] = 99
    state = load_state(json.dumps(doc))
    run = state.find_run("c1")
    assert run is not None and run.request is not None and run.request.orchestration_id == "orch-1"


def test_state_bag_and_service_thread_id() -> None:
    state = AgentState.new()
    state.state_bag["mem"] = {"a": [1, 2.5, None, True, "x"]}
    state.service_thread_id = "resp_1"
    again = _reload(state)
    assert again.state_bag == {"mem": {"a": [1, 2.5, None, True, "x"]}}
    assert again.service_thread_id == "resp_1"
    again.service_thread_id = None
    assert again.service_thread_id is None
    assert _reload(again).service_thread_id is None
    fresh = AgentState.new()
    fresh.service_thread_id = None
    assert "serviceThreadId" not in json.loads(dump_state(fresh))["data"]
    with pytest.raises(TypeError):
        fresh.service_thread_id = 5  # type: ignore[assignment]


@pytest.mark.parametrize("value", [dt.datetime(2026, 1, 1), {1, 2}, object(), b"bytes"])
def test_a_state_bag_value_that_is_not_json_is_refused(value: Any) -> None:
    state = full_state()
    before = dump_state(state)
    state.state_bag["bad"] = value
    with pytest.raises(InvalidState):
        dump_state(state)
    del state.state_bag["bad"]
    assert dump_state(state) == before


def test_big_integers_and_unicode_survive() -> None:
    doc = {
        "schemaVersion": "1.1.0",
        "big": 2**70,
        "data": {"conversationHistory": [], "stateBag": {"n": -(2**80), "s": "ü ✓ 😀 \u2028"}},
    }
    out = dump_state(load_state(json.dumps(doc)))
    assert same_except_version(json.loads(out), doc)
    assert "😀" in out


def test_entries_are_immutable_records() -> None:
    state = full_state()
    with pytest.raises(ValidationError):
        state.entries[0].correlation_id = "other"  # type: ignore[misc]
    assert isinstance(state.entries[0], AgentRequest)
    assert isinstance(state.entries[1], AgentResponse)


def test_append_checks_its_argument() -> None:
    state = AgentState.new()
    with pytest.raises(TypeError):
        state.append_request(response("c", "x"))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        state.append_response(request("c", "x"))  # type: ignore[arg-type]
    bad = AgentRequest(messages=[ChatMessage(role="user", contents=[OpaqueContent(**{"$type": "text"})])])
    with pytest.raises(InvalidState) as info:
        state.append_request(bad)
    assert info.value.path == "data.conversationHistory[0].messages[0].contents[0].text"
    assert len(state) == 0


def test_opaque_content_built_in_python_is_written_verbatim() -> None:
    state = AgentState.new()
    opaque = OpaqueContent.model_validate({"$type": "hologram", "frames": [1]})
    state.append_request(
        AgentRequest(correlation_id="o", messages=[ChatMessage(role="user", contents=[opaque])])
    )
    stored = json.loads(dump_state(state))["data"]["conversationHistory"][0]["messages"][0]["contents"][0]
    assert stored == {"$type": "hologram", "frames": [1]}
    again = _reload(state).entries[0].messages[0].contents[0]
    assert isinstance(again, OpaqueContent) and again.model_extra == {"frames": [1]}


def test_contents_given_as_wire_dicts() -> None:
    msg = ChatMessage.model_validate(
        {"role": "user", "contents": [{"$type": "text", "text": "a"}, {"$type": "zzz", "q": 1}]}
    )
    assert isinstance(msg.contents[0], TextContent) and msg.contents[0].text == "a"
    assert isinstance(msg.contents[1], OpaqueContent) and msg.contents[1].model_extra == {"q": 1}


def test_index_missing_the_latest_run_is_rebuilt_on_load() -> None:
    # A writer labelled 1.2+ that appended a turn without indexing it.
    doc = json.loads(dump_state(full_state()))
    del doc["data"]["runs"]["c3"]
    state = load_state(json.dumps(doc))
    run = state.find_run("c3")
    assert run is not None and run.status == "succeeded"
    assert set(json.loads(dump_state(state))["data"]["runs"]) == {"c1", "c2", "c3"}


def test_a_stored_index_that_matches_is_written_back_unchanged() -> None:
    doc = json.loads(dump_state(full_state()))
    doc["data"]["runs"]["c1"]["note"] = "kept"
    out = json.loads(dump_state(load_state(json.dumps(doc))))
    assert out["data"]["runs"] == doc["data"]["runs"]


def test_user_id_is_stored_kept_on_reload_and_removable() -> None:
    state = AgentState.new()
    assert state.user_id is None
    state.user_id = "u1"
    assert json.loads(dump_state(state))["data"]["userId"] == "u1"
    assert _reload(state).user_id == "u1"
    with pytest.raises(TypeError):
        state.user_id = 5  # type: ignore[assignment]
    state.user_id = None
    assert "userId" not in json.loads(dump_state(state))["data"]


def test_user_id_that_is_not_a_string_is_refused_on_load() -> None:
    doc = {"schemaVersion": "1.5.0", "data": {"conversationHistory": [], "userId": 7}}
    with pytest.raises(InvalidState):
        load_state(json.dumps(doc))
