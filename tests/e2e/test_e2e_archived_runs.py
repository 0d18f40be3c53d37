"""Runs whose entries were archived long ago, on the real host: the state's index of archived
runs keeps the most recent 32, and a run past it is found in the chunk that holds it, so its id
keeps its terminal answer (`GET`, `?wait=`) and a retry of its `Idempotency-Key` never runs the
turn again, however many turns came after it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import aiohttp
import pytest
from e2e_support import Client, HostProcess

from agents.testing import ModelServer, Reply

AGENT = "assistant"
TURNS = 40  # past the 32 archived runs the state indexes


@pytest.fixture(scope="module")
def archive_host(
    model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostProcess]:
    root = tmp_path_factory.mktemp("archived-runs-host")
    env = {
        "DURABLE_AGENTS_ARCHIVE_AT_BYTES": "4096",
        "DURABLE_AGENTS_ARCHIVE_KEEP_BYTES": "1024",
        "DURABLE_AGENTS_HISTORY_STORE": "files",
    }
    host = HostProcess(root / "data", model_server.base_url, root / "host.log", extra_env=env).start()
    try:
        yield host
    finally:
        host.stop()


async def test_a_run_archived_past_the_index_keeps_its_answer_and_its_key(
    http: aiohttp.ClientSession, archive_host: HostProcess, model: ModelServer
) -> None:
    client = Client(http, archive_host.url)
    session = "archived-" + uuid.uuid4().hex[:8]
    filler = "x" * 400
    run = f"/api/agents/{AGENT}/run"
    first_id = ""
    for i in range(TURNS):
        model.script(Reply.text(f"answer {i} {filler}"))
        answer = await client.post(
            run,
            json_body={"message": f"turn {i} {filler}", "session_id": session},
            headers={"Idempotency-Key": f"key-{session}-{i}"},
        )
        assert answer.status == 200, answer.body[:300]
        if i == 0:
            first_id = answer.json()["correlation_id"]
    calls = len(model.requests)
    runs = f"/api/agents/{AGENT}/sessions/{session}/runs/{first_id}"

    status = await client.get(runs)
    assert status.status == 200 and status.json()["status"] == "succeeded", status.body[:300]
    assert status.json()["response"]["text"].startswith("answer 0 "), status.body[:300]
    started = time.monotonic()
    waited = await client.get(runs + "?wait=5")
    assert waited.json()["status"] == "succeeded", waited.body[:300]
    assert time.monotonic() - started < 2  # answered, not held for the whole wait

    retried = await client.post(
        run,
        json_body={"message": f"turn 0 {filler}", "session_id": session},
        headers={"Idempotency-Key": f"key-{session}-0"},
    )
    assert retried.status == 200, retried.body[:300]
    assert retried.json()["correlation_id"] == first_id
    assert retried.json()["response"]["text"].startswith("answer 0 "), retried.body[:300]
    assert len(model.requests) == calls  # the turn did not run again
    # Another body under the same key is still a conflict.
    other = await client.post(
        run, json_body={"message": "something else", "session_id": session},
        headers={"Idempotency-Key": f"key-{session}-0"},
    )
    assert other.status == 409 and other.json()["code"] == "idempotency_conflict", other.body[:300]
