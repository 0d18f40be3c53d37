"""Helpers of the `state` tests: fixture paths, schema validators and states built with the API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from state import (
    AgentRequest,
    AgentResponse,
    AgentState,
    ChatMessage,
    DataContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    HostedVectorStoreContent,
    ReasoningContent,
    TextContent,
    TurnFailure,
    UnknownContent,
    UriContent,
    Usage,
    UsageContent,
)

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
OUR_SCHEMA = ROOT / "schemas" / "durable-agent-entity-state.json"
# A copy of the published reference schema, so the suite does not depend on files outside the repo.
REFERENCE_SCHEMA = FIXTURES / "reference-1.1.0.schema.json"
STATE_FIXTURES = sorted(FIXTURES.glob("state-*.json"))


def _validator(path: Path) -> Draft202012Validator:
    schema = json.loads(path.read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def our_validator() -> Draft202012Validator:
    return _validator(OUR_SCHEMA)


def reference_validator() -> Draft202012Validator:
    return _validator(REFERENCE_SCHEMA)


def ts(i: int) -> str:
    return f"2026-03-01T10:{i // 60 % 60:02d}:{i % 60:02d}.{i:06d}+00:00"


def every_content() -> list[Any]:
    """One of each content type we model, with every optional field set."""
    return [
        TextContent(text="plain text"),
        ReasoningContent(text="thinking"),
        DataContent(uri="data:text/plain;base64,aGk=", media_type="text/plain"),
        UriContent(uri="https://example.invalid/a.png", media_type="image/png"),
        ErrorContent(message="bad thing", error_code="E1", details={"k": [1, 2]}),
        FunctionCallContent(call_id="call_1", name="lookup", arguments={"q": "x", "n": 3}),
        FunctionResultContent(call_id="call_1", result={"ok": True}),
        HostedFileContent(file_id="file_1"),
        HostedVectorStoreContent(vector_store_id="vs_1"),
        UsageContent(usage=Usage(input_token_count=1, output_token_count=2, total_token_count=3)),
        UnknownContent(content={"kind": "mystery"}),
    ]


def sparse_contents() -> list[Any]:
    """Contents with only required fields (optional ones left None must not be written as null)."""
    return [
        ReasoningContent(),
        ReasoningContent(text=None),
        DataContent(uri="data:,x"),
        ErrorContent(),
        ErrorContent(message=None, error_code=None, details=None),
        FunctionCallContent(call_id="c", name="f"),
        FunctionCallContent(call_id="c", name="f", arguments=None),
        FunctionResultContent(call_id="c"),
        FunctionResultContent(call_id="c", result=None),
        UnknownContent(content=None),
        UsageContent(usage=Usage()),
    ]


def request(cid: str, text: str, i: int = 0, **kw: Any) -> AgentRequest:
    kw.setdefault("response_type", "text")
    return AgentRequest(
        correlation_id=cid,
        created_at=ts(i),
        messages=[ChatMessage(role="user", created_at=ts(i), contents=[TextContent(text=text)])],
        **kw,
    )


def response(cid: str, text: str, i: int = 0, **kw: Any) -> AgentResponse:
    return AgentResponse(
        correlation_id=cid,
        created_at=ts(i),
        usage=Usage(input_token_count=10, output_token_count=5, total_token_count=15),
        messages=[ChatMessage(role="assistant", author_name="Bot", contents=[TextContent(text=text)])],
        **kw,
    )


def failed_response(cid: str, i: int = 0) -> AgentResponse:
    return AgentResponse(
        correlation_id=cid,
        created_at=ts(i),
        failure=TurnFailure(code="model_error", message="the model failed", retryable=True, status=503),
        messages=[
            ChatMessage(
                role="assistant",
                contents=[ErrorContent(message="the model failed", error_code="model_error")],
            )
        ],
    )


def full_state() -> AgentState:
    """A state using every feature we write: all content types, failure, state bag, thread id."""
    s = AgentState.new()
    s.append_request(request("c1", "hello", 1, orchestration_id="orch-1"))
    s.append_response(
        AgentResponse(
            correlation_id="c1",
            created_at=ts(2),
            messages=[
                ChatMessage(role="assistant", author_name="Bot", created_at=ts(2), contents=every_content()),
                ChatMessage(role="tool", contents=sparse_contents()),
            ],
        )
    )
    s.append_request(request("c2", "give json", 3, response_type="json", response_schema={"type": "object"}))
    s.append_response(failed_response("c2", 4))
    s.append_request(request("c3", "again", 5))
    s.append_response(response("c3", "fine", 6))
    s.state_bag["memory"] = {"facts": ["likes tea"], "n": 2}
    s.state_bag["counter"] = 7
    s.service_thread_id = "resp_abc"
    return s


def parsed(text: str | bytes) -> Any:
    return json.loads(text)


def same_except_version(a: Any, b: Any) -> bool:
    a, b = dict(a), dict(b)
    a.pop("schemaVersion", None)
    b.pop("schemaVersion", None)
    return bool(a == b)
