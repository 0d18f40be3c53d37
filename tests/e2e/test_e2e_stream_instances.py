"""The stream store across instances, in the flex topology (HTTP and Durable functions in separate
worker processes, each group with a temp dir of its own, as Flex Consumption runs them): the
default store is the local host's, shared through its data dir as a real shared store would be;
an app that runs in Azure without Redis answers streaming requests with a problem naming the
setting instead of silence, and still starts every run once."""

from __future__ import annotations

import pathlib
import uuid
from collections.abc import Iterator

import httpx
import pytest
from e2e_support import HostProcess
from stream_support import WORDS, check_sequence, read_all, run_url, stream_url, streaming, text_of

from agents.testing import ModelServer

SSE = {"Accept": "text/event-stream"}
# No DURABLE_AGENTS_STREAM_PATH: the default store (an empty setting is no setting).
FLEX = {
    "DEVHOST_TOPOLOGY": "flex",
    "DURABLE_AGENTS_STREAM_PATH": "",
    "DURABLE_AGENTS_STREAM_HEARTBEAT_SECONDS": "0.3",
}


def flex_host(root: pathlib.Path, model: ModelServer, **env: str) -> HostProcess:
    return HostProcess(root / "data", model.base_url, root / "host.log", extra_env={**FLEX, **env}).start()


@pytest.fixture(scope="module")
def default_store_host(
    model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostProcess]:
    host = flex_host(tmp_path_factory.mktemp("flex-default"), model_server)
    try:
        yield host
    finally:
        host.stop()


@pytest.fixture(scope="module")
def azure_host(model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostProcess]:
    # What Azure sets on every instance; no DURABLE_AGENTS_STREAM_REDIS.
    host = flex_host(tmp_path_factory.mktemp("flex-azure"), model_server, WEBSITE_INSTANCE_ID="instance-1")
    try:
        yield host
    finally:
        host.stop()


async def test_the_default_store_reaches_from_the_entity_group_to_the_http_group(
    default_store_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    streaming(model, delay=0.02)
    session = f"s-{uuid.uuid4().hex[:8]}"
    answer, events = await read_all(
        web, "POST", run_url(default_store_host), json={"message": "hi", "session_id": session}, headers=SSE
    )
    assert answer.status_code == 200
    check_sequence(events)
    assert events[0].event == "run.started" and text_of(events) == WORDS
    replay = await read_all(
        web, "GET", stream_url(default_store_host, session, answer.headers["x-ms-correlation-id"])
    )
    assert replay[1] == events
    assert (default_store_host.data_dir / "streams" / "streams.db").exists()


async def test_in_azure_without_redis_streaming_is_a_problem_naming_the_setting_and_runs_start_once(
    azure_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    streaming(model, delay=0.01)
    session = f"s-{uuid.uuid4().hex[:8]}"
    streamed = await web.post(run_url(azure_host), json={"message": "hi", "session_id": session}, headers=SSE)
    assert streamed.status_code == 503, streamed.text
    assert streamed.headers["content-type"].startswith("application/problem+json")
    problem = streamed.json()
    assert problem["code"] == "storage_unavailable" and "DURABLE_AGENTS_STREAM_REDIS" in problem["detail"]
    assert "retry-after" not in streamed.headers, "a retry cannot help until the setting changes"
    assert model.requests == [], "the refused streaming request sent a turn"
    # Runs that do not stream work, and a retry under the same key still runs the turn once.
    key = {"Idempotency-Key": f"k-{uuid.uuid4().hex}"}
    body = {"message": "once", "session_id": session}
    first = await web.post(run_url(azure_host), json={**body, "wait_for_response": False}, headers=key)
    assert first.status_code == 202
    second = await web.post(run_url(azure_host), json=body, headers=key)
    assert second.status_code == 200 and second.json()["response"]["text"] == WORDS
    assert second.json()["correlation_id"] == first.json()["correlation_id"]
    assert len(model.requests) == 1, "a retry ran the turn again"
    other = await web.post(run_url(azure_host), json={**body, "message": "changed"}, headers=key)
    assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"
    # A finished run's stream is its stored answer as one event; a run without an answer yet
    # cannot be followed without a shared store: 503 naming the setting.
    stream = await web.get(stream_url(azure_host, session, first.json()["correlation_id"]))
    assert stream.status_code == 200 and "event: run.completed" in stream.text, stream.text
    pending = await web.get(stream_url(azure_host, session, "not-finished"))
    assert pending.status_code == 503 and "DURABLE_AGENTS_STREAM_REDIS" in pending.json()["detail"]
    health = (await web.get(f"{azure_host.url}/api/health")).json()
    assert "DURABLE_AGENTS_STREAM_REDIS" in health["checks"]["stream_store"]["detail"]
    assert azure_host.log().count("streaming is off") >= 1, "startup logged no error naming the setting"
