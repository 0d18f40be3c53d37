"""`kill -9` of the host in the middle of a burst of streamed turns, then a restart on the same
data directory and stream store: every run the burst sent is answered when its caller retries
with the same correlation id, in seconds, never left behind a claim whose turn was not sent
(which would wait out the claim's retention, an hour)."""

from __future__ import annotations

import asyncio
import contextlib
import pathlib
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest
from e2e_support import FUNCTION_KEY, Client, HostProcess

from agents.testing import ModelServer, Reply

BURST = 200


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    # Not pooled: connections to the killed host must not be reused for the restarted one.
    connector = aiohttp.TCPConnector(force_close=True, limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:
        yield session


async def _streamed(http: aiohttp.ClientSession, url: str, index: int) -> None:
    """One streamed turn, read until the host dies under it."""
    body = {"message": f"turn {index}", "session_id": f"burst-{index}"}
    body["correlation_id"] = f"burst-run-{index}"
    headers = {"Accept": "text/event-stream", "x-functions-key": FUNCTION_KEY}
    with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
        async with http.post(url, json=body, headers=headers) as response:
            async for _ in response.content.iter_any():
                pass


@pytest.mark.parametrize("store", ["sqlite", "redis"])
async def test_every_run_of_a_burst_killed_midway_is_answered_on_retry(
    tmp_path: pathlib.Path,
    model: ModelServer,
    http: aiohttp.ClientSession,
    store: str,
    request: pytest.FixtureRequest,
) -> None:
    model.handler = lambda asked: Reply.delay(0.2, Reply.text(f"answer to {asked.last_user_text}"))
    env = {"PYTHON_THREADPOOL_THREAD_COUNT": "300"}
    if store == "redis":
        env["DURABLE_AGENTS_STREAM_REDIS"] = request.getfixturevalue("redis_url")
    host = HostProcess(tmp_path / "data", model.base_url, tmp_path / "host.log", extra_env=env).start()
    try:
        url = f"{host.url}/api/agents/assistant/run"
        burst = [asyncio.create_task(_streamed(http, url, i)) for i in range(BURST)]
        # Mid-burst: some turns answered, some at the model, some claimed and not yet sent.
        while len(model.requests) < 5:
            await asyncio.sleep(0.01)
        host.kill()
        await asyncio.gather(*burst)
    finally:
        host.kill()
    host.start()
    try:
        client = Client(http, host.url)
        started = time.monotonic()

        async def retried(index: int) -> tuple[int, str]:
            answer = await client.run(
                "assistant", f"turn {index}", f"burst-{index}", correlation_id=f"burst-run-{index}"
            )
            text = answer.json().get("response", {}).get("text") if answer.status == 200 else ""
            return answer.status, str(text)

        answers = await asyncio.gather(*(retried(i) for i in range(BURST)))
        took = time.monotonic() - started
        assert [status for status, _ in answers] == [200] * BURST, (answers, host.log()[-3000:])
        assert [text for _, text in answers] == [f"answer to turn {i}" for i in range(BURST)]
        assert took < 30, took  # each retry is answered, none waits on a stale claim
    finally:
        host.stop()
