"""The OpenAI Responses API next to the product's own run route: first token and whole turn, p50.

Starts `python -m devhost` (the project's `function_app.py`) on a free port (`host_bench.Host`),
its model a local `ModelServer` streaming a short answer, and runs N turns back to back in one
session of `assistant` for each row:

* whole turn: `POST /api/agents/assistant/run` (waiting, aiohttp) and `responses.create` (the
  official `openai` SDK, one client), request sent -> whole answer read;
* streamed: `POST .../run` with `Accept: text/event-stream` and `responses.create(stream=True)`:
  request sent -> first text delta, and -> the terminal event (`run.completed`,
  `response.completed`).

The difference between each pair is what the Responses edge costs on top of a run: the request's
conversion to the run route's, the SDK's models, and the events' conversion.

Usage: .venv/bin/python bench/responses_bench.py [--turns 40]
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
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # host_bench's Host starts the host
os.environ.setdefault("DURABLE_AGENTS_ALLOW_MODEL_REQUESTS", "0")

import aiohttp  # noqa: E402
import openai  # noqa: E402
from host_bench import Host  # noqa: E402

from agents.testing import ModelServer, Reply  # noqa: E402

ANSWER = "one two three four five six seven eight"
Timed = tuple[float, float]  # (first token, whole turn) in seconds


def _p50(values: list[float]) -> float:
    return statistics.median(values) * 1000


async def rows(turns: int, call: Callable[[int], Awaitable[Timed]]) -> tuple[float, float]:
    await call(-1)  # warm-up (the first turn creates the session)
    firsts, wholes = [], []
    for i in range(turns):
        first, whole = await call(i)
        firsts.append(first)
        wholes.append(whole)
    return _p50(firsts), _p50(wholes)


async def run_json(http: aiohttp.ClientSession, url: str, turns: int) -> tuple[float, float]:
    session: dict[str, str] = {}

    async def call(i: int) -> Timed:
        started = time.perf_counter()
        async with http.post(f"{url}/api/agents/assistant/run", json={"message": f"q {i}", **session}) as r:
            answer = await r.json()
        assert r.status == 200 and answer["response"]["text"] == ANSWER, answer
        session["session_id"] = answer["session_id"]
        whole = time.perf_counter() - started
        return whole, whole

    return await rows(turns, call)


async def run_sse(http: aiohttp.ClientSession, url: str, turns: int) -> tuple[float, float]:
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

    return await rows(turns, call)


async def _responses(sdk: openai.AsyncOpenAI, turns: int) -> tuple[float, float]:
    previous: list[str] = []

    async def call(i: int) -> Timed:
        started = time.perf_counter()
        after = previous[-1] if previous else None
        response = await sdk.responses.create(model="assistant", input=f"q {i}", previous_response_id=after)
        assert response.output_text == ANSWER, response
        previous.append(response.id)
        whole = time.perf_counter() - started
        return whole, whole

    return await rows(turns, call)


async def _responses_stream(sdk: openai.AsyncOpenAI, turns: int) -> tuple[float, float]:
    previous: list[str] = []

    async def call(i: int) -> Timed:
        started, first = time.perf_counter(), 0.0
        after = previous[-1] if previous else None
        stream = await sdk.responses.create(
            model="assistant", input=f"q {i}", stream=True, previous_response_id=after
        )
        whole = 0.0
        async for event in stream:  # read to its end: the stream closes after response.completed
            if event.type == "response.output_text.delta" and not first:
                first = time.perf_counter() - started
            if event.type == "response.completed":
                whole = time.perf_counter() - started
                previous.append(event.response.id)
        return first, whole

    return await rows(turns, call)


async def _bench(url: str, turns: int) -> dict[str, tuple[float, float]]:
    async with (
        aiohttp.ClientSession() as http,
        openai.AsyncOpenAI(base_url=f"{url}/api/v1", api_key="unused", max_retries=0) as sdk,
    ):
        return {
            "run (JSON)": await run_json(http, url, turns),
            "responses.create": await _responses(sdk, turns),
            "run (SSE)": await run_sse(http, url, turns),
            "responses.create(stream=True)": await _responses_stream(sdk, turns),
        }


def serve_and_print(
    name: str, turns: int, bench: Callable[[str, int], Coroutine[Any, Any, dict[str, tuple[float, float]]]],
    whole_only: tuple[str, ...] = (),
) -> None:
    """Start the host with a model answering ANSWER, run `bench(url, turns)`, print its rows
    (`whole_only`: rows that have no first token of their own); the protocol benches' shared main."""
    print(
        f"{name}: {turns} turns per row, one session; {platform.machine()}, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    )
    with ModelServer(mode="scripted") as model, tempfile.TemporaryDirectory() as tmp:
        model.handler = lambda request: Reply.text(ANSWER)
        host = Host(pathlib.Path(tmp) / "data", model.base_url, pathlib.Path(tmp) / "host.log")
        host.start()
        try:
            results = asyncio.run(bench(host.url, turns))
        finally:
            host.stop()
    print(f"{'':<32}{'first token p50':>18}{'whole turn p50':>18}")
    for row, (first, whole) in results.items():
        first_text = "-" if row in whole_only else f"{first:.1f} ms"
        print(f"{row:<32}{first_text:>18}{whole:>15.1f} ms")
    figures = {k: {"first_ms": round(f, 1), "whole_ms": round(w, 1)} for k, (f, w) in results.items()}
    print(json.dumps(figures))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    serve_and_print("responses_bench", args.turns, _bench, whole_only=("run (JSON)", "responses.create"))


if __name__ == "__main__":
    main()
