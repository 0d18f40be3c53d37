"""AG-UI next to the product's own streamed run route: first token and whole turn, p50.

Starts `python -m devhost` (the project's `function_app.py`) on a free port (`host_bench.Host`),
its model a local `ModelServer` streaming a short answer, and runs N turns back to back in one
session (thread) of `assistant` for each row: `POST /api/agents/assistant/run` with
`Accept: text/event-stream` (`responses_bench`'s row), and `POST /api/agents/assistant/ag-ui` with a
`RunAgentInput` (aiohttp): request sent -> first text delta (`TEXT_MESSAGE_CONTENT`), and -> the
terminal event (`RUN_FINISHED`). The difference is what the AG-UI edge costs on top of a run: the
input's reading with the protocol's model, its conversion, and each event's conversion.

Usage: .venv/bin/python bench/agui_bench.py [--turns 40]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DURABLE_AGENTS_ALLOW_MODEL_REQUESTS", "0")

import aiohttp  # noqa: E402
from responses_bench import Timed, rows, run_sse, serve_and_print  # noqa: E402


async def _ag_ui(http: aiohttp.ClientSession, url: str, turns: int) -> tuple[float, float]:
    thread = f"bench-{uuid.uuid4().hex[:8]}"

    async def call(i: int) -> Timed:
        started, first = time.perf_counter(), 0.0
        body = {"threadId": thread, "runId": str(uuid.uuid4()),
                "messages": [{"id": f"m{i}", "role": "user", "content": f"q {i}"}]}  # fmt: skip
        async with http.post(
            f"{url}/api/agents/assistant/ag-ui", json=body, headers={"Accept": "text/event-stream"}
        ) as r:
            async for line in r.content:
                if b'"TEXT_MESSAGE_CONTENT"' in line and not first:
                    first = time.perf_counter() - started
                if b'"RUN_FINISHED"' in line:
                    break
        assert first, "no text arrived"
        return first, time.perf_counter() - started

    return await rows(turns, call)


async def _bench(url: str, turns: int) -> dict[str, tuple[float, float]]:
    async with aiohttp.ClientSession() as http:
        return {"run (SSE)": await run_sse(http, url, turns), "ag-ui": await _ag_ui(http, url, turns)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    serve_and_print("agui_bench", args.turns, _bench)


if __name__ == "__main__":
    main()
