"""Turns waiting on a slow model, all at once, and a bystander's turn meanwhile, on the local host.

Runs `python -m devhost` (the project's `function_app.py` and host.json) as its own process, as a
user runs it, its model a `ModelServer` in this process that answers every turn after
`--model-seconds` and the bystander's at once. Sends `--turns` waiting runs on separate sessions
over real HTTP from this process, waits until all of them are waiting on the model, then runs the
bystander's turn, and prints how long the bystander took and when the last slow turn finished.
`--in-process` serves the hosting app on `devhost.LocalHost` inside this process instead, so
host, client and model server share one interpreter (one GIL): the earlier way of this bench.

`--cap N` runs the host with `maxConcurrentOrchestratorFunctions` N (the app setting that
overrides host.json, as in Azure): on the Azure Storage backend that caps the entity batches, so
the turns running at once, per instance; the project sets 256, the extension's default is 10 per
core.

Usage: PYTHONPATH=. .venv/bin/python bench/hung_model_bench.py [--turns 200] [--model-seconds 2]
       [--in-process] [--cap N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import aiohttp

from agents import Agent, ModelSettings, RetryPolicy
from agents.testing import ModelRequest, ModelServer, Reply
from devhost import LocalHost
from hosting import build_app

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from host_bench import Host  # noqa: E402

CAP_SETTING = "AzureFunctionsJobHost__extensions__durableTask__maxConcurrentOrchestratorFunctions"


@asynccontextmanager
async def serve(
    model_url: str, tmp: pathlib.Path, in_process: bool, cap: int | None = None
) -> AsyncIterator[tuple[str, str, Callable[[], float]]]:
    """The host's base URL, a line describing it and a clock of the CPU time it has used (for
    the in-process host: this whole process's), for the life of the block."""
    if not in_process:
        extra = {} if cap is None else {CAP_SETTING: str(cap)}
        host = Host(tmp / "d", model_url, tmp / "host.log", extra_env=extra)
        host.start()
        where = "python -m devhost in its own process" + ("" if cap is None else f", {cap} batches at once")
        try:
            yield host.url, where, host.cpu_seconds
        finally:
            host.stop()
        return
    settings = ModelSettings(model="m", base_url=model_url, api_key="k", retry=RetryPolicy(max_attempts=1))
    local = LocalHost(build_app([Agent(name="assistant", model=settings)]), tmp / "d", project_dir=ROOT)
    await local.start()
    try:
        yield (
            local.url,
            f"LocalHost in this process (entity threads: {local.entity_concurrency})",
            time.process_time,
        )
    finally:
        await local.stop()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--model-seconds", type=float, default=2.0)
    parser.add_argument("--in-process", action="store_true", help="host, client and model in one process")
    parser.add_argument("--cap", type=int, default=None, help="the host's maxConcurrentOrchestratorFunctions")
    args = parser.parse_args()
    os.environ.setdefault("DURABLE_AGENTS_ALLOW_MODEL_REQUESTS", "0")
    os.environ.setdefault("PYTHON_ENABLE_INIT_INDEXING", "1")  # build_app needs it, as Azure does
    with ModelServer(mode="scripted") as server, tempfile.TemporaryDirectory() as tmp:

        def answer(request: ModelRequest) -> Reply:
            if request.last_user_text == "bystander":
                return Reply.text("now")
            return Reply.delay(args.model_seconds, Reply.text("slow"))

        server.handler = answer
        hosted = serve(str(server.base_url), pathlib.Path(tmp), args.in_process, args.cap)
        async with hosted as (base, where, cpu):
            url = f"{base}/api/agents/assistant/run"
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:

                async def turn(index: int, text: str) -> tuple[int, float]:
                    started = time.monotonic()
                    async with http.post(url, json={"message": text, "session_id": f"s{index}"}) as r:
                        await r.read()
                        return r.status, time.monotonic() - started

                started, cpu_before = time.monotonic(), cpu()
                slow = [asyncio.create_task(turn(i, "slow")) for i in range(args.turns)]
                while len(server.requests) < args.turns:
                    await asyncio.sleep(0.02)
                all_waiting = time.monotonic() - started
                cpu_waiting = cpu() - cpu_before
                bystander = await turn(-1, "bystander")
                results = await asyncio.gather(*slow)
                elapsed = time.monotonic() - started
                cpu_used = cpu() - cpu_before
    ok = sum(1 for status, _ in results if status == 200)
    print(f"{args.turns} turns waiting {args.model_seconds:g}s on the model; host: {where} "
          f"(cores: {os.cpu_count()}, load avg {os.getloadavg()[0]:.1f})")
    later = sum(1 for status, _ in results if status == 202)
    print(f"  every turn reached the model after {all_waiting:.2f}s; all answered after {elapsed:.2f}s "
          f"({ok} x 200, {later} x 202: still pending when the request's 30 s wait ran out)")
    print(f"  bystander turn: {bystander[0]} in {bystander[1]:.2f}s")
    print(f"  host CPU for all {args.turns + 1} turns: {cpu_used:.2f}s "
          f"({1000 * cpu_used / (args.turns + 1):.1f} ms a turn; {cpu_waiting:.2f}s of it until all waited)")


if __name__ == "__main__":
    asyncio.run(main())
