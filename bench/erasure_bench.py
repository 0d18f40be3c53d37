"""Benchmark: erasing a user with 100 sessions on the local host.

Starts the scripted model server and `python -m devhost` (Easy Auth on, history archived above
4 KiB into files, as tests/e2e/test_e2e_erasure.py), gives user `u1` `--sessions` sessions of
`--turns` turns each (every session's older entries archived) and one memory item, and another
user as many sessions again (the walk reads every session of the app, not only the user's).
Then, in the same run, it times the export of u1 (the same walk, reading each session's state and
archived history) and the erasure: from `DELETE /api/users/u1` to a completed receipt (polled
every 50 ms), and prints the receipt's counts, sessions erased per second and the load average
(the machine is shared: figures drift with it). Beside it, the way there was before the erasure:
u2's sessions found by the export and deleted one by one through the session route.

Usage: .venv/bin/python bench/erasure_bench.py [--sessions 100] [--turns 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "e2e")]
# The app settings local.settings.sample.json gives, which the host started below inherits.
os.environ["PYTHON_ENABLE_INIT_INDEXING"] = "1"
os.environ.setdefault("PYTHON_THREADPOOL_THREAD_COUNT", "300")

import aiohttp  # noqa: E402 - the repository's test support is put on sys.path first
from e2e_support import Client, HostProcess  # type: ignore[import-not-found]  # noqa: E402
from erasure_support import (  # type: ignore[import-not-found]  # noqa: E402
    PRINCIPAL,
    erase,
    erasure_env,
    receipt,
    remember,
    turn,
)

from agents.testing import ModelServer, Reply  # noqa: E402


async def _sessions(client: Client, user: str, sessions: int, turns: int) -> None:
    async def one(n: int) -> None:
        session = await turn(client, user, "assistant", f"session {n} turn 0 " + "y" * 1500)
        for t in range(1, turns):
            await turn(client, user, "assistant", f"session {n} turn {t} " + "y" * 1500, session)

    for start in range(0, sessions, 4):  # four at a time: the machine has two cores
        await asyncio.gather(*(one(n) for n in range(start, min(start + 4, sessions))))


async def _one_by_one(client: Client, user: str) -> None:
    """Beside it, what a client could do without the erasure: find the user's sessions (the
    export), `DELETE` each through the session route, then poll until each is gone. It leaves
    each session's tombstone (naming the user) and the sessions' stream events behind, and its
    archived chunks go later, by the cleanup orchestration each delete starts."""
    started = time.perf_counter()
    export = await client.get(f"/api/users/{user}/export", headers={PRINCIPAL: user})
    lines = [json.loads(line) for line in export.body.split(b"\n")[:-1]]
    sessions = [(line["agent"], line["session_id"]) for line in lines if line["kind"] == "session"]
    for agent, session in sessions:
        path = f"/api/agents/{agent}/sessions/{session}"
        deleted = await client.request("DELETE", path, headers={PRINCIPAL: user})
        assert deleted.status == 202, deleted.body
    for agent, session in sessions:
        path = f"/api/agents/{agent}/sessions/{session}"
        while (await client.get(path, headers={PRINCIPAL: user})).status != 404:
            await asyncio.sleep(0.05)
    took = time.perf_counter() - started
    print(f"beside it, u2's {len(sessions)} sessions deleted one by one over the session route: "
          f"{took:.2f} s until each answers 404 ({len(sessions) / took:.0f} sessions/s; the chunks go "
          "later by their cleanups, the tombstones naming the user and the stream events stay)")


async def main(sessions: int, turns: int) -> None:
    with tempfile.TemporaryDirectory() as folder, ModelServer(mode="scripted") as model:
        model.handler = lambda request: Reply.text("answer " + "z" * 1500)
        data = pathlib.Path(folder) / "data"
        log = pathlib.Path(folder) / "host.log"
        host = HostProcess(data, model.base_url, log, extra_env=erasure_env(data))
        host.start()
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http:
                client = Client(http, host.url)
                started = time.perf_counter()
                await _sessions(client, "u1", sessions, turns)
                await _sessions(client, "u2", sessions, turns)
                model.handler = None
                await remember(client, model, "u1", "u1 likes aisle seats.")
                made = time.perf_counter() - started
                print(f"load average {os.getloadavg()[0]:.2f}; {2 * sessions} sessions of {turns} turns "
                      f"made in {made:.1f} s (u1: {sessions} + 1 concierge, u2: {sessions})")

                started = time.perf_counter()
                export = await client.get("/api/users/u1/export", headers={PRINCIPAL: "u1"})
                exported = time.perf_counter() - started
                assert export.status == 200
                print(f"export of u1 (the same walk, reading each state and its archive): {exported:.2f} s, "
                      f"{len(export.body) / 1e6:.1f} MB")

                started = time.perf_counter()
                done = await receipt(client, await erase(client, "u1"), "u1", timeout=600)
                erased = time.perf_counter() - started
                assert done["status"] == "completed", done
                count = sum(done["sessions"].values())
                print(f"erasure of u1: {erased:.2f} s for {count} sessions "
                      f"({count / erased:.0f} sessions/s); receipt: sessions {done['sessions']}, "
                      f"archived_chunks {done['archived_chunks']}, "
                      f"stream_events {done['stream_events']}, memories {done['memories']}")
                await _one_by_one(client, "u2")
                print(f"load average after: {os.getloadavg()[0]:.2f}")
        finally:
            host.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.sessions, args.turns))
