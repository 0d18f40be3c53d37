"""How fast a cancel stops a run: from `POST .../runs/{id}/cancel` to the run's `run.cancelled`
event, during a streaming model call, through the real local host, on both stream store backends.

The model server (in this process) streams a long answer, one token every `--token-ms`, so every
cancel lands while the model call is in flight: the step in flight sees the mark in the stream
store (checked every 0.25 s, hosting.streams `RunEvents.stoppable`), abandons the call, and the
entity records the run cancelled, which ends its stream. A client sends `POST .../run` with
`Accept: text/event-stream`, waits for the first `text.delta` and then a random 0-0.5 s (so the
cancel falls at any point of the step's 0.25 s check period, not always at the same phase of
it), sends the cancel and notes when `run.cancelled` arrives; also the cancel POST's own answer
time (202). Then the same with a new run of the session sent with `multitask_strategy:
"interrupt"` (not waiting for its own answer) in place of the cancel. One run at a time, each
the first turn of a new session, on the embedded SQLite store and on a real redis-server started
on a free port.

Usage: .venv/bin/python bench/cancel_bench.py [--rounds 30] [--token-ms 50] [--seed 7]
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import platform
import random
import shutil
import sys
import tempfile
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from host_bench import Host  # noqa: E402
from stream_bench import quantiles, redis_server  # noqa: E402

from agents.testing import ModelServer, Reply  # noqa: E402

ANSWER = " ".join(f"token{i}" for i in range(2000))  # far longer than any round waits


async def cancelled_after(
    http: aiohttp.ClientSession, base: str, interrupt: bool = False
) -> tuple[float, float] | None:
    """(seconds from sending the cancel to `run.cancelled`, seconds the cancel POST took), or
    None when the stream ended otherwise. `interrupt`: the cancel is a new run of the session
    with `multitask_strategy: "interrupt"` (not waiting for its answer) instead."""
    session, run = f"c-{uuid.uuid4().hex[:12]}", uuid.uuid4().hex
    body = {"message": "go", "session_id": session, "correlation_id": run}
    cancel_url = f"{base}/api/agents/assistant/sessions/{session}/runs/{run}/cancel"
    asked: float | None = None
    answered: asyncio.Task[float] | None = None

    async def cancel() -> float:
        await asyncio.sleep(random.uniform(0, 0.5))
        nonlocal asked
        asked = started = time.perf_counter()
        if interrupt:
            stop = {"message": "stop", "session_id": session, "multitask_strategy": "interrupt",
                    "wait_for_response": False}
            async with http.post(f"{base}/api/agents/assistant/run", json=stop) as response:
                assert response.status == 202, await response.text()
        else:
            async with http.post(cancel_url) as response:
                assert response.status == 202, await response.text()
        return time.perf_counter() - started

    async with http.post(
        f"{base}/api/agents/assistant/run", json=body, headers={"Accept": "text/event-stream"}
    ) as response:
        assert response.status == 200, await response.text()
        async for line in response.content:
            if answered is None and line.startswith(b"event: text.delta"):
                answered = asyncio.create_task(cancel())
            elif line.startswith(b"event: run.cancelled") and answered is not None:
                ended = time.perf_counter()
                post = await answered
                assert asked is not None
                return ended - asked, post
            elif line.startswith((b"event: run.completed", b"event: run.failed")):
                break
    if answered is not None:
        await answered
    return None


async def measure(base: str, rounds: int, interrupt: bool) -> list[str]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as http:
        for _ in range(3):  # warm up: imports, connections, SQLite pages
            await cancelled_after(http, base, interrupt)
        ends: list[float] = []
        posts: list[float] = []
        missing = 0
        for _ in range(rounds):
            got = await cancelled_after(http, base, interrupt)
            if got is None:
                missing += 1
                continue
            ends.append(got[0])
            posts.append(got[1])
    p50, p99 = quantiles(ends)
    post50, post99 = quantiles(posts)
    what = "interrupting run's POST" if interrupt else "cancel POST"
    return [
        f"  {what} to run.cancelled: p50 {p50:6.1f} ms  p99 {p99:6.1f} ms  ({len(ends)} runs"
        f"{f'; {missing} NOT cancelled' if missing else ''})",
        f"  the {what}'s own answer (202): p50 {post50:6.1f} ms  p99 {post99:6.1f} ms",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7, help="of the cancels' random delays")
    parser.add_argument("--token-ms", type=float, default=50.0, help="the model's time between tokens (ms)")
    args = parser.parse_args()
    random.seed(args.seed)
    print(
        f"cancel_bench: {platform.python_version()} on {platform.machine()}, {args.rounds} runs per store; "
        f"model: one token every {args.token_ms:g} ms"
    )
    with ModelServer(mode="scripted", stream_delay=args.token_ms / 1000) as model:
        # The interrupting runs answer at once; every other run streams until it is stopped.
        model.handler = lambda request: Reply.text("ok" if request.last_user_text == "stop" else ANSWER)
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            with redis_server(root) as redis_url:
                backends = {
                    "embedded SQLite": {"DURABLE_AGENTS_STREAM_PATH": str(root / "streams.db")},
                    "Redis Streams": {"DURABLE_AGENTS_STREAM_REDIS": redis_url},
                }
                for name, env in backends.items():
                    data = root / name.split()[-1].lower()
                    host = Host(data, str(model.base_url), root / f"{data.name}.log", env)
                    host.start()
                    try:
                        print(f"{name}:")
                        for interrupt in (False, True):
                            for line in asyncio.run(measure(host.url, args.rounds, interrupt)):
                                print(line)
                    finally:
                        host.stop()
                        kept = pathlib.Path(tempfile.gettempdir()) / f"cancel_bench_{data.name}.log"
                        shutil.copyfile(host.log, kept)


if __name__ == "__main__":
    main()
