"""An orchestration's agent turn that calls a tool needing approval, on the real host over real
sockets: the turn pauses as a turn sent over HTTP does (the run resource says awaiting_approval),
the orchestration stays Running while it waits, a decision over HTTP resumes the turn, and the
orchestration completes with the turn's result; undecided approvals expire as rejected."""

from __future__ import annotations

import asyncio
import json
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from e2e_support import Client, HostProcess, eventually

from agents.testing import ModelServer, Reply
from hosting.stored import decided_event

APP = '''
from __future__ import annotations

import os

import azure.durable_functions as df

from agents import Agent, tool
from hosting import build_app, get_agent


@tool(requires_approval=True)
def book_hotel(city: str, nights: int) -> dict:
    """Book a hotel room."""
    with open(os.environ["E2E_BOOKINGS"], "a") as out:
        out.write(f"{city} {nights}\\n")
    return {"city": city, "nights": nights, "confirmation": "BK-" + city.upper()}


booker = Agent(name="booker", instructions="Book hotels when asked.", tools=[book_hotel])
app = build_app([booker], console=False)


@app.orchestration_trigger(context_name="context")
def trip(context: df.DurableOrchestrationContext):
    spec = context.get_input()
    agent = get_agent(context, "booker")
    result = yield from agent.run(spec["message"], session_id=spec["session"])
    return {"text": result.text, "correlationId": result.correlation_id}


@app.orchestration_trigger(context_name="context")
def approver(context: df.DurableOrchestrationContext):
    spec = context.get_input()
    agent = get_agent(context, "booker")
    agent.decide(spec["session"], spec["run"], spec["call"], spec["approved"], spec.get("reason"))
    return "decided"
    yield  # an orchestrator is a generator

'''

AGENT = "booker"
WEBHOOKS = "/runtime/webhooks/durabletask"
"""The Durable extension's HTTP API (start, status), which the host serves as Azure does."""
BOOK = {"city": "Paris", "nights": 2}


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        yield session


def _host(tmp_path: pathlib.Path, model: ModelServer, env: dict[str, str] | None = None) -> HostProcess:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "function_app.py").write_text(APP)
    extra = {"E2E_BOOKINGS": str(tmp_path / "bookings.txt"), **(env or {})}
    return HostProcess(tmp_path / "data", model.base_url, tmp_path / "host.log", cwd=project, extra_env=extra)


def run_path(session: str, run: str) -> str:
    return f"/api/agents/{AGENT}/sessions/{session}/runs/{run}"


async def _start(client: Client, session: str) -> str:
    instance = f"trip-{session}"
    body = {"message": "book Paris", "session": session}
    started = await client.post(f"{WEBHOOKS}/orchestrators/trip/{instance}", json_body=body)
    assert started.status == 202, started.body
    return instance


async def _status(client: Client, instance: str) -> dict[str, Any]:
    answer = await client.get(f"{WEBHOOKS}/instances/{instance}")
    assert answer.status in (200, 202), answer.body
    body: dict[str, Any] = answer.json()
    return body


async def _paused_trip(client: Client, session: str) -> tuple[str, str]:
    """Start the orchestration; wait until its turn awaits approval; its instance and run ids."""
    instance = await _start(client, session)

    async def waiting_run() -> str | None:
        answer = await client.get(f"/api/agents/{AGENT}/sessions/{session}")
        if answer.status != 200:
            return None
        turn = answer.json()["state"]["data"].get("activeTurn") or {}
        return str(turn["request"]["correlationId"]) if turn.get("approvals") else None

    run = await eventually(waiting_run, "the orchestration's turn awaiting approval", timeout=30)
    status = await client.get(run_path(session, run))
    assert status.status == 200 and status.json()["status"] == "awaiting_approval", status.body
    [pending] = status.json()["approvals"]
    assert pending["call_id"] == "call-1" and pending["arguments"] == BOOK
    return instance, run


async def _finished(client: Client, instance: str, timeout: float = 60) -> dict[str, Any]:
    async def done() -> dict[str, Any] | None:
        body = await _status(client, instance)
        return body if body["runtimeStatus"] not in ("Running", "Pending") else None

    body = await eventually(done, "the orchestration's end", timeout=timeout)
    assert body["runtimeStatus"] == "Completed", body
    output = body["output"]
    return output if isinstance(output, dict) else json.loads(output)


def _tool_results(model: ModelServer) -> list[str]:
    return [m.text for m in model.requests[-1].messages if m.role == "tool"]


@pytest.mark.parametrize("approved", [True, False])
async def test_an_orchestration_waits_for_the_decision_of_its_turn(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession, approved: bool
) -> None:
    model.script(Reply.tool_call("book_hotel", BOOK, call_id="call-1"), Reply.text("Done here."))
    host = _host(tmp_path, model).start()
    try:
        client = Client(http, host.url)
        session = f"orch-approval-{approved}"
        instance, run = await _paused_trip(client, session)
        assert (await _status(client, instance))["runtimeStatus"] == "Running"
        assert len(model.requests) == 1  # the call waits: the tool did not run, no second model call
        decision: dict[str, Any] = {"call_id": "call-1", "approved": approved}
        if not approved:
            decision["reason"] = "too expensive this week"
        decided = await client.post(run_path(session, run) + "/approvals", json_body=decision)
        assert decided.status == 200 and decided.json()["status"] == "decided", decided.body
        output = await _finished(client, instance)
        assert output == {"text": "Done here.", "correlationId": run}
        bookings = tmp_path / "bookings.txt"
        [result] = _tool_results(model)
        if approved:
            assert bookings.read_text().splitlines() == ["Paris 2"]  # the tool ran once
            assert "BK-PARIS" in result
        else:
            assert not bookings.exists()
            assert "too expensive this week" in result and "BK-" not in result
        done = await client.get(run_path(session, run))
        assert done.json()["status"] == "succeeded", done.body
        # The decision woke the waiting orchestration with an event, not only its next poll.
        history = (await client.get(f"{WEBHOOKS}/instances/{instance}?showHistory=true")).json()
        # (Entity answers arrive as events too, named by their request id.)
        raised = [e.get("Name") for e in history["historyEvents"] if e.get("EventType") == "EventRaised"]
        decided_events = [n for n in raised if n.startswith("dafx_approval_decided_")]
        assert decided_events == [decided_event(run, "call-1")], raised
    finally:
        host.stop()


async def test_an_orchestration_decides_a_call_by_signal(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    model.script(Reply.tool_call("book_hotel", BOOK, call_id="call-1"), Reply.text("Booked by the workflow."))
    host = _host(tmp_path, model).start()
    try:
        client = Client(http, host.url)
        session = "orch-approval-self"
        instance, run = await _paused_trip(client, session)
        decision = {"session": session, "run": run, "call": "call-1", "approved": True}
        approve = f"{WEBHOOKS}/orchestrators/approver/approve-{session}"
        started = await client.post(approve, json_body=decision)
        assert started.status == 202, started.body
        output = await _finished(client, instance)
        assert output == {"text": "Booked by the workflow.", "correlationId": run}
        assert (tmp_path / "bookings.txt").read_text().splitlines() == ["Paris 2"]
    finally:
        host.stop()


async def test_a_reset_while_an_orchestration_waits_fails_its_run(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    model.script(Reply.tool_call("book_hotel", BOOK, call_id="call-1"))
    host = _host(tmp_path, model).start()
    try:
        client = Client(http, host.url)
        session = "orch-approval-reset"
        instance, _ = await _paused_trip(client, session)
        reset = await client.post(f"/api/agents/{AGENT}/sessions/{session}/reset")
        assert reset.status in (200, 202), reset.body

        async def ended() -> dict[str, Any] | None:
            body = await _status(client, instance)
            return body if body["runtimeStatus"] not in ("Running", "Pending") else None

        body = await eventually(ended, "the orchestration's end", timeout=60)
        assert body["runtimeStatus"] == "Failed" and "run_discarded" in json.dumps(body["output"]), body
        assert not (tmp_path / "bookings.txt").exists()
    finally:
        host.stop()


async def test_an_orchestration_s_undecided_call_expires_as_rejected(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    model.script(Reply.tool_call("book_hotel", BOOK, call_id="call-1"), Reply.text("Nobody answered."))
    host = _host(tmp_path, model, {"DURABLE_AGENTS_APPROVAL_TIMEOUT_SECONDS": "3"}).start()
    try:
        client = Client(http, host.url)
        session = "orch-approval-expiry"
        instance = await _start(client, session)
        # Nobody looks at the run: the waiting orchestration itself expires the approval.
        output = await _finished(client, instance)
        assert output["text"] == "Nobody answered."
        [result] = _tool_results(model)
        assert "no decision was made within 3 seconds" in result, result
        assert not (tmp_path / "bookings.txt").exists()
    finally:
        host.stop()


async def _status_reads(client: Client, instance: str) -> int:
    """How many `run_status` operations the orchestration has sent its session so far."""
    path = f"{WEBHOOKS}/instances/{instance}?showHistory=true&showHistoryOutput=true"
    history = (await client.get(path)).json()["historyEvents"]
    sent = [e for e in history if e.get("EventType") == "EventSent"]
    return sum(1 for e in sent if "run_status" in json.dumps(e.get("Input")))


async def test_a_decision_made_between_two_waits_wakes_one_wait_only(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    """A turn pauses twice. The first pause is decided while the orchestration sleeps on its
    first timer (the `run` call answered `running`: no wait for a decision is open), so the
    event reaches it between waits. The second pause must then be waited on quietly: a few
    reads, not one after another for as long as it lasts."""
    second = {"city": "Rome", "nights": 1}
    model.script(
        Reply.tool_call("book_hotel", BOOK, call_id="call-1"),
        Reply.tool_call("book_hotel", second, call_id="call-2"),
        Reply.text("Both booked."),
    )
    host = _host(tmp_path, model).start()
    try:
        client = Client(http, host.url)
        session = "orch-approval-twice"
        instance, run = await _paused_trip(client, session)
        decided = await client.post(run_path(session, run) + "/approvals",
            json_body={"call_id": "call-1", "approved": True}
        )
        assert decided.status == 200, decided.body

        async def second_pause() -> bool | None:
            status = (await client.get(run_path(session, run))).json()
            approvals = status.get("approvals") or []
            waiting = [a["call_id"] for a in approvals if a.get("decision") is None]
            return True if waiting == ["call-2"] else None

        await eventually(second_pause, "the second pause", timeout=30)
        before = await _status_reads(client, instance)
        await asyncio.sleep(6)
        during = await _status_reads(client, instance) - before
        # Read at 2 s and 4 s after the run moved on (the timer is the safety net), not spinning.
        assert during <= 4, f"{during} run_status reads in 6 s of the second pause"
        decided = await client.post(run_path(session, run) + "/approvals",
            json_body={"call_id": "call-2", "approved": True}
        )
        assert decided.status == 200, decided.body
        output = await _finished(client, instance)
        assert output == {"text": "Both booked.", "correlationId": run}
        assert (tmp_path / "bookings.txt").read_text().splitlines() == ["Paris 2", "Rome 1"]
    finally:
        host.stop()
