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
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # host_bench's Host starts the host
os.environ.setdefault("DURABLE_AGENTS_ALLOW_MODEL_REQUESTS", "0")

import aiohttp  # noqa: E402
import httpx  # noqa: E402
from a2a.client import Client, ClientConfig, ClientFactory  # noqa: E402
from a2a.types import a2a_pb2 as pb  # noqa: E402
from responses_bench import Timed, rows, run_json, run_sse, serve_and_print  # noqa: E402


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

    return await rows(turns, call)


async def _client(http: httpx.AsyncClient, url: str, streaming: bool) -> Client:
    factory = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming))
    return await factory.create_from_url(f"{url}/api/a2a/assistant")


async def _bench(url: str, turns: int) -> dict[str, tuple[float, float]]:
    async with aiohttp.ClientSession() as http, httpx.AsyncClient(timeout=60) as web:
        plain, streaming = await _client(web, url, False), await _client(web, url, True)
        return {
            "run (JSON)": await run_json(http, url, turns),
            "A2A SendMessage": await _a2a(plain, turns),
            "run (SSE)": await run_sse(http, url, turns),
            "A2A SendStreamingMessage": await _a2a(streaming, turns),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    serve_and_print("a2a_bench", args.turns, _bench, whole_only=("run (JSON)", "A2A SendMessage"))


if __name__ == "__main__":
    main()
