"""No run stays `pending` forever, over real sockets to `python -m devhost`: runs of a
session deleted afterwards answer 410 at once, while a new session's first run is still
`pending`; many concurrent requests racing past a nearly full session's check each get a
terminal answer."""

from __future__ import annotations

import asyncio
import pathlib
import time
import uuid
from typing import Any

import aiohttp
from e2e_support import OWN_SCHEMA, REFERENCE_SCHEMA, Client, HostProcess, eventually, schema_errors

from agents.testing import ModelServer, Reply

AGENT = "assistant"


def _run_path(session: str, correlation_id: str) -> str:
    return f"/api/agents/{AGENT}/sessions/{session}/runs/{correlation_id}"


async def _gone(client: Client, session: str) -> bool:
    return (await client.get(f"/api/agents/{AGENT}/sessions/{session}")).status == 404


async def _listed(client: Client) -> list[str]:
    """Every session id the sessions list shows, all pages."""
    ids: list[str] = []
    token: str | None = None
    while True:
        query = "page_size=100" + (f"&continuation={token}" if token else "")
        page = await client.get(f"/api/agents/{AGENT}/sessions?{query}")
        assert page.status == 200, page.body
        ids += [s["session_id"] for s in page.json()["sessions"]]
        token = page.json()["continuation"]
        if not token:
            return ids


async def test_runs_of_a_deleted_session_answer_410_at_once(client: Client, model: ModelServer) -> None:
    session = f"deleted-{uuid.uuid4().hex[:8]}"
    model.script(Reply.text("first answer"), Reply.delay(1.0, then=Reply.text("slow")), Reply.text("queued"))
    done = await client.run(AGENT, "first", session, correlation_id="done-run")
    assert done.status == 200, done.body
    slow = await client.run(AGENT, "slow one", session, correlation_id="slow-run", wait_for_response=False)
    queued = await client.run(
        AGENT, "queued one", session, correlation_id="queued-run", wait_for_response=False
    )
    assert slow.status == 202 and queued.status == 202, (slow.body, queued.body)
    deleted = await client.request("DELETE", f"/api/agents/{AGENT}/sessions/{session}")
    assert deleted.status == 202, deleted.body
    await eventually(lambda: _gone(client, session), "the delete ran")

    for run in ("done-run", "slow-run", "queued-run"):
        started = time.monotonic()
        answer = await client.get(_run_path(session, run) + "?wait=20")
        assert answer.status == 410, (run, answer.status, answer.body)  # not pending until the wait ends
        assert time.monotonic() - started < 10
        problem = answer.json()
        assert answer.content_type == "application/problem+json"
        assert problem["code"] == "run_discarded" and "deleted" in problem["detail"], problem

    # The deleted session is gone from every read: no session, no history, not listed.
    assert (await client.get(f"/api/agents/{AGENT}/sessions/{session}/history")).status == 404
    assert session not in await _listed(client)
    assert (await client.request("DELETE", f"/api/agents/{AGENT}/sessions/{session}")).status == 404

    # A retried run of the deleted session is refused, not run in a new history.
    calls = len(model.requests)
    retried = await client.run(AGENT, "first", session, correlation_id="done-run")
    assert retried.status == 410 and retried.json()["code"] == "run_discarded", retried.body
    assert len(model.requests) == calls

    # A new run starts a fresh history under the same session id.
    model.script(Reply.text("fresh start"))
    fresh = await client.run(AGENT, "hello again", session)
    assert fresh.status == 200 and fresh.json()["response"]["text"] == "fresh start", fresh.body
    state = await client.session_state(AGENT, session)
    assert [t["correlation_id"] for t in state["turns"]] == [fresh.json()["correlation_id"]]
    assert "deletedAt" not in state["state"]["data"]
    for schema in (OWN_SCHEMA, REFERENCE_SCHEMA):
        assert not schema_errors(state["state"], schema)
    gone = await client.get(_run_path(session, "slow-run"))
    assert gone.status == 410, gone.body  # still remembered in the new history


async def test_a_new_sessions_first_run_is_still_pending_not_gone(client: Client, model: ModelServer) -> None:
    session = f"new-{uuid.uuid4().hex[:8]}"
    model.script(Reply.delay(1.0, then=Reply.text("made it")))
    accepted = await client.run(AGENT, "hi", session, correlation_id="first-run", wait_for_response=False)
    assert accepted.status == 202, accepted.body
    pending = await client.get(_run_path(session, "first-run"))
    assert pending.status == 200 and pending.json()["status"] == "pending", pending.body
    done = await client.get(_run_path(session, "first-run") + "?wait=20")
    assert done.status == 200 and done.json()["status"] == "succeeded", done.body


async def test_concurrent_requests_on_a_nearly_full_session_all_get_a_terminal_answer(
    http: aiohttp.ClientSession, model: ModelServer, tmp_path: pathlib.Path
) -> None:
    # A host with a small session limit (archiving, at 40 KiB, never starts below it). One turn
    # with a long answer fills the session to just under the limit; then many requests at once
    # each pass the HTTP-side check on the same snapshot while the first one's model call is
    # running. The first tips the session over; each later one is refused by the entity and adds
    # a refusal record, until records no longer fit and only the refused ids are kept.
    limit, asked, racers = 20_000, 1_000, 60
    host = HostProcess(
        tmp_path / "data", model.base_url, tmp_path / "host.log",
        extra_env={"DURABLE_AGENTS_MAX_SESSION_BYTES": str(limit)},
    ).start()
    try:
        client = Client(http, host.url)
        model.script(Reply.text("r" * 10_000))
        assert (await client.run(AGENT, "fill", "probe")).status == 200
        overhead = (await client.session_state(AGENT, "probe"))["size_bytes"] - 10_000
        model.script(Reply.text("r" * (limit - asked - 500 - overhead)))
        assert (await client.run(AGENT, "fill", "full")).status == 200
        size = (await client.session_state(AGENT, "full"))["size_bytes"]
        assert limit - asked - 1_000 < size <= limit - asked, size
        model.script(Reply.delay(1.0, then=Reply.text("x" * 2_000)))

        async def one(index: int) -> tuple[str, int, Any]:
            correlation_id = f"race-{index:03d}"
            answer = await client.run(AGENT, "q" * asked, "full", correlation_id=correlation_id)
            return correlation_id, answer.status, answer.json()

        answers = await asyncio.gather(*(one(i) for i in range(racers)))
        assert {status for _, status, _ in answers} == {409}, answers  # never 202: all answered
        for correlation_id, _, body in answers:
            assert body["code"] == "session_too_large", body
            polled = await client.get(_run_path("full", correlation_id))
            assert polled.status == 200, polled.body
            run = polled.json()
            assert run["status"] == "failed" and run["error"]["code"] == "session_too_large", run
        session = await client.session_state(AGENT, "full")
        state = session["state"]
        assert session["size_bytes"] <= limit + 64 * 1024
        refused = state["data"].get("refusedRuns") or []
        recorded = [t["correlation_id"] for t in session["turns"] if t["status"] == "failed"]
        assert refused and recorded, "the race should have used the records' headroom, then ids"
        assert not schema_errors(state, OWN_SCHEMA) and not schema_errors(state, REFERENCE_SCHEMA)
    finally:
        host.stop()


# The project's own agents, served by an app whose Durable SDK fails every entity batch that
# carries a marked message: the SDK raises while reading the batch request, before any entity
# code runs (what a request property the SDK does not know does to `DurableEntityContext(**...)`).
SDK_FAULT_APP = '''
import json

import azure.durable_functions as df

original = df.DurableEntityContext.from_json.__func__

def failing_from_json(cls, json_str):
    if any("SDK-FAULT" in str(item.get("input")) for item in json.loads(json_str)["batch"]):
        raise TypeError("__init__() got an unexpected keyword argument 'newerProperty'")
    return original(cls, json_str)

df.DurableEntityContext.from_json = classmethod(failing_from_json)

from examples.catalog import AGENTS
from hosting import build_app

app = build_app(AGENTS)
'''


async def test_a_run_whose_batch_the_sdk_fails_is_answered_at_once(
    http: aiohttp.ClientSession, model: ModelServer, tmp_path: pathlib.Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "function_app.py").write_text(SDK_FAULT_APP)
    host = HostProcess(tmp_path / "data", model.base_url, tmp_path / "host.log", cwd=project).start()
    try:
        client = Client(http, host.url)
        model.script(Reply.text("fine"), Reply.text("still fine"))
        assert (await client.run(AGENT, "hello", "sdk")).status == 200
        started = time.monotonic()
        marked = "SDK-FAULT: this batch fails in the SDK"
        failed = await client.run(AGENT, marked, "sdk", correlation_id="faulted")
        assert time.monotonic() - started < 10  # not the 30 s wait running out
        assert failed.status == 500, failed.body
        problem = failed.json()
        assert problem["code"] == "internal_error" and "Durable Functions SDK" in problem["detail"], problem
        polled = await client.get(_run_path("sdk", "faulted") + "?wait=20")
        assert polled.status == 200 and polled.json()["status"] == "failed", polled.body
        assert polled.json()["error"]["code"] == "internal_error"
        # The session is not stuck behind the failed batch: the next turn runs.
        after = await client.run(AGENT, "and now?", "sdk")
        assert after.status == 200 and after.json()["response"]["text"] == "still fine", after.body
    finally:
        host.stop()
