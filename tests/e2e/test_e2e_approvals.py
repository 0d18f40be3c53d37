"""Tool approvals on the real host over real sockets: a turn whose model asks for a tool that
needs approval pauses (`awaiting_approval`, no worker held), is decided through the approvals
route (approve runs the tool, reject tells the model why), resumes when its step's calls are all
decided, and can be cancelled or expire while it waits; bad decisions are refused by name and
change nothing stored."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import pytest
from e2e_support import (
    FUNCTION_KEY,
    OWN_SCHEMA,
    REFERENCE_SCHEMA,
    Client,
    HostProcess,
    eventually,
    schema_errors,
)
from httpx_sse import aconnect_sse
from mcp_support import TRANSPORTS, mcp_session, text_of
from stream_support import TERMINAL, Seen, run_url, seen

from agents.testing import ModelServer, Reply

AGENT = "concierge"
BOOK = {"city": "Paris", "nights": 2}


def run_path(session: str, run: str) -> str:
    return f"/api/agents/{AGENT}/sessions/{session}/runs/{run}"


async def decide(client: Client, session: str, run: str, body: Any, user: str = "") -> Any:
    query = f"?user_id={user}" if user else ""
    return await client.post(run_path(session, run) + "/approvals" + query, json_body=body)


async def paused(client: Client, session: str, run: str, *calls: tuple[str, dict[str, Any]]) -> Any:
    """Send a run whose model asks for `calls` (book_hotel) at once; answer its 202."""
    model_calls = [("book_hotel", args, call_id) for call_id, args in calls]
    answer = await client.run(AGENT, "book it", session, correlation_id=run)
    assert answer.status == 202, answer.body
    body = answer.json()
    assert body["status"] == "awaiting_approval", body
    assert answer.headers["location"].endswith(run_path(session, run))
    assert [a["call_id"] for a in body["approvals"]] == [c[2] for c in model_calls]
    return body


def tool_results(model: ModelServer, index: int) -> list[str]:
    return [m.text for m in model.requests[index].messages if m.role == "tool"]


async def test_an_approved_call_runs_and_the_turn_goes_on(client: Client, model: ModelServer) -> None:
    model.script(Reply.tool_call("book_hotel", BOOK, call_id="call-1"), Reply.text("Booked."))
    session, run = "approve-1", "approve-1-run"
    body = await paused(client, session, run, ("call-1", BOOK))
    [pending] = body["approvals"]
    assert pending["name"] == "book_hotel" and pending["arguments"] == BOOK and pending["decision"] is None
    assert len(model.requests) == 1  # the step with the call did not run
    status = await client.get(run_path(session, run))
    assert status.json()["status"] == "awaiting_approval", status.body
    decided = await decide(client, session, run, {"call_id": "call-1", "approved": True})
    assert decided.status == 200 and decided.json()["status"] == "decided", decided.body
    done = await client.get(run_path(session, run) + "?wait=20")
    assert done.json()["status"] == "succeeded", done.body
    assert done.json()["response"]["text"] == "Booked."
    [result] = tool_results(model, 1)
    assert '"confirmation"' in result and "Paris" in result  # the tool ran


async def test_a_rejected_call_tells_the_model_why(client: Client, model: ModelServer) -> None:
    model.script(Reply.tool_call("book_hotel", BOOK, call_id="call-1"), Reply.text("Not booked."))
    session, run = "reject-1", "reject-1-run"
    await paused(client, session, run, ("call-1", BOOK))
    reason = "too expensive this week"
    decided = await decide(client, session, run, {"call_id": "call-1", "approved": False, "reason": reason})
    assert decided.status == 200, decided.body
    done = await client.get(run_path(session, run) + "?wait=20")
    assert done.json()["status"] == "succeeded" and done.json()["response"]["text"] == "Not booked."
    [result] = tool_results(model, 1)
    assert "Rejected" in result and reason in result and "confirmation" not in result


async def test_two_calls_are_decided_apart_again_and_not_otherwise(
    client: Client, model: ModelServer
) -> None:
    rome = {"city": "Rome", "nights": 1}
    model.script(
        Reply.tool_calls([("book_hotel", BOOK, "call-a"), ("book_hotel", rome, "call-b")]),
        Reply.text("One booked."),
    )
    session, run = "approve-two", "approve-two-run"
    await paused(client, session, run, ("call-a", BOOK), ("call-b", rome))
    first = await decide(client, session, run, {"call_id": "call-a", "approved": True})
    assert first.status == 200 and first.json()["status"] == "decided", first.body
    waiting = (await client.get(run_path(session, run))).json()
    assert waiting["status"] == "awaiting_approval"  # call-b is still undecided
    decisions = {a["call_id"]: a["decision"] for a in waiting["approvals"]}
    assert decisions["call-a"]["approved"] is True and decisions["call-b"] is None
    assert len(model.requests) == 1
    again = await decide(client, session, run, {"call_id": "call-a", "approved": True})
    assert again.status == 200 and again.json()["status"] == "unchanged", again.body
    other = await decide(client, session, run, {"call_id": "call-a", "approved": False})
    assert other.status == 409 and other.json()["code"] == "approval_conflict", other.body
    assert (await client.get(run_path(session, run))).json() == waiting  # nothing changed
    refusal = {"call_id": "call-b", "approved": False, "reason": "one is enough"}
    second = await decide(client, session, run, refusal)
    assert second.status == 200, second.body
    done = await client.get(run_path(session, run) + "?wait=20")
    assert done.json()["status"] == "succeeded", done.body
    booked, refused = tool_results(model, 1)[0], tool_results(model, 1)[1]
    assert "confirmation" in booked and "one is enough" in refused


async def test_a_finished_run_keeps_its_decisions_and_their_reasons(
    client: Client, model: ModelServer
) -> None:
    # Once the run ends, its run resource, its answer and the session's turns still show each
    # call it paused for with its decision (stored on the run's response entry).
    rome = {"city": "Rome", "nights": 1}
    model.script(
        Reply.tool_calls([("book_hotel", BOOK, "call-a"), ("book_hotel", rome, "call-b")]),
        Reply.text("Paris booked."),
    )
    session, run = "approve-kept", "approve-kept-run"
    body = await paused(client, session, run, ("call-a", BOOK), ("call-b", rome))
    asked = {a["call_id"]: a for a in body["approvals"]}
    yes = {"call_id": "call-a", "approved": True, "reason": "within budget"}
    no = {"call_id": "call-b", "approved": False, "reason": "one city is enough"}
    assert (await decide(client, session, run, yes)).status == 200
    assert (await decide(client, session, run, no)).status == 200
    done = await client.get(run_path(session, run) + "?wait=20")
    assert done.json()["status"] == "succeeded", done.body
    kept = done.json()["approvals"]
    assert [(a["call_id"], a["name"], a["arguments"], a["step"]) for a in kept] == [
        ("call-a", "book_hotel", BOOK, 1), ("call-b", "book_hotel", rome, 1)
    ], kept
    assert [a["requested_at"] for a in kept] == [asked[c]["requested_at"] for c in ("call-a", "call-b")]
    decisions = [(a["decision"]["approved"], a["decision"]["reason"], a["decision"]["expired"]) for a in kept]
    assert decisions == [(True, "within budget", False), (False, "one city is enough", False)], kept
    assert all(a["decision"]["decided_at"] for a in kept)
    # A retried POST of the finished run answers it with the same approvals.
    again = await client.run(AGENT, "book it", session, correlation_id=run)
    assert again.status == 200 and again.json()["approvals"] == kept, again.body
    stored = await client.session_state(AGENT, session)
    [turn] = stored["turns"]
    assert turn["correlation_id"] == run and turn["approvals"] == kept, turn
    assert "activeTurn" not in stored["state"]["data"]
    [entry] = [e for e in stored["state"]["data"]["conversationHistory"] if e["$type"] == "response"]
    assert [a["decision"]["reason"] for a in entry["approvals"]] == ["within budget", "one city is enough"]
    assert schema_errors(stored["state"], OWN_SCHEMA) + schema_errors(stored["state"], REFERENCE_SCHEMA) == []


async def test_cancel_and_reject_strategy_while_awaiting_approval(client: Client, model: ModelServer) -> None:
    model.script(Reply.tool_call("book_hotel", BOOK, call_id="call-1"))
    session, run = "approve-cancel", "approve-cancel-run"
    await paused(client, session, run, ("call-1", BOOK))
    busy = await client.run(AGENT, "hello?", session, correlation_id="busy-1", multitask_strategy="reject")
    assert busy.status == 409 and busy.json()["code"] == "session_busy", busy.body
    cancel = await client.post(run_path(session, run) + "/cancel")
    assert cancel.status == 202, cancel.body

    async def cancelled() -> bool:
        # A run awaiting approval answers a long poll at once: poll until the cancel is stored.
        return (await client.get(run_path(session, run))).json()["status"] == "cancelled"

    await eventually(cancelled, "the cancel of a run awaiting approval")
    # The cancelled run still names the call it waited on, undecided.
    [undecided] = (await client.get(run_path(session, run))).json()["approvals"]
    assert undecided["call_id"] == "call-1" and undecided["decision"] is None, undecided
    late = await decide(client, session, run, {"call_id": "call-1", "approved": True})
    assert late.status == 409 and late.json()["code"] == "run_not_awaiting_approval", late.body
    assert len(model.requests) == 1  # the tool never ran, the model was not asked again


async def test_bad_decisions_are_refused_by_name_and_change_nothing(
    client: Client, model: ModelServer
) -> None:
    model.script(Reply.tool_call("book_hotel", BOOK, call_id="call-1"))
    session, run = "approve-bad", "approve-bad-run"
    answer = await client.run(AGENT, "book it", session, correlation_id=run, user_id="u-approve")
    assert answer.status == 202 and answer.json()["status"] == "awaiting_approval", answer.body
    user = "?user_id=u-approve"
    before = await client.get(run_path(session, run) + user)
    stored = await client.get(f"/api/agents/{AGENT}/sessions/{session}{user}")
    good = {"call_id": "call-1", "approved": True}
    cases: list[tuple[str, Any, int, str]] = [
        (run, {"call_id": "nope", "approved": True}, 404, "approval_not_found"),
        (run, {"call_id": "call-1"}, 400, "missing_field"),
        (run, {"call_id": "call-1", "approved": "yes"}, 400, "invalid_type"),
        (run, {**good, "extra": 1}, 400, "unknown_field"),
        (run, [good], 400, "invalid_type"),
        ("no-such-run", good, 404, "run_not_found"),
    ]
    for target, body, status, code in cases:
        got = await decide(client, session, target, body, user="u-approve")
        assert (got.status, got.json()["code"]) == (status, code), (body, got.body)
        assert got.content_type == "application/problem+json"
    other = await decide(client, session, run, good, user="u-other")
    assert (other.status, other.json()["code"]) == (404, "session_not_found"), other.body
    json_type = {"Content-Type": "application/json"}
    no_json = await client.post(run_path(session, run) + "/approvals" + user, data="{", headers=json_type)
    assert no_json.status == 400 and no_json.json()["code"] == "invalid_json"
    assert (await client.get(run_path(session, run) + user)).body == before.body
    assert (await client.get(f"/api/agents/{AGENT}/sessions/{session}{user}")).body == stored.body
    # A finished run waits on nothing.
    model.script(Reply.text("hi"))
    finished = await client.run(AGENT, "hi", "approve-done", correlation_id="done-1")
    assert finished.status == 200, finished.body
    late = await decide(client, "approve-done", "done-1", good)
    assert late.status == 409 and late.json()["code"] == "run_not_awaiting_approval", late.body


async def test_the_stream_says_approval_required_and_goes_on(
    client: Client, e2e_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    model.script(Reply.tool_call("book_hotel", BOOK, call_id="call-1"), Reply.text("Booked."))
    session, run = "approve-sse", "approve-sse-run"
    body = {"message": "book it", "session_id": session, "correlation_id": run}
    events: list[Seen] = []
    url = run_url(e2e_host).replace("/assistant/", f"/{AGENT}/")
    async with aconnect_sse(web, "POST", url, json=body, headers={"Accept": "text/event-stream"}) as source:
        async for sse in source.aiter_sse():
            if not sse.data:
                continue
            events.append(seen(sse))
            if events[-1].event == "approval.required":
                [pending] = events[-1].data["approvals"]
                assert pending["call_id"] == "call-1" and pending["arguments"] == BOOK
                # The event shows the calls as the run resource does: one shape, snake_case.
                status = await client.get(f"/api/agents/{AGENT}/sessions/{session}/runs/{run}")
                assert status.json()["approvals"] == events[-1].data["approvals"], status.body
                decided = await decide(client, session, run, {"call_id": "call-1", "approved": True})
                assert decided.status == 200, decided.body
            if events[-1].event in TERMINAL:
                break
    kinds = [e.event for e in events]
    assert kinds.count("approval.required") == 1, kinds
    # The waiting call is announced before its pause, as a call that runs at once is, and once.
    calls = [e.data["call_id"] for e in events if e.event == "tool.call"]
    assert calls == ["call-1"] and kinds.index("tool.call") < kinds.index("approval.required"), kinds
    assert kinds[-1] == "run.completed", kinds
    assert kinds.index("approval.required") < kinds.index("step.started", kinds.index("approval.required"))


@pytest.fixture(scope="module")
def expiring_host(
    model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostProcess]:
    root = tmp_path_factory.mktemp("approval-expiry-host")
    env = {"DURABLE_AGENTS_APPROVAL_TIMEOUT_SECONDS": "2"}
    host = HostProcess(root / "data", model_server.base_url, root / "host.log", extra_env=env).start()
    try:
        yield host
    finally:
        host.stop()


async def test_an_undecided_call_expires_as_rejected(
    http: Any, expiring_host: HostProcess, model: ModelServer
) -> None:
    client = Client(http, expiring_host.url)
    model.script(Reply.tool_call("book_hotel", BOOK, call_id="call-1"), Reply.text("Nobody answered."))
    session, run = "approve-expire", "approve-expire-run"
    await paused(client, session, run, ("call-1", BOOK))

    async def finished() -> Any:
        answer = await client.get(run_path(session, run))
        return answer if answer.json()["status"] not in ("awaiting_approval", "pending") else None

    done = await eventually(finished, "the approval's expiry", timeout=30)
    assert done.json()["status"] == "succeeded", done.body
    [result] = tool_results(model, 1)
    assert "Rejected" in result and "no decision was made within 2 seconds" in result, result
    assert json.loads(done.body)["response"]["text"] == "Nobody answered."


async def test_an_mcp_call_awaiting_approval_names_its_run(
    e2e_host: HostProcess, client: Client, model: ModelServer
) -> None:
    model.script(Reply.tool_call("book_hotel", BOOK, call_id="call-1"), Reply.text("Booked."))
    async with mcp_session(e2e_host.url, TRANSPORTS[0], FUNCTION_KEY) as session:
        result = await session.call_tool(AGENT, {"query": "book it"})
    structured = result.structured_content
    assert isinstance(structured, dict) and structured["status"] == "awaiting_approval", result
    session_id, run = structured["session_id"], structured["correlation_id"]
    assert structured["location"].endswith(run_path(session_id, run))
    assert structured["approvals"] == [{"call_id": "call-1", "name": "book_hotel", "arguments": BOOK}]
    assert structured["location"] + "/approvals" in text_of(result)
    decided = await decide(client, session_id, run, {"call_id": "call-1", "approved": True})
    assert decided.status == 200, decided.body
    done = await client.get(run_path(session_id, run) + "?wait=20")
    assert done.json()["status"] == "succeeded", done.body


async def test_a_run_only_streamed_expires_too(
    expiring_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    # Nothing reads the run as JSON: the stream's reader starts the approvals' expiry itself.
    model.script(Reply.tool_call("book_hotel", BOOK, call_id="call-1"), Reply.text("Nobody answered."))
    body = {"message": "book it", "session_id": "approve-sse-expire", "correlation_id": "sse-expire-run"}
    url = f"{expiring_host.url}/api/agents/{AGENT}/run"

    async def follow() -> list[str]:
        kinds: list[str] = []
        sse_headers = {"Accept": "text/event-stream"}
        async with aconnect_sse(web, "POST", url, json=body, headers=sse_headers) as source:
            async for sse in source.aiter_sse():
                if sse.data:
                    kinds.append(seen(sse).event)
                if kinds and kinds[-1] in TERMINAL:
                    break
        return kinds

    kinds = await asyncio.wait_for(follow(), 30)
    assert "approval.required" in kinds and kinds[-1] == "run.completed", kinds
    [result] = tool_results(model, 1)
    assert "no decision was made within 2 seconds" in result, result


async def test_a_run_nobody_reads_expires_at_the_session_check(
    http: Any, model_server: ModelServer, model: ModelServer, tmp_path: Any
) -> None:
    # Sent without waiting and never read: no caller sees the pause, so no caller starts the
    # approvals' expiry. The sweeper's check of the idle session (TTL 1 s) finds the session
    # waiting on a person and lets the approvals expire when they are due.
    env = {"DURABLE_AGENTS_APPROVAL_TIMEOUT_SECONDS": "3", "DURABLE_AGENTS_SESSION_TTL": "1"}
    host = HostProcess(tmp_path / "data", model_server.base_url, tmp_path / "host.log", extra_env=env).start()
    try:
        client = Client(http, host.url)
        model.script(Reply.tool_call("book_hotel", BOOK, call_id="call-1"), Reply.text("Nobody answered."))
        session, run = "approve-unread", "approve-unread-run"
        sent = await client.run(AGENT, "book it", session, correlation_id=run, wait_for_response=False)
        assert sent.status == 202, sent.body

        async def resumed() -> bool | None:
            return True if len(model.requests) >= 2 else None

        await eventually(resumed, "the model asked again after the approvals expired", timeout=30)
        [result] = tool_results(model, 1)
        assert "no decision was made within 3 seconds" in result, result
        done = await client.get(run_path(session, run) + "?wait=20")
        assert done.json()["status"] == "succeeded", done.body
    finally:
        host.stop()


async def test_runs_in_progress_are_listed_with_the_sessions_turns(
    client: Client, model: ModelServer
) -> None:
    # The run awaiting approval and the run queued behind it are in the session's turns (with
    # their status, calls and messages) and counted in the list, for their session's owner only.
    model.script(
        Reply.tool_call("book_hotel", BOOK, call_id="call-1"), Reply.text("Booked."), Reply.text("Next.")
    )
    session, run, user = "approve-listed", "approve-listed-run", "?user_id=u-listed"
    answer = await client.run(AGENT, "book it", session, correlation_id=run, user_id="u-listed")
    assert answer.status == 202 and answer.json()["status"] == "awaiting_approval", answer.body
    behind = await client.run(
        AGENT, "and then?", session, correlation_id="listed-next", user_id="u-listed", wait_for_response=False
    )
    assert behind.status == 202, behind.body
    path = f"/api/agents/{AGENT}/sessions/{session}"

    async def both_listed() -> Any:
        turns = (await client.get(path + user)).json()["turns"]
        return turns if len(turns) == 2 else None

    waiting, queued = await eventually(both_listed, "the queued run stored behind the paused one")
    # Both bodies are what the OpenAPI document says.
    document = (await client.get("/api/openapi.json")).json()
    for route, answer in (
        ("/api/agents/{agent}/sessions/{session_id}", await client.get(path + user)),
        ("/api/agents/{agent}/sessions", await client.get(f"/api/agents/{AGENT}/sessions{user}")),
    ):
        body_schema = document["paths"][route]["get"]["responses"]["200"]["content"]["application/json"]
        jsonschema.validate(answer.json(), {**body_schema["schema"], "components": document["components"]})
    assert waiting["correlation_id"] == run and waiting["status"] == "awaiting_approval", waiting
    assert waiting["queued"] is False and waiting["created_at"]
    assert waiting["messages"] == [{"role": "user", "text": "book it"}]
    [call] = waiting["approvals"]
    assert call["call_id"] == "call-1" and call["arguments"] == BOOK and call["decision"] is None
    assert queued["correlation_id"] == "listed-next" and queued["status"] == "pending", queued
    assert queued["queued"] is True and queued["created_at"] is None and queued["approvals"] is None
    assert queued["messages"] == [{"role": "user", "text": "and then?"}]
    listed = (await client.get(f"/api/agents/{AGENT}/sessions?page_size=100{user.replace('?', '&')}")).json()
    [row] = [s for s in listed["sessions"] if s["session_id"] == session]
    assert (row["turns"], row["in_progress"], row["first_message"]) == (0, 2, "book it"), row
    assert (await client.get(path + "?user_id=u-stranger")).status == 404
    stranger = (await client.get(f"/api/agents/{AGENT}/sessions?page_size=100&user_id=u-stranger")).json()
    assert session not in [s["session_id"] for s in stranger["sessions"]]

    decided = await decide(client, session, run, {"call_id": "call-1", "approved": True}, user="u-listed")
    assert decided.status == 200, decided.body

    async def finished() -> Any:
        turns = (await client.get(path + user)).json()["turns"]
        return turns if [t["status"] for t in turns] == ["succeeded", "succeeded"] else None

    done = await eventually(finished, "both runs finished")
    assert [t["correlation_id"] for t in done] == [run, "listed-next"]
    assert all(t["messages"] is None and t["queued"] is False for t in done), done
