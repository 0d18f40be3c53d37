"""An app deployed without `PYTHON_THREADPOOL_THREAD_COUNT` (VS Code, `func azure functionapp
publish`, the portal): each worker's pool is the runtime's default, `min(32, cores + 4)` threads
(six on two cores). Turns waiting on a slow model must not hold those threads, or a few of them
stop every other session of the instance (docs/hosting.md "Concurrency")."""

from __future__ import annotations

import asyncio
import os
import pathlib
import time

import aiohttp
from e2e_support import Client, HostProcess, eventually

from agents.testing import ModelRequest, ModelServer, Reply

MODEL_SECONDS = 20.0
BYSTANDER_SECONDS = 3.0


def _default_threads() -> int:
    """The threads of the runtime's pool with the setting unset, in every worker process that runs
    entity batches (the flex topology runs two): what `ThreadPoolExecutor()` makes."""
    processes = 2 if os.environ.get("DEVHOST_TOPOLOGY") == "flex" else 1
    cpus = getattr(os, "process_cpu_count", os.cpu_count)()  # what ThreadPoolExecutor reads on 3.13
    return min(32, (cpus or 1) + 4) * processes


async def test_slow_model_calls_leave_the_instance_answering_other_sessions(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    slow_turns = 2 * _default_threads()  # 12 on two cores: twice what the default pool holds

    def reply(asked: ModelRequest) -> Reply:
        text = asked.last_user_text or ""
        if text.startswith("slow"):
            return Reply.delay(MODEL_SECONDS, Reply.text(f"late answer to {text}"))
        return Reply.text(f"answer to {text}")

    model.handler = reply
    unset = ("PYTHON_THREADPOOL_THREAD_COUNT",)
    host = HostProcess(tmp_path / "data", model.base_url, tmp_path / "host.log", unset_env=unset).start()
    client = Client(http, host.url)
    turns = [client.run("assistant", f"slow {i}", f"pool-slow-{i}") for i in range(slow_turns)]
    slow = [asyncio.create_task(turn) for turn in turns]
    try:

        async def all_at_the_model() -> bool:
            return len(model.requests) >= slow_turns

        # Every slow turn reaches the model: none waits for a thread the others hold.
        await eventually(all_at_the_model, f"{slow_turns} slow turns at the model", timeout=15)
        started = time.monotonic()
        answer = await asyncio.wait_for(client.run("assistant", "hello", "pool-bystander"), BYSTANDER_SECONDS)
        took = time.monotonic() - started
        assert answer.status == 200, (answer.status, answer.body[:300])
        assert answer.json()["response"]["text"] == "answer to hello", took
    finally:
        for task in slow:
            task.cancel()
        await asyncio.gather(*slow, return_exceptions=True)
        host.kill()
