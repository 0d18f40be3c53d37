"""Every stored fixture (reference 1.1.0 states, the 1.0.0 seed sample, our own newer ones) loads,
round-trips losslessly and replays the right messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from state_helpers import FIXTURES, STATE_FIXTURES, same_except_version

from state import CURRENT_SCHEMA_VERSION, ErrorContent, OpaqueContent, check_state, dump_state, load_state


def test_fixture_set_is_complete() -> None:
    names = {p.name for p in STATE_FIXTURES}
    assert {
        "state-1.0.0-seed-sample.json",
        "state-1.1.0-1000-entries-text.json",
        "state-1.1.0-with-error-entry.json",
        "state-1.2.0-all-features.json",
        "state-1.4.0-refused-runs.json",
        "state-1.4.0-deleted.json",
        "state-1.5.0-owned.json",
        "state-1.6.0-turn-in-progress.json",
        "state-1.7.0-awaiting-approval.json",
        "state-1.8.0-decided-approvals.json",
        "state-1.9.0-newer-minor.json",
    } <= names


@pytest.mark.parametrize("path", STATE_FIXTURES, ids=lambda p: p.name)
def test_fixture_round_trips_losslessly(path: Path) -> None:
    raw = path.read_bytes()
    state = load_state(raw)
    out = dump_state(state)
    assert json.loads(out)["schemaVersion"] == CURRENT_SCHEMA_VERSION
    assert same_except_version(json.loads(out), json.loads(raw))
    # And a second generation is byte-identical to the first.
    assert dump_state(load_state(out)) == out


@pytest.mark.parametrize("path", STATE_FIXTURES, ids=lambda p: p.name)
def test_fixture_loads_from_text_and_bytes_alike(path: Path) -> None:
    from_text = dump_state(load_state(path.read_text(encoding="utf-8")))
    assert from_text == dump_state(load_state(path.read_bytes()))


@pytest.mark.parametrize("path", STATE_FIXTURES, ids=lambda p: p.name)
def test_check_state_accepts_every_fixture_and_changes_nothing(path: Path) -> None:
    document = json.loads(path.read_bytes())
    before = json.dumps(document)
    check_state(document)
    assert json.dumps(document) == before


@pytest.mark.parametrize("path", STATE_FIXTURES, ids=lambda p: p.name)
def test_fixture_is_valid_for_our_schema(path: Path, our_schema: Draft202012Validator) -> None:
    our_schema.validate(json.loads(path.read_bytes()))
    our_schema.validate(json.loads(dump_state(load_state(path.read_bytes()))))


def test_seed_sample_1_0_0() -> None:
    state = load_state((FIXTURES / "state-1.0.0-seed-sample.json").read_bytes())
    assert state.schema_version == "1.0.0"
    replay = list(state.replay_messages())
    assert [m.role for m in replay] == ["user", "assistant", "tool", "assistant", "system", "assistant"]
    assert replay[0].text == "Start the documentation generation workflow for the product 'Goldbrew Coffee'"
    assert replay[1].contents[0].type == "functionCall"
    assert replay[2].contents[0].type == "functionResult"
    assert replay[3].text.startswith('The documentation generation workflow for the product "Goldbrew')
    assert "you\u2019d like" in replay[3].text
    # Timestamps keep the text they were written with (no normalisation of precision or zone).
    first = state.entries[1]
    assert first.created_at == "2025-11-04T19:33:10.47008+00:00"
    assert first.messages[0].created_at == "2025-11-04T19:33:10+00:00"
    run = state.find_run("c338f064f4b44b8d9c21a66e3cda41b2")
    assert run is not None and run.status == "succeeded"
    assert run.response.usage is not None and run.response.usage.total_token_count == 658


def test_reference_error_entry_is_a_failed_turn_that_is_not_replayed() -> None:
    path = FIXTURES / "state-1.1.0-with-error-entry.json"
    raw = path.read_bytes()
    state = load_state(raw)
    texts = [m.text for m in state.replay_messages()]
    assert texts == ["m0", "reply#1", "m1", "reply#2", "m2", "reply#3", "after error", "reply#1"]
    failed = state.find_run("cE")
    assert failed is not None and failed.status == "failed"
    assert failed.response.failure is None  # legacy: recognised, not rewritten
    assert failed.response.failed
    assert isinstance(failed.response.messages[0].contents[0], ErrorContent)
    assert failed.request is not None and failed.request.messages[0].text == "boom?"
    ok = state.find_run("c9")
    assert ok is not None and ok.status == "succeeded"
    # Recognising the legacy failure does not change what is stored.
    assert same_except_version(json.loads(dump_state(state)), json.loads(raw))


def test_reference_1000_entries() -> None:
    state = load_state((FIXTURES / "state-1.1.0-1000-entries-text.json").read_bytes())
    assert len(state) == 1000
    replay = list(state.replay_messages())
    assert len(replay) == 1000
    assert [m.role for m in replay[:4]] == ["user", "assistant", "user", "assistant"]
    assert replay[-1].author_name == "WeatherAgent"
    run = state.find_run(f"{499:032x}")
    assert run is not None and run.status == "succeeded"
    assert run.request is not None and run.response.correlation_id == run.request.correlation_id


def test_our_1_2_0_fixture() -> None:
    state = load_state((FIXTURES / "state-1.2.0-all-features.json").read_bytes())
    assert state.schema_version == "1.2.0"
    assert state.state_bag == {"memory": {"facts": ["likes tea"], "n": 2}, "counter": 7}
    assert state.service_thread_id == "resp_abc"
    failed = state.find_run("c2")
    assert failed is not None and failed.status == "failed"
    assert failed.response.failure is not None and failed.response.failure.status == 503
    assert [m.text for m in state.replay_messages() if m.role == "user"] == ["hello", "again"]


def test_our_1_6_0_fixture_keeps_the_turn_in_progress_apart_from_the_history() -> None:
    state = load_state((FIXTURES / "state-1.6.0-turn-in-progress.json").read_bytes())
    assert state.schema_version == "1.6.0"
    # What 1.5.0 added stays alongside: the session's owner.
    assert state.user_id == "user-1"
    active = state.active_turn
    assert active is not None and active["request"]["correlationId"] == "run-2"
    assert [q["correlationId"] for q in state.queued_runs] == ["run-3"]
    # Neither is a run yet, nor part of what is replayed to a model.
    assert state.find_run("run-2") is None and state.find_run("run-3") is None
    assert [m.text for m in state.replay_messages() if m.role == "user"] == ["hello"]
    state.active_turn = None
    state.queued_runs = []
    data = json.loads(dump_state(state))["data"]
    assert "activeTurn" not in data and "queuedRuns" not in data


def test_our_1_7_0_fixture_keeps_the_approvals_and_steered_runs_of_the_turn_in_progress() -> None:
    raw = (FIXTURES / "state-1.7.0-awaiting-approval.json").read_bytes()
    state = load_state(raw)
    assert state.schema_version == "1.7.0"
    active = state.active_turn
    assert active is not None
    approvals = active["approvals"]
    assert [(a["callId"], "decision" in a) for a in approvals] == [("call-1", True), ("call-2", False)]
    # A run sent with `steer` while it waits: its message, for the turn's next model call.
    [steer] = active["steered"]
    assert steer["correlationId"] == "run-3"
    assert steer["messages"][0]["contents"][0]["text"] == "Keep old.txt too"
    # Waiting for decisions is no run yet, nor part of what is replayed to a model.
    assert state.find_run("run-2") is None
    assert [m.text for m in state.replay_messages() if m.role == "user"] == ["hello"]
    assert same_except_version(json.loads(dump_state(state)), json.loads(raw))


def test_our_1_8_0_fixture_keeps_the_decisions_on_the_finished_runs_response() -> None:
    raw = (FIXTURES / "state-1.8.0-decided-approvals.json").read_bytes()
    state = load_state(raw)
    assert state.schema_version == "1.8.0"
    assert state.active_turn is None
    record = state.find_run("run-2")
    assert record is not None and record.status == "succeeded" and record.response_wire is not None
    kept = record.response_wire["approvals"]
    assert [(a["callId"], a["decision"]["approved"], a["decision"]["reason"]) for a in kept] == [
        ("call-1", False, "keep the report"), ("call-2", True, "it is stale")
    ]
    # The approvals are the host's record of the run, never part of what a model is sent.
    assert all("approvals" not in m for m in state.replay_wire())
    assert json.loads(dump_state(state)) == json.loads(raw)


def test_approvals_set_on_a_finished_run_are_kept_on_its_response_entry() -> None:
    state = load_state((FIXTURES / "state-1.7.0-awaiting-approval.json").read_bytes())
    kept = [{"callId": "call-1", "name": "delete_file", "arguments": {"path": "a"},
             "requestedAt": "2026-11-26T10:00:01+00:00", "step": 1,
             "decision": {"approved": True, "decidedAt": "2026-11-26T10:01:00+00:00", "reason": "ok"}}]
    state.set_response_approvals("run-1", kept)
    again = load_state(dump_state(state))
    record = again.find_run("run-1")
    assert record is not None and record.response_wire is not None
    assert record.response_wire["approvals"] == kept
    assert record.response.model_extra == {"approvals": kept}
    with pytest.raises(KeyError):
        state.set_response_approvals("run-2", kept)  # in progress: no response entry yet


def test_newer_minor_fixture_keeps_what_it_does_not_know() -> None:
    raw = (FIXTURES / "state-1.9.0-newer-minor.json").read_bytes()
    state = load_state(raw)
    assert state.schema_version == "1.9.0"
    contents = state.entries[1].messages[0].contents
    opaque = [c for c in contents if isinstance(c, OpaqueContent)]
    assert [c.type for c in opaque] == ["hologram"]
    assert opaque[0].model_extra == {"frames": [1, 2, 3], "meta": {"fps": 24.5}}
    doc = json.loads(dump_state(state))
    assert doc["futureRootField"] == {"x": 1}
    assert doc["data"]["futureDataField"] == [True, None]
    assert same_except_version(doc, json.loads(raw))


@pytest.mark.parametrize("path", STATE_FIXTURES, ids=lambda p: p.name)
def test_check_state_measures_the_stored_size_as_the_host_counts_it(path: Path) -> None:
    # The HTTP side's size limit takes check_state's figure instead of writing the text again.
    document = json.loads(path.read_bytes())
    compact = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    assert check_state(document) == len(compact.encode("utf-8"))
