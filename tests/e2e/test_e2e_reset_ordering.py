"""A run sent after a reset's (or delete's) 202 is never wiped by it, even where the durable
backend's orchestrations lag behind direct entity signals (the local host's
DEVHOST_ORCHESTRATION_DELAY_SECONDS holds every orchestration message, as Azure Storage's polled
control queues do); the discarded archive's chunks still go once the change is committed."""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator

import aiohttp
import pytest
from test_e2e_long_session import AGENT, ENTITY, eventually_true, run_turn, start_small
from test_e2e_long_session import long_model as long_model  # the fixture

from agents.testing import ModelServer
from hosting.archive import session_prefix

FILES = {"DURABLE_AGENTS_HISTORY_STORE": "files"}


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        yield session


@pytest.mark.parametrize("operation", ["reset", "delete"])
async def test_a_run_sent_after_the_202_survives_a_lagging_orchestration(
    tmp_path: pathlib.Path, long_model: ModelServer, http: aiohttp.ClientSession, operation: str
) -> None:
    backend = {**FILES, "DURABLE_AGENTS_HISTORY_DIR": str(tmp_path / "history")}
    lagging = {"DEVHOST_ORCHESTRATION_DELAY_SECONDS": "2"}
    session, client = start_small(tmp_path, long_model, backend, http, **lagging)
    try:
        for turn in range(6):  # archived history: the path through the cleanup orchestration
            assert (await run_turn(client, "s", turn, 1500)).status == 200
        old = await session.store.list_paths(session_prefix(ENTITY, "s"))
        assert old
        if operation == "reset":
            answer = await client.post(f"/api/agents/{AGENT}/sessions/s/reset")
        else:
            answer = await client.request("DELETE", f"/api/agents/{AGENT}/sessions/s")
        assert answer.status == 202, answer.body[:300]
        after = await run_turn(client, "s", 100, 20)  # at once, before any orchestration moved
        assert after.status == 200, after.body[:300]
        correlation_id = after.json()["correlation_id"]

        async def old_chunks_gone() -> bool:
            return not set(old) & set(await session.store.list_paths(session_prefix(ENTITY, "s")))

        await eventually_true(old_chunks_gone, f"the chunks the {operation} left behind to go")
        body = await client.session_state(AGENT, "s")
        assert body["entries"] == 2 and body["archived_entries"] == 0, body
        status = await client.get(f"/api/agents/{AGENT}/sessions/s/runs/{correlation_id}")
        assert status.status == 200, status.body[:300]
    finally:
        await session.stop()
