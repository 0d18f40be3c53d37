"""A turn of steps on the real host: `kill -9` between steps resumes from the last finished step
(a tool with a side effect runs once), and no entity operation holds more than one model call."""

from __future__ import annotations

import json
import pathlib
import re
from collections.abc import AsyncIterator

import aiohttp
import httpx
import pytest
from e2e_support import FUNCTION_KEY, Client, HostProcess, history, kill_at_model_call
from stream_support import read_all

from agents.testing import ModelRequest, ModelServer, Reply

# An app with one agent whose tool has a side effect the test can count: each call appends its
# idempotency key to a file.
STEPS_APP = '''
import os

from agents import Agent, current_tool_call, tool
from hosting import build_app


@tool
def charge(amount: int) -> str:
    """Charge the card.

    Args:
        amount: How much.
    """
    call = current_tool_call()
    with open(os.environ["E2E_CHARGES"], "a") as out:
        out.write(f"{call.idempotency_key} {amount}\\n")
    return f"charged {amount}"


payer = Agent(name="payer", instructions="Pay what you are asked.", tools=[charge], max_tool_rounds=30)
app = build_app([payer], console=False)
'''

SESSION = "e2e-steps"


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    # Not pooled: connections to the killed host must not be reused for the restarted one.
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:
        yield session


def _host(
    tmp_path: pathlib.Path, model: ModelServer, agent: str = "payer"
) -> tuple[HostProcess, pathlib.Path]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "function_app.py").write_text(STEPS_APP.replace('name="payer"', f'name="{agent}"'))
    charges = tmp_path / "charges.txt"
    host = HostProcess(
        tmp_path / "data",
        model.base_url,
        tmp_path / "host.log",
        cwd=project,
        extra_env={"E2E_CHARGES": str(charges)},
    )
    return host, charges


def _tool_results(request: ModelRequest) -> int:
    return sum(1 for m in request.messages if m.role == "tool")


async def test_kill_9_after_a_tool_ran_resumes_from_the_next_step(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    host, charges = _host(tmp_path, model)
    model.handler = lambda request: Reply.text("paid")
    # Step 0 asks for the tool, step 1 runs it, step 2 (the next model call) never answers.
    model.script(Reply.tool_call("charge", {"amount": 5}, call_id="call-1"), Reply.hang())
    host.start()
    try:
        client = Client(http, host.url)
        sent = await client.run("payer", "pay 5", SESSION, wait_for_response=False, correlation_id="pay-1")
        assert sent.status == 202, sent.body
    finally:
        await kill_at_model_call(host, model, 2, "the model call after the tool")
    assert charges.read_text().splitlines() == ["pay-1:call-1 5"]

    host.start()
    try:
        client = Client(http, host.url)
        done = await client.get(f"/api/agents/payer/sessions/{SESSION}/runs/pay-1?wait=30")
        assert done.status == 200 and done.json()["status"] == "succeeded", (done.body, host.log())
        assert done.json()["response"]["text"] == "paid"
        # The tool ran once, and only the step in flight (the second model call) was asked again.
        assert charges.read_text().splitlines() == ["pay-1:call-1 5"]
        assert [_tool_results(r) for r in model.requests] == [0, 1, 1]
        assert model.requests[2].messages == model.requests[1].messages

        # Stored once, exactly as a turn run without an interruption: request, response.
        state = (await client.session_state("payer", SESSION))["state"]
        entries = history(state)
        assert [(e["$type"], e["correlationId"]) for e in entries] == [
            ("request", "pay-1"), ("response", "pay-1"),
        ]
        roles = [m["role"] for m in entries[1]["messages"]]
        assert roles == ["assistant", "tool", "assistant"]
        assert "activeTurn" not in state["data"] and "queuedRuns" not in state["data"]

        # The stream says which step the turn resumed from, and has one terminal event.
        async with httpx.AsyncClient(timeout=30) as web:
            url = f"{host.url}/api/agents/payer/sessions/{SESSION}/runs/pay-1/stream"
            _, events = await read_all(web, "GET", url, headers={"x-functions-key": FUNCTION_KEY})
        kinds = [e.event for e in events]
        assert kinds[0] == "run.started" and kinds[-1] == "run.completed", kinds
        assert [e.data for e in events if e.event == "run.restarted"] == [
            {"reason": "redelivered", "after": events[kinds.index("run.restarted")].id - 1, "step": 2}
        ], kinds
        assert kinds.count("run.completed") + kinds.count("run.failed") == 1
    finally:
        host.stop()


OPERATION_LINE = re.compile(r"entity dafx-payer key=(\S+) op=(run|step)\b")


async def test_a_turn_of_21_steps_is_never_one_long_operation(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    host, charges = _host(tmp_path, model)
    finished_before: list[int] = []

    def handler(request: ModelRequest) -> Reply:
        # What the host has committed when this model call arrives: every earlier model call
        # belongs to an operation that ended before it (one model call per operation).
        log = host.log()
        finished_before.append(len([m for m in OPERATION_LINE.finditer(log) if m.group(1) == SESSION]))
        calls = _tool_results(request)
        if calls < 10:
            return Reply.tool_call("charge", {"amount": calls + 1}, call_id=f"c{calls + 1}")
        return Reply.text("all paid")

    model.handler = handler
    host.start()
    try:
        client = Client(http, host.url)
        answer = await client.run("payer", "pay ten times", SESSION, correlation_id="long")
        assert answer.status == 200, (answer.body, host.log())
        assert answer.json()["response"]["text"] == "all paid"
        # 11 model calls and 10 tool batches: 21 steps, each its own operation.
        assert len(model.requests) == 11
        assert len(charges.read_text().splitlines()) == 10
        # Before model call k (0-based), the operations holding the k earlier model calls and the
        # k tool batches between them had ended: 2k of them.
        assert finished_before == [2 * k for k in range(11)], finished_before
        lines = [m for m in OPERATION_LINE.finditer(host.log()) if m.group(1) == SESSION]
        assert len(lines) == 21, host.log()
        state = (await client.session_state("payer", SESSION))["state"]
        assert [e["$type"] for e in history(state)] == ["request", "response"]
        assert json.dumps(state).count('"role": "tool"') == 10
    finally:
        host.stop()


async def test_an_agent_named_with_capitals_finishes_a_turn_of_steps(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    """The entity signals its next step to itself. The Durable extension takes a signal's target
    name as written (no lower-casing, unlike every client call), so the target must be the
    lower-cased name the client reaches, or the step goes to another instance and the turn never
    ends."""
    host, charges = _host(tmp_path, model, agent="Payer")
    model.script(Reply.tool_call("charge", {"amount": 5}, call_id="call-1"), Reply.text("paid"))
    host.start()
    try:
        client = Client(http, host.url)
        answer = await client.run("Payer", "pay 5", SESSION, correlation_id="pay-1")
        assert answer.status == 200, (answer.body, host.log())
        assert answer.json()["response"]["text"] == "paid"
        assert len(model.requests) == 2 and charges.read_text().splitlines() == ["pay-1:call-1 5"]
        sessions = await client.get("/api/agents/Payer/sessions")
        assert [s["session_id"] for s in sessions.json()["sessions"]] == [SESSION], sessions.body
    finally:
        host.stop()
