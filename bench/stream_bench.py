"""What streaming adds: time to the first `text.delta` at the client minus the model's own time to
first token, through the real local host, on both stream store backends.

The model server (in this process) answers every call after `--ttft` seconds with its first chunk
and then one token every `--token-ms`; its own time to the first text token is therefore
ttft + token-ms (the first chunk carries only the role). A client sends `POST .../run` with
`Accept: text/event-stream` and notes when the first `text.delta` event arrives; the overhead is
that time minus the model's. 1 stream at a time and 50 at once (each the first turn of a new
session), and 1 stream on the second turn of a session, on the embedded SQLite store and on a
real redis-server started on a free port. For comparison it prints
the time to first byte of the non-streaming JSON answer of the same turn (which is the whole turn).

Usage: .venv/bin/python bench/stream_bench.py [--rounds 40] [--ttft 0.2] [--token-ms 5] [--threads 64]
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

ROOT = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from host_bench import Host  # noqa: E402

from agents.testing import ModelRequest, ModelServer, Reply  # noqa: E402

ANSWER = " ".join(f"token{i}" for i in range(30))


@contextmanager
def redis_server(directory: pathlib.Path) -> Iterator[str]:
    """A real redis-server on a free loopback port (installed by .ci/services.sh)."""
    executable = shutil.which("redis-server")
    if executable is None:
        raise SystemExit("redis-server is not installed: run `make services`")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = [executable, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory), "--save", ""]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("redis-server did not start") from None
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(10)


async def first_delta(http: aiohttp.ClientSession, url: str, session: str | None = None) -> float | None:
    """Seconds from sending a streaming run to its first text.delta event (the stream is read to
    its end so the turn finishes before the next one starts); a new session unless `session`."""
    body = {"message": "go", "session_id": session or f"b-{uuid.uuid4().hex[:12]}"}
    started = time.perf_counter()
    first: float | None = None
    async with http.post(url, json=body, headers={"Accept": "text/event-stream"}) as response:
        assert response.status == 200, await response.text()
        async for line in response.content:
            if first is None and line.startswith(b"event: text.delta"):
                first = time.perf_counter() - started
    return first


async def json_ttfb(http: aiohttp.ClientSession, url: str) -> float:
    """Seconds from sending a waiting JSON run to the first byte of its answer."""
    body = {"message": "go", "session_id": f"j-{uuid.uuid4().hex[:12]}"}
    started = time.perf_counter()
    async with http.post(url, json=body) as response:
        await response.content.read(1)
        elapsed = time.perf_counter() - started
        await response.read()
        assert response.status == 200
    return elapsed


def quantiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p99 * 1000


MODEL_SEEN: list[float] = []
"""When the model server had each request (`perf_counter`, appended by its handler)."""


def split_line(turns: list[tuple[float, float, float]], model_ttft: float) -> str:
    """Where the overhead of sequential turns (send, model has the request, first delta) lies:
    before the model server has the request, and after its scripted first token (that part
    includes the model server's own lateness: its timers and its share of this process's CPU)."""
    before = statistics.median(seen - sent for sent, seen, _ in turns) * 1000
    after = statistics.median(first - seen - model_ttft for _, seen, first in turns) * 1000
    return (
        f"     of which: until the model server has the request p50 {before:4.1f} ms;"
        f" from its scripted first token to the client p50 {after:4.1f} ms"
    )


async def measure(url: str, rounds: int, model_ttft: float) -> list[str]:
    lines = []
    connector = aiohttp.TCPConnector(limit=200)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as http:
        for _ in range(3):  # warm up: imports, connections, SQLite pages
            await first_delta(http, url)
        for streams in (1, 50):
            samples: list[float] = []
            split: list[tuple[float, float, float]] = []
            missing = 0
            for _ in range(rounds if streams == 1 else max(2, rounds // 10)):
                sent = time.perf_counter()
                got = await asyncio.gather(*(first_delta(http, url) for _ in range(streams)))
                samples.extend(t - model_ttft for t in got if t is not None)
                missing += sum(1 for t in got if t is None)
                if streams == 1 and got[0] is not None and MODEL_SEEN and MODEL_SEEN[-1] > sent:
                    split.append((sent, MODEL_SEEN[-1], sent + got[0]))
            p50, p99 = quantiles(samples)
            lines.append(
                f"  {streams:>2} stream(s): overhead to first text.delta p50 {p50:6.1f} ms  p99 {p99:6.1f} ms"
                f"  ({len(samples)} turns{f'; {missing} streams WITHOUT a text.delta' if missing else ''})"
            )
            if split:
                lines.append(split_line(split, model_ttft))
        # The same, for a later turn of an existing session (a chat's usual turn): a session's
        # first turn also creates the session (and its expiry watcher).
        samples = []
        for _ in range(rounds):
            session = f"l-{uuid.uuid4().hex[:12]}"
            await first_delta(http, url, session)
            later = await first_delta(http, url, session)
            if later is not None:
                samples.append(later - model_ttft)
        p50, p99 = quantiles(samples)
        lines.append(
            f"   1 stream, a later turn of a session: overhead p50 {p50:6.1f} ms  p99 {p99:6.1f} ms"
            f"  ({len(samples)} turns)"
        )
        ttfb = [await json_ttfb(http, url) for _ in range(max(5, rounds // 2))]
        p50, p99 = quantiles(ttfb)
        lines.append(f"  non-streaming JSON answer, time to first byte: p50 {p50:6.1f} ms  p99 {p99:6.1f} ms")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument(
        "--ttft", type=float, default=0.2, help="the model's delay before its first chunk (s)"
    )
    parser.add_argument("--token-ms", type=float, default=5.0, help="the model's time between tokens (ms)")
    parser.add_argument(
        "--threads", type=int, default=0, help="PYTHON_THREADPOOL_THREAD_COUNT of the host (0: its default)"
    )
    args = parser.parse_args()
    model_ttft = args.ttft + args.token_ms / 1000
    print(
        f"stream_bench: {platform.python_version()} on {platform.machine()}, {args.rounds} rounds; model: "
        f"first token after {model_ttft * 1000:.0f} ms, then one every {args.token_ms:g} ms, 30 tokens"
    )
    with ModelServer(mode="scripted", stream_delay=args.token_ms / 1000) as model:
        def handler(request: ModelRequest) -> Reply:
            MODEL_SEEN.append(time.perf_counter())
            return Reply.delay(args.ttft, Reply.text(ANSWER))

        model.handler = handler
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            with redis_server(root) as redis_url:
                backends = {
                    "embedded SQLite": {"DURABLE_AGENTS_STREAM_PATH": str(root / "streams.db")},
                    "Redis Streams": {"DURABLE_AGENTS_STREAM_REDIS": redis_url},
                }
                for name, env in backends.items():
                    if args.threads:
                        # The entity function holds a worker thread for the whole turn (model
                        # call included): with 50 turns at once, the pool is the queue.
                        env["PYTHON_THREADPOOL_THREAD_COUNT"] = str(args.threads)
                    data = root / name.split()[-1].lower()
                    host = Host(data, str(model.base_url), root / f"{data.name}.log", env)
                    host.start()
                    try:
                        print(f"{name}:")
                        url = f"{host.url}/api/agents/assistant/run"
                        for line in asyncio.run(measure(url, args.rounds, model_ttft)):
                            print(line)
                    finally:
                        host.stop()
                        kept = pathlib.Path(tempfile.gettempdir()) / f"stream_bench_{data.name}.log"
                        shutil.copyfile(host.log, kept)


if __name__ == "__main__":
    main()
