"""(1.3.0) Archived history: which entries move, the chunks they go to, reading chunks back,
the references and archived runs kept in the state, and the fixtures of every version."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from state_helpers import FIXTURES, ts

from state import (
    AgentRequest,
    AgentResponse,
    AgentState,
    ArchivePolicy,
    ChatMessage,
    ChunkRef,
    FunctionCallContent,
    FunctionResultContent,
    HistoryUnavailable,
    InvalidState,
    TextContent,
    apply_archive,
    archive_info,
    dump_state,
    find_archived_run,
    load_state,
    plan_archive,
    read_chunk,
)

SMALL = ArchivePolicy(max_state_bytes=2048, keep_bytes=700, max_chunk_bytes=1500)


def turn(state: AgentState, i: int, size: int = 200, tool: bool = False) -> None:
    state.append_request(
        AgentRequest(
            correlation_id=f"c{i}",
            created_at=ts(2 * i),
            messages=[ChatMessage(role="user", contents=[TextContent(text=f"q{i} " + "x" * size)])],
        )
    )
    messages = [ChatMessage(role="assistant", contents=[TextContent(text=f"a{i} " + "y" * size)])]
    if tool:
        messages = [
            ChatMessage(role="assistant", contents=[FunctionCallContent(call_id=f"t{i}", name="f")]),
            ChatMessage(role="tool", contents=[FunctionResultContent(call_id=f"t{i}", result="r" * size)]),
            *messages,
        ]
    state.append_response(AgentResponse(correlation_id=f"c{i}", created_at=ts(2 * i + 1), messages=messages))


def archived(state: AgentState, policy: ArchivePolicy = SMALL) -> dict[str, bytes]:
    """Archive as the host does; returns the stored chunks by name."""
    plan = plan_archive(state, policy)
    assert plan is not None
    apply_archive(state, plan, policy)
    return {c.ref.name: c.data for c in plan.chunks}


def all_entries(state: AgentState, chunks: dict[str, bytes]) -> list[Any]:
    info = archive_info(state)
    assert info is not None
    out: list[Any] = []
    for name in sorted(chunks):
        out.extend(read_chunk(name, chunks[name], epoch=info.epoch).entries)
    return out + list(state.raw_entries())


def test_a_small_state_is_not_archived() -> None:
    state = AgentState.new()
    turn(state, 0)
    assert plan_archive(state, SMALL) is None
    assert archive_info(state) is None and state.archived_entries == 0


def test_archiving_moves_whole_old_turns_and_keeps_every_entry() -> None:
    state = AgentState.new()
    for i in range(12):
        turn(state, i, tool=i % 3 == 0)
    before = [json.loads(json.dumps(e)) for e in state.raw_entries()]
    chunks = archived(state)
    assert state.total_entries == len(before) == 24
    assert 0 < state.archived_entries < 24
    assert all_entries(state, chunks) == before  # nothing lost, nothing duplicated, in order
    kept = list(state.raw_entries())
    assert kept[0]["$type"] == "request" and kept[-1]["correlationId"] == "c11"
    assert sum(len(json.dumps(e)) for e in kept) <= SMALL.keep_bytes or len(kept) == 2
    # Runs of kept turns still resolve in the state; archived ones are recorded with absolute indexes.
    assert state.find_run("c11") is not None and state.find_run("c0") is None
    moved = find_archived_run(state, "c0")
    assert moved is not None and (moved.request_index, moved.response_index) == (0, 1)
    reloaded = load_state(dump_state(state))
    assert reloaded.find_run("c11") is not None and reloaded.total_entries == 24


def test_the_latest_turn_always_stays_even_when_larger_than_the_budget() -> None:
    state = AgentState.new()
    turn(state, 0)
    turn(state, 1, size=5000)
    archived(state)
    assert [e["correlationId"] for e in state.raw_entries()] == ["c1", "c1"]


def test_chunks_chain_back_and_references_and_runs_stay_bounded() -> None:
    policy = ArchivePolicy(
        max_state_bytes=1024, keep_bytes=500, max_chunk_bytes=900, max_chunk_refs=2, max_archived_runs=3
    )
    state = AgentState.new()
    chunks: dict[str, bytes] = {}
    for i in range(30):
        turn(state, i)
        if plan_archive(state, policy) is not None:
            chunks.update(archived(state, policy))
    info = archive_info(state)
    assert info is not None and len(info.chunks) == 2 and len(chunks) > 2
    doc = json.loads(dump_state(state))
    assert len(doc["data"]["archive"]["runs"]) == 3
    # Every chunk names its predecessor: the whole history is reachable from the newest.
    ref: ChunkRef | None = info.chunks[-1]
    seen = 0
    while ref is not None:
        chunk = read_chunk(ref, chunks[ref.name], epoch=info.epoch)
        seen += chunk.ref.count
        ref = chunk.previous
    assert seen == info.archived_entries == state.total_entries - len(state)


def test_a_corrupt_or_mismatched_chunk_is_a_typed_error() -> None:
    state = AgentState.new()
    for i in range(12):
        turn(state, i)
    chunks = archived(state)
    name, data = next(iter(chunks.items()))
    info = archive_info(state)
    assert info is not None
    ref = next(r for r in info.chunks if r.name == name)
    for bad in (data[:-1] + b" ", b"", data.replace(b'"q', b'"Q', 1)):
        with pytest.raises(HistoryUnavailable) as caught:
            read_chunk(ref, bad)
        assert caught.value.chunk == name and "corrupt" in str(caught.value)
    with pytest.raises(HistoryUnavailable, match="belongs to archive"):
        read_chunk(ref, data, epoch="0" * 16)
    with pytest.raises(HistoryUnavailable, match="does not hold the entries"):
        read_chunk(ChunkRef(name, ref.first + 1, ref.count), data)
    with pytest.raises(HistoryUnavailable, match="not a chunk name"):
        read_chunk("../../etc/passwd", data)


def test_the_1_2_0_fixture_loads_and_is_archived_on_its_first_turn() -> None:
    state = load_state((FIXTURES / "state-1.2.0-all-features.json").read_bytes())
    entries = [json.loads(json.dumps(e)) for e in state.raw_entries()]
    for i in range(10, 16):
        turn(state, i)
    chunks = archived(state)
    assert all_entries(state, chunks)[: len(entries)] == entries
    assert state.find_run("c2") is None and find_archived_run(state, "c2") is not None
    assert json.loads(dump_state(state))["schemaVersion"] == "1.8.0"


def test_the_1_3_0_fixture_reads_back_with_its_chunks(
    our_schema: Draft202012Validator, reference_schema: Draft202012Validator
) -> None:
    raw = (FIXTURES / "state-1.3.0-archived.json").read_text()
    state = load_state(raw)
    info = archive_info(state)
    assert info is not None and state.total_entries == 12 and state.last_activity_at is not None
    folder = FIXTURES / "chunks" / info.epoch
    chunks = {p.name: p.read_bytes() for p in folder.iterdir()}
    entries = all_entries(state, chunks)
    assert [e["correlationId"] for e in entries] == [f"c{i // 2}" for i in range(12)]
    doc = json.loads(dump_state(state))
    assert list(our_schema.iter_errors(doc)) == [] and list(reference_schema.iter_errors(doc)) == []


@pytest.mark.parametrize(
    "archive",
    [
        [],
        {"epoch": "xyz", "archivedEntries": 0, "chunks": []},
        {"epoch": "0123456789abcdef", "archivedEntries": -1, "chunks": []},
        {"epoch": "0123456789abcdef", "archivedEntries": 0, "chunks": [{"name": "../x", "first": 0, "count": 1}]},  # noqa: E501
        {"epoch": "0123456789abcdef", "archivedEntries": 0, "chunks": {}},
        {"epoch": "0123456789abcdef", "archivedEntries": 0, "chunks": [], "runs": {"c": {"status": "?"}}},
    ],
)
def test_a_bad_archive_is_refused(archive: Any) -> None:
    doc = {"schemaVersion": "1.3.0", "data": {"conversationHistory": [], "archive": archive}}
    with pytest.raises(InvalidState, match="archive"):
        load_state(json.dumps(doc))


def test_an_archive_carried_through_by_a_1_2_writer_is_kept() -> None:
    raw = json.loads((FIXTURES / "state-1.3.0-archived.json").read_text())
    raw["schemaVersion"] = "1.2.0"
    state = load_state(json.dumps(raw))
    assert state.archived_entries == 10
