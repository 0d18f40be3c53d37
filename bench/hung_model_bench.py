"""Turns waiting on a slow model, all at once, and a bystander's turn meanwhile, on the local host.

Serves the hosting app (agent `assistant`) on `devhost.LocalHost` with the project's host.json,
its model a local `ModelServer` that answers every turn after `--model-seconds` and the
bystander's at once. Sends `--turns` waiting runs on separate sessions over real HTTP, waits
until all of them are waiting on the model, then runs the bystander's turn, and prints how long
the bystander took and when the last slow turn finished.

Usage: .venv/bin/python bench/hung_model_bench.py [--turns 200] [--model-seconds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import tempfile
import time

import aiohttp

from agents import Agent, ModelSettings, RetryPolicy
from agents.testing import ModelRequest, ModelServer, Reply
from devhost import LocalHost
from hosting import build_app

ROOT = pathlib.Path(__file__).resolve().parent.parent


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--model-seconds", type=float, default=2.0)
    args = parser.parse_args()
    os.environ.setdefault("DURABLE_AGENTS_ALLOW_MODEL_REQUESTS", "0")
    with ModelServer(mode="scripted") as server, tempfile.TemporaryDirectory() as tmp:
        settings = ModelSettings(model="m", base_url=server.base_url, api_key="k",
                                 retry=RetryPolicy(max_attempts=1))
        host = LocalHost(build_app([Agent(name="assistant", model=settings)]), pathlib.Path(tmp) / "d",
                         project_dir=ROOT)
        await host.start()

        def answer(request: ModelRequest) -> Reply:
            if request.last_user_text == "bystander":
                return Reply.text("now")
            return Reply.delay(args.model_seconds, Reply.text("slow"))

        server.handler = answer
        url = f"{host.url}/api/agents/assistant/run"
        try:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:

                async def turn(index: int, text: str) -> tuple[int, float]:
                    started = time.monotonic()
                    async with http.post(url, json={"message": text, "session_id": f"s{index}"}) as r:
                        await r.read()
                        return r.status, time.monotonic() - started

                started = time.monotonic()
                slow = [asyncio.create_task(turn(i, "slow")) for i in range(args.turns)]
                while len(server.requests) < args.turns:
                    await asyncio.sleep(0.02)
                all_waiting = time.monotonic() - started
                bystander = await turn(-1, "bystander")
                results = await asyncio.gather(*slow)
                elapsed = time.monotonic() - started
        finally:
            await host.stop()
    ok = sum(1 for status, _ in results if status == 200)
    print(f"{args.turns} turns waiting {args.model_seconds:g}s on the model "
          f"(entity threads: {host.entity_concurrency}, cores: {os.cpu_count()}, load avg "
          f"{os.getloadavg()[0]:.1f})")
    print(f"  all waiting on the model after {all_waiting:.2f}s; all answered after {elapsed:.2f}s "
          f"({ok} x 200)")
    print(f"  bystander turn: {bystander[0]} in {bystander[1]:.2f}s")


if __name__ == "__main__":
    asyncio.run(main())
