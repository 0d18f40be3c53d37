"""A caller waiting for a JSON answer while the entity runs in another process (the flex topology,
as on Flex Consumption) is woken by the run's terminal event in the shared stream store, instead
of polling the entity state: a handful of durable reads per answered turn, not one every few
hundred milliseconds."""

from __future__ import annotations

import asyncio
import pathlib
import re
import uuid
from collections.abc import Iterator

import httpx
import pytest
from e2e_support import FUNCTION_KEY, HostProcess

from agents.testing import ModelRequest, ModelServer, Reply

TURNS = 3
MODEL_SECONDS = 2.0


@pytest.fixture
def flex_host(
    backend: dict[str, str], model_server: ModelServer, tmp_path: pathlib.Path
) -> Iterator[HostProcess]:
    env = {**backend, "DEVHOST_TOPOLOGY": "flex", "FUNCTIONS_WORKER_PROCESS_COUNT": "1"}
    host = HostProcess(tmp_path / "data", model_server.base_url, tmp_path / "host.log", extra_env=env).start()
    try:
        yield host
    finally:
        host.stop()


async def test_a_waiting_caller_reads_the_state_a_few_times_per_turn_not_every_few_hundred_ms(
    flex_host: HostProcess, model: ModelServer
) -> None:
    async def slow(request: ModelRequest) -> Reply:
        await asyncio.sleep(MODEL_SECONDS)
        return Reply.text("done")

    model.handler = slow
    async with httpx.AsyncClient(headers={"x-functions-key": FUNCTION_KEY}, timeout=60) as web:
        for _ in range(TURNS):
            body = {"message": "hi", "session_id": f"w-{uuid.uuid4().hex[:8]}"}
            answer = await web.post(f"{flex_host.url}/api/agents/assistant/run", json=body)
            assert answer.status_code == 200 and answer.json()["status"] == "succeeded", answer.text
    flex_host.stop()
    found = re.search(r"durable API calls: .*read_entity=(\d+)", flex_host.log())
    assert found, flex_host.log()[-2000:]
    # Polling a 2 s turn takes about 13 reads; the terminal event's wakeup leaves the first
    # read of the submit, the read after the wakeup and perhaps one before the commit.
    assert int(found.group(1)) <= 4 * TURNS, found.group(0)
