"""The approval round trip: from sending a decision (`POST .../runs/{id}/approvals`) to the
turn's next model call, which comes right after the approved tool ran, through the real local
host; side by side, in the same run, with the same stretch of a turn whose tool needs no
approval (from the model's answer asking for the tool to the next model call).

Both paths end the same way (the tool step, then a signal, then the model step); the approval
path starts with the decision route (a session read, the `decide` signal, the read-back of the
stored decision) and the `decide` operation, which signals the tool step; the plain path starts
with the end of the model step, which stores it and signals the tool step. The model server runs
in this process and notes when each request arrives, so both clocks are this process's. The
tools are the example concierge's (`book_hotel` needs approval, `get_weather` does not) and
return at once. One run at a time, each the first turn of a new session.

Usage: .venv/bin/python bench/approval_bench.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import platform
import sys
import tempfile
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from host_bench import Host  # noqa: E402
from stream_bench import quantiles  # noqa: E402

from agents.testing import ModelRequest, ModelServer, Reply  # noqa: E402

AGENT = "concierge"
ASKED: list[float] = []
"""When the model server answered a request with a tool call (perf_counter)."""
RESUMED: list[float] = []
"""When the model server had a request after a tool's result (perf_counter)."""


def answer(request: ModelRequest) -> Reply:
    if request.messages and request.messages[-1].role == "tool":
        RESUMED.append(time.perf_counter())
        return Reply.text("done")
    ASKED.append(time.perf_counter())
    if request.last_user_text == "book":
        return Reply.tool_call("book_hotel", {"city": "Paris", "nights": 2}, call_id="call-1")
    return Reply.tool_call("get_weather", {"city": "Paris"}, call_id="call-1")


async def _resumed(count: int) -> float:
    while len(RESUMED) < count:
        await asyncio.sleep(0.0005)
    return RESUMED[count - 1]


async def approval_round(http: aiohttp.ClientSession, base: str) -> tuple[float, float]:
    """(seconds from sending the decision to the next model call, seconds its POST took)."""
    session, run = f"a-{uuid.uuid4().hex[:12]}", uuid.uuid4().hex
    body = {"message": "book", "session_id": session, "correlation_id": run}
    async with http.post(f"{base}/api/agents/{AGENT}/run", json=body) as response:
        assert response.status == 202, await response.text()
        assert (await response.json())["status"] == "awaiting_approval"
    seen = len(RESUMED)
    url = f"{base}/api/agents/{AGENT}/sessions/{session}/runs/{run}/approvals"
    sent = time.perf_counter()
    async with http.post(url, json={"call_id": "call-1", "approved": True}) as response:
        assert response.status in (200, 202), await response.text()
    posted = time.perf_counter() - sent
    resumed = await _resumed(seen + 1)
    await _finished(http, base, session, run)
    return resumed - sent, posted


async def plain_round(http: aiohttp.ClientSession, base: str) -> float:
    """Seconds from the model's answer asking for a tool to the next model call."""
    session, run = f"p-{uuid.uuid4().hex[:12]}", uuid.uuid4().hex
    seen = len(RESUMED)
    body = {"message": "weather", "session_id": session, "correlation_id": run}
    async with http.post(f"{base}/api/agents/{AGENT}/run", json=body) as response:
        assert response.status == 200, await response.text()
    asked = ASKED[-1]
    return await _resumed(seen + 1) - asked


async def _finished(http: aiohttp.ClientSession, base: str, session: str, run: str) -> None:
    url = f"{base}/api/agents/{AGENT}/sessions/{session}/runs/{run}?wait=20"
    async with http.get(url) as response:
        assert (await response.json())["status"] in ("succeeded", "pending"), await response.text()


async def measure(base: str, rounds: int) -> list[str]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as http:
        for _ in range(3):  # warm up: imports, connections, SQLite pages
            await approval_round(http, base)
            await plain_round(http, base)
        approvals: list[float] = []
        posts: list[float] = []
        plain: list[float] = []
        for _ in range(rounds):  # interleaved: the machine's drift hits both alike
            got = await approval_round(http, base)
            approvals.append(got[0])
            posts.append(got[1])
            plain.append(await plain_round(http, base))
    a50, a99 = quantiles(approvals)
    p50, p99 = quantiles(posts)
    b50, b99 = quantiles(plain)
    return [
        f"  decision sent -> next model call (approved tool ran): p50 {a50:6.1f} ms  p99 {a99:6.1f} ms",
        f"  the decision POST's own answer (200, stored):         p50 {p50:6.1f} ms  p99 {p99:6.1f} ms",
        f"  no approval: tool asked -> next model call:           p50 {b50:6.1f} ms  p99 {b99:6.1f} ms",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    print(f"approval_bench: {platform.python_version()} on {platform.machine()}, {args.rounds} rounds each")
    with ModelServer(mode="scripted") as model:
        model.handler = answer
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            host = Host(root / "data", str(model.base_url), root / "host.log")
            host.start()
            try:
                for line in asyncio.run(measure(host.url, args.rounds)):
                    print(line)
            finally:
                host.stop()


if __name__ == "__main__":
    main()
