"""Tool approvals through the entity function and the Durable JSON batch protocol: a tool step
that needs a decision pauses the turn without signalling a next step, `decide` records decisions
(the last one signals the step), `expire_approvals` rejects what is left, and a turn that never
paused is stored exactly as before approvals existed."""

from __future__ import annotations

import asyncio
import json
import pathlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import azure.durable_functions as df
import pytest
from hosting_support import ROOT, Api, batch_request, call_entity, functions, run_op

from agents import Agent, ModelSettings, RetryPolicy, tool
from agents.testing import ModelServer, Reply
from hosting import build_app
from hosting.stored import ActiveTurn, Approval
from state import load_state

ENTITY = "dafx-payer"
CHARGED: list[int] = []


@tool(requires_approval=lambda args: args.get("amount", 0) > 100)
def charge(amount: int) -> str:
    """Charge the card."""
    CHARGED.append(amount)
    return f"charged {amount}"


@pytest.fixture(scope="module")
def approvals_app(model_server: ModelServer) -> df.DFApp:
    settings = ModelSettings(
        model="test-model", base_url=model_server.base_url, api_key="k", retry=RetryPolicy(max_attempts=1)
    )
    payer = Agent(name="payer", instructions="Pay.", model=settings, tools=[charge])
    return build_app([payer], console=False)


def _batch(app: df.DFApp, state: str | None, operations: list[tuple[str, Any]]) -> dict[str, Any]:
    handle = functions(app)[ENTITY].get_user_function()
    request = json.dumps(batch_request(ENTITY, "s", state, operations))
    output: dict[str, Any] = json.loads(call_entity(handle, request))
    return output


def _result(output: dict[str, Any], index: int = 0) -> Any:
    return json.loads(output["results"][index]["result"])


def _signals(output: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(s["name"], json.loads(s["input"])) for s in output["signals"]]


def _paused(app: df.DFApp, model: ModelServer, *amounts: int) -> dict[str, Any]:
    """Run the turn to its tool step, which pauses (each amount is one call)."""
    CHARGED.clear()
    calls = [("charge", {"amount": a}, f"call-{a}") for a in amounts]
    model.script(Reply.tool_calls(calls), Reply.text("done"))
    first = _batch(app, None, [("run", run_op("pay", "pay-1"))])
    tools = _batch(app, first["entityState"], [("step", {"correlationId": "pay-1", "step": 1})])
    return tools


def test_a_tool_step_that_needs_a_decision_pauses_the_turn(
    approvals_app: df.DFApp, model: ModelServer
) -> None:
    tools = _paused(approvals_app, model, 500, 5)
    answer = _result(tools)
    assert answer["status"] == "awaiting_approval"
    assert [a["callId"] for a in answer["approvals"]] == ["call-500"]  # 5 needs no approval
    # The whole step waits: nothing runs; the one signal announces the pause once committed.
    assert [name for name, _ in _signals(tools)] == ["announce_approvals"] and CHARGED == []
    turn = ActiveTurn.from_json(load_state(tools["entityState"]).active_turn)
    assert turn.progress.steps == 1 and [a.call_id for a in turn.waiting] == ["call-500"]
    # A step signal redelivered meanwhile changes nothing (not even the turn's deadline passing
    # while people decide could fail it).
    again = _batch(approvals_app, tools["entityState"], [("step", {"correlationId": "pay-1", "step": 1})])
    assert _result(again) is None and again["signals"] == [] and CHARGED == []
    assert again["entityState"] == tools["entityState"]


def test_decisions_are_recorded_and_the_last_one_resumes(approvals_app: df.DFApp, model: ModelServer) -> None:
    tools = _paused(approvals_app, model, 500, 700)
    decide = {"correlationId": "pay-1", "callId": "call-500", "approved": True}
    one = _batch(approvals_app, tools["entityState"], [("decide", decide)])
    ids = {"correlationId": "pay-1", "callId": "call-500"}
    assert _result(one) == {**ids, "outcome": "decided", "resumed": False}
    assert one["signals"] == []
    same = _batch(approvals_app, one["entityState"], [("decide", decide)])
    assert _result(same)["outcome"] == "unchanged" and same["entityState"] == one["entityState"]
    other = _batch(approvals_app, one["entityState"], [("decide", {**decide, "approved": False})])
    assert _result(other)["outcome"] == "conflict" and other["entityState"] == one["entityState"]
    unknown = _batch(approvals_app, one["entityState"], [("decide", {**decide, "callId": "nope"})])
    assert _result(unknown)["outcome"] == "unknown_call" and unknown["entityState"] == one["entityState"]
    reject = {"correlationId": "pay-1", "callId": "call-700", "approved": False, "reason": "too much"}
    two = _batch(approvals_app, one["entityState"], [("decide", reject)])
    assert _result(two)["resumed"] is True
    assert _signals(two) == [("step", {"correlationId": "pay-1", "step": 1})]
    ran = _batch(approvals_app, two["entityState"], [("step", {"correlationId": "pay-1", "step": 1})])
    assert CHARGED == [500]
    assert _signals(ran) == [("step", {"correlationId": "pay-1", "step": 2})]
    progress = ActiveTurn.from_json(load_state(ran["entityState"]).active_turn).progress
    results = progress.messages[-1]["contents"]
    assert "too much" in results[1]["result"] and results[1]["isError"] is True


def test_expiry_rejects_what_is_undecided_and_resumes(approvals_app: df.DFApp, model: ModelServer) -> None:
    tools = _paused(approvals_app, model, 500)
    earlier = {"correlationId": "pay-1", "step": 0, "seconds": 60}
    stale = _batch(approvals_app, tools["entityState"], [("expire_approvals", earlier)])
    assert _result(stale) is None and stale["signals"] == []
    expire = {"correlationId": "pay-1", "step": 1, "seconds": 60}
    gone = _batch(approvals_app, tools["entityState"], [("expire_approvals", expire)])
    assert _result(gone) == {"correlationId": "pay-1", "expired": ["call-500"]}
    assert _signals(gone) == [("step", {"correlationId": "pay-1", "step": 1})]
    [approval] = ActiveTurn.from_json(load_state(gone["entityState"]).active_turn).approvals
    assert approval.decision is not None and approval.decision.expired and not approval.decision.approved
    assert "60 seconds" in (approval.decision.reason or "")


def test_the_wait_does_not_count_towards_the_turn_time(approvals_app: df.DFApp, model: ModelServer) -> None:
    tools = _paused(approvals_app, model, 500)
    document = json.loads(tools["entityState"])
    turn = document["data"]["activeTurn"]
    hour_ago = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    turn["startedAt"] = hour_ago
    turn["approvals"][0]["requestedAt"] = hour_ago  # the whole hour was spent waiting
    decide = {"correlationId": "pay-1", "callId": "call-500", "approved": True}
    resumed = _batch(approvals_app, json.dumps(document), [("decide", decide)])
    active = load_state(resumed["entityState"]).active_turn
    assert active is not None
    started = datetime.fromisoformat(active["startedAt"])
    assert datetime.now(UTC) - started < timedelta(minutes=1)


def test_a_session_awaiting_approval_is_not_idle(
    approvals_app: df.DFApp, model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_AGENTS_SESSION_TTL", "60")
    tools = _paused(approvals_app, model, 500)
    aged = json.loads(tools["entityState"])
    aged["data"]["lastActivityAt"] = "2020-01-01T00:00:00+00:00"
    kept = _batch(approvals_app, json.dumps(aged), [("expire", None)])
    assert _result(kept)["expired"] is False and kept["entityExists"] is True


def test_a_turn_that_never_paused_is_stored_as_before(approvals_app: df.DFApp, model: ModelServer) -> None:
    CHARGED.clear()
    model.script(Reply.tool_call("charge", {"amount": 5}, call_id="call-1"), Reply.text("done"))
    first = _batch(approvals_app, None, [("run", run_op("pay 5", "pay-2"))])
    tools = _batch(approvals_app, first["entityState"], [("step", {"correlationId": "pay-2", "step": 1})])
    assert CHARGED == [5]
    assert set(json.loads(tools["entityState"])["data"]["activeTurn"]) == {
        "request", "progress", "startedAt", "streamSeq"
    }


def test_run_status_answers_where_an_orchestration_s_run_is(
    approvals_app: df.DFApp, model: ModelServer
) -> None:
    CHARGED.clear()
    model.script(Reply.tool_call("charge", {"amount": 500}, call_id="call-500"), Reply.text("paid"))
    # An orchestration's turn on an agent whose tool may need approval is stepped: `run` answers
    # after its first step instead of running the whole turn.
    first = _batch(approvals_app, None, [("run", run_op("pay", "orch-1", orchestrationId="wf-1"))])
    assert _result(first) == {"correlationId": "orch-1", "status": "running", "step": 1}
    assert _signals(first) == [("step", {"correlationId": "orch-1", "step": 1})]
    status = _batch(approvals_app, first["entityState"], [("run_status", {"correlationId": "orch-1"})])
    assert _result(status) == {"correlationId": "orch-1", "status": "running", "step": 1}
    tools = _batch(approvals_app, first["entityState"], [("step", {"correlationId": "orch-1", "step": 1})])
    paused = _batch(approvals_app, tools["entityState"], [("run_status", {"correlationId": "orch-1"})])
    answer = _result(paused)
    assert answer["status"] == "awaiting_approval" and answer["step"] == 1 and answer["seconds"] == 86400
    [waiting] = answer["approvals"]
    due = datetime.fromisoformat(waiting["requestedAt"]) + timedelta(days=1)
    assert waiting["callId"] == "call-500" and datetime.fromisoformat(answer["dueAt"]) == due
    assert paused["entityState"] == tools["entityState"]  # a read changes nothing stored
    unknown = _batch(approvals_app, tools["entityState"], [("run_status", {"correlationId": "nope"})])
    assert _result(unknown) is None
    decided = _batch(
        approvals_app, tools["entityState"],
        [("decide", {"correlationId": "orch-1", "callId": "call-500", "approved": True})],
    )
    done = _batch(approvals_app, decided["entityState"], [("step", {"correlationId": "orch-1", "step": 1})])
    last = _batch(approvals_app, done["entityState"], [("step", {"correlationId": "orch-1", "step": 2})])
    ended = _batch(approvals_app, last["entityState"], [("run_status", {"correlationId": "orch-1"})])
    assert _result(ended)["status"] == "succeeded" and _result(ended)["text"] == "paid"
    assert CHARGED == [500]
    bad = _batch(approvals_app, last["entityState"], [("run_status", {"id": "orch-1"})])
    assert "run_status" in json.dumps(bad["results"][0])


async def _held_pause(
    app: df.DFApp, host: Any, model: ModelServer, monkeypatch: pytest.MonkeyPatch, session: str,
    hold: Callable[[], Awaitable[Any]],
) -> Api:
    """Send run `{session}-1` (one call of 500, which needs approval) and return once its pause's
    commit is held (by `hold()`, then the commit goes on); the API over the local host."""
    gateway = host.entities
    assert gateway is not None
    commit = gateway._commit
    pause_held = asyncio.Event()

    async def held_commit(*args: Any) -> None:
        if '"approvals"' in str(args[4]) and not pause_held.is_set():
            pause_held.set()
            await hold()
        await commit(*args)

    monkeypatch.setattr(gateway, "_commit", held_commit)
    api = Api(app, host.client_binding())
    model.script(Reply.tool_calls([("charge", {"amount": 500}, "call-500")]), Reply.text("done"))
    body = {"message": "pay", "session_id": session, "correlation_id": f"{session}-1"}
    sent = await api.post("/api/agents/payer/run", json_body={**body, "wait_for_response": False})
    assert sent.status == 202, sent.body
    await asyncio.wait_for(pause_held.wait(), 30)
    return api


async def test_a_decision_sent_as_the_pause_is_published_waits_for_it_to_be_stored(
    approvals_app: df.DFApp, model: ModelServer, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The entity publishes approval.required before its batch commits: a client that decides the
    # moment the event arrives reads the session between the two. Hold the pause's commit for a
    # second and decide meanwhile: the route waits for the pause instead of answering 409.
    from devhost import LocalHost

    host = LocalHost(approvals_app, tmp_path / "devhost", project_dir=ROOT)
    await host.start()
    try:
        api = await _held_pause(approvals_app, host, model, monkeypatch, "race", lambda: asyncio.sleep(1.0))
        decision = {"call_id": "call-500", "approved": True}
        decided = await api.post("/api/agents/payer/sessions/race/runs/race-1/approvals", json_body=decision)
        assert decided.status == 200 and decided.json()["status"] == "decided", decided.body
    finally:
        await host.stop()


async def test_approval_required_is_published_once_the_pause_is_committed(
    approvals_app: df.DFApp, model: ModelServer, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A batch that dies or is aborted before its commit leaves nothing stored: an event it had
    # published would announce a pause that is not there. Hold the pause's commit and look at
    # the run's stream meanwhile: no approval.required yet; once committed, it names the calls
    # exactly as stored.
    from devhost import LocalHost
    from hosting.streams import StreamKey, stream_store_from_env

    host = LocalHost(approvals_app, tmp_path / "devhost", project_dir=ROOT)
    await host.start()
    streams = stream_store_from_env()
    try:
        released = asyncio.Event()
        api = await _held_pause(approvals_app, host, model, monkeypatch, "held", released.wait)
        key = StreamKey("payer", "held", "held-1")
        await asyncio.sleep(0.3)
        last = await streams.last(key)
        assert last is not None and last.type != "approval.required", last
        released.set()

        async def announced() -> Any:
            for _ in range(200):
                event = await streams.last(key)
                if event is not None and event.type == "approval.required":
                    return event
                await asyncio.sleep(0.05)
            raise AssertionError("approval.required was never published")

        event = await announced()
        stored = await api.get("/api/agents/payer/sessions/held")
        approvals = stored.json()["state"]["data"]["activeTurn"]["approvals"]
        assert event.data["approvals"] == [Approval.from_json(a).public_json() for a in approvals]
    finally:
        await streams.aclose()
        await host.stop()
