"""Run admission and readers against the stream store as production finds it: a claim whose turn
was never sent, a Redis server that is down, hundreds of readers of one run."""

from __future__ import annotations

import asyncio
import pathlib
import socket
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hosting_support import ROOT, Api, make_agents

from agents.testing import ModelServer, Reply
from hosting import ApiSettings, build_app
from hosting.streams import RunClaim, StreamKey, stream_store_from_env

SSE = {"Accept": "text/event-stream"}


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
async def app_with(
    monkeypatch: pytest.MonkeyPatch, model: ModelServer, tmp_path: pathlib.Path
) -> AsyncIterator[Any]:
    """Builds the test agents' app under the given settings and serves it from a local host."""
    from devhost import LocalHost

    hosts: list[Any] = []

    async def make(**env: str) -> Api:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        app = build_app(make_agents(model), settings=ApiSettings(public_base_url="http://localhost:7071"))
        host = LocalHost(app, tmp_path / f"devhost-{len(hosts)}", project_dir=ROOT)
        await host.start()
        hosts.append(host)
        return Api(app, host.client_binding())

    yield make
    for host in hosts:
        await host.stop()


async def test_a_claim_whose_turn_was_never_sent_is_sent_again_by_a_retry(
    api: Api, model: ModelServer
) -> None:
    model.script(Reply.text("answered once"))
    session, correlation = f"s-{uuid.uuid4().hex[:8]}", f"c-{uuid.uuid4().hex}"
    # What a host killed between claiming a run and signalling its entity leaves behind.
    await stream_store_from_env().claim(
        StreamKey("assistant", session, correlation), RunClaim(None, live=False)
    )
    body = {"message": "hi", "session_id": session, "correlation_id": correlation}
    answer = await api.post("/api/agents/assistant/run", json_body=body)
    assert answer.status == 200, answer.body
    assert answer.json()["response"]["text"] == "answered once"
    # Asked again: answered from the stored run, and the model was called once.
    again = await api.post("/api/agents/assistant/run", json_body=body)
    assert again.status == 200 and again.json()["response"]["text"] == "answered once"
    assert len(model.requests) == 1


async def test_a_run_queued_behind_another_and_asked_again_runs_once(api: Api, model: ModelServer) -> None:
    model.script(Reply.delay(0.5, Reply.text("first")), Reply.text("second"))
    session = f"s-{uuid.uuid4().hex[:8]}"
    first = {"message": "one", "session_id": session, "wait_for_response": False}
    assert (await api.post("/api/agents/assistant/run", json_body=first)).status == 202
    second = {"message": "two", "session_id": session, "correlation_id": f"c-{uuid.uuid4().hex}"}
    # Sent while the first turn runs, then asked again while it is still queued (no event yet).
    queued = {**second, "wait_for_response": False}
    assert (await api.post("/api/agents/assistant/run", json_body=queued)).status == 202
    answers = await asyncio.gather(
        *(api.post("/api/agents/assistant/run", json_body=second) for _ in range(3))
    )
    assert {a.status for a in answers} == {200}
    assert {a.json()["response"]["text"] for a in answers} == {"second"}
    assert len(model.requests) == 2, "a turn ran twice"


async def test_with_redis_down_json_runs_still_run_and_streams_are_503_unless_finished(
    app_with: Any, model: ModelServer
) -> None:
    api: Api = await app_with(DURABLE_AGENTS_STREAM_REDIS=f"redis://127.0.0.1:{closed_port()}/0")
    model.script(Reply.text("no redis needed"))
    session = f"s-{uuid.uuid4().hex[:8]}"
    answer = await api.post("/api/agents/assistant/run", json_body={"message": "hi", "session_id": session})
    assert answer.status == 200, answer.body
    assert answer.json()["response"]["text"] == "no redis needed"
    streamed = await api.post(
        "/api/agents/assistant/run", json_body={"message": "hi", "session_id": session}, headers=SSE
    )
    assert streamed.status == 503 and streamed.json()["code"] == "storage_unavailable", streamed.body
    assert streamed.headers["retry-after"].isdigit() and "Redis" in streamed.json()["detail"]
    # A finished run's stream is its stored answer as one event, as when its events expired.
    correlation = answer.json()["correlation_id"]
    stream = await api.get(f"/api/agents/assistant/sessions/{session}/runs/{correlation}/stream")
    assert stream.status == 200, stream.body
    assert b"event: run.completed" in stream.body and b"no redis needed" in stream.body
    # A run without an answer yet cannot be followed: 503, and when to try again.
    pending = await api.get(f"/api/agents/assistant/sessions/{session}/runs/not-finished/stream")
    assert pending.status == 503 and pending.json()["code"] == "storage_unavailable", pending.body
    assert "retry-after" in pending.headers
    assert len(model.requests) == 1, "the refused streaming request sent a turn"
    health = await api.get("/api/health")
    assert health.status == 503
    checks = health.json()["checks"]
    assert checks["storage"]["ok"] and not checks["stream_store"]["ok"]
    assert "Redis" in checks["stream_store"]["detail"]


async def test_three_hundred_readers_of_one_run_leave_admission_its_connections(
    app_with: Any, model: ModelServer, redis_url: str
) -> None:
    api: Api = await app_with(
        DURABLE_AGENTS_STREAM_REDIS=redis_url, DURABLE_AGENTS_STREAM_HEARTBEAT_SECONDS="1"
    )
    model.script(Reply.delay(3, Reply.text("read by all")), Reply.text("admitted"))
    session = f"s-{uuid.uuid4().hex[:8]}"
    started = await api.post(
        "/api/agents/assistant/run",
        json_body={"message": "slow", "session_id": session, "wait_for_response": False},
    )
    assert started.status == 202
    stream = f"/api/agents/assistant/sessions/{session}/runs/{started.json()['correlation_id']}/stream"
    readers = [asyncio.create_task(api.get(stream)) for _ in range(300)]
    await asyncio.sleep(1.5)  # every reader is attached and blocked on the pending run
    assert not any(r.done() for r in readers), [r.result().body for r in readers if r.done()][:1]
    other = {"message": "meanwhile", "session_id": f"s-{uuid.uuid4().hex[:8]}"}
    admitted = await api.post("/api/agents/assistant/run", json_body=other)
    assert admitted.status == 200, admitted.body
    assert admitted.json()["response"]["text"] == "admitted"
    answers = await asyncio.wait_for(asyncio.gather(*readers), 30)
    assert {a.status for a in answers} == {200}
    assert all(b"event: run.completed" in a.body and b"read by all" in a.body for a in answers)
