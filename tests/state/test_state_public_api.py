"""Pins the public names of the `state` package (other packages code against them)."""

import state

EXPECTED = {
    "CHANGELOG",
    "CURRENT_SCHEMA_VERSION",
    "JSON",
    "AgentRequest",
    "AgentResponse",
    "AgentState",
    "ChatMessage",
    "Content",
    "DataContent",
    "ErrorContent",
    "FunctionCallContent",
    "FunctionResultContent",
    "HostedFileContent",
    "HostedVectorStoreContent",
    "IncompatibleStateVersion",
    "InvalidState",
    "OpaqueContent",
    "ReasoningContent",
    "RunRecord",
    "StateError",
    "TextContent",
    "TurnFailure",
    "UnknownContent",
    "UriContent",
    "Usage",
    "UsageContent",
    "check_root",
    "check_state",
    "compact_json",
    "dump_state",
    "load_state",
    "parse_state_json",
    "request_hash",
    "response_failed",
    "ArchiveInfo",
    "ArchivePlan",
    "ArchivePolicy",
    "ArchivedRun",
    "Chunk",
    "ChunkRef",
    "HistoryUnavailable",
    "PendingChunk",
    "apply_archive",
    "archive_info",
    "find_archived_run",
    "plan_archive",
    "read_chunk",
    "replay_turns",
}


def test_all_is_pinned() -> None:
    assert set(state.__all__) == EXPECTED
    assert len(state.__all__) == len(EXPECTED)
    for name in state.__all__:
        assert getattr(state, name) is not None


def test_error_hierarchy() -> None:
    assert issubclass(state.InvalidState, state.StateError)
    assert issubclass(state.IncompatibleStateVersion, state.StateError)
    assert not issubclass(state.InvalidState, state.IncompatibleStateVersion)


def test_current_version() -> None:
    assert state.CURRENT_SCHEMA_VERSION == "1.8.0"
    assert list(state.CHANGELOG) == [
        "1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0", "1.7.0", "1.8.0",
    ]  # fmt: skip


def test_new_state_round_trip() -> None:
    s = state.AgentState.new()
    s.append_request(
        state.AgentRequest(
            correlation_id="c1",
            created_at="2026-01-01T00:00:00+00:00",
            messages=[state.ChatMessage(role="user", contents=[state.TextContent(text="hi")])],
        )
    )
    s.append_response(
        state.AgentResponse(
            correlation_id="c1",
            messages=[state.ChatMessage(role="assistant", contents=[state.TextContent(text="hello")])],
        )
    )
    s.state_bag["memory"] = {"facts": ["x"]}
    s.service_thread_id = "resp_1"
    again = state.load_state(state.dump_state(s))
    assert [m.text for m in again.replay_messages()] == ["hi", "hello"]
    run = again.find_run("c1")
    assert run is not None and run.status == "succeeded"
    assert run.request is not None and run.request.messages[0].text == "hi"
    assert again.state_bag == {"memory": {"facts": ["x"]}}
    assert again.service_thread_id == "resp_1"
    assert again.find_run("nope") is None
