"""Live, resumable SSE streams of turns, read with a real SSE client over real sockets from
`python -m devhost`, on both stream store backends (the embedded SQLite one and a real Redis)."""

from __future__ import annotations

import asyncio
import pathlib
import uuid

import httpx
import pytest
from e2e_support import HostProcess, history
from httpx_sse import aconnect_sse
from stream_support import (
    TERMINAL,
    WORDS,
    Seen,
    check_sequence,
    read_all,
    run_url,
    seen,
    stored_run_ids,
    stream_url,
    streaming,
    text_of,
)

from agents.testing import ModelServer, Reply


async def test_post_streams_tokens_live_then_the_json_answer(
    stream_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    streaming(model)
    session = f"s-{uuid.uuid4().hex[:8]}"
    arrivals: list[float] = []
    events: list[Seen] = []
    loop = asyncio.get_running_loop()
    async with aconnect_sse(
        web, "POST", run_url(stream_host), json={"message": "hi", "session_id": session}
    ) as source:
        assert source.response.status_code == 200
        assert source.response.headers["content-type"].startswith("text/event-stream")
        correlation = source.response.headers["x-ms-correlation-id"]
        assert source.response.headers["x-ms-session-id"] == session
        assert source.response.headers["location"].endswith(f"/sessions/{session}/runs/{correlation}")
        async for sse in source.aiter_sse():
            if not sse.data:
                continue
            arrivals.append(loop.time())
            events.append(seen(sse))
    check_sequence(events)
    assert events[0].data == {"agent": "assistant", "session_id": session, "correlation_id": correlation}
    assert text_of(events) == WORDS
    deltas = [t for t, e in zip(arrivals, events, strict=True) if e.event == "text.delta"]
    assert deltas[-1] - deltas[0] > 0.3, "the tokens did not arrive spread out (live)"
    final = events[-1]
    assert final.event == "run.completed"
    # The same body the JSON API answers for the finished run.
    answer = await web.get(f"{stream_host.url}/api/agents/assistant/sessions/{session}/runs/{correlation}")
    expected = answer.json()
    assert final.data["response"] == expected["response"]
    assert final.data["status"] == "succeeded" and final.data["correlation_id"] == correlation
    usage = [e.data for e in events if e.event == "usage"]
    assert usage and usage[0]["total_tokens"] == expected["response"]["usage"]["totalTokenCount"]


async def test_disconnect_then_resume_with_last_event_id_gets_each_event_once(
    stream_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    streaming(model)
    session = f"s-{uuid.uuid4().hex[:8]}"
    response, first = await read_all(
        web, "POST", run_url(stream_host), limit=5, json={"message": "hi", "session_id": session}
    )
    correlation = response.headers["x-ms-correlation-id"]
    assert len(first) == 5 and first[-1].event == "text.delta"
    # The client went away mid-turn; the turn goes on. Resume after the last event seen.
    url = stream_url(stream_host, session, correlation)
    _, rest = await read_all(web, "GET", url, headers={"Last-Event-ID": str(first[-1].id)})
    events = first + rest
    check_sequence(events)
    assert text_of(events) == WORDS
    # ?after= is the same as Last-Event-ID; from the start replays everything retained.
    _, again = await read_all(web, "GET", f"{url}?after=3")
    assert again == events[3:]
    _, replay = await read_all(web, "GET", url)
    assert replay == events
    assert await stored_run_ids(web, stream_host, session) == [correlation, correlation]


async def test_a_reader_that_has_the_terminal_event_gets_204_at_once_and_the_id_never_changes(
    stream_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    streaming(model, delay=0.0)
    session = f"s-{uuid.uuid4().hex[:8]}"
    _, events = await read_all(
        web, "POST", run_url(stream_host), json={"message": "hi", "session_id": session}
    )
    correlation = events[0].data["correlation_id"]
    terminal = events[-1]
    assert terminal.event == "run.completed"
    url = stream_url(stream_host, session, correlation)
    # An EventSource reconnects with the id of the last event it had: the terminal one.
    for resume in (
        {"headers": {"Last-Event-ID": str(terminal.id)}},
        {"params": {"after": str(terminal.id + 5)}},
    ):
        loop = asyncio.get_running_loop()
        started = loop.time()
        response = await web.get(url, **resume)  # type: ignore[arg-type]
        assert response.status_code == 204, (resume, response.status_code, response.text[:200])
        assert response.content == b""
        assert loop.time() - started < 5, "the reader that has everything waited for more"
    # A reader one event short gets the very same terminal event, with the same id.
    _, last = await read_all(web, "GET", url, headers={"Last-Event-ID": str(terminal.id - 1)})
    assert last == [terminal]


async def test_two_readers_see_identical_sequences(
    stream_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    streaming(model)
    session = f"s-{uuid.uuid4().hex[:8]}"
    correlation = f"c-{uuid.uuid4().hex[:8]}"
    body = {"message": "hi", "session_id": session, "correlation_id": correlation}
    poster = asyncio.create_task(read_all(web, "POST", run_url(stream_host), json=body))

    async def second_reader() -> list[Seen]:
        while True:  # attach as soon as the run exists
            response, events = await read_all(web, "GET", stream_url(stream_host, session, correlation))
            if response.status_code == 200:
                return events
            assert response.status_code == 404
            await asyncio.sleep(0.01)

    (_, one), two = await asyncio.gather(poster, second_reader())
    check_sequence(one)
    assert one == two


async def test_idempotent_retry_attaches_to_the_same_run(
    stream_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    streaming(model)
    session = f"s-{uuid.uuid4().hex[:8]}"
    body = {"message": "once", "session_id": session}
    headers = {"Idempotency-Key": f"k-{uuid.uuid4().hex}"}
    first, partial = await read_all(web, "POST", run_url(stream_host), limit=3, json=body, headers=headers)
    second, events = await read_all(web, "POST", run_url(stream_host), json=body, headers=headers)
    assert second.headers["x-ms-correlation-id"] == first.headers["x-ms-correlation-id"]
    check_sequence(events)
    assert events[:3] == partial
    _, after_done = await read_all(web, "POST", run_url(stream_host), json=body, headers=headers)
    assert after_done == events
    state = (await web.get(f"{stream_host.url}/api/agents/assistant/sessions/{session}")).json()["state"]
    assert len(history(state)) == 2, "the retries ran a second turn"
    assert sum(1 for r in model.requests if r.last_user_text == "once") == 1


async def test_model_error_ends_in_run_failed_with_the_json_code(
    stream_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    model.handler = lambda request: (
        Reply.error(400, "nope", code="invalid_prompt")
        if request.last_user_text == "boom"
        else Reply.text("ok")
    )
    session = f"s-{uuid.uuid4().hex[:8]}"
    response, events = await read_all(
        web, "POST", run_url(stream_host), json={"message": "boom", "session_id": session}
    )
    check_sequence(events)
    failed = events[-1]
    assert failed.event == "run.failed"
    correlation = response.headers["x-ms-correlation-id"]
    json_answer = await web.get(
        f"{stream_host.url}/api/agents/assistant/sessions/{session}/runs/{correlation}"
    )
    assert failed.data["code"] == json_answer.json()["error"]["code"] == "invalid_prompt"
    assert failed.data["status"] == 502 and failed.data["type"].endswith("invalid_prompt")


@pytest.mark.parametrize("how", ["error", "disconnect"])
async def test_a_model_stream_breaking_off_mid_answer_ends_in_run_failed_with_the_json_code(
    how: str, stream_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    model.stream_delay = 0.02
    model.handler = lambda request: Reply.text(WORDS).interrupted(4, how)  # type: ignore[arg-type]
    session = f"s-{uuid.uuid4().hex[:8]}"
    response, events = await read_all(
        web, "POST", run_url(stream_host), json={"message": "hi", "session_id": session}
    )
    check_sequence(events)
    assert [e.event for e in events[1:-1]] == ["text.delta"] * 3  # what was shown before the break
    failed = events[-1]
    assert failed.event == "run.failed"
    correlation = response.headers["x-ms-correlation-id"]
    json_answer = await web.get(
        f"{stream_host.url}/api/agents/assistant/sessions/{session}/runs/{correlation}"
    )
    expected = "model_server_error" if how == "error" else "connection_error"
    assert failed.data["code"] == json_answer.json()["error"]["code"] == expected
    assert failed.data["status"] == 502 and failed.data["type"].endswith(expected)
    assert json_answer.json()["error"]["retryable"] is False
    assert len(model.requests) == 1  # never sent again once text was shown


async def test_heartbeats_while_the_model_thinks_and_unknown_runs_are_404(
    stream_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    model.script(Reply.delay(1.2, Reply.text("late")))
    session = f"s-{uuid.uuid4().hex[:8]}"
    lines: list[str] = []
    async with web.stream(
        "POST",
        run_url(stream_host),
        json={"message": "x", "session_id": session},
        headers={"Accept": "text/event-stream"},
    ) as response:
        async for line in response.aiter_lines():
            lines.append(line)
    assert lines.count(": heartbeat") >= 2, lines
    assert "event: run.completed" in lines
    missing = await web.get(stream_url(stream_host, session, "no-such-run"))
    assert missing.status_code == 404
    assert missing.headers["content-type"].startswith("application/problem+json")
    assert missing.json()["code"] == "run_not_found"
    bad = await web.get(stream_url(stream_host, session, "x"), headers={"Last-Event-ID": "-1"})
    assert bad.status_code == 400 and bad.json()["field"] == "Last-Event-ID"


async def test_kill_9_mid_stream_restart_and_resume(
    backend: dict[str, str], tmp_path: pathlib.Path, web: httpx.AsyncClient, model: ModelServer
) -> None:
    streaming(model, delay=0.05)
    host = HostProcess(tmp_path / "data", model.base_url, tmp_path / "host.log", extra_env=backend).start()
    session = f"s-{uuid.uuid4().hex[:8]}"
    try:
        response, first = await read_all(
            web, "POST", run_url(host), limit=6, json={"message": "survive", "session_id": session}
        )
        correlation = response.headers["x-ms-correlation-id"]
        host.kill()
    finally:
        host.kill()
    host.start()
    try:
        _, rest = await read_all(
            web, "GET", stream_url(host, session, correlation), headers={"Last-Event-ID": str(first[-1].id)}
        )
        events = first + rest
        kinds = [e.event for e in events]
        assert [e.id for e in events] == list(range(1, len(events) + 1))
        assert kinds.count("run.restarted") == 1 and kinds.index("run.restarted") >= 6, kinds
        assert set(kinds[1 : kinds.index("run.restarted")]) == {"text.delta"}, kinds
        assert sum(kinds.count(k) for k in TERMINAL) == 1 and kinds[-1] == "run.completed"
        restarted = kinds.index("run.restarted")
        assert text_of(events[restarted:]) == WORDS, "the new attempt restates the whole answer"
        state = (await web.get(f"{host.url}/api/agents/assistant/sessions/{session}")).json()["state"]
        assert [e["$type"] for e in history(state)] == ["request", "response"], host.log()
    finally:
        host.stop()


async def test_a_query_string_of_any_bytes_is_no_server_error(
    stream_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    # Percent-escapes that decode to bytes which are not UTF-8 (found by the API fuzzer).
    model.script(Reply.text("ok"))
    url = f"{run_url(stream_host)}?%C3%B5%F0%94%BF%9E%C2%95=&%00C%F2%A5%B7%8A=&x=%F5%FF"
    answer = await web.post(url, json={"message": "hi"})
    assert answer.status_code in (200, 400), answer.text
    streamed = await web.get(stream_url(stream_host, "s", "c") + "?after=%F5")
    assert streamed.status_code == 400 and streamed.json()["field"] == "after"


async def test_the_terminal_event_waits_for_a_batch_slower_than_ten_seconds(
    stream_host: HostProcess, web: httpx.AsyncClient, model: ModelServer
) -> None:
    # The entity publishes a run's answer when its operation ends; the host commits it with the
    # whole batch. A streamed turn queued with a slow one (12 s, past the 10 s the stream used to
    # wait) has its answer stored only when the slow one ends: the terminal event waits for that.
    delays = {"first": 1.5, "streamed": 0.0, "slow": 12.0}
    model.handler = lambda request: Reply.delay(
        delays.get(request.last_user_text or "", 0.0), Reply.text(f"re {request.last_user_text}")
    )
    session = f"s-{uuid.uuid4().hex[:8]}"
    url = run_url(stream_host)

    async def post(message: str) -> httpx.Response:
        return await web.post(url, json={"message": message, "session_id": session}, timeout=60)

    first = asyncio.create_task(post("first"))  # occupies the entity: the next two share a batch
    await asyncio.sleep(0.5)
    async with httpx.AsyncClient(headers=web.headers, timeout=httpx.Timeout(60.0)) as reader:
        streamed = asyncio.create_task(
            read_all(reader, "POST", url, json={"message": "streamed", "session_id": session})
        )
        await asyncio.sleep(0.3)
        slow = asyncio.create_task(post("slow"))
        response, events = await streamed
        assert response.status_code == 200 and events[-1].event == "run.completed", events[-1:]
        correlation = events[-1].data["correlation_id"]
        # At once, as a client that has the terminal event would: the turn is stored.
        stored = await web.get(f"{url[: -len('/run')]}/sessions/{session}/runs/{correlation}")
        assert stored.status_code == 200, stored.text[:300]
        assert stored.json()["response"] == events[-1].data["response"]
    assert (await first).status_code == 200
    assert (await slow).status_code in (200, 202)
