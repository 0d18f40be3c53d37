"""Failed model calls end to end, and idempotent retries, over real HTTP."""

from __future__ import annotations

from e2e_support import OWN_SCHEMA, REFERENCE_SCHEMA, Client, history, schema_errors

from agents.testing import ModelServer, Reply


def assert_problem(answer_status: int, content_type: str, expected: int) -> None:
    """A problem document with the expected status."""
    assert answer_status == expected
    assert content_type == "application/problem+json"


async def test_a_rejected_model_call_is_a_502_and_stays_in_the_history(
    client: Client, model: ModelServer
) -> None:
    model.script(
        Reply.text("fine"),
        Reply.error(400, "The prompt was refused.", code="content_filter", type="invalid_request_error"),
        Reply.text("fine again"),
    )
    first = await client.run("assistant", "hello")
    session = first.json()["session_id"]

    failed = await client.run("assistant", "something refused", session)
    assert_problem(failed.status, failed.content_type, 502)
    problem = failed.json()
    assert problem["code"] == "content_filter" and problem["status"] == 502, problem
    assert problem["retryable"] is False and problem["model_status"] == 400
    assert problem["session_id"] == session and "refused" in problem["detail"]
    assert len(model.requests) == 2  # a 400 is not retried

    # The failure is in the history (and the state still validates against both schemas)...
    stored = await client.session_state("assistant", session)
    assert [t["status"] for t in stored["turns"]] == ["succeeded", "failed"]
    assert stored["turns"][1]["correlation_id"] == problem["correlation_id"]
    assert stored["turns"][1]["error"]["code"] == "content_filter"
    response = history(stored["state"])[3]
    assert response["failure"]["code"] == "content_filter" and response["failure"]["retryable"] is False
    assert any(c["$type"] == "error" for m in response["messages"] for c in m["contents"])
    assert schema_errors_both(stored["state"]) == []

    # ...and never replayed to the model.
    after = await client.run("assistant", "next", session)
    assert after.status == 200, after.body
    assert [m.text for m in model.requests[2].messages if m.role != "system"] == ["hello", "fine", "next"]


async def test_server_errors_are_retried_then_reported_as_retryable(
    client: Client, model: ModelServer
) -> None:
    # The agent's own retry loop (4 attempts by default) sees four 500s, then gives up.
    model.script(*[Reply.error(500, "The server had an error.", code="server_error", retry_after=0)] * 4)
    failed = await client.run("assistant", "are you there?", "e2e-server-errors")
    assert_problem(failed.status, failed.content_type, 502)
    problem = failed.json()
    assert (
        problem["code"] == "server_error" and problem["retryable"] is True and problem["model_status"] == 500
    )
    assert len(model.requests) == 4 and model.pending_replies == 0
    stored = await client.session_state("assistant", "e2e-server-errors")
    assert [t["status"] for t in stored["turns"]] == ["failed"]


async def test_idempotency_key_returns_the_same_run_and_refuses_another_body(
    client: Client, model: ModelServer
) -> None:
    model.script(Reply.text("only once"))
    key = {"Idempotency-Key": "e2e-5b0f8a52-4d1c-4f7e-9a51-2f0f3c7d9e11"}
    body = {"message": "charge my card", "session_id": "e2e-idempotent"}
    first = await client.post("/api/agents/assistant/run", json_body=body, headers=key)
    assert first.status == 200, first.body
    retry = await client.post("/api/agents/assistant/run", json_body=body, headers=key)
    assert retry.status == 200, retry.body
    assert retry.json()["correlation_id"] == first.json()["correlation_id"]
    assert retry.json()["response"]["text"] == "only once"
    assert len(model.requests) == 1

    other = await client.post(
        "/api/agents/assistant/run", json_body={**body, "message": "charge it twice"}, headers=key
    )
    assert_problem(other.status, other.content_type, 409)
    assert other.json()["code"] == "idempotency_conflict", other.body
    stored = await client.session_state("assistant", "e2e-idempotent")
    assert len(stored["turns"]) == 1 and len(history(stored["state"])) == 2
    assert len(model.requests) == 1


async def test_a_failed_run_stays_failed_under_its_idempotency_key(
    client: Client, model: ModelServer
) -> None:
    model.script(Reply.error(400, "Bad request.", code="invalid_value"))
    key = {"Idempotency-Key": "e2e-2d7c1b36-failed"}
    body = {"message": "try me", "session_id": "e2e-idempotent-failed"}
    failed = await client.post("/api/agents/assistant/run", json_body=body, headers=key)
    assert failed.status == 502, failed.body
    model.script(Reply.text("this must not be used"))
    retry = await client.post("/api/agents/assistant/run", json_body=body, headers=key)
    assert retry.status == 502, retry.body
    assert retry.json()["correlation_id"] == failed.json()["correlation_id"]
    assert retry.json()["code"] == "invalid_value"
    assert len(model.requests) == 1 and model.pending_replies == 1
    stored = await client.session_state("assistant", "e2e-idempotent-failed")
    assert [t["status"] for t in stored["turns"]] == ["failed"]


def schema_errors_both(document: object) -> list[str]:
    return schema_errors(document, OWN_SCHEMA) + schema_errors(document, REFERENCE_SCHEMA)


async def test_bad_requests_over_the_wire_are_problems_and_touch_no_state(
    client: Client, model: ModelServer
) -> None:
    session = "e2e-never-created"
    run = "/api/agents/assistant/run"
    huge = await client.post(run, json_body={"message": "x" * 2_000_000, "session_id": session})
    assert_problem(huge.status, huge.content_type, 413)
    assert huge.json()["code"] == "body_too_large"
    broken = await client.post(run, data='{"message": ', headers={"Content-Type": "application/json"})
    assert_problem(broken.status, broken.content_type, 400)
    assert broken.json()["code"] == "invalid_json"
    empty = await client.post(run, json_body={"message": "  ", "session_id": session})
    assert_problem(empty.status, empty.content_type, 400)
    assert empty.json()["field"] == "message"
    bad_id = await client.post(run, json_body={"message": "hi", "session_id": "a@b"})
    assert_problem(bad_id.status, bad_id.content_type, 400)
    assert bad_id.json()["code"] == "invalid_session_id"
    unknown = await client.post("/api/agents/nobody/run", json_body={"message": "hi", "session_id": session})
    assert_problem(unknown.status, unknown.content_type, 404)
    assert unknown.json()["code"] == "unknown_agent"
    missing = await client.get(f"/api/agents/assistant/sessions/{session}")
    assert_problem(missing.status, missing.content_type, 404)
    assert missing.json()["code"] == "session_not_found"
    assert model.requests == []
