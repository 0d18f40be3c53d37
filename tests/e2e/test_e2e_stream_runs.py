"""Run semantics on the streaming paths, over real sockets to `python -m devhost` with httpx-sse, on
both stream store backends: a pending run asked again (same body: attached, never sent twice;
another body: 409 at once, JSON and SSE alike), runs started without SSE streaming their tokens,
and an unreadable stored state answered 409 on the stream routes."""

from __future__ import annotations

import asyncio
import pathlib
import sqlite3
import uuid

import httpx
import pytest
from e2e_support import HostProcess, eventually
from stream_support import (
    WORDS,
    Seen,
    check_sequence,
    read_all,
    run_url,
    stored_run_ids,
    stream_url,
    streaming,
    text_of,
)

from agents.testing import ModelServer

SSE = {"Accept": "text/event-stream"}


def run_operations(host: HostProcess, correlation: str) -> int:
    """How many `run` operations with this correlation id the host's entities executed (its log)."""
    return host.log().count(f"op=run correlation={correlation} ")


def problem_code(response: httpx.Response) -> str:
    assert response.headers["content-type"].startswith("application/problem+json"), response.text
    code: str = response.json()["code"]
    return code


async def test_a_pending_run_asked_with_another_body_is_409_on_the_sse_and_json_paths(
    stream_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    streaming(model, delay=0.05)
    session = f"s-{uuid.uuid4().hex[:8]}"
    headers = {"Idempotency-Key": f"k-{uuid.uuid4().hex}"}
    first, started = await read_all(
        web,
        "POST",
        run_url(stream_host),
        limit=2,
        json={"message": "first", "session_id": session},
        headers=headers,
    )
    assert first.status_code == 200 and [e.event for e in started] == ["run.started", "text.delta"]
    other = {"message": "other", "session_id": session}
    # The run is pending (not stored): another body under its key is refused at once, not attached.
    streamed = await web.post(run_url(stream_host), json=other, headers={**headers, **SSE})
    assert streamed.status_code == 409 and problem_code(streamed) == "idempotency_conflict"
    queued = await web.post(run_url(stream_host), json={**other, "wait_for_response": False}, headers=headers)
    assert queued.status_code == 409 and problem_code(queued) == "idempotency_conflict"
    waited = await web.post(run_url(stream_host), json=other, headers=headers)
    assert waited.status_code == 409 and problem_code(waited) == "idempotency_conflict"
    # The same body attaches to the run, which ends as it began.
    _, events = await read_all(
        web, "POST", run_url(stream_host), json={"message": "first", "session_id": session}, headers=headers
    )
    check_sequence(events)
    assert events[:2] == started and text_of(events) == WORDS
    assert [r.last_user_text for r in model.requests] == ["first"]


async def test_a_pending_run_retried_with_the_same_body_attaches_without_a_second_signal(
    stream_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    streaming(model, delay=0.05)
    session = f"s-{uuid.uuid4().hex[:8]}"
    correlation = f"c-{uuid.uuid4().hex[:8]}"
    body = {"message": "once", "session_id": session, "correlation_id": correlation}
    _, partial = await read_all(web, "POST", run_url(stream_host), limit=2, json=body)
    assert [e.event for e in partial] == ["run.started", "text.delta"]
    # While it runs: an SSE retry, a JSON retry that does not wait, and one that waits.
    sse_retry = asyncio.create_task(read_all(web, "POST", run_url(stream_host), json=body))
    queued = await web.post(run_url(stream_host), json={**body, "wait_for_response": False})
    assert queued.status_code == 202 and queued.json()["correlation_id"] == correlation
    waited = await web.post(run_url(stream_host), json=body)
    assert waited.status_code == 200 and waited.json()["response"]["text"] == WORDS
    answer, events = await sse_retry
    assert answer.headers["x-ms-correlation-id"] == correlation
    check_sequence(events)
    assert events[:2] == partial and text_of(events) == WORDS

    async def executed() -> bool:
        return run_operations(stream_host, correlation) >= 1

    await eventually(executed, "the run's entity operation in the host log")
    await asyncio.sleep(0.3)  # a second signal would have been executed by now
    assert run_operations(stream_host, correlation) == 1, stream_host.log()[-3000:]
    assert await stored_run_ids(web, stream_host, session) == [correlation, correlation]


async def test_a_run_started_with_a_json_post_that_does_not_wait_streams_its_tokens(
    stream_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    streaming(model)
    session = f"s-{uuid.uuid4().hex[:8]}"
    queued = await web.post(
        run_url(stream_host), json={"message": "hi", "session_id": session, "wait_for_response": False}
    )
    assert queued.status_code == 202
    correlation = queued.json()["correlation_id"]
    _, events = await read_all(web, "GET", stream_url(stream_host, session, correlation))
    check_sequence(events)
    assert text_of(events) == WORDS
    assert any(e.event == "usage" for e in events)
    assert events[-1].data["response"]["text"] == WORDS


async def test_a_json_post_that_waits_for_its_answer_publishes_start_and_end_only(
    stream_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    # The documented exception (docs/streaming.md): the caller gets the whole answer in the
    # response, so the model is not streamed for it; a reader still gets start and end.
    streaming(model, delay=0.0)
    session = f"s-{uuid.uuid4().hex[:8]}"
    answer = await web.post(run_url(stream_host), json={"message": "hi", "session_id": session})
    assert answer.status_code == 200
    _, events = await read_all(web, "GET", stream_url(stream_host, session, answer.json()["correlation_id"]))
    assert [e.event for e in events] == ["run.started", "run.completed"]
    assert events[-1] == Seen(2, "run.completed", answer.json())


def plant_state(host: HostProcess, session: str, text: str) -> None:
    """Write a stored state straight into the host's entity store (as another writer might)."""
    with sqlite3.connect(host.data_dir / "devhost.db") as db:
        db.execute(
            "INSERT INTO entity_states (entity_id, name, key, state, last_operation_at)"
            " VALUES (?, ?, ?, ?, 0)",
            (f"@dafx-assistant@{session}", "dafx-assistant", session, text),
        )
    db.close()


async def test_an_unreadable_stored_state_is_409_on_the_stream_routes_at_once(
    stream_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    session = f"s-{uuid.uuid4().hex[:8]}"
    text = '{"schemaVersion": "9.0.0", "data": {"conversationHistory": []}}'
    plant_state(stream_host, session, text)
    loop = asyncio.get_running_loop()
    started = loop.time()
    got = await web.get(stream_url(stream_host, session, "c-any"))
    posted = await web.post(run_url(stream_host), json={"message": "hi", "session_id": session}, headers=SSE)
    retried = await web.post(
        run_url(stream_host),
        json={"message": "hi", "session_id": session, "correlation_id": "c-any"},
        headers=SSE,
    )
    assert loop.time() - started < 10  # a waiting run would take 30 s
    for answer in (got, posted, retried):
        assert answer.status_code == 409, answer.text
        assert problem_code(answer) == "state_unreadable" and "9.0.0" in answer.json()["detail"]
    assert model.requests == []


@pytest.mark.parametrize("clear", ["reset", "delete"])
async def test_the_stream_of_a_run_a_reset_or_delete_discarded_is_410_as_its_run_resource(
    clear: str, stream_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    streaming(model, delay=0.0)
    session = f"s-{uuid.uuid4().hex[:8]}"
    response, events = await read_all(
        web, "POST", run_url(stream_host), json={"message": "hi", "session_id": session}
    )
    check_sequence(events)
    correlation = response.headers["x-ms-correlation-id"]
    sessions = f"{stream_host.url}/api/agents/assistant/sessions/{session}"
    cleared = await (web.post(f"{sessions}/reset") if clear == "reset" else web.delete(sessions))
    assert cleared.status_code == 202, cleared.text

    async def discarded() -> bool:
        return (await web.get(f"{sessions}/runs/{correlation}")).status_code == 410

    await eventually(discarded, "the reset")
    streamed = await web.get(stream_url(stream_host, session, correlation))
    assert streamed.status_code == 410 and problem_code(streamed) == "run_discarded"


async def test_an_archived_run_whose_events_expired_streams_its_answer_as_one_event(
    backend: dict[str, str], tmp_path: pathlib.Path, web: httpx.AsyncClient, model: ModelServer
) -> None:
    # Archive above 4 KiB (a few turns move the first run into a chunk); events kept 1 s.
    settings = {
        **backend,
        "DURABLE_AGENTS_ARCHIVE_AT_BYTES": "4096",
        "DURABLE_AGENTS_ARCHIVE_KEEP_BYTES": "1024",
        "DURABLE_AGENTS_STREAM_RETENTION_SECONDS": "1",
    }
    host = HostProcess(tmp_path / "data", model.base_url, tmp_path / "host.log", extra_env=settings).start()
    try:
        streaming(model, delay=0.0)
        session = f"s-{uuid.uuid4().hex[:8]}"
        answers = [
            await web.post(run_url(host), json={"message": f"{turn} " + "x" * 1500, "session_id": session})
            for turn in range(6)
        ]
        assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
        first = answers[0].json()
        assert first["correlation_id"] not in await stored_run_ids(web, host, session), "not archived"
        await asyncio.sleep(2.2)  # the retention of the first run's events passes
        _, events = await read_all(web, "GET", stream_url(host, session, first["correlation_id"]))
        assert events == [Seen(1, "run.completed", first)], host.log()[-2000:]
    finally:
        host.stop()


async def test_an_sse_post_that_creates_a_session_starts_the_expiry_sweepers(
    backend: dict[str, str], tmp_path: pathlib.Path, web: httpx.AsyncClient, model: ModelServer
) -> None:
    # On a host that has created no session yet: the sweepers start after the stream's first
    # answer event, or when the stream ends first (here: its reader leaves after run.started),
    # never not at all; and a session costs no orchestration of its own.
    host = HostProcess(tmp_path / "data", model.base_url, tmp_path / "host.log", extra_env=backend).start()
    try:
        streaming(model, delay=0.05)
        session = f"s-{uuid.uuid4().hex[:8]}"
        response, events = await read_all(
            web, "POST", run_url(host), limit=1, json={"message": "hi", "session_id": session}
        )
        assert response.status_code == 200 and events[0].event == "run.started"
        instances = f"{host.url}/runtime/webhooks/durabletask/instances"

        async def swept() -> str | None:
            answer = await web.get(f"{instances}/dafx-sweeper-assistant")
            running = answer.status_code in (200, 202)
            status: str | None = answer.json().get("runtimeStatus") if running else None
            return status

        assert await eventually(swept, "the assistant's expiry sweeper") in ("Running", "Pending")
        listed = (await web.get(instances)).json()
        assert not [i for i in listed if i["instanceId"].startswith("dafx-expiry-")], listed
    finally:
        host.stop()
