"""Helpers of the SSE end-to-end tests: events as a client saw them, read with httpx-sse."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx
from e2e_support import HostProcess, history
from httpx_sse import ServerSentEvent, aconnect_sse

from agents.testing import ModelServer, Reply

WORDS = " ".join(f"word{i}" for i in range(24))
TERMINAL = ("run.completed", "run.failed", "run.cancelled")


@dataclass(frozen=True)
class Seen:
    """One event as a client saw it."""

    id: int
    event: str
    data: dict[str, Any]


def seen(sse: ServerSentEvent) -> Seen:
    return Seen(int(sse.id), sse.event, json.loads(sse.data))


def streaming(model: ModelServer, text: str = WORDS, delay: float = 0.03) -> None:
    """Every model call answers `text`, one word every `delay` seconds."""
    model.stream_delay = delay
    model.handler = lambda request: Reply.text(text)


def run_url(host: HostProcess) -> str:
    return f"{host.url}/api/agents/assistant/run"


def stream_url(host: HostProcess, session: str, correlation: str) -> str:
    return f"{host.url}/api/agents/assistant/sessions/{session}/runs/{correlation}/stream"


async def read_all(
    web: httpx.AsyncClient, method: str, url: str, *, limit: int | None = None, **kwargs: Any
) -> tuple[httpx.Response, list[Seen]]:
    """Events of one SSE response until it ends (or `limit` events, then disconnect)."""
    events: list[Seen] = []
    async with aconnect_sse(web, method, url, **kwargs) as source:
        response = source.response
        if response.status_code != 200:
            await response.aread()
            return response, events
        async for sse in source.aiter_sse():
            if not sse.data:  # httpx-sse surfaces a heartbeat comment as an empty event
                continue
            events.append(seen(sse))
            if limit is not None and len(events) >= limit:
                break
    return response, events


def text_of(events: list[Seen]) -> str:
    return "".join(e.data["text"] for e in events if e.event == "text.delta")


def check_sequence(events: list[Seen]) -> None:
    assert [e.id for e in events] == list(range(1, len(events) + 1)), [e.id for e in events]
    assert events[0].event == "run.started"
    assert sum(1 for e in events if e.event in TERMINAL) == 1
    assert events[-1].event in TERMINAL


async def stored_run_ids(web: httpx.AsyncClient, host: HostProcess, session: str) -> list[str]:
    """The correlation id of each stored history entry of an `assistant` session, in order."""
    state = (await web.get(f"{host.url}/api/agents/assistant/sessions/{session}")).json()["state"]
    return [entry["correlationId"] for entry in history(state)]
