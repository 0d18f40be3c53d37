"""The expiry sweeper end to end on the local host: sessions whose expiry check cannot run yet
cannot keep the sessions behind them from expiring."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import time
from typing import Any

import azure.durable_functions as df
import pytest
from hosting_support import Api, set_app_setting, stored_state

from agents.testing import ModelServer, Reply
from hosting.lifecycle import CLEANUP, EXPIRY, SWEEPER, expiry_instance, sweeper_instance
from hosting.lifecycle._names import APPROVAL_EXPIRY, approval_instance, cleanup_instance
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
    set_app_setting(monkeypatch, "DURABLE_AGENTS_SESSION_TTL__assistant", str(TTL))
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


def lifecycle_rows(host: Any) -> tuple[int, int]:
    """(instances, history rows) of expiry checks, cleanups and approval expiries in the host's
    task hub."""
    with sqlite3.connect(host.db_path) as conn:
        instances = conn.execute(
            "SELECT COUNT(*) FROM orch_instances WHERE instance_id LIKE 'dafx-expiry-%'"
            " OR instance_id LIKE 'dafx-cleanup-%' OR instance_id LIKE 'dafx-approval-%'"
        ).fetchone()[0]
        history = conn.execute(
            "SELECT COUNT(*) FROM orch_history WHERE instance_id LIKE 'dafx-expiry-%'"
            " OR instance_id LIKE 'dafx-cleanup-%' OR instance_id LIKE 'dafx-approval-%'"
        ).fetchone()[0]
    return int(instances), int(history)


async def test_finished_expiry_checks_are_purged(
    api: Api, host: Any, model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Sessions idle for long (copies of a real session's state, last active in 2020): each
    # sweep's checks expire them, and their finished instances go with a later sweep.
    set_app_setting(monkeypatch, "DURABLE_AGENTS_SESSION_TTL__assistant", str(TTL))
    model.script(Reply.text("hello"))
    turn = {"message": "hi", "session_id": "model"}
    assert (await api.post("/api/agents/assistant/run", json_body=turn)).status == 200
    document = json.loads(await stored_state(host, "assistant", "model"))
    document["data"]["lastActivityAt"] = "2020-01-01T00:00:00+00:00"
    keys = [f"idle-{n:03d}" for n in range(150)]
    with sqlite3.connect(host.db_path) as conn:
        conn.executemany(
            "INSERT INTO entity_states (entity_id, name, key, state, last_operation_at)"
            " VALUES (?, ?, ?, ?, 0)",
            [(f"@dafx-assistant@{key}", "dafx-assistant", key, json.dumps(document)) for key in keys],
        )
    # And cleanups (a reset or delete of an archived session), under the agent's cleanup prefix.
    client = df.DurableOrchestrationClient(host.client_binding())
    for n in range(3):
        spec = {"agent": "assistant", "session": f"gone-{n}", "operation": "delete"}
        await client.start_new(CLEANUP, cleanup_instance("assistant", f"gone-{n}"), spec)
    # And approval expiries (due at once: they signal their step, decided or gone, and finish).
    for n in range(2):
        due = {"agent": "assistant", "session": "model", "correlationId": f"run-{n}", "step": 1,
               "seconds": 1, "dueAt": "2020-01-01T00:00:00+00:00"}
        await client.start_new(APPROVAL_EXPIRY, approval_instance("assistant", "model", f"run-{n}", 1), due)
    started = time.monotonic()
    while True:
        with sqlite3.connect(host.db_path) as conn:
            left = conn.execute("SELECT COUNT(*) FROM entity_states WHERE key LIKE 'idle-%'").fetchone()[0]
        instances, history = lifecycle_rows(host)
        if left == 0 and instances == 0 and history == 0:
            break
        assert time.monotonic() - started < 90, f"{left} sessions, {instances} instances, {history} rows left"
        await asyncio.sleep(0.5)


async def test_a_cursor_the_backend_refuses_starts_the_round_again(
    api: Api, host: Any, model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stored cursor can go stale (a backend may let a continuation token expire, or a task hub
    # be moved): the sweep starts again at the first page instead of failing on every sweep.
    set_app_setting(monkeypatch, "DURABLE_AGENTS_SESSION_TTL__assistant", str(TTL))
    model.script(Reply.text("hello"))
    turn = {"message": "hi", "session_id": "stale"}
    client = df.DurableOrchestrationClient(host.client_binding())
    spec = {"agent": "assistant", "intervalSeconds": 0.2, "cursor": "bm90IGEgdG9rZW4="}
    await client.start_new(SWEEPER, sweeper_instance("assistant"), spec)
    assert (await api.post("/api/agents/assistant/run", json_body=turn)).status == 200
    started = time.monotonic()
    while (await api.get("/api/agents/assistant/sessions/stale")).status != 404:
        assert time.monotonic() - started < 60, "the session never expired"
        await asyncio.sleep(0.2)
