"""`kill -9` of the host in the middle of a turn, then a restart on the same data directory."""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from e2e_support import Client, HostProcess, eventually, history, texts

from agents.testing import ModelRequest, ModelServer, Reply

SESSION = "e2e-killed-mid-turn"


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    # Not pooled: connections to the killed host must not be reused for the restarted one.
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as session:
        yield session


async def test_kill_9_mid_turn_then_restart(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    model.handler = lambda request: Reply.text(f"answer to {request.last_user_text}")
    host = HostProcess(tmp_path / "data", model.base_url, tmp_path / "host.log").start()
    try:
        client = Client(http, host.url)
        for message in ("one", "two"):
            answer = await client.run("assistant", message, SESSION)
            assert answer.status == 200, answer.body
        committed = history((await client.session_state("assistant", SESSION))["state"])
        assert len(committed) == 4

        # Turn three's model call never answers (until the connection drops); turn four queues
        # behind it. Both are accepted (committed as pending messages) before the kill.
        model.script(Reply.hang())
        third = await client.run(
            "assistant", "three", SESSION, wait_for_response=False, correlation_id="turn-3"
        )
        assert third.status == 202, third.body
        fourth = await client.run(
            "assistant", "four", SESSION, wait_for_response=False, correlation_id="turn-4"
        )
        assert fourth.status == 202, fourth.body

        async def model_called() -> bool:
            return len(model.requests) == 3

        await eventually(model_called, "turn three reaching the model")
        host.kill()
    finally:
        host.kill()

    assert host.proc is not None and host.proc.returncode == -9
    host.start()
    try:
        client = Client(http, host.url)
        done = await client.get(f"/api/agents/assistant/sessions/{SESSION}/runs/turn-4?wait=20")
        assert done.status == 200 and done.json()["status"] == "succeeded", (done.body, host.log())
        three = await client.get(f"/api/agents/assistant/sessions/{SESSION}/runs/turn-3")
        assert three.json()["status"] == "succeeded"
        assert three.json()["response"]["text"] == "answer to three"

        entries = history((await client.session_state("assistant", SESSION))["state"])
        # Nothing committed before the kill was lost or changed...
        assert entries[:4] == committed
        # ...and each interrupted turn is stored exactly once, in the order they were sent.
        assert [(e["$type"], e["correlationId"]) for e in entries[4:]] == [
            ("request", "turn-3"),
            ("response", "turn-3"),
            ("request", "turn-4"),
            ("response", "turn-4"),
        ]
        assert [texts(e)[0] for e in entries[4:]] == ["three", "answer to three", "four", "answer to four"]

        # Turn three was executed again after the restart, with the same replayed history; turn
        # four saw turn three's answer.
        def seen(request: ModelRequest) -> list[str]:
            return [m.text for m in request.messages if m.role in ("user", "assistant")]

        assert [r.last_user_text for r in model.requests] == ["one", "two", "three", "three", "four"]
        assert seen(model.requests[3]) == seen(model.requests[2])
        assert seen(model.requests[4])[-3:] == ["three", "answer to three", "four"]
    finally:
        host.stop()


@pytest.mark.slow  # the host gives a running batch 5 s to commit before exiting
async def test_ctrl_c_mid_turn_then_an_idempotent_retry_gets_the_one_turn(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    session, key = "e2e-stopped-mid-turn", {"Idempotency-Key": "e2e-retry-after-restart"}
    body = {"message": "book the table", "session_id": session}
    model.script(Reply.hang())
    host = HostProcess(tmp_path / "data", model.base_url, tmp_path / "host.log").start()
    try:
        client = Client(http, host.url)
        waiting = asyncio.ensure_future(client.post("/api/agents/assistant/run", json_body=body, headers=key))

        async def model_called() -> bool:
            return len(model.requests) == 1

        await eventually(model_called, "the turn reaching the model")
        host.stop()  # SIGTERM, as Ctrl-C: the running turn cannot commit, so it is redelivered
        assert host.proc is not None and host.proc.returncode == 0, host.log()
        try:
            first = await waiting
            assert first.status in (202, 503), first.body  # answered at shutdown, never a 200
        except aiohttp.ClientError:
            pass  # or the connection went away with the host
    finally:
        host.kill()

    model.handler = lambda request: Reply.text(f"done: {request.last_user_text}")
    host.start()
    try:
        client = Client(http, host.url)
        retry = await client.post("/api/agents/assistant/run", json_body=body, headers=key)
        assert retry.status == 200, (retry.body, host.log())
        assert retry.json()["response"]["text"] == "done: book the table"
        again = await client.post("/api/agents/assistant/run", json_body=body, headers=key)
        assert again.json()["correlation_id"] == retry.json()["correlation_id"]
        entries = history((await client.session_state("assistant", session))["state"])
        assert [(e["$type"], e["correlationId"]) for e in entries] == [
            ("request", retry.json()["correlation_id"]),
            ("response", retry.json()["correlation_id"]),
        ]
        # The interrupted call and the redelivered one; the retries ran no turn of their own.
        assert [r.last_user_text for r in model.requests] == ["book the table"] * 2
    finally:
        host.stop()


async def test_kill_9_while_a_workflow_waits_on_an_agent_then_restart(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    def handler(request: ModelRequest) -> Reply:
        if request.response_format is not None:
            return Reply.json({"approved": True, "feedback": "Good."})
        return Reply.text("The draft")

    model.script(Reply.hang())  # the writer's first model call never answers
    host = HostProcess(tmp_path / "data", model.base_url, tmp_path / "host.log").start()
    try:
        client = Client(http, host.url)
        started = await client.post("/api/workflows/review", json_body={"topic": "tea", "max_rounds": 2})
        assert started.status == 202, started.body
        instance = started.json()["instance_id"]

        async def writer_called() -> bool:
            return len(model.requests) == 1

        await eventually(writer_called, "the writer's model call")
        host.kill()
    finally:
        host.kill()

    model.handler = handler
    host.start()
    try:
        client = Client(http, host.url)

        async def awaiting() -> dict[str, Any] | None:
            status = (await client.get(f"/api/workflows/review/{instance}")).json()
            custom = status.get("custom_status") or {}
            return status if isinstance(custom, dict) and custom.get("stage") == "awaiting_approval" else None

        waiting = await eventually(awaiting, "the restarted workflow reaching the approval")
        assert waiting["custom_status"]["draft"] == "The draft"
        sent = await client.post(f"/api/workflows/review/{instance}/approval", json_body={"approved": True})
        assert sent.status == 202, sent.body

        async def completed() -> dict[str, Any] | None:
            status = (await client.get(f"/api/workflows/review/{instance}")).json()
            return status if status["runtime_status"] in ("Completed", "Failed", "Terminated") else None

        done = await eventually(completed, "the workflow completing")
        assert done["runtime_status"] == "Completed", done
        # The writer's interrupted turn ran again after the restart and is stored exactly once.
        writer = history((await client.session_state("writer", f"{instance}-writer"))["state"])
        assert [e["$type"] for e in writer] == ["request", "response"]
        assert writer[0]["correlationId"] == writer[1]["correlationId"]
        roles = ["reviewer" if r.response_format is not None else "writer" for r in model.requests]
        assert roles == ["writer", "writer", "reviewer"]
    finally:
        host.stop()
