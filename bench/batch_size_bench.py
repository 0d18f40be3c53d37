"""What `maxEntityOperationBatchSize` costs a burst of turns on one session.

Starts ``python -m devhost`` on the project's app once per batch size (a copy of the project's
host.json with only `maxEntityOperationBatchSize` changed), with a model that answers at once,
sends ``--turns`` waiting turns to one session at once, and prints how long the last answer
took. Sizes alternate over ``--rounds`` rounds in one run, so the machine's drift hits each
alike.

Usage: .venv/bin/python bench/batch_size_bench.py [--turns 50] [--rounds 3] [--sizes 3,50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import aiohttp

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.testing import ModelRequest, ModelServer, Reply  # noqa: E402

APP = "from examples.catalog import AGENTS\nfrom hosting import build_app\n\napp = build_app(AGENTS)\n"


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


def _project(root: pathlib.Path, size: int) -> pathlib.Path:
    folder = root / f"size-{size}"
    folder.mkdir()
    settings = json.loads((ROOT / "host.json").read_text())
    settings["extensions"]["durableTask"]["maxEntityOperationBatchSize"] = size
    (folder / "host.json").write_text(json.dumps(settings))
    (folder / "function_app.py").write_text(APP)
    return folder


async def _burst(url: str, turns: int, session: str) -> float:
    started = time.monotonic()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(120)) as http:

        async def one(index: int) -> int:
            body = {"message": f"turn {index}", "session_id": session}
            async with http.post(f"{url}/api/agents/assistant/run", json=body) as response:
                await response.read()
                return response.status

        statuses = await asyncio.gather(*(one(i) for i in range(turns)))
    assert statuses == [200] * turns, statuses
    return time.monotonic() - started


async def _measure(folder: pathlib.Path, model: ModelServer, turns: int, round_: int) -> tuple[float, int]:
    port = _port()
    data = folder / f"data-{round_}"
    log = folder / f"host-{round_}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_OPENAI_", "DEVHOST_"))}
    env.update(OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="k", OPENAI_CHAT_MODEL_ID="m",
               DURABLE_AGENTS_ALLOW_MODEL_REQUESTS="0", PYTHON_THREADPOOL_THREAD_COUNT="300",
               PYTHON_ENABLE_INIT_INDEXING="1",
               DURABLE_AGENTS_STREAM_PATH=str(data / "streams.db"),
               DURABLE_AGENTS_HISTORY_DIR=str(data / "history"),
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p))
    with open(log, "wb") as out:
        command = [sys.executable, "-m", "devhost", "--port", str(port), "--data-dir", str(data)]
        proc = subprocess.Popen(command, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        await _ready(url, proc, log)
        seconds = await _burst(url, turns, f"burst-{round_}")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    # The local host logs one line per operation it ran.
    operations = [line for line in log.read_text().splitlines() if " op=run " in line]
    return seconds, len(operations)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="3,50")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    def answer(request: ModelRequest) -> Reply:
        return Reply.text(f"answer to {request.last_user_text}")

    with tempfile.TemporaryDirectory() as tmp, ModelServer(mode="scripted") as model:
        model.handler = answer
        folders = {size: _project(pathlib.Path(tmp), size) for size in sizes}
        seconds: dict[int, list[float]] = {size: [] for size in sizes}
        for round_ in range(args.rounds):
            for size in sizes:
                took, operations = await _measure(folders[size], model, args.turns, round_)
                assert operations == args.turns, operations
                seconds[size].append(took)
        print(f"{args.turns} waiting turns sent at once to one session (model answers at once), "
              f"{args.rounds} rounds, median [min-max] seconds until the last answer:")
        for size in sizes:
            values = seconds[size]
            print(f"  maxEntityOperationBatchSize {size:>4}: {statistics.median(values):.2f} "
                  f"[{min(values):.2f}-{max(values):.2f}]")


if __name__ == "__main__":
    asyncio.run(main())
