"""The session size limit and unexpected errors inside a turn: recorded as failed turns through the
JSON batch protocol and answered over HTTP (409 / 500) instead of leaving the run pending."""

from __future__ import annotations

import json
import pathlib
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import azure.durable_functions as df
import pytest
from hosting_support import ROOT, Api, make_agents, run_batch, run_op, stored_state
from jsonschema import Draft202012Validator

from agents import (
    Agent,
    ArchivedHistory,
    AwaitingApproval,
    ToolDecision,
    TurnEventSink,
    TurnProgress,
    TurnRequest,
    TurnResult,
)
from agents.testing import ModelServer, Reply
from hosting import ApiSettings, HostingError, build_app
from state import AgentRequest, AgentState, ChatMessage, TextContent, dump_state, load_state

ENTITY = "dafx-assistant"
LIMIT = 6000
RECORD_HEADROOM = 64 * 1024  # hosting._settings.RECORD_HEADROOM_BYTES, as documented
BIG_REPLY = "y" * 1200

_SCHEMAS = {
    "ours": ROOT / "schemas" / "durable-agent-entity-state.json",
    "reference": ROOT / "tests" / "state" / "fixtures" / "reference-1.1.0.schema.json",
}


def schema_errors(document: Any) -> list[str]:
    errors = []
    for name, path in _SCHEMAS.items():
        validator = Draft202012Validator(json.loads(path.read_text()))
        errors += [f"{name} {list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
    return errors


def history(text: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads(text)["data"]["conversationHistory"]
    return entries


@pytest.fixture(scope="module")
def limited_app(model_server: ModelServer) -> df.DFApp:
    return build_app(make_agents(model_server), settings=ApiSettings(max_session_bytes=LIMIT, public_base_url="http://localhost:7071"))


@pytest.fixture
def app(limited_app: df.DFApp, model: ModelServer) -> df.DFApp:
    """Overrides the package's `app`, so `host` and `api` serve the limited app."""
    return limited_app


def fill(app: df.DFApp, model: ModelServer, key: str) -> tuple[str, dict[str, Any]]:
    """Run big-answer turns until one is refused; the state before it and the refused result."""
    state: str | None = None
    for turn in range(20):
        model.script(Reply.text(BIG_REPLY))
        out = run_batch(app, ENTITY, key, state, [("run", run_op(f"turn {turn}", f"c{turn}"))])
        [result] = out.results
        assert result.is_error is False, result.value
        if result.value["status"] == "failed":
            assert state is not None, "the first turn was already refused"
            return state, {"result": result.value, "state": out.state}
        assert out.state is not None and len(out.state.encode()) <= LIMIT
        state = out.state
    raise AssertionError("the session never reached its limit")


def test_the_turn_crossing_the_limit_is_recorded_as_session_too_large(
    app: df.DFApp, model: ModelServer
) -> None:
    before, refused = fill(app, model, "full-1")
    result, after = refused["result"], refused["state"]
    error = result["error"]
    assert error["code"] == "session_too_large"
    assert error["retryable"] is False and error["status"] is None
    assert str(LIMIT) in error["message"] and "new session" in error["message"]
    assert result["text"] == "" and result["structured"] is None
    # The model answered, but its answer was not saved: earlier history is an unchanged prefix.
    old, new = history(before), history(after)
    assert new[: len(old)] == old
    request, response = new[len(old) :]
    assert request["$type"] == "request" and request["correlationId"] == result["correlationId"]
    assert [c["text"] for m in request["messages"] for c in m["contents"]] == [f"turn {len(old) // 2}"]
    failure = response["failure"]
    assert {k: failure.get(k) for k in ("code", "message", "retryable", "status")} == {
        "code": "session_too_large",
        "message": error["message"],
        "retryable": False,
        "status": None,
    }
    assert [c["$type"] for m in response["messages"] for c in m["contents"]] == ["error"]
    assert BIG_REPLY not in json.dumps(response)
    assert len(after.encode()) - len(before.encode()) < 1500  # a compact record, not the turn
    assert schema_errors(json.loads(after)) == []
    assert json.loads(after)["data"].get("stateBag") == json.loads(before)["data"].get("stateBag")
    stored = load_state(after)
    refusal = stored.find_run(result["correlationId"])
    assert refusal is not None
    assert refusal.status == "failed"
    assert list(stored.replay_messages()) == list(load_state(before).replay_messages())

    # A next run that cannot fit (stored bytes + its own text over the limit) is refused the same
    # way, before any model call; only its compact record is added.
    calls = len(model.requests)
    more = "one more " * 120
    assert len(after.encode()) + len(more) > LIMIT
    again = run_batch(app, ENTITY, "full-1", after, [("run", run_op(more, "next"))])
    [next_result] = again.results
    assert next_result.value["status"] == "failed"
    assert next_result.value["error"]["code"] == "session_too_large"
    assert len(model.requests) == calls
    assert again.state is not None
    grown = history(again.state)
    assert grown[: len(new)] == new and len(grown) == len(new) + 2
    record = len(again.state.encode()) - len(after.encode())
    assert 0 < record < len(more) + 1500  # a compact record: the request plus the error, no answer
    assert len(again.state.encode()) <= LIMIT + RECORD_HEADROOM
    assert schema_errors(json.loads(again.state)) == []

    # A redelivered signal of the refused run answers the stored failure and changes nothing.
    redelivered = run_batch(app, ENTITY, "full-1", again.state, [("run", run_op(more, "next"))])
    assert redelivered.results[0].value == next_result.value
    assert redelivered.state == again.state


def test_a_refusal_in_a_batch_leaves_the_other_operations_alone(app: df.DFApp, model: ModelServer) -> None:
    before, _ = fill(app, model, "full-2")
    model.script(Reply.text(BIG_REPLY))
    out = run_batch(app, ENTITY, "full-2", before, [("run", run_op("big", "x")), ("get", None)])
    assert out.results[0].value["error"]["code"] == "session_too_large"
    assert out.state is not None
    assert out.results[1].value == json.loads(out.state)


def test_a_refusal_whose_record_would_not_fit_is_kept_by_id_and_answered(
    app: df.DFApp, model: ModelServer
) -> None:
    model.script(Reply.text("short"))
    first = run_batch(app, ENTITY, "huge", None, [("run", run_op("hello", "a"))])
    assert first.state is not None
    huge = "z" * (LIMIT + RECORD_HEADROOM + 1)
    twice = [("run", run_op(huge, "b")), ("run", run_op(huge, "b"))]
    out = run_batch(app, ENTITY, "huge", first.state, twice)
    assert [r.is_error for r in out.results] == [False, False]  # the retry gets the same answer
    for result in out.results:
        assert result.value["status"] == "failed" and result.value["error"]["code"] == "session_too_large"
    assert out.state is not None and huge not in out.state
    data = json.loads(out.state)["data"]
    assert data["refusedRuns"] == ["b"]
    assert data["conversationHistory"] == json.loads(first.state)["data"]["conversationHistory"]
    assert len(model.requests) == 1
    assert not schema_errors(json.loads(out.state))
    load_state(out.state)


def test_refused_ids_stay_within_their_budget_and_the_session_within_the_headroom(
    app: df.DFApp, model: ModelServer
) -> None:
    state, _ = fill(app, model, "full-ids")
    for turn in range(600):  # records until they no longer fit, then ids, oldest dropped
        out = run_batch(app, ENTITY, "full-ids", state, [("run", run_op("x" * 900, f"refused-{turn:04d}"))])
        assert out.results[0].value["error"]["code"] == "session_too_large"
        assert out.state is not None and len(out.state.encode()) <= LIMIT + RECORD_HEADROOM
        state = out.state
    ids = json.loads(state)["data"]["refusedRuns"]
    assert ids[-1] == "refused-0599" and len(json.dumps(ids)) <= 16 * 1024


def test_an_empty_session_takes_a_first_turn_over_the_limit_as_a_refusal(
    app: df.DFApp, model: ModelServer
) -> None:
    model.script(Reply.text("x" * (LIMIT * 2)))
    out = run_batch(app, ENTITY, "first-big", None, [("run", run_op("hi", "first"))])
    assert out.results[0].value["error"]["code"] == "session_too_large"
    assert out.state is not None
    entries = load_state(out.state).entries
    assert [e.type for e in entries] == ["request", "response"]
    assert len(out.state.encode()) < LIMIT


# -- unexpected errors inside the turn ----------------------------------------------------------


class BuggyAgent(Agent):
    """An agent with a bug: its run (or its step) writes half a turn into the state, then raises."""

    async def run(
        self,
        state: AgentState,
        request: TurnRequest,
        archive: ArchivedHistory | None = None,
        on_event: TurnEventSink | None = None,
        *,
        session_id: str | None = None,
    ) -> TurnResult:
        return await self.run_step(state, request, None, archive, on_event)  # type: ignore[return-value]

    async def run_step(
        self,
        state: AgentState,
        request: TurnRequest,
        progress: TurnProgress | None,
        archive: ArchivedHistory | None = None,
        on_event: TurnEventSink | None = None,
        *,
        session_id: str | None = None,
        decisions: Mapping[str, ToolDecision] | None = None,
    ) -> TurnResult | TurnProgress | AwaitingApproval:
        state.append_request(
            AgentRequest(
                correlation_id=request.correlation_id,
                created_at="2026-01-01T00:00:00+00:00",
                messages=[ChatMessage(role="user", contents=[TextContent(text="half a turn")])],
            )
        )
        state.state_bag["buggy"] = "written before the crash"
        state.service_thread_id = "resp_partial"
        raise RuntimeError("the agent lost its marbles")


@pytest.fixture(scope="module")
def buggy_app(model_server: ModelServer) -> df.DFApp:
    [assistant, *_] = make_agents(model_server)
    buggy = BuggyAgent(name="buggy", instructions="Be buggy.", model=assistant.model)
    return build_app([assistant, buggy], settings=ApiSettings(max_session_bytes=LIMIT, public_base_url="http://localhost:7071"))


def test_an_exception_from_the_agent_run_is_recorded_as_internal_error(
    buggy_app: df.DFApp, model: ModelServer
) -> None:
    model.script(Reply.text("a good turn"))
    good = run_batch(buggy_app, ENTITY, "bug", None, [("run", run_op("hello", "good"))])
    stored = good.state
    assert stored is not None
    # Same session key, the buggy agent's entity: start from a state with history in it.
    out = run_batch(buggy_app, "dafx-buggy", "bug", stored, [("run", run_op("crash now", "boom"))])
    [result] = out.results
    assert result.is_error is False
    error = result.value["error"]
    assert error["code"] == "internal_error"
    assert error["message"] == "RuntimeError: the agent lost its marbles"
    assert out.state is not None
    old, new = history(stored), history(out.state)
    assert new[: len(old)] == old and len(new) == len(old) + 2
    assert "half a turn" not in out.state
    document = json.loads(out.state)
    assert "buggy" not in (document["data"].get("stateBag") or {})
    assert document["data"].get("serviceThreadId") is None
    assert new[-1]["failure"]["code"] == "internal_error"
    assert schema_errors(document) == []


def test_an_unreadable_state_still_fails_the_operation_untouched(app: df.DFApp, model: ModelServer) -> None:
    stored = '{"schemaVersion": "9.0.0", "data": {"conversationHistory": []}}'
    out = run_batch(app, ENTITY, "unreadable", stored, [("run", run_op("hi"))])
    assert out.results[0].is_error is True
    assert out.state == stored


# -- settings ------------------------------------------------------------------------------------


def test_the_limit_defaults_under_one_mib_and_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DURABLE_AGENTS_MAX_SESSION_BYTES", raising=False)
    assert ApiSettings().max_session_bytes == 960 * 1024
    monkeypatch.setenv("DURABLE_AGENTS_MAX_SESSION_BYTES", "5000")
    assert ApiSettings().max_session_bytes == 5000
    assert ApiSettings(max_session_bytes=7000).max_session_bytes == 7000
    monkeypatch.setenv("DURABLE_AGENTS_MAX_SESSION_BYTES", "lots")
    with pytest.raises(HostingError, match="DURABLE_AGENTS_MAX_SESSION_BYTES"):
        ApiSettings()
    with pytest.raises(HostingError, match="at least"):
        ApiSettings(max_session_bytes=10)


# -- HTTP ----------------------------------------------------------------------------------------


async def test_an_mcp_call_on_a_full_session_is_refused_before_anything_is_sent(
    api: Api, host: Any, model: ModelServer, model_server: ModelServer
) -> None:
    # The same check as `POST .../run` (one submit path): an MCP call that cannot fit is an error
    # result at once, and nothing is recorded (no refusal piling up in the session).
    session = "mcp-full"
    for turn in range(20):
        model.script(Reply.text(BIG_REPLY))
        answer = await api.post(
            "api/agents/assistant/run", json_body={"message": f"turn {turn}", "session_id": session}
        )
        if answer.status != 200:
            break
    else:
        raise AssertionError("the session never reached its limit")
    before = await stored_state(host, "assistant", session)
    calls = len(model.requests)
    tools = build_app(
        make_agents(model_server), mcp_tools=["assistant"], settings=ApiSettings(max_session_bytes=LIMIT)
    )
    tool = next(f for f in tools.get_functions() if f.get_function_name() == "mcptool_assistant")
    context = json.dumps({"arguments": {"query": "one more " * 120, "session_id": session}})
    reply = json.loads(await tool.get_user_function()(context=context, client=host.client_binding()))
    result = json.loads(reply["content"])
    assert result["isError"] and result["structuredContent"]["code"] == "session_too_large"
    assert await stored_state(host, "assistant", session) == before
    assert len(model.requests) == calls


async def test_a_waiting_run_on_a_full_session_is_a_409_at_once(api: Api, model: ModelServer) -> None:
    session = "http-full"
    for turn in range(20):
        model.script(Reply.text(BIG_REPLY))
        started = time.monotonic()
        answer = await api.post(
            "api/agents/assistant/run", json_body={"message": f"turn {turn}", "session_id": session}
        )
        elapsed = time.monotonic() - started
        if answer.status != 200:
            break
    else:
        raise AssertionError("the session never reached its limit")
    assert answer.status == 409, answer.body
    assert elapsed < 10  # answered, not left waiting for the 30 s timeout
    assert answer.mimetype == "application/problem+json"
    problem = answer.json()
    assert problem["code"] == "session_too_large"
    assert problem["max_session_bytes"] == LIMIT and problem["session_id"] == session
    assert session in problem["detail"] and str(LIMIT) in problem["detail"]
    assert problem["retryable"] is False

    run = await api.get(f"api/agents/assistant/sessions/{session}/runs/{problem['correlation_id']}")
    assert run.status == 200
    assert run.json()["status"] == "failed" and run.json()["error"]["code"] == "session_too_large"

    calls = len(model.requests)
    more = "one more " * 120  # with what is stored, over the limit before any model call
    again = await api.post("api/agents/assistant/run", json_body={"message": more, "session_id": session})
    assert again.status == 409 and again.json()["code"] == "session_too_large"
    assert len(model.requests) == calls

    # A new session works as usual.
    model.script(Reply.text("fresh"))
    fresh = await api.post("api/agents/assistant/run", json_body={"message": "hi"})
    assert fresh.status == 200 and fresh.json()["response"]["text"] == "fresh"


@pytest.fixture
async def buggy_api(buggy_app: df.DFApp, tmp_path: pathlib.Path) -> AsyncIterator[Api]:
    from devhost import LocalHost

    local = LocalHost(buggy_app, tmp_path / "devhost", project_dir=ROOT)
    await local.start()
    try:
        yield Api(buggy_app, local.client_binding())
    finally:
        await local.stop()


async def test_a_run_hitting_a_bug_is_a_500_internal_error_and_recorded(
    buggy_api: Api, model: ModelServer
) -> None:
    started = time.monotonic()
    answer = await buggy_api.post("api/agents/buggy/run", json_body={"message": "crash", "session_id": "b1"})
    assert answer.status == 500, answer.body
    assert time.monotonic() - started < 10
    problem = answer.json()
    assert problem["code"] == "internal_error" and "RuntimeError" in problem["detail"]
    session = await buggy_api.get("api/agents/buggy/sessions/b1")
    assert [t["status"] for t in session.json()["turns"]] == ["failed"]
    stored = dump_state(load_state(json.dumps(session.json()["state"])))
    assert "half a turn" not in stored


async def test_retries_against_a_full_session_are_refused_at_once_and_never_pile_up(
    api: Api, host: Any, model: ModelServer
) -> None:
    # Every request the API takes gets a terminal answer: against a full session, a refusal now
    # (409, no run id handed out), never a run id whose record no longer fits and stays pending.
    session = "http-retries"
    for turn in range(20):
        model.script(Reply.text(BIG_REPLY))
        body = {"message": f"t{turn}", "session_id": session}
        answer = await api.post("api/agents/assistant/run", json_body=body)
        if answer.status != 200:
            break
    big = "r" * 20_000  # each refusal record would be ~20 KB: a few fill the 64 KiB headroom
    for attempt in range(12):
        started = time.monotonic()
        retry = await api.post(
            "api/agents/assistant/run",
            json_body={"message": big, "session_id": session, "wait_for_response": False},
            headers={"Idempotency-Key": f"retry-{attempt}"},
        )
        assert time.monotonic() - started < 5
        if retry.status == 202:  # an id was handed out: it must reach a terminal answer
            run = await api.get(f"api/agents/assistant/sessions/{session}/runs/retry-{attempt}",
                                params={"wait": "30"})
            assert run.json()["status"] == "failed", (attempt, run.json())
        else:
            assert retry.status == 409 and retry.json()["code"] == "session_too_large", retry.body
    stored = await stored_state(host, "assistant", session)
    assert len(stored.encode()) <= LIMIT + RECORD_HEADROOM
