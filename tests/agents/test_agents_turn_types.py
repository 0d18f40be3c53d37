"""TurnRequest / TurnResult: validation and their camelCase JSON forms."""

from __future__ import annotations

from typing import Any

import pytest

from agents import InputMessage, InvalidTurnRequest, TurnRequest, TurnResult, failure
from state import AgentRequest, AgentResponse, AgentState, ChatMessage, ErrorContent, TextContent, TurnFailure


def test_request_round_trip() -> None:
    request = TurnRequest(
        correlation_id="c1",
        messages=[InputMessage("system", "be brief"), InputMessage("user", "hi", author_name="ann")],
        response_format={"type": "object", "properties": {"a": {"type": "string"}}},
        orchestration_id="orch-1",
        options={"temperature": 0.2},
    )
    data = request.to_json()
    assert data["correlationId"] == "c1" and data["orchestrationId"] == "orch-1"
    assert data["messages"][1] == {"role": "user", "text": "hi", "authorName": "ann"}
    assert TurnRequest.from_json(data) == request


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: TurnRequest("", [InputMessage("user", "x")]), "correlation_id"),
        (lambda: TurnRequest("c" * 300, [InputMessage("user", "x")]), "correlation_id"),
        (lambda: TurnRequest("c", []), "messages"),
        (lambda: TurnRequest("c", [InputMessage("user", "  ")]), "message"),
        (lambda: InputMessage("tool", "x"), "role"),  # type: ignore[arg-type]
        (lambda: InputMessage("user", 5), "message"),  # type: ignore[arg-type]
        (
            lambda: TurnRequest("c", [InputMessage("user", "x")], response_format={"type": "nope"}),
            "response_format",
        ),
        (
            lambda: TurnRequest("c", [InputMessage("user", "x")], options={"temperature": 9}),
            "options.temperature",
        ),
        (
            lambda: TurnRequest("c", [InputMessage("user", "x")], options={"max_tool_rounds": 0}),
            "options.max_tool_rounds",
        ),
        (lambda: TurnRequest.from_json({"correlationId": "c", "messages": "hi"}), "messages"),
        (
            lambda: TurnRequest.from_json(
                {"correlationId": "c", "messages": [{"text": "x"}], "responseFormat": 1}
            ),
            "response_format",
        ),
    ],
)
def test_request_validation_names_the_field(build: Any, field: str) -> None:
    with pytest.raises(InvalidTurnRequest) as caught:
        build()
    assert caught.value.field == field


def test_result_round_trip() -> None:
    result = TurnResult(
        correlation_id="c",
        status="failed",
        messages=[{"role": "assistant", "contents": [{"$type": "error", "message": "x"}]}],
        usage={"inputTokenCount": 1},
        error=failure("rate_limited", "slow down", retryable=True, status=429),
    )
    data = result.to_json()
    assert set(data) == {"correlationId", "status", "text", "messages", "usage", "structured", "error"}
    assert data["error"] == {"code": "rate_limited", "message": "slow down", "retryable": True, "status": 429}
    assert TurnResult.from_json(data) == result
    ok = TurnResult(correlation_id="d", status="succeeded", text="hi", structured={"a": [1]})
    assert TurnResult.from_json(ok.to_json()) == ok and ok.succeeded
    with pytest.raises(ValueError):
        TurnResult.from_json({**ok.to_json(), "status": "pending"})


def test_result_from_state_reads_recorded_runs_including_legacy_failures() -> None:
    state = AgentState.new()
    user = [ChatMessage(role="user", contents=[TextContent(text="q")])]
    state.append_request(AgentRequest(correlation_id="ok", messages=user, response_type="json"))
    state.append_response(
        AgentResponse(
            correlation_id="ok",
            messages=[ChatMessage(role="assistant", contents=[TextContent(text='{"a": 1}')])],
        )
    )
    state.append_request(AgentRequest(correlation_id="new", messages=user))
    state.append_response(
        AgentResponse(
            correlation_id="new",
            messages=[
                ChatMessage(role="assistant", contents=[ErrorContent(message="boom", error_code="timeout")])
            ],
            failure=TurnFailure(code="timeout", message="boom", retryable=True),
        )
    )
    state.append_request(AgentRequest(correlation_id="old", messages=user))
    state.append_response(
        AgentResponse(
            correlation_id="old",
            messages=[
                ChatMessage(
                    role="assistant", contents=[ErrorContent(message="exploded", error_code="RuntimeError")]
                )
            ],
        )
    )
    ok = TurnResult.from_state(state, "ok")
    assert ok is not None and ok.status == "succeeded" and ok.structured == {"a": 1} and ok.text == '{"a": 1}'
    new = TurnResult.from_state(state, "new")
    assert new is not None and new.error == failure("timeout", "boom", retryable=True)
    old = TurnResult.from_state(state, "old")
    assert old is not None and old.error == failure("RuntimeError", "exploded")
    assert TurnResult.from_state(state, "missing") is None
