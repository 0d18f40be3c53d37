"""Durable reads per answered turn, and the answer's delay, when the entity runs elsewhere.

In the flex topology (as on Flex Consumption) HTTP functions and Durable functions run in
different worker processes, so a caller waiting for a JSON answer is never woken in-process by
the entity: it reads the session's entity state until the run is there. This starts
``python -m devhost --topology flex`` (one worker per group) from each tree given, with the model
answering after ``--model-seconds``, sends ``--turns`` waiting turns one after another and
``--parallel`` at once, stops the host and prints the entity reads it served per answered turn
(the host's own count: ``durable API calls: read_entity=N``) and the answer's delay past the
model's answer, for each stream store (the embedded SQLite one and Redis when ``--redis`` names
one).

Usage: .venv/bin/python bench/reads_bench.py [--baseline DIR] [--redis redis://127.0.0.1:6379/0]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import aiohttp

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.testing import ModelRequest, ModelServer, Reply  # noqa: E402


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _ready(url: str, proc: subprocess.Popen[bytes], log: pathlib.Path) -> None:
    async with aiohttp.ClientSession() as http:
        for _ in range(1200):
            if proc.poll() is not None:
                raise RuntimeError(f"devhost exited:\n{log.read_text()[-3000:]}")
            try:
                async with http.get(f"{url}/api/health") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError("devhost did not become ready")


async def _turn(http: aiohttp.ClientSession, url: str, model_seconds: float) -> float:
    started = time.monotonic()
    body = {"message": "hello", "session_id": f"r-{uuid.uuid4().hex[:10]}"}
    async with http.post(f"{url}/api/agents/assistant/run", json=body) as response:
        await response.read()
        if response.status != 200:
            raise RuntimeError(f"turn answered {response.status}")
    return time.monotonic() - started - model_seconds


async def measure(tree: pathlib.Path, env_extra: dict[str, str], args: argparse.Namespace) -> str:
    async def slow(request: ModelRequest) -> Reply:
        await asyncio.sleep(args.model_seconds)
        return Reply.text("done")

    model = ModelServer()
    model.handler = slow
    await asyncio.to_thread(model.start)
    port = _port()
    with tempfile.TemporaryDirectory() as tmp:
        log = pathlib.Path(tmp) / "host.log"
        env = {
            **os.environ,
            "PYTHONPATH": str(tree),
            "PYTHON_ENABLE_INIT_INDEXING": "1",
            "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "bench",
            "OPENAI_CHAT_MODEL_ID": "m",
            "FUNCTIONS_WORKER_PROCESS_COUNT": "1",
            "DURABLE_AGENTS_STREAM_PATH": f"{tmp}/streams.db",
            **env_extra,
        }
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "devhost",
                    "--port",
                    str(port),
                    "--data-dir",
                    f"{tmp}/data",
                    "--topology",
                    "flex",
                ],
                cwd=tree,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        url = f"http://127.0.0.1:{port}"
        try:
            await _ready(url, proc, log)
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as http:
                late = [await _turn(http, url, args.model_seconds) for _ in range(args.turns)]
                late += await asyncio.gather(
                    *(_turn(http, url, args.model_seconds) for _ in range(args.parallel))
                )
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
            await asyncio.to_thread(model.stop)
        found = re.search(r"read_entity=(\d+)", log.read_text())
    reads = int(found.group(1)) if found else 0
    turns = args.turns + args.parallel
    return (
        f"reads per answered turn {reads / turns:5.1f}   answer after the model: p50 "
        f"{statistics.median(late) * 1000:6.0f} ms, max {max(late) * 1000:6.0f} ms ({turns} turns)"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", type=pathlib.Path, help="a checkout of the earlier code")
    parser.add_argument("--redis", help="a Redis URL: also measure with the Redis stream store")
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--parallel", type=int, default=20)
    parser.add_argument("--model-seconds", type=float, default=2.0)
    args = parser.parse_args()
    trees = [("this tree", ROOT)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    stores: list[tuple[str, dict[str, str]]] = [("sqlite", {})] + (
        [("redis", {"DURABLE_AGENTS_STREAM_REDIS": args.redis})] if args.redis else []
    )
    for store, extra in stores:
        for label, tree in trees:
            print(f"{store:6} {label:10} {await measure(tree, extra, args)}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
