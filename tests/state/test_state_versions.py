"""Version policy: every 1.x loads, older minors are upgraded by explicit steps, saving writes
the current version."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from state import CHANGELOG, CURRENT_SCHEMA_VERSION, dump_state, load_state
from state._versions import CURRENT_MINOR, UPGRADE_STEPS, parse_version, upgrade


def _doc(version: str, **data: Any) -> dict[str, Any]:
    history = [
        {"$type": "request", "correlationId": "a", "messages": [{"role": "user", "contents": []}]},
        {"$type": "response", "correlationId": "a", "messages": [{"role": "assistant", "contents": []}]},
    ]
    return {"schemaVersion": version, "data": {"conversationHistory": history, **data}}


@pytest.mark.parametrize(
    "version",
    [
        "1.0.0", "1.0.3", "1.1.0", "1.2.0", "1.2.9", "1.3.0", "1.4.0", "1.5.0", "1.6.0", "1.7.0", "1.8.0",
        "1.40.2",
    ],
)
def test_every_1_x_loads_and_saves_as_current(version: str) -> None:
    state = load_state(json.dumps(_doc(version)))
    assert state.schema_version == version
    out = json.loads(dump_state(state))
    assert out["schemaVersion"] == CURRENT_SCHEMA_VERSION
    assert out["data"] == _doc(version)["data"]


def test_changelog_has_one_line_per_minor_up_to_current() -> None:
    assert list(CHANGELOG) == [f"1.{m}.0" for m in range(CURRENT_MINOR + 1)]
    assert list(CHANGELOG)[-1] == CURRENT_SCHEMA_VERSION
    assert all(line and "\n" not in line for line in CHANGELOG.values())


def test_an_upgrade_step_is_registered_for_every_older_minor() -> None:
    assert sorted(UPGRADE_STEPS) == list(range(CURRENT_MINOR))


def test_parse_version() -> None:
    assert parse_version("1.2.0") == (1, 2, 0)
    assert parse_version("1.10.3") == (1, 10, 3)


def test_step_1_0_to_1_1_changes_nothing() -> None:
    doc = _doc("1.0.0", stateBag={"p": 1}, extra=[1])
    before = copy.deepcopy(doc)
    UPGRADE_STEPS[0](doc)
    assert doc == before


def test_step_1_1_to_1_2_keeps_everything_but_a_stale_runs_index() -> None:
    doc = _doc("1.1.0", stateBag={"p": 1}, serviceThreadId="t", other={"x": 1})
    before = copy.deepcopy(doc)
    UPGRADE_STEPS[1](doc)
    assert doc == before
    doc["data"]["runs"] = {"zzz": {"status": "failed", "responseIndex": 0}}
    UPGRADE_STEPS[1](doc)
    assert doc == before


def test_step_1_3_to_1_4_keeps_tombstone_and_refused_ids_carried_by_a_1_3_writer() -> None:
    doc = _doc("1.3.0", deletedAt="2026-11-25T00:00:00Z", refusedRuns=["a", "b"], discardedRuns=["c"])
    before = copy.deepcopy(doc)
    UPGRADE_STEPS[3](doc)
    assert doc == before


def test_step_1_5_to_1_6_drops_only_progress_and_queued_runs_an_older_writer_finished() -> None:
    finished = {"a": {"status": "succeeded", "requestIndex": 0, "responseIndex": 1}}
    doc = _doc(
        "1.5.0",
        runs=finished,
        activeTurn={"request": {"correlationId": "a"}, "progress": {"steps": 1}},
        queuedRuns=[{"correlationId": "a"}, {"correlationId": "b"}],
    )
    UPGRADE_STEPS[5](doc)
    assert "activeTurn" not in doc["data"]
    assert doc["data"]["queuedRuns"] == [{"correlationId": "b"}]
    kept = _doc(
        "1.5.0", runs=finished, userId="u1", activeTurn={"request": {"correlationId": "c"}}, queuedRuns=[]
    )
    before = copy.deepcopy(kept)
    UPGRADE_STEPS[5](kept)
    assert kept == before


def test_a_1_4_document_carrying_a_finished_turn_in_progress_loads_without_it() -> None:
    # The whole chain runs on load: 1.4 -> 1.5 keeps the owner, 1.5 -> 1.6 drops the stale turn.
    finished = {"a": {"status": "succeeded", "requestIndex": 0, "responseIndex": 1}}
    doc = _doc("1.4.0", runs=finished, userId="u1", activeTurn={"request": {"correlationId": "a"}})
    state = load_state(json.dumps(doc))
    assert state.active_turn is None
    assert state.user_id == "u1"


def test_upgrade_runs_the_chain_from_the_loaded_minor() -> None:
    calls: list[int] = []
    saved = dict(UPGRADE_STEPS)
    try:
        for minor in saved:
            UPGRADE_STEPS[minor] = lambda doc, m=minor: calls.append(m)  # type: ignore[misc]
        upgrade({}, 0)
        assert calls == [0, 1, 2, 3, 4, 5, 6, 7]
        calls.clear()
        upgrade({}, 1)
        assert calls == [1, 2, 3, 4, 5, 6, 7]
        calls.clear()
        upgrade({}, CURRENT_MINOR)
        upgrade({}, CURRENT_MINOR + 3)  # newer minors: nothing to do
        assert calls == []
    finally:
        UPGRADE_STEPS.update(saved)


def test_runs_index_carried_by_an_older_writer_is_rebuilt() -> None:
    # A 1.1 writer kept our `runs` as an unknown property but appended a run it did not index.
    doc = _doc("1.1.0", runs={"a": {"status": "failed", "requestIndex": 0, "responseIndex": 1}})
    doc["data"]["conversationHistory"] += [
        {"$type": "request", "correlationId": "b", "messages": []},
        {"$type": "response", "correlationId": "b", "messages": []},
    ]
    state = load_state(json.dumps(doc))
    a, b = state.find_run("a"), state.find_run("b")
    assert a is not None and a.status == "succeeded"
    assert b is not None and b.status == "succeeded"
    out = json.loads(dump_state(state))
    assert "runs" not in out["data"]  # derived data is not written back until a turn is recorded
    assert out["data"]["conversationHistory"] == doc["data"]["conversationHistory"]


def test_newer_minor_runs_index_is_used_as_stored() -> None:
    doc = _doc("1.9.0", runs={"a": {"status": "failed", "requestIndex": 0, "responseIndex": 1, "x": 1}})
    state = load_state(json.dumps(doc))
    run = state.find_run("a")
    assert run is not None and run.status == "failed"
    assert json.loads(dump_state(state))["data"]["runs"] == doc["data"]["runs"]


def test_step_1_4_to_1_5_keeps_an_owner_carried_by_a_1_4_writer() -> None:
    doc = _doc("1.4.0", userId="u1", discardedRuns=["c"])
    before = copy.deepcopy(doc)
    UPGRADE_STEPS[4](doc)
    assert doc == before
    assert load_state(json.dumps(doc)).user_id == "u1"
