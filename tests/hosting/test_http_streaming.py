"""The streaming routes called the classic way (a `func.HttpRequest`, as a host without the HTTP
streams extension calls them): the event stream arrives whole, with the same events."""

from __future__ import annotations

import json
from typing import Any

from hosting_support import Api

from agents.testing import ModelServer, Reply

SSE = {"Accept": "text/event-stream"}


def events(body: bytes) -> list[tuple[int, str, dict[str, Any]]]:
    """(id, event, data) of each event block; comment blocks are skipped."""
    out = []
    for block in body.decode().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if line and not line.startswith(":"))
        fields.pop("retry", None)
        if fields:
            out.append((int(fields["id"]), fields["event"], json.loads(fields["data"])))
    return out


async def test_a_buffered_stream_carries_every_event_and_the_json_answer(
    api: Api, model: ModelServer
) -> None:
    model.script(Reply.text("one two three"))
    answer = await api.post(
        "/api/agents/assistant/run", json_body={"message": "hi", "session_id": "st1"}, headers=SSE
    )
    assert answer.status == 200 and answer.headers["content-type"].startswith("text/event-stream")
    correlation = answer.headers["x-ms-correlation-id"]
    # An EventSource's reconnect delay, once, in the first event (docs/streaming.md).
    assert answer.body.startswith(b"retry: 500\nid: 1\nevent: run.started\n"), answer.body[:80]
    assert answer.body.count(b"retry:") == 1
    got = events(answer.body)
    assert [e[0] for e in got] == list(range(1, len(got) + 1))
    kinds = [e[1] for e in got]
    assert kinds[0] == "run.started" and kinds[-1] == "run.completed"
    assert "".join(e[2]["text"] for e in got if e[1] == "text.delta") == "one two three"
    status = await api.get(f"/api/agents/assistant/sessions/st1/runs/{correlation}")
    assert got[-1][2]["response"] == status.json()["response"]
    replay = await api.get(
        f"/api/agents/assistant/sessions/st1/runs/{correlation}/stream", params={"after": "2"}
    )
    assert events(replay.body) == got[2:]


async def test_a_json_run_publishes_its_start_and_end(api: Api, model: ModelServer) -> None:
    model.script(Reply.text("plain"))
    answer = await api.post("/api/agents/assistant/run", json_body={"message": "hi", "session_id": "st2"})
    correlation = answer.json()["correlation_id"]
    stream = await api.get(f"/api/agents/assistant/sessions/st2/runs/{correlation}/stream")
    assert [e[1] for e in events(stream.body)] == ["run.started", "run.completed"]
    assert not any(r.body.get("stream") for r in model.requests), "a JSON run streamed the model"


async def test_stream_route_problems(api: Api) -> None:
    missing = await api.get("/api/agents/assistant/sessions/st3/runs/nothing/stream")
    assert missing.status == 404 and missing.json()["code"] == "run_not_found"
    for params, headers, field in (
        ({"after": "x"}, {}, "after"),
        ({"after": "1" * 17}, {}, "after"),
        ({}, {"Last-Event-ID": "-3"}, "Last-Event-ID"),
    ):
        bad = await api.get(
            "/api/agents/assistant/sessions/st3/runs/r/stream", params=params, headers=headers
        )
        assert bad.status == 400 and bad.json()["field"] == field, bad.body
    unknown = await api.get("/api/agents/nobody/sessions/st3/runs/r/stream")
    assert unknown.status == 404 and unknown.json()["code"] == "unknown_agent"


async def test_the_openapi_document_lists_every_event(offline_api: Api) -> None:
    document = (await offline_api.get("/api/openapi.json")).json()
    path = document["paths"]["/api/agents/{agent}/sessions/{session_id}/runs/{correlation_id}/stream"]
    content = path["get"]["responses"]["200"]["content"]["text/event-stream"]
    assert set(content["x-events"]) == {
        "run.started",
        "run.restarted",
        "step.started",
        "approval.required",
        "text.delta",
        "reasoning.delta",
        "tool.call",
        "tool.result",
        "usage",
        "run.completed",
        "run.failed",
        "run.cancelled",
    }
    run = document["paths"]["/api/agents/{agent}/run"]["post"]["responses"]["200"]["content"]
    assert set(run) == {"application/json", "text/event-stream"}


def test_the_runtime_http_server_parses_requests_with_httptools() -> None:
    # The HTTP streams extension serves with uvicorn's default protocol ("auto"), which is
    # httptools when installed (requirements.txt) and pure-Python h11 otherwise: every request the
    # host forwards to the worker is parsed by it (docs/bench.md "Waiting callers").
    from uvicorn.protocols.http.auto import AutoHTTPProtocol
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    assert AutoHTTPProtocol is HttpToolsProtocol
