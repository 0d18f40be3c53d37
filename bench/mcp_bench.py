"""Latency of one agent turn called as an MCP tool, next to the same turn through the HTTP API.

Starts `python -m devhost` (the project's `function_app.py`, whose agents are MCP tools) as a
subprocess on a free port (`host_bench.Host`), its model a local `ModelServer` answering at once,
and runs N turns back to back in one session of `assistant`:

* `POST /api/agents/assistant/run` (waiting) with aiohttp;
* `tools/call assistant` with the official MCP client over streamable HTTP (one connection);
* the same over the legacy SSE transport.

The difference between the rows is what the MCP path costs on top of a run: the JSON-RPC/SSE
framing of the SDK's transports and the extension's result shaping.

Usage: .venv/bin/python bench/mcp_bench.py [--turns 40]
"""

from __future__ import annotations

import argparse
import asyncio
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
os.environ.setdefault("PYTHON_ENABLE_INIT_INDEXING", "1")  # build_app needs it, as Azure does

import aiohttp  # noqa: E402
from host_bench import Host  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.sse import sse_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from agents.testing import ModelServer  # noqa: E402

MCP_PATH = "/runtime/webhooks/mcp"


def _row(name: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
    rate = len(ms) / sum(seconds)
    return f"{name:<28} median {statistics.median(ms):6.1f} ms   p95 {p95:6.1f} ms   {rate:6.1f} turns/s"


async def _timed(turns: int, call: Callable[[int], Awaitable[None]]) -> list[float]:
    await call(-1)  # warm-up (first turn creates the session)
    times = []
    for i in range(turns):
        started = time.perf_counter()
        await call(i)
        times.append(time.perf_counter() - started)
    return times


async def _http(url: str, turns: int) -> list[float]:
    async with aiohttp.ClientSession() as http:
        session: dict[str, str] = {}

        async def call(i: int) -> None:
            body = {"message": f"question {i}", **session}
            async with http.post(f"{url}/api/agents/assistant/run", json=body) as response:
                answer = await response.json()
                assert response.status == 200, answer
                session["session_id"] = answer["session_id"]

        return await _timed(turns, call)


async def _mcp(session: ClientSession, turns: int) -> list[float]:
    await session.initialize()
    state: dict[str, str] = {}

    async def call(i: int) -> None:
        result = await session.call_tool("assistant", {"query": f"question {i}", **state})
        assert not result.is_error, result
        assert isinstance(result.structured_content, dict)
        state["session_id"] = result.structured_content["session_id"]

    return await _timed(turns, call)


async def _streamable(url: str, turns: int) -> list[float]:
    async with streamable_http_client(url + MCP_PATH) as (read, write), ClientSession(read, write) as session:
        return await _mcp(session, turns)


async def _sse(url: str, turns: int) -> list[float]:
    async with sse_client(url + MCP_PATH + "/sse") as (read, write), ClientSession(read, write) as session:
        return await _mcp(session, turns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    print(f"mcp_bench: {args.turns} turns per row, one session; {platform.machine()}, "
          f"Python {platform.python_version()}, {os.cpu_count()} cores")
    with ModelServer(mode="offline") as model, tempfile.TemporaryDirectory() as tmp:
        host = Host(pathlib.Path(tmp) / "data", model.base_url, pathlib.Path(tmp) / "host.log")
        host.start()
        try:
            print(_row("HTTP API POST .../run", asyncio.run(_http(host.url, args.turns))))
            print(_row("MCP streamable HTTP", asyncio.run(_streamable(host.url, args.turns))))
            print(_row("MCP legacy SSE", asyncio.run(_sse(host.url, args.turns))))
        finally:
            host.stop()


if __name__ == "__main__":
    main()
