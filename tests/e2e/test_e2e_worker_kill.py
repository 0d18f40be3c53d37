"""`kill -9` of a worker process in the middle of a turn: the host restarts the worker, and the
turn is answered exactly once and stored once."""

from __future__ import annotations

import os
import pathlib
import signal

import aiohttp
from e2e_support import Client, HostProcess, eventually, history, texts

from agents.testing import ModelServer, Reply

SESSION = "e2e-worker-killed-mid-turn"


async def test_kill_9_of_a_worker_mid_turn(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    model.handler = lambda request: Reply.text(f"answer to {request.last_user_text}")
    host = HostProcess(tmp_path / "data", model.base_url, tmp_path / "host.log").start()
    try:
        client = Client(http, host.url)
        first = await client.run("assistant", "one", SESSION)
        assert first.status == 200, first.body

        # The turn's model call hangs until its connection drops, which the kill does.
        model.script(Reply.hang())
        sent = await client.run("assistant", "two", SESSION, wait_for_response=False, correlation_id="turn-2")
        assert sent.status == 202, sent.body

        async def model_called() -> bool:
            return len(model.requests) == 2

        await eventually(model_called, "turn two reaching the model")
        # The entity batch runs in a worker of the Durable group (the only group by default);
        # every worker of that group is killed, so the one running it is among them.
        durable = host.worker_pids("durable") or host.worker_pids("app")
        assert durable, host.log()
        for pid in durable:
            os.kill(pid, signal.SIGKILL)

        async def restarted() -> bool:
            return len(host.worker_pids("durable") or host.worker_pids("app")) >= 2 * len(durable)

        # HTTP requests the dead worker was serving failed with it (as in Azure); ask again once
        # the host has started its replacement.
        await eventually(restarted, "the host restarting the worker", timeout=30)
        done = await client.get(f"/api/agents/assistant/sessions/{SESSION}/runs/turn-2?wait=30")
        assert done.status == 200 and done.json()["status"] == "succeeded", (done.body, host.log())
        assert done.json()["response"]["text"] == "answer to two"
        assert "exited; starting a new worker process" in host.log()

        entries = history((await client.session_state("assistant", SESSION))["state"])
        assert [(e["$type"], e.get("correlationId")) for e in entries[2:]] == [
            ("request", "turn-2"), ("response", "turn-2"),
        ]
        assert [texts(e)[0] for e in entries[2:]] == ["two", "answer to two"]
        # The batch the dead worker was running ran again on the new one: one more model call.
        assert [r.last_user_text for r in model.requests] == ["one", "two", "two"]
        # The host itself never stopped serving.
        assert host.proc is not None and host.proc.poll() is None
    finally:
        host.stop()
