"""`kill -9` of the whole host (its worker processes with it) the moment a run's
`approval.required` event is in the stream store: a client that saw the event decides the call
it names after the restart, and the decision is taken. A pause is a step of its own, whose calls
come from the model call the step before stored, so a pause run again after a crash asks for
the same calls the event named (docs/hosting.md "Tool approvals")."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import sqlite3

import aiohttp
from e2e_support import Client, HostProcess, eventually

from agents.testing import ModelRequest, ModelServer, Reply

SESSION = "e2e-approval-killed"
RUN = "killed-1"
BOOK = {"city": "Paris", "nights": 2}


def _announced(data_dir: pathlib.Path) -> list[str] | None:
    """The call ids the run's `approval.required` event names, once it is in the stream store."""
    db = data_dir / "streams.db"
    if not db.exists():
        return None
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT data FROM events WHERE key = ? AND type = 'approval.required'",
            (f"concierge:{SESSION}:{RUN}",),
        ).fetchall()
    if not rows:
        return None
    return [a["call_id"] for a in json.loads(rows[0][0])["approvals"]]


async def test_kill_9_after_approval_required_the_announced_call_is_decided(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    data = tmp_path / "data"
    host = HostProcess(data, model.base_url, tmp_path / "host.log").start()
    attempts: list[int] = []

    def answer(request: ModelRequest) -> Reply:
        if any(m.role == "tool" for m in request.messages):
            return Reply.text("Booked.")
        attempts.append(1)  # a model call run again after the crash would ask for another call
        return Reply.tool_call("book_hotel", BOOK, call_id=f"call-{len(attempts)}")

    model.handler = answer
    try:
        client = Client(http, host.url)
        sent = await client.run(
            "concierge", "book Paris", SESSION, correlation_id=RUN, wait_for_response=False
        )
        assert sent.status == 202, sent.body

        async def published() -> list[str] | None:
            return _announced(data)

        announced = await eventually(published, "approval.required published", timeout=30)
        assert host.proc is not None
        os.killpg(host.proc.pid, signal.SIGKILL)  # the instance stops, workers and all
        host.proc.wait(10)
    finally:
        host.kill()
    host.start()
    try:
        client = Client(http, host.url)
        path = f"/api/agents/concierge/sessions/{SESSION}/runs/{RUN}"
        decision = {"call_id": announced[0], "approved": True}
        decided = await client.post(path + "/approvals", json_body=decision)
        assert decided.status == 200 and decided.json()["status"] == "decided", (decided.body, attempts)
        done = await client.get(path + "?wait=30")
        assert done.status == 200 and done.json()["status"] == "succeeded", done.body
        assert done.json()["response"]["text"] == "Booked."
        assert announced == ["call-1"] and len(attempts) == 1, (announced, attempts)
    finally:
        host.stop()
