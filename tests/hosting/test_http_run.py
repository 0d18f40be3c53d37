"""`POST /api/agents/{agent}/run` and the run resource, through a local host's durable client."""

from __future__ import annotations

import asyncio
import json
import pathlib
import sqlite3
import time
from typing import Any

import azure.durable_functions as df
import pytest
from hosting_support import ROOT, Api, make_agents, stored_state

from agents.testing import ModelServer, Reply
from hosting import ApiSettings, build_app
from hosting.client import _read as client_read
from state import load_state

RUN = "/api/agents/assistant/run"


async def test_first_message_starts_a_session_and_waits_for_the_answer(
    api: Api, host: Any, model: ModelServer
) -> None:
    model.script(Reply.text("Hello!"))
    response = await api.post(RUN, json_body={"message": "Hi"})
    assert response.status == 200, response.body
    body = response.json()
    session = body["session_id"]
    assert len(session) == 32 and int(session, 16) >= 0
    assert response.headers["x-ms-session-id"] == session
    assert body["status"] == "succeeded"
    assert body["response"]["text"] == "Hello!"
    assert body["response"]["messages"][0]["role"] == "assistant"
    assert response.headers["location"].endswith(
        f"/api/agents/assistant/sessions/{session}/runs/{body['correlation_id']}"
    )
    state = load_state(await stored_state(host, "assistant", session))
    assert len(state.entries) == 2


async def test_sessions_continue_and_new_sessions_get_fresh_ids(
    api: Api, host: Any, model: ModelServer
) -> None:
    model.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    first = (await api.post(RUN, json_body={"message": "a"})).json()
    second = await api.post(RUN, json_body={"message": "b", "session_id": first["session_id"]})
    assert second.json()["session_id"] == first["session_id"]
    other = (await api.post(RUN, json_body={"message": "c"})).json()
    assert other["session_id"] != first["session_id"]
    state = load_state(await stored_state(host, "assistant", first["session_id"]))
    assert [m.text for m in state.replay_messages()] == ["a", "one", "b", "two"]


async def test_thread_id_alias_query_parameter_and_text_plain(
    api: Api, host: Any, model: ModelServer
) -> None:
    model.script(Reply.text("x"), Reply.text("y"), Reply.text("z"))
    r1 = await api.post(RUN, json_body={"message": "hi", "thread_id": "thread-1"})
    assert r1.status == 200 and r1.json()["session_id"] == "thread-1"
    r2 = await api.post(
        RUN,
        body="plain words",
        headers={"Content-Type": "text/plain; charset=utf-8"},
        params={"session_id": "thread-1"},
    )
    assert r2.status == 200 and r2.json()["session_id"] == "thread-1"
    assert model.requests[-1].last_user_text == "plain words"
    r3 = await api.post(RUN, json_body={"message": "hi", "session_id": "a", "thread_id": "b"})
    assert r3.status == 400 and r3.json()["code"] == "conflicting_fields"
    # Found by the API fuzzer: the same name in body and query gave "'session_id' and
    # 'session_id' name different sessions"; the detail now says which is which.
    r4 = await api.post(RUN, json_body={"message": "hi", "session_id": "a"}, params={"session_id": "b"})
    assert r4.status == 400 and r4.json()["code"] == "conflicting_fields"
    assert "the body's 'session_id' and the query's 'session_id'" in r4.json()["detail"]


async def test_location_points_at_the_configured_origin_whatever_the_host_header(
    api: Api, model: ModelServer
) -> None:
    model.script(Reply.text("hi"))
    response = await api.post(
        RUN,
        json_body={"message": "x", "wait_for_response": False},
        headers={"Host": "evil.example", "X-Forwarded-Host": "evil.example"},
        origin="http://evil.example",
    )
    assert response.status == 202, response.body
    assert response.headers["location"].startswith("http://localhost:7071/api/agents/assistant/sessions/")
    assert "evil" not in response.body.decode()


def test_the_public_origin_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DURABLE_AGENTS_PUBLIC_BASE_URL", raising=False)
    monkeypatch.setenv("WEBSITE_HOSTNAME", "myapp.azurewebsites.net")
    assert ApiSettings().url("agents/a/run") == "https://myapp.azurewebsites.net/api/agents/a/run"
    monkeypatch.setenv("WEBSITE_HOSTNAME", "localhost:7071")
    assert ApiSettings().url("x") == "http://localhost:7071/api/x"
    monkeypatch.setenv("DURABLE_AGENTS_PUBLIC_BASE_URL", "https://agents.example.com/")
    assert ApiSettings().url("x") == "https://agents.example.com/api/x"
    monkeypatch.delenv("DURABLE_AGENTS_PUBLIC_BASE_URL")
    monkeypatch.delenv("WEBSITE_HOSTNAME")
    assert ApiSettings().url("x") == "/api/x"  # relative: still never the caller's Host


@pytest.mark.parametrize("how", ["body", "header", "query"])
async def test_not_waiting_answers_202_with_a_location_to_poll(
    api: Api, host: Any, model: ModelServer, how: str
) -> None:
    model.script(Reply.delay(0.3, then=Reply.text("later")))
    kwargs: dict[str, Any] = {"json_body": {"message": "hi", "session_id": f"nw-{how}"}}
    if how == "body":
        kwargs["json_body"]["wait_for_response"] = False
    elif how == "header":
        kwargs["headers"] = {"x-ms-wait-for-response": "false"}
    else:
        kwargs["params"] = {"wait_for_response": "false"}
    response = await api.post(RUN, **kwargs)
    assert response.status == 202, response.body
    body = response.json()
    assert body["status"] == "pending"
    location = response.headers["location"]
    assert location == body["location"]
    path = location.split("localhost:7071", 1)[1]
    done = await api.get(path, params={"wait": "30"})
    assert done.status == 200
    assert done.json()["status"] == "succeeded"
    assert done.json()["response"]["text"] == "later"


async def test_run_resource_is_pending_until_done_and_validates_its_wait(
    api: Api, host: Any, model: ModelServer
) -> None:
    path = "/api/agents/assistant/sessions/never/runs/nothing"
    pending = await api.get(path)
    assert pending.status == 200 and pending.json()["status"] == "pending"
    assert pending.headers["retry-after"] == "1"
    for bad in ("-1", "abc", "1000", "nan"):
        response = await api.get(path, params={"wait": bad})
        assert response.status == 400 and response.json()["field"] == "wait"
    started = time.monotonic()
    waited = await api.get(path, params={"wait": "0.3"})
    assert waited.json()["status"] == "pending" and time.monotonic() - started >= 0.3
    assert (await api.get("/api/agents/nobody/sessions/s/runs/c")).status == 404
    bad_id = await api.get("/api/agents/assistant/sessions/s/runs/a@b")
    assert bad_id.status == 400 and bad_id.json()["code"] == "invalid_correlation_id"


async def test_failed_model_call_is_a_502_problem_and_stays_in_history(
    api: Api, host: Any, model: ModelServer
) -> None:
    model.script(Reply.error(429, "slow down", code="rate_limit_exceeded"))
    response = await api.post(RUN, json_body={"message": "hi", "session_id": "fails"})
    assert response.status == 502
    assert response.mimetype == "application/problem+json"
    problem = response.json()
    assert problem["status"] == 502
    assert problem["model_status"] == 429
    assert problem["code"] == "rate_limit_exceeded"  # the model error's own code
    assert problem["retryable"] is True and "slow down" in problem["detail"]
    assert problem["correlation_id"] and problem["session_id"] == "fails"
    run = await api.get(f"/api/agents/assistant/sessions/fails/runs/{problem['correlation_id']}")
    assert run.json()["status"] == "failed" and run.json()["error"]["code"] == problem["code"]
    session = (await api.get("/api/agents/assistant/sessions/fails")).json()
    assert [t["status"] for t in session["turns"]] == ["failed"]
    state = load_state(await stored_state(host, "assistant", "fails"))
    failed = state.find_run(problem["correlation_id"])
    assert failed is not None
    assert failed.response.failure is not None


async def test_a_malformed_model_answer_is_a_502_invalid_model_response(api: Api, model: ModelServer) -> None:
    truncated = '{"id": "chatcmpl-1", "choices": [{"mess'
    model.script(Reply.raw(truncated), Reply.raw(truncated), Reply.raw(truncated))
    response = await api.post(RUN, json_body={"message": "hi", "session_id": "garbled"})
    assert response.status == 502, response.body
    problem = response.json()
    assert problem["code"] == "invalid_model_response"
    assert (problem["retryable"], problem["model_status"]) == (True, 200)
    run = await api.get(f"/api/agents/assistant/sessions/garbled/runs/{problem['correlation_id']}")
    assert run.json()["status"] == "failed" and run.json()["error"]["code"] == "invalid_model_response"


async def test_idempotency_key_runs_once_and_conflicts_on_another_body(
    api: Api, host: Any, model: ModelServer
) -> None:
    model.script(Reply.text("once"))
    headers = {"Idempotency-Key": "order-42"}
    first = await api.post(RUN, json_body={"message": "book it"}, headers=headers)
    again = await api.post(RUN, json_body={"message": "book it"}, headers=headers)
    assert first.status == again.status == 200
    assert first.json() == again.json()
    assert len(model.requests) == 1
    session = first.json()["session_id"]
    conflict = await api.post(RUN, json_body={"message": "book something else"}, headers=headers)
    assert conflict.status == 409 and conflict.json()["code"] == "idempotency_conflict"
    # A retry that names the session it learned is still the same run.
    named = await api.post(RUN, json_body={"message": "book it", "session_id": session}, headers=headers)
    assert named.json() == first.json()
    # In another session the same key names another run.
    model.script(Reply.text("elsewhere"))
    other = await api.post(RUN, json_body={"message": "book it", "session_id": "other"}, headers=headers)
    assert other.status == 200 and other.json()["correlation_id"] != first.json()["correlation_id"]
    assert len(model.requests) == 2
    state = load_state(await stored_state(host, "assistant", session))
    assert len(state.entries) == 2


async def test_client_correlation_id_is_retry_safe(api: Api, host: Any, model: ModelServer) -> None:
    model.script(Reply.text("done"))
    body = {"message": "hi", "session_id": "cid", "correlation_id": "my-run-1"}
    first = await api.post(RUN, json_body=body)
    second = await api.post(RUN, json_body=body)
    assert first.json()["correlation_id"] == "my-run-1" and second.json() == first.json()
    assert len(model.requests) == 1
    different = await api.post(RUN, json_body={**body, "message": "other"})
    assert different.status == 409


async def test_same_key_sent_concurrently_with_another_body_is_a_conflict(
    api: Api, host: Any, model: ModelServer
) -> None:
    model.handler = lambda request: Reply.delay(0.1, then=Reply.text("ok"))
    bodies = [{"message": "first", "session_id": "race"}, {"message": "second", "session_id": "race"}]
    responses = await asyncio.gather(
        *(api.post(RUN, json_body=b, headers={"Idempotency-Key": "k"}) for b in bodies)
    )
    assert sorted(r.status for r in responses) == [200, 409]
    state = load_state(await stored_state(host, "assistant", "race"))
    assert len(state.entries) == 2


async def test_a_burst_to_one_session_runs_every_turn_once_in_order(
    api: Api, host: Any, model: ModelServer
) -> None:
    model.handler = lambda request: Reply.text(f"re: {request.last_user_text}")
    count = 20
    responses = await asyncio.gather(
        *(api.post(RUN, json_body={"message": f"m{i}", "session_id": "burst"}) for i in range(count))
    )
    assert [r.status for r in responses] == [200] * count
    for i, response in enumerate(responses):
        assert response.json()["response"]["text"] == f"re: m{i}"
    state = load_state(await stored_state(host, "assistant", "burst"))
    entries = state.entries
    assert len(entries) == 2 * count
    # Strictly one turn after another: each request is directly followed by its response.
    for asked, answered in zip(entries[0::2], entries[1::2], strict=True):
        assert asked.type == "request" and answered.type == "response"
        assert asked.correlation_id == answered.correlation_id
    assert len({e.correlation_id for e in entries}) == count


async def test_a_wait_that_runs_out_is_a_202_never_a_500(model: ModelServer, tmp_path: pathlib.Path) -> None:
    from devhost import LocalHost

    app = build_app(make_agents(model), settings=ApiSettings(response_wait_seconds=0.2))
    host = LocalHost(app, tmp_path / "short", project_dir=ROOT)
    await host.start()
    try:
        api = Api(app, host.client_binding())
        model.script(Reply.delay(1.0, then=Reply.text("slow answer")))
        response = await api.post(RUN, json_body={"message": "take your time", "session_id": "slow"})
        assert response.status == 202
        path = response.headers["location"].split("localhost:7071", 1)[1]
        done = await api.get(path, params={"wait": "30"})
        assert done.json()["status"] == "succeeded"
        assert done.json()["response"]["text"] == "slow answer"
    finally:
        await host.stop()


BROKEN = '{"schemaVersion": "9.0.0", "data": {"conversationHistory": [], "fromTheFuture": true}}'


async def plant_state(host: Any, agent: str, session: str, text: str) -> None:
    """Write a state straight into the local host's store (as another writer might have)."""

    def write() -> None:
        conn = sqlite3.connect(host.db_path)
        with conn:
            conn.execute(
                "INSERT INTO entity_states (entity_id, name, key, state, last_operation_at)"
                " VALUES (?, ?, ?, ?, 0)",
                (f"@dafx-{agent}@{session}", f"dafx-{agent}", session, text),
            )
        conn.close()

    await asyncio.to_thread(write)


async def drained(host: Any, agent: str, session: str, timeout: float = 30.0) -> None:
    """Wait until the host has delivered every queued operation of a session's entity, so a check
    of its stored state afterwards covers them (a fixed sleep could look before they ran)."""
    entity_id = f"@dafx-{agent}@{session}"

    def pending() -> int:
        conn = sqlite3.connect(host.db_path)
        try:
            row = conn.execute("SELECT COUNT(*) FROM entity_messages WHERE entity_id = ?", (entity_id,))
            return int(row.fetchone()[0])
        finally:
            conn.close()

    deadline = time.monotonic() + timeout
    while await asyncio.to_thread(pending):
        assert time.monotonic() < deadline, f"{entity_id}: operations still queued after {timeout} s"
        await asyncio.sleep(0.02)


async def test_unreadable_stored_state_is_a_409_and_is_never_replaced(
    api: Api, host: Any, model: ModelServer
) -> None:
    await plant_state(host, "assistant", "future", BROKEN)
    response = await api.post(RUN, json_body={"message": "hi", "session_id": "future"})
    assert response.status == 409
    assert response.json()["code"] == "state_unreadable"
    assert "9.0.0" in response.json()["detail"]
    # Not waiting changes nothing: no run id is handed out for a turn that could never run.
    queued = await api.post(
        RUN, json_body={"message": "hi", "session_id": "future", "wait_for_response": False}
    )
    assert queued.status == 409 and queued.json()["code"] == "state_unreadable"
    assert (await api.get("/api/agents/assistant/sessions/future/runs/c1")).status == 409
    assert (await api.get("/api/agents/assistant/sessions/future")).status == 409
    assert (await api.post("/api/agents/assistant/sessions/future/reset")).status == 409
    await drained(host, "assistant", "future")
    assert await stored_state(host, "assistant", "future") == BROKEN
    assert model.requests == []


SUFFIXED = '{"schemaVersion": "1.2.0-beta", "data": {"conversationHistory": []}}'


async def test_a_version_the_state_package_refuses_is_refused_before_waiting(
    api: Api, host: Any, model: ModelServer
) -> None:
    # The HTTP side's first look uses the state package's own version policy, so a version the
    # entity will refuse is answered at once, not after the wait (`1.2.0-beta` is no 1.x.y).
    await plant_state(host, "assistant", "beta", SUFFIXED)
    started = time.monotonic()
    response = await api.post(RUN, json_body={"message": "hi", "session_id": "beta"})
    assert response.status == 409
    assert response.json()["code"] == "state_unreadable"
    assert "'1.2.0-beta' is not a <major>.<minor>.<patch> version" in response.json()["detail"]
    assert time.monotonic() - started < 5
    await drained(host, "assistant", "beta")
    assert await stored_state(host, "assistant", "beta") == SUFFIXED
    assert model.requests == []


async def test_text_plain_body_is_the_message_verbatim(api: Api, host: Any, model: ModelServer) -> None:
    model.script(Reply.text("ok"))
    text = '{"message": "this is text, not JSON"}'
    response = await api.post(RUN, body=text, headers={"Content-Type": "text/plain"})
    assert response.status == 200
    assert model.requests[0].last_user_text == text


BAD_ENTRY = '{"schemaVersion": "1.0.0", "data": {"conversationHistory": [{"$type": "mystery"}]}}'


UNREADABLE = {
    "entry": BAD_ENTRY,
    "broken json": '{"schemaVersion": "1.2.0", "data": {"conversationHistory": [',
    "not an object": '["schemaVersion", "1.2.0"]',
    "nan": '{"schemaVersion": "1.2.0", "data": {"conversationHistory": [], "x": NaN}}',
}


@pytest.mark.parametrize("text", list(UNREADABLE.values()), ids=list(UNREADABLE))
async def test_an_unreadable_state_is_a_409_on_every_route_at_once_and_delete_clears_it(
    api: Api, host: Any, model: ModelServer, text: str
) -> None:
    await plant_state(host, "assistant", "odd", text)
    session = "/api/agents/assistant/sessions/odd"
    started = time.monotonic()
    answers = [
        await api.post(RUN, json_body={"message": "hi", "session_id": "odd"}),
        await api.post(RUN, json_body={"message": "hi", "session_id": "odd", "wait_for_response": False}),
        await api.get(f"{session}/runs/c1", params={"wait": "5"}),
        await api.get(session),
        await api.post(f"{session}/reset"),
    ]
    assert time.monotonic() - started < 5  # at once, not after a wait
    for answer in answers:
        assert answer.status == 409, answer.body
        assert answer.mimetype == "application/problem+json"
        assert answer.json()["code"] == "state_unreadable"
    await drained(host, "assistant", "odd")
    assert await stored_state(host, "assistant", "odd") == text  # never replaced
    assert model.requests == []
    # DELETE is the way out: the session goes, and the id can start afresh.
    deleted = await api.delete(session)
    assert deleted.status == 202, deleted.body
    await drained(host, "assistant", "odd")
    assert (await api.get(session)).status == 404
    model.script(Reply.text("fresh"))
    fresh = await api.post(RUN, json_body={"message": "hi", "session_id": "odd"})
    assert fresh.status == 200 and fresh.json()["response"]["text"] == "fresh"


async def test_run_options_reach_the_model(api: Api, host: Any, model: ModelServer) -> None:
    model.script(Reply.text("ok"))
    body = {"message": "hi", "session_id": "opts", "options": {"temperature": 0.25, "max_output_tokens": 50}}
    response = await api.post(RUN, json_body=body)
    assert response.status == 200, response.body
    sent = model.requests[0].body
    assert sent["temperature"] == 0.25
    assert 50 in (sent.get("max_tokens"), sent.get("max_completion_tokens"), sent.get("max_output_tokens"))


async def test_a_session_id_drawn_for_the_request_is_not_read_before_the_turn_is_sent(
    api: Api, host: Any, model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A random id names nothing stored yet, so the look before sending is skipped; an id the
    # caller named (or one derived from an Idempotency-Key) is still read first.
    reads: list[str] = []
    read = client_read.read_entity_text

    async def counted(base_url: str, entity_id: df.EntityId) -> bytes | None:
        reads.append(entity_id.key)
        return await read(base_url, entity_id)

    monkeypatch.setattr(client_read, "read_entity_text", counted)
    model.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    fresh = await api.post(RUN, json_body={"message": "a", "wait_for_response": False})
    assert fresh.status == 202, fresh.body
    assert reads == []
    named = await api.post(
        RUN, json_body={"message": "b", "session_id": "named-1", "wait_for_response": False}
    )
    assert named.status == 202 and reads == ["named-1"]
    keyed = await api.post(
        RUN, json_body={"message": "c", "wait_for_response": False}, headers={"Idempotency-Key": "k-1"}
    )
    assert keyed.status == 202 and reads == ["named-1", keyed.json()["session_id"]]
    status = await api.get("/api/" + fresh.headers["location"].split("/api/", 1)[1], params={"wait": "30"})
    assert status.json()["status"] == "succeeded"


async def test_a_bad_id_in_the_body_is_told_in_the_words_the_path_and_query_use(
    api: Api, host: Any, model: ModelServer
) -> None:
    for field, code in (("session_id", "invalid_session_id"), ("correlation_id", "invalid_correlation_id")):
        in_body = await api.post(RUN, json_body={"message": "hi", field: "bad id!"})
        assert in_body.status == 400, in_body.body
        problem = in_body.json()
        assert problem["code"] == code and problem["field"] == field
        assert (
            problem["detail"]
            == f"'{field}' contains ' '; only letters, digits, '.', '_', '~' and '-' are allowed"
        )
        assert "pattern" not in json.dumps(problem), problem
    in_query = await api.post(RUN, json_body={"message": "hi"}, params={"session_id": "bad id!"})
    assert (
        in_query.json()["detail"]
        == "'session_id' contains ' '; only letters, digits, '.', '_', '~' and '-' are allowed"
    )
