"""Turns slower than the time limits, over real sockets: an app whose host.json sets a
`functionTimeout` of a few seconds, and a model that never answers in time. Past functionTimeout
the host would restart the worker and commit the batch as every operation failed, leaving its
runs without a record (pending for ever); the app ends each run before that, as a failed turn
`timeout` its caller is answered with."""

from __future__ import annotations

import asyncio
import json
import pathlib
import re
import time
from collections.abc import Iterator

import aiohttp
import httpx
import pytest
from e2e_support import Answer, Client, HostProcess
from stream_support import check_sequence, read_all

from agents.testing import ModelRequest, ModelServer, Reply

AGENT = "assistant"
FUNCTION_TIMEOUT = 5.0
BUDGET = FUNCTION_TIMEOUT * 0.8  # functionTimeout less its margin (a fifth of 5 s)

# The worker's threads as the app is deployed with (docs/hosting.md "Concurrency").
SETTINGS = {"PYTHON_THREADPOOL_THREAD_COUNT": "300"}

APP = """
from examples.catalog import AGENTS
from hosting import build_app

app = build_app(AGENTS)
"""


def project(root: pathlib.Path, function_timeout: str) -> pathlib.Path:
    """The project's agents in an app folder whose host.json has `function_timeout`; batches of up
    to 50 operations, so the runs queued behind a running one share the next batch."""
    folder = root / "project"
    folder.mkdir()
    (folder / "function_app.py").write_text(APP)
    durable = {"maxEntityOperationBatchSize": 50}
    settings = {"version": "2.0", "functionTimeout": function_timeout, "extensions": {"durableTask": durable}}
    (folder / "host.json").write_text(json.dumps(settings))
    return folder


@pytest.fixture
def slow_model(model: ModelServer) -> Iterator[ModelServer]:
    """A model that takes far longer than any limit here (its calls end when the caller goes)."""

    async def never_in_time(request: ModelRequest) -> Reply:
        await asyncio.sleep(60)
        return Reply.text("too late")

    model.handler = never_in_time
    yield model


async def warm_up(client: Client, slow_model: ModelServer) -> None:
    """Quick turns on a few other sessions first, so that the first timed batch is not also a
    worker process's first turn: on a loaded machine, a just-started worker (its model SDK still
    loading) used up the 4 s budget before the turn reached the model. Such a warm-up turn is
    itself answered failed `timeout` (that budget is the one under test): it is sent again, on
    the same session, until every session has had a turn in time. In the flex topology the
    sessions spread over both Durable worker processes."""
    async def warm(request: ModelRequest) -> Reply:
        return Reply.text("warm")

    slow, slow_model.handler = slow_model.handler, warm
    waiting = [f"warm-up-{n}" for n in range(4)]
    deadline = time.monotonic() + 90
    while waiting:
        assert time.monotonic() < deadline, f"sessions {waiting} never had a turn in 4 s"
        answers = await asyncio.gather(*(client.run(AGENT, "warm up", s) for s in waiting))
        for answer in answers:
            if answer.status != 200:
                timed_out(answer)  # a cold worker's timeout, nothing else
        waiting = [s for s, a in zip(waiting, answers, strict=True) if a.status != 200]
    slow_model.requests.clear()
    slow_model.handler = slow


def timed_out(answer: Answer) -> str:
    """The problem's detail of a run answered as a failed turn `timeout` (retryable)."""
    assert answer.status == 502, (answer.status, answer.body[:300])
    problem = answer.json()
    assert problem["code"] == "timeout" and problem["retryable"] is True, problem
    detail: str = problem["detail"]
    return detail


async def no_run_pending(client: Client, session: str, runs: list[str]) -> None:
    """Every run has its failed record in the stored session; polling any of them says so."""
    stored = await client.session_state(AGENT, session)
    turns = {t["correlation_id"]: t for t in stored["turns"]}
    assert sorted(turns) == sorted(runs), turns
    assert {t["status"] for t in turns.values()} == {"failed"}
    assert {t["error"]["code"] for t in turns.values()} == {"timeout"}
    for run in runs:
        polled = await client.get(f"/api/agents/{AGENT}/sessions/{session}/runs/{run}")
        assert polled.status == 200 and polled.json()["status"] == "failed", polled.body


async def test_runs_slower_than_function_timeout_are_answered_failed_timeout(
    http: aiohttp.ClientSession, slow_model: ModelServer, tmp_path: pathlib.Path
) -> None:
    folder = project(tmp_path, "00:00:05")
    host = HostProcess(tmp_path / "data", slow_model.base_url, tmp_path / "host.log", cwd=folder,
                       extra_env=SETTINGS).start()
    try:
        client = Client(http, host.url)
        await warm_up(client, slow_model)
        session = "past-function-timeout"
        started = time.monotonic()
        first = asyncio.create_task(client.run(AGENT, "first", session, correlation_id="r0"))
        while not slow_model.requests:  # the first batch is waiting on the model
            await asyncio.sleep(0.02)
            assert time.monotonic() - started < 20, host.log()[-3000:]
        # Sent behind it: they come in the next batch, and each turn gets a batch's whole budget
        # (docs/hosting.md, "Time limits" under "Deployment notes").
        queued = [asyncio.create_task(client.run(AGENT, f"queued {run}", session, correlation_id=run))
                  for run in ("r1", "r2")]
        answers = [await first, *await asyncio.gather(*queued)]
        elapsed = time.monotonic() - started
        details = [timed_out(answer) for answer in answers]
        assert all("functionTimeout" in detail for detail in details), details
        # Three batches of BUDGET each, one after another; no caller's wait ran out (that would
        # be a 202 after 30 s).
        assert 3 * BUDGET - 0.5 <= elapsed < 3 * BUDGET + 10, elapsed
        # Each had a whole batch's budget and was sent to the model: of r1 and r2 (sent at once,
        # so in either order), the one that came in the batch the other spent was moved to the
        # next batch rather than failed with no time.
        asked = [r.last_user_text or "" for r in slow_model.requests]
        assert asked[0] == "first" and sorted(asked[1:]) == ["queued r1", "queued r2"], asked
        assert re.search(r"run r[12]: step 0 moved to the next batch", host.log())
        await no_run_pending(client, session, ["r0", "r1", "r2"])
        assert "ran past functionTimeout" not in host.log()  # the host never had to stop a batch
        # The session goes on.
        slow_model.handler = None
        slow_model.script(Reply.text("in time"))
        after = await client.run(AGENT, "now quick", session)
        assert after.status == 200 and after.json()["response"]["text"] == "in time", after.body
    finally:
        host.stop()


async def test_a_turn_past_its_deadline_is_answered_failed_timeout(
    http: aiohttp.ClientSession, web: httpx.AsyncClient, slow_model: ModelServer, tmp_path: pathlib.Path
) -> None:
    folder = project(tmp_path, "00:10:00")
    env = {**SETTINGS, "DURABLE_AGENTS_TURN_DEADLINE_SECONDS": "1.5"}
    host = HostProcess(tmp_path / "data", slow_model.base_url, tmp_path / "host.log", cwd=folder,
                       extra_env=env).start()
    try:
        client = Client(http, host.url)
        answer = await client.run(AGENT, "take your time", "past-deadline", correlation_id="slow")
        detail = timed_out(answer)
        assert "1.5 s (DURABLE_AGENTS_TURN_DEADLINE_SECONDS)" in detail, detail
        assert 1.4 <= answer.elapsed < 10, answer.elapsed
        await no_run_pending(client, "past-deadline", ["slow"])
        # Streamed, the run ends with its one terminal event: run.failed, code timeout.
        body = {"message": "stream it", "session_id": "past-deadline", "correlation_id": "streamed"}
        response, events = await read_all(web, "POST", f"{host.url}/api/agents/{AGENT}/run", json=body,
                                          headers={"Accept": "text/event-stream"})
        assert response.status_code == 200
        check_sequence(events)
        assert events[-1].event == "run.failed" and events[-1].data["code"] == "timeout", events
        await no_run_pending(client, "past-deadline", ["slow", "streamed"])
    finally:
        host.stop()
