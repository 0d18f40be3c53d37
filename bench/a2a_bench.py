"""A2A (a2a-sdk's client) next to the product's own run route: first token and whole turn, p50.

Starts `python -m devhost` (the project's `function_app.py`) on a free port (`host_bench.Host`),
its model a local `ModelServer` streaming a short answer, and runs N turns back to back in one
session of `assistant` for each row:

* whole turn: `POST /api/agents/assistant/run` (waiting, aiohttp) and A2A `SendMessage` (the
  official `a2a-sdk` client, non-streaming), request sent -> whole answer read;
* streamed: `POST .../run` with `Accept: text/event-stream` and A2A `SendStreamingMessage`:
  request sent -> first text delta (artifact update), and -> the final status.

The difference between each pair is what the A2A edge costs on top of a run: the SDK's JSON-RPC
dispatch and protobuf types, the request's conversion to the run route's, the events' conversion.

Usage: .venv/bin/python bench/a2a_bench.py [--turns 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # host_bench's Host starts the host
os.environ.setdefault("DURABLE_AGENTS_ALLOW_MODEL_REQUESTS", "0")

import aiohttp  # noqa: E402
import httpx  # noqa: E402
from a2a.client import Client, ClientConfig, ClientFactory  # noqa: E402
from a2a.types import a2a_pb2 as pb  # noqa: E402
from host_bench import Host  # noqa: E402

from agents.testing import ModelServer, Reply  # noqa: E402

ANSWER = "one two three four five six seven eight"
Timed = tuple[float, float]  # (first token, whole turn) in seconds


def _p50(values: list[float]) -> float:
    return statistics.median(values) * 1000


async def _rows(turns: int, call: Callable[[int], Awaitable[Timed]]) -> tuple[float, float]:
    await call(-1)  # warm-up (the first turn creates the session)
    firsts, wholes = [], []
    for i in range(turns):
        first, whole = await call(i)
        firsts.append(first)
        wholes.append(whole)
    return _p50(firsts), _p50(wholes)


async def _run_json(http: aiohttp.ClientSession, url: str, turns: int) -> tuple[float, float]:
    session: dict[str, str] = {}

    async def call(i: int) -> Timed:
        started = time.perf_counter()
        async with http.post(f"{url}/api/agents/assistant/run", json={"message": f"q {i}", **session}) as r:
            answer = await r.json()
        assert r.status == 200 and answer["response"]["text"] == ANSWER, answer
        session["session_id"] = answer["session_id"]
        whole = time.perf_counter() - started
        return whole, whole

    return await _rows(turns, call)


async def _run_sse(http: aiohttp.ClientSession, url: str, turns: int) -> tuple[float, float]:
    session: dict[str, str] = {}

    async def call(i: int) -> Timed:
        started, first = time.perf_counter(), 0.0
        headers = {"Accept": "text/event-stream"}
        body = {"message": f"q {i}", **session}
        async with http.post(f"{url}/api/agents/assistant/run", json=body, headers=headers) as r:
            session["session_id"] = r.headers["x-ms-session-id"]
            async for line in r.content:
                if line.startswith(b"event: text.delta") and not first:
                    first = time.perf_counter() - started
                if line.startswith(b"event: run.completed"):
                    break
        return first, time.perf_counter() - started

    return await _rows(turns, call)


def _request(i: int, context: list[str]) -> pb.SendMessageRequest:
    message = pb.Message(
        message_id=f"bench-{time.monotonic_ns()}-{i}",
        role=pb.ROLE_USER,
        parts=[pb.Part(text=f"q {i}")],
        context_id=context[-1] if context else "",
    )
    return pb.SendMessageRequest(message=message)


async def _a2a(client: Client, turns: int) -> tuple[float, float]:
    context: list[str] = []

    async def call(i: int) -> Timed:
        started, first, whole = time.perf_counter(), 0.0, 0.0
        async for event in client.send_message(_request(i, context)):
            if event.HasField("artifact_update") and not first:
                first = time.perf_counter() - started
            state = None
            if event.HasField("task"):
                state = event.task.status.state
                if not context:
                    context.append(event.task.context_id)
            elif event.HasField("status_update"):
                state = event.status_update.status.state
            if state == pb.TASK_STATE_COMPLETED:
                whole = time.perf_counter() - started
        assert whole, "the task did not complete"
        return (first or whole), whole

    return await _rows(turns, call)


async def _client(http: httpx.AsyncClient, url: str, streaming: bool) -> Client:
    factory = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming))
    return await factory.create_from_url(f"{url}/api/a2a/assistant")


async def _bench(url: str, turns: int) -> dict[str, tuple[float, float]]:
    async with aiohttp.ClientSession() as http, httpx.AsyncClient(timeout=60) as web:
        plain, streaming = await _client(web, url, False), await _client(web, url, True)
        return {
            "run (JSON)": await _run_json(http, url, turns),
            "A2A SendMessage": await _a2a(plain, turns),
            "run (SSE)": await _run_sse(http, url, turns),
            "A2A SendStreamingMessage": await _a2a(streaming, turns),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    print(
        f"a2a_bench: {args.turns} turns per row, one session; {platform.machine()}, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores"
    )
    with ModelServer(mode="scripted") as model, tempfile.TemporaryDirectory() as tmp:
        model.handler = lambda request: Reply.text(ANSWER)
        host = Host(pathlib.Path(tmp) / "data", model.base_url, pathlib.Path(tmp) / "host.log")
        host.start()
        try:
            rows = asyncio.run(_bench(host.url, args.turns))
        finally:
            host.stop()
    print(f"{'':<32}{'first token p50':>18}{'whole turn p50':>18}")
    for name, (first, whole) in rows.items():
        first_text = "-" if name in ("run (JSON)", "A2A SendMessage") else f"{first:.1f} ms"
        print(f"{name:<32}{first_text:>18}{whole:>15.1f} ms")
    print(json.dumps({k: {"first_ms": round(f, 1), "whole_ms": round(w, 1)} for k, (f, w) in rows.items()}))


if __name__ == "__main__":
    main()
