"""The expiry sweeper end to end on the local host: sessions whose expiry check cannot run yet
cannot keep the sessions behind them from expiring."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from typing import Any

import azure.durable_functions as df
import pytest
from hosting_support import Api

from agents.testing import ModelServer, Reply
from hosting.lifecycle import EXPIRY, expiry_instance
from hosting.lifecycle._sweeper import MAX_CHECKS_PER_SWEEP

# A state of a newer major schema version (written before a rollback): this build cannot read it.
NEWER = '{"schemaVersion": "9.0.0", "data": {"conversationHistory": [], "fromTheFuture": true}}'
TTL = 4


def plant_unreadable(host: Any, keys: list[str]) -> None:
    """Unreadable sessions idle since 1970, written straight into the host's store (as a newer
    build would have written them)."""
    with sqlite3.connect(host.db_path) as conn:
        conn.executemany(
            "INSERT INTO entity_states (entity_id, name, key, state, last_operation_at)"
            " VALUES (?, ?, ?, ?, 0)",
            [(f"@dafx-assistant@{key}", "dafx-assistant", key, NEWER) for key in keys],
        )


async def test_a_sweep_moves_on_past_sessions_whose_checks_cannot_run(
    api: Api, host: Any, model: ModelServer, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # More than one sweep's worth of idle sessions ahead of an ordinary one (the entity query
    # answers in key order), each with the watcher an earlier version started with it still
    # sleeping until the due time of a longer TTL: the check's instance id is taken, so a sweep
    # cannot start their checks and nothing touches them; they stay idle, every sweep.
    caplog.set_level(logging.INFO, logger="hosting.lifecycle")
    keys = [f"a-{n:04d}" for n in range(MAX_CHECKS_PER_SWEEP + 20)]
    plant_unreadable(host, keys)
    client = df.DurableOrchestrationClient(host.client_binding())
    later = "2100-01-01T00:00:00+00:00"
    for key in keys:
        watcher = {"agent": "assistant", "session": key, "checkAt": later}
        await client.start_new(EXPIRY, expiry_instance("assistant", key), watcher)
    monkeypatch.setenv("DURABLE_AGENTS_SESSION_TTL__assistant", str(TTL))
    model.script(Reply.text("hello"))
    turn = {"message": "hi", "session_id": "z-ordinary"}
    answer = await api.post("/api/agents/assistant/run", json_body=turn)
    assert answer.status == 200, answer.body

    def sweeps() -> int:
        return sum(1 for r in caplog.records if r.getMessage().startswith("sweep of assistant:"))

    await asyncio.sleep(TTL)  # the ordinary session is due from here on
    due_at_sweep = sweeps()
    started = time.monotonic()
    while (await api.get("/api/agents/assistant/sessions/z-ordinary")).status != 404:
        # Each sweep moves on from where the last one stopped: the ordinary session is reached
        # within a round (two sweeps) of falling due, and checked in the sweep that reaches it.
        assert sweeps() <= due_at_sweep + 3, f"not expired after {sweeps() - due_at_sweep} sweeps"
        assert time.monotonic() - started < 120, "the ordinary session never expired"
        await asyncio.sleep(0.2)
    with sqlite3.connect(host.db_path) as conn:  # the others stay as they are
        kept = conn.execute("SELECT COUNT(*) FROM entity_states WHERE state = ?", (NEWER,)).fetchone()[0]
    assert kept == len(keys)
