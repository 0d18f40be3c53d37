"""Turns waiting on a slow model do not starve the local host: 200 at once, over real sockets."""

from __future__ import annotations

import asyncio
import threading
import time

import aiohttp
from hosting_support import ROOT

from agents.testing import ModelRequest, ModelServer, Reply

SLOW_TURNS = 200


class Gate:
    """Holds the slow turns' model calls on the model server's loop until the test opens it: the
    model hangs exactly as long as the test needs, however loaded the machine."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None

    async def wait(self) -> None:
        if self._event is None:
            self._loop, self._event = asyncio.get_running_loop(), asyncio.Event()
        if not self.opened.is_set():
            await asyncio.wait_for(self._event.wait(), 60)  # a failed test ends its calls

    def open(self) -> None:
        self.opened.set()
        if self._loop is not None and self._event is not None:
            self._loop.call_soon_threadsafe(self._event.set)


async def test_200_slow_turns_and_a_bystander(host: object, model: ModelServer) -> None:
    from devhost import LocalHost

    assert isinstance(host, LocalHost)
    assert host.project_dir == ROOT  # the project's host.json (maxConcurrentEntityFunctions)
    gate = Gate()

    async def answer(request: ModelRequest) -> Reply:
        if request.last_user_text != "bystander":
            await gate.wait()
            return Reply.text("slow")
        return Reply.text("right away")

    model.handler = answer
    url = f"{host.url}/api/agents/assistant/run"
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(120)) as http:

        async def turn(index: int, text: str) -> tuple[int, float]:
            started = time.monotonic()
            body = {"message": text, "session_id": f"s-{index}"}
            async with http.post(url, json=body) as r:
                await r.read()
                return r.status, time.monotonic() - started

        started = time.monotonic()
        slow = [asyncio.create_task(turn(i, "slow please")) for i in range(SLOW_TURNS)]
        try:
            # Every slow turn is waiting on the model at once (a host that queues turns behind a
            # few worker threads gets only those few this far).
            while len(model.requests) < SLOW_TURNS:
                await asyncio.sleep(0.05)
                assert time.monotonic() - started < 60, f"only {len(model.requests)} turns reached the model"
            bystander_status, bystander_seconds = await turn(-1, "bystander")
            # Answered while all 200 still wait on the model; none of them gave up meanwhile.
            assert not [task for task in slow if task.done()]
        finally:
            gate.open()
        released = time.monotonic()
        results = await asyncio.gather(*slow)
        finished = time.monotonic() - released
    # The time figures (on an idle 2-core machine: the bystander in well under 1 s, all 200 done
    # ~1.5 s after the model answers) are bench/hung_model_bench.py's; the bounds here only tell
    # "answered" from "stuck behind the hung calls" (a minute and more) on a loaded CI machine.
    assert bystander_status == 200
    assert bystander_seconds < 10.0, f"the bystander waited {bystander_seconds:.1f}s"
    assert [status for status, _ in results] == [200] * SLOW_TURNS
    assert finished < 30.0, f"{SLOW_TURNS} turns took {finished:.1f}s to end once the model answered"
