"""Bad requests: every one is a 4xx problem that names the field and touches no storage.

`offline_api`'s durable client binding points at a closed port, so any request that reached
storage would answer 503 instead of the 4xx asserted here.
"""

from __future__ import annotations

from typing import Any

import pytest
from hosting_support import Api

from hosting import MAX_BODY_BYTES

RUN = "/api/agents/assistant/run"


def json_headers() -> dict[str, str]:
    return {"Content-Type": "application/json"}


CASES: list[tuple[str, dict[str, Any], int, str, str]] = [
    ("invalid json", {"body": "{not json", "headers": json_headers()}, 400, "invalid_json", "body"),
    ("empty body", {"body": "", "headers": json_headers()}, 400, "invalid_json", "body"),
    ("array body", {"json_body": ["hi"]}, 400, "invalid_type", "body"),
    (
        "json nested too deep",
        {
            "body": '{"message": "hi", "options": {"a": ' + "[" * 5000 + "]" * 5000 + "}}",
            "headers": json_headers(),
        },
        400,
        "invalid_json",
        "body",
    ),
    (
        # Deep enough for orjson to refuse but parsed by json on every Python (the case above is
        # refused by the parser itself on 3.11 and by orjson on 3.12+).
        "json nested past orjson's limit",
        {
            "body": '{"message": "hi", "options": {"a": ' + "[" * 300 + "]" * 300 + "}}",
            "headers": json_headers(),
        },
        400,
        "invalid_json",
        "body",
    ),
    (
        "integer beyond the digit limit",
        {"body": '{"message": "hi", "options": {"seed": ' + "1" * 5000 + "}}", "headers": json_headers()},
        400,
        "invalid_json",
        "body",
    ),
    ("missing message", {"json_body": {"session_id": "s"}}, 400, "missing_field", "message"),
    ("empty message", {"json_body": {"message": ""}}, 400, "empty_message", "message"),
    ("blank message", {"json_body": {"message": "  \n "}}, 400, "empty_message", "message"),
    (
        "empty text body",
        {"body": "", "headers": {"Content-Type": "text/plain"}},
        400,
        "empty_message",
        "message",
    ),
    ("message not a string", {"json_body": {"message": 5}}, 400, "invalid_type", "message"),
    (
        "wait not a bool",
        {"json_body": {"message": "x", "wait_for_response": "yes"}},
        400,
        "invalid_type",
        "wait_for_response",
    ),
    ("unknown role", {"json_body": {"message": "x", "role": "robot"}}, 400, "invalid_type", "role"),
    ("unknown field", {"json_body": {"message": "x", "sesion_id": "s"}}, 400, "unknown_field", "sesion_id"),
    (
        "response_format not an object",
        {"json_body": {"message": "x", "response_format": "json"}},
        400,
        "invalid_type",
        "response_format",
    ),
    (
        "unusable response_format",
        {"json_body": {"message": "x", "response_format": {"type": 3}}},
        400,
        "invalid_field",
        "response_format",
    ),
    (
        "bad option",
        {"json_body": {"message": "x", "options": {"temperature": 9}}},
        400,
        "invalid_field",
        "options.temperature",
    ),
    # Found by probing beside the API fuzzer: a misspelt option was silently ignored.
    (
        "unknown option",
        {"json_body": {"message": "x", "options": {"temprature": 0.5}}},
        400,
        "unknown_field",
        "options.temprature",
    ),
    (
        "option of the wrong type",
        {"json_body": {"message": "x", "options": {"max_tool_rounds": "3"}}},
        400,
        "invalid_type",
        "options.max_tool_rounds",
    ),
    (
        "session with @",
        {"json_body": {"message": "x", "session_id": "a@b"}},
        400,
        "invalid_session_id",
        "session_id",
    ),
    (
        "session with /",
        {"json_body": {"message": "x", "session_id": "a/b"}},
        400,
        "invalid_session_id",
        "session_id",
    ),
    (
        "session with control char",
        {"json_body": {"message": "x", "session_id": "a\x00b"}},
        400,
        "invalid_session_id",
        "session_id",
    ),
    (
        "session too long",
        {"json_body": {"message": "x", "session_id": "s" * 129}},
        400,
        "invalid_session_id",
        "session_id",
    ),
    (
        "empty session",
        {"json_body": {"message": "x", "session_id": ""}},
        400,
        "invalid_session_id",
        "session_id",
    ),
    (
        "thread with space",
        {"json_body": {"message": "x", "thread_id": "a b"}},
        400,
        "invalid_session_id",
        "thread_id",
    ),
    (
        "query session bad",
        {"json_body": {"message": "x"}, "params": {"session_id": "a@b"}},
        400,
        "invalid_session_id",
        "session_id",
    ),
    (
        "bad wait header",
        {"json_body": {"message": "x"}, "headers": {"x-ms-wait-for-response": "maybe"}},
        400,
        "invalid_field",
        "x-ms-wait-for-response",
    ),
    (
        "bad idempotency key",
        {"json_body": {"message": "x"}, "headers": {"Idempotency-Key": "has space"}},
        400,
        "invalid_idempotency_key",
        "Idempotency-Key",
    ),
    (
        "key and correlation id",
        {"json_body": {"message": "x", "correlation_id": "c"}, "headers": {"Idempotency-Key": "k"}},
        400,
        "conflicting_fields",
        "correlation_id",
    ),
    (
        "bad correlation id",
        {"json_body": {"message": "x", "correlation_id": "c/1"}},
        400,
        "invalid_correlation_id",
        "correlation_id",
    ),
    (
        "form encoded",
        {"body": "message=hi", "headers": {"Content-Type": "application/x-www-form-urlencoded"}},
        415,
        "unsupported_media_type",
        "Content-Type",
    ),
    (
        "not utf-8",
        {"body": b"\xff\xfe", "headers": {"Content-Type": "text/plain"}},
        400,
        "invalid_encoding",
        "body",
    ),
    (
        "dot session id",
        {"json_body": {"message": "x", "session_id": ".."}},
        400,
        "invalid_session_id",
        "session_id",
    ),
    ("too large", {"json_body": {"message": "x" * (MAX_BODY_BYTES + 1)}}, 413, "body_too_large", "body"),
    (
        "declared too large",
        {"json_body": {"message": "x"}, "headers": {"Content-Length": str(MAX_BODY_BYTES + 1)}},
        413,
        "body_too_large",
        "body",
    ),
]


@pytest.mark.parametrize(("name", "kwargs", "status", "code", "field"), CASES, ids=[c[0] for c in CASES])
async def test_bad_run_requests_are_named_problems(
    offline_api: Api, name: str, kwargs: dict[str, Any], status: int, code: str, field: str
) -> None:
    response = await offline_api.post(RUN, **kwargs)
    assert response.status == status, response.body
    assert response.mimetype == "application/problem+json"
    problem = response.json()
    assert problem["status"] == status
    assert problem["code"] == code
    assert problem["field"] == field
    assert problem["type"].endswith(code)
    assert problem["detail"]


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:1/x.json"}}}, "http://127.0.0.1:1/x.json"),
        ({"type": "object", "properties": {"a": {"$ref": "file:///etc/passwd"}}}, "file:///etc/passwd"),
        ({"type": "object", "properties": {"a": {"type": "string", "pattern": "(?=a)a"}}}, "(?=a)a"),
    ],
)
async def test_caller_schemas_that_would_read_or_backtrack_are_400s_naming_the_part(
    offline_api: Api, schema: dict[str, Any], named: str
) -> None:
    response = await offline_api.post(RUN, json_body={"message": "x", "response_format": schema})
    assert response.status == 400, response.body
    problem = response.json()
    assert (problem["code"], problem["field"]) == ("invalid_field", "response_format")
    assert named in problem["detail"]


async def test_unknown_agent_is_404_on_every_agent_route(offline_api: Api) -> None:
    for method, path in [
        ("POST", "/api/agents/ghost/run"),
        ("GET", "/api/agents/ghost/sessions/s"),
        ("DELETE", "/api/agents/ghost/sessions/s"),
        ("POST", "/api/agents/ghost/sessions/s/reset"),
        ("GET", "/api/agents/ghost/sessions/s/runs/c"),
    ]:
        response = await offline_api.request(method, path, json_body={"message": "hi"})
        assert response.status == 404, (method, path)
        assert response.json()["code"] == "unknown_agent"
        assert "assistant" in response.json()["detail"]


async def test_bad_session_ids_in_paths(offline_api: Api) -> None:
    for method, path in [
        ("GET", "/api/agents/assistant/sessions/a~b@c"),
        ("DELETE", "/api/agents/assistant/sessions/a@c"),
        ("POST", "/api/agents/assistant/sessions/a%00c/reset"),
        ("GET", "/api/agents/assistant/sessions/.."),
        ("DELETE", "/api/agents/assistant/sessions/."),
    ]:
        response = await offline_api.request(method, path)
        assert response.status == 400, (method, path)
        assert response.json()["field"] == "session_id"


async def test_an_unreachable_backend_is_a_503_problem(offline_api: Api) -> None:
    response = await offline_api.post(RUN, json_body={"message": "hi"})
    assert response.status == 503
    assert response.json()["code"] == "storage_unavailable"
    assert response.headers["retry-after"] == "1"


async def test_nothing_is_stored_for_rejected_requests(api: Api, host: Any) -> None:
    for _, kwargs, _status, _code, _field in CASES:
        await api.post(RUN, **kwargs)
    listed = await host._store.run(
        lambda: host._store.conn.execute("SELECT COUNT(*) FROM entity_states").fetchone()
    )
    assert listed[0] == 0
