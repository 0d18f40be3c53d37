"""A run's stream after its Redis lost it (an empty restart, a flush): the run is between two steps
of its turn, its events and claim are gone, and a reader of its stream still gets what comes
next and its terminal event, not 404, on a single node and on a cluster."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
import redis
from e2e_support import HostProcess, eventually
from stream_support import TERMINAL, read_all

from agents.testing import ModelRequest, ModelServer, Reply

AGENT = "concierge"


@pytest.fixture(scope="module", params=["redis", "redis-cluster"])
def backend(request: pytest.FixtureRequest) -> dict[str, str]:
    """Only the Redis stores: the loss is theirs (overrides the conftest's parameters)."""
    if request.param == "redis":
        return {"DURABLE_AGENTS_STREAM_REDIS": request.getfixturevalue("redis_url")}
    return {
        "DURABLE_AGENTS_STREAM_REDIS": request.getfixturevalue("redis_cluster_url"),
        "DURABLE_AGENTS_STREAM_REDIS_CLUSTER": "true",
    }


def _forget_run(backend: dict[str, str], session: str, run: str) -> int:
    """Delete every key of the run, as an empty restart of the server would; how many."""
    url = backend["DURABLE_AGENTS_STREAM_REDIS"]
    pattern = f"*{{{AGENT}:{session}:{run}}}*"
    client: Any
    if backend.get("DURABLE_AGENTS_STREAM_REDIS_CLUSTER"):
        client = redis.RedisCluster.from_url(url)
        keys = client.keys(pattern, target_nodes=redis.RedisCluster.ALL_NODES)
    else:
        client = redis.Redis.from_url(url)
        keys = client.keys(pattern)
    try:
        for key in keys:
            client.delete(key)
        return len(keys)
    finally:
        client.close()


async def test_a_run_whose_stream_redis_lost_is_followed_to_its_end(
    stream_host: HostProcess, backend: dict[str, str], model: ModelServer, web: httpx.AsyncClient
) -> None:
    async def weather_then_slow(request: ModelRequest) -> Reply:
        if not any(m.role == "tool" for m in request.messages):
            return Reply.tool_call("get_weather", {"city": "Oslo"}, call_id="w")
        await asyncio.sleep(3)
        return Reply.text("sunny in Oslo")

    model.handler = weather_then_slow
    session, run = "stream-loss", "stream-loss-1"
    body = {"message": "weather?", "session_id": session, "correlation_id": run, "wait_for_response": False}
    sent = await web.post(f"{stream_host.url}/api/agents/{AGENT}/run", json=body)
    assert sent.status_code == 202, sent.text

    async def second_model_call() -> bool:
        return len(model.requests) >= 2

    await eventually(second_model_call, "the turn's second model call (after its tool step)")
    assert _forget_run(backend, session, run) >= 1
    url = f"{stream_host.url}/api/agents/{AGENT}/sessions/{session}/runs/{run}/stream"
    response, events = await read_all(web, "GET", url)
    assert response.status_code == 200, response.text
    assert events and events[-1].event in TERMINAL, events
    assert events[-1].event == "run.completed", events[-1]
    assert events[-1].data["response"]["text"] == "sunny in Oslo"
