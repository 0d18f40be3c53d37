"""Peak memory of the local host while callers upload bodies far over its limit.

Starts `python -m devhost` (the project's `function_app.py`, no model needed) as a subprocess on
a free port, with the body limit the project configures (`FUNCTIONS_REQUEST_BODY_SIZE_LIMIT`,
256 KiB) or the Functions host's default (100 MiB, `--limit 0`), then sends N concurrent uploads
of M MiB each to the anonymous `GET /api/health` route's neighbour `POST /api/agents/x/run` and to
`/api/health` itself, chunked (no Content-Length) and with a Content-Length. Prints the host's
resident memory before, its peak while the uploads run (sampled from /proc every 20 ms) and the
answers' statuses.

Usage: .venv/bin/python bench/upload_bench.py [--uploads 8] [--mib 50] [--limit 262144]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time

import aiohttp

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mib(pid: int) -> float:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _upload(http: aiohttp.ClientSession, url: str, mib: int, chunked: bool) -> str:
    block = b"x" * (1024 * 1024)

    async def chunks():  # type: ignore[no-untyped-def]
        for _ in range(mib):
            yield block

    data = chunks() if chunked else block * mib
    try:
        async with http.post(url, data=data, headers={"Content-Type": "application/json"}) as r:
            return str(r.status)
    except aiohttp.ClientError as error:
        return type(error).__name__  # the host answered and closed while the client still sent


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--uploads", type=int, default=8)
    parser.add_argument("--mib", type=int, default=50)
    parser.add_argument("--limit", type=int, default=262144, help="0: the host default (100 MiB)")
    args = parser.parse_args()
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_OPENAI_", "DEVHOST_"))}
    env.update(PYTHONPATH=str(ROOT), DURABLE_AGENTS_ALLOW_MODEL_REQUESTS="0", PYTHON_ENABLE_INIT_INDEXING="1")
    env.pop("FUNCTIONS_REQUEST_BODY_SIZE_LIMIT", None)
    if args.limit:
        env["FUNCTIONS_REQUEST_BODY_SIZE_LIMIT"] = str(args.limit)
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen([sys.executable, "-m", "devhost", "--port", str(port), "--data-dir", tmp,
                                 "--startup-hook", "agents.testing:start_offline_model_if_unconfigured"],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            async with aiohttp.ClientSession() as http:
                for _ in range(300):
                    try:
                        async with http.get(f"http://127.0.0.1:{port}/api/health") as r:
                            if r.status in (200, 503):
                                break
                    except aiohttp.ClientError:
                        await asyncio.sleep(0.1)
                before = _rss_mib(proc.pid)
                peak = before
                done = asyncio.Event()

                async def sample() -> None:
                    nonlocal peak
                    while not done.is_set():
                        peak = max(peak, _rss_mib(proc.pid))
                        await asyncio.sleep(0.02)

                sampler = asyncio.create_task(sample())
                started = time.perf_counter()
                urls = [f"http://127.0.0.1:{port}/api/agents/assistant/run", f"http://127.0.0.1:{port}/api/health"]
                jobs = [_upload(http, urls[i % 2], args.mib, chunked=i % 4 < 2) for i in range(args.uploads)]
                statuses = await asyncio.gather(*jobs)
                elapsed = time.perf_counter() - started
                done.set()
                await sampler
        finally:
            proc.terminate()
            proc.wait(10)
    limit = f"{args.limit} bytes" if args.limit else "host default (100 MiB)"
    print(f"limit {limit}: {args.uploads} concurrent uploads of {args.mib} MiB "
          f"(half chunked, half with Content-Length) in {elapsed:.1f}s")
    print(f"  host RSS before {before:.0f} MiB, peak {peak:.0f} MiB (+{peak - before:.0f} MiB)")
    print(f"  answers: {dict(collections.Counter(statuses))}")


if __name__ == "__main__":
    asyncio.run(main())
