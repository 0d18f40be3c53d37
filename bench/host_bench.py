"""Turns per second and latency of `POST /api/agents/{agent}/run` through the real local host.

Starts `python -m devhost` (the project's `function_app.py`) as a subprocess on a free port, its
model endpoint a local `ModelServer` in this process answering every call at once, and sends
waiting runs (`wait_for_response` true) over real HTTP with aiohttp:

* 1 session (one request at a time, so the session's turns run back to back) and 50 sessions in
  parallel (one request in flight per session);
* histories of 10 and 1,000 entries (a turn adds 2 entries; the range a case went through is
  printed).

It also prints how long after a turn finished in the entity the waiting HTTP call returned
(client receive time minus the stored response entry's `createdAt`; same machine clock).

Seeding: the 10-entry sessions get 5 real turns over HTTP. The 1,000-entry sessions get a valid
state built with the `state` package (500 turns of short text), written while the host is stopped
through the host's own storage commit (`devhost.entities._store.EntityStore.commit_turn`, the call an entity
batch commits with; private API, this script only) under the entity id `@dafx-assistant@{session}`
— 25,000 real turns for 50 sessions would take too long. The benchmark's own turns on those
sessions then go through the normal path (load, replay, save), so a state the host could not read
would fail the run.

Usage: .venv/bin/python bench/host_bench.py [--turns 60] [--sizes 10,1000] [--keep-log]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import pathlib
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DURABLE_AGENTS_ALLOW_MODEL_REQUESTS", "0")

import aiohttp  # noqa: E402

from agents.testing import ModelRequest, ModelServer, Reply  # noqa: E402
from devhost import make_entity_id  # noqa: E402
from devhost.entities._store import EntityStore  # noqa: E402
from state import AgentRequest, AgentResponse, AgentState, ChatMessage, TextContent, dump_state  # noqa: E402

AGENT = "assistant"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Host:
    """`python -m devhost` as a subprocess, stopped with SIGTERM."""

    def __init__(
        self,
        data_dir: pathlib.Path,
        model_url: str,
        log: pathlib.Path,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.data_dir, self.model_url, self.log = data_dir, model_url, log
        self.extra_env = dict(extra_env or {})
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_OPENAI_", "DEVHOST_"))
        }
        env.update(
            OPENAI_BASE_URL=self.model_url,
            OPENAI_API_KEY="bench",
            OPENAI_CHAT_MODEL_ID="bench-model",
            DURABLE_AGENTS_ALLOW_MODEL_REQUESTS="0",
            PYTHONPATH=str(ROOT),
        )
        env.update(self.extra_env)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "devhost", "--port", str(self.port), "--data-dir", str(self.data_dir)],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"the host exited:\n{self.log.read_text()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/openapi.json", timeout=2):
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.05)
        raise SystemExit(f"the host did not start:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(20)


def seeded_state(turns: int) -> str:
    """A valid state document with ``turns`` short text turns (2 entries each)."""
    state = AgentState.new()
    for i in range(turns):
        cid = f"seed-{i:05d}"
        now = dt.datetime.now(dt.UTC).isoformat()
        state.append_request(
            AgentRequest(
                correlation_id=cid,
                created_at=now,
                messages=[
                    ChatMessage(
                        role="user", contents=[TextContent(text=f"seed question {i} about the weather")]
                    )
                ],
            )
        )
        state.append_response(
            AgentResponse(
                correlation_id=cid,
                created_at=now,
                messages=[
                    ChatMessage(
                        role="assistant", contents=[TextContent(text=f"seed answer {i}: it is sunny")]
                    )
                ],
            )
        )
    return dump_state(state)


def plant(db_path: pathlib.Path, sessions: Sequence[str], document: str) -> None:
    """Write ``document`` as the state of each session's entity (host stopped)."""
    store = EntityStore(db_path)
    store.open()
    try:
        for session in sessions:
            entity = make_entity_id(f"dafx-{AGENT}", session)
            store.commit_turn(entity, f"dafx-{AGENT}", session, document, True, [], [], [])
    finally:
        store.close()
        store.shutdown()


@dataclass
class Sample:
    session: str
    correlation_id: str
    latency_ms: float
    returned_at: float  # wall clock, seconds


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def post_run(http: aiohttp.ClientSession, url: str, session: str, message: str) -> Sample:
    body = {"message": message, "session_id": session, "wait_for_response": True}
    started = time.perf_counter()
    async with http.post(f"{url}/api/agents/{AGENT}/run", json=body) as resp:
        payload = await resp.read()
        returned = time.time()
        if resp.status != 200:
            raise SystemExit(f"POST run answered {resp.status}: {payload[:300]!r}")
    elapsed = (time.perf_counter() - started) * 1000
    return Sample(session, json.loads(payload)["correlation_id"], elapsed, returned)


async def history_length(http: aiohttp.ClientSession, url: str, session: str) -> tuple[int, dict[str, str]]:
    """Entries in the session, and each response entry's createdAt by correlation id."""
    async with http.get(f"{url}/api/agents/{AGENT}/sessions/{session}") as resp:
        doc = json.loads(await resp.read())["state"]
    entries = doc["data"]["conversationHistory"]
    finished = {e["correlationId"]: e["createdAt"] for e in entries if e["$type"] == "response"}
    return len(entries), finished


async def one_session(http: aiohttp.ClientSession, url: str, session: str, turns: int) -> list[Sample]:
    """``turns`` turns on one session, one after another."""
    return [await post_run(http, url, session, f"turn {i}") for i in range(turns)]


async def many_sessions(
    http: aiohttp.ClientSession, url: str, sessions: Sequence[str], turns: int
) -> list[Sample]:
    per_session = await asyncio.gather(*(one_session(http, url, s, turns) for s in sessions))
    return [s for samples in per_session for s in samples]


def report(label: str, samples: list[Sample], wall: float, entries: str) -> None:
    lat = [s.latency_ms for s in samples]
    print(
        f"{label:<34} {entries:>13}  {len(samples):>4} turns  {len(samples) / wall:7.1f} turns/s"
        f"  p50 {statistics.median(lat):7.1f} ms  p99 {pct(lat, 0.99):7.1f} ms"
    )


async def finish_to_return(http: aiohttp.ClientSession, url: str, samples: list[Sample]) -> list[float]:
    """Milliseconds between the response entry's createdAt and the HTTP answer arriving."""
    gaps = []
    for session in sorted({s.session for s in samples}):
        _, finished = await history_length(http, url, session)
        for s in samples:
            if s.session == session and s.correlation_id in finished:
                at = dt.datetime.fromisoformat(finished[s.correlation_id]).timestamp()
                gaps.append((s.returned_at - at) * 1000)
    return gaps


async def run_case(
    http: aiohttp.ClientSession, url: str, label: str, sessions: Sequence[str], turns: int
) -> list[Sample]:
    """``turns`` turns on each session (sessions in parallel, each session's turns in sequence)."""
    before = (await history_length(http, url, sessions[0]))[0]
    started = time.perf_counter()
    samples = await many_sessions(http, url, sessions, turns)
    wall = time.perf_counter() - started
    after = (await history_length(http, url, sessions[0]))[0]
    report(label, samples, wall, f"{before}->{after}")
    return samples


async def bench(url: str, turns: int, sizes: set[int]) -> None:
    connector = aiohttp.TCPConnector(limit=100)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as http:
        # Warm-up: every worker thread of the host creates its model client on its first turn.
        await many_sessions(http, url, [f"warm-up-{i:02d}" for i in range(16)], 2)
        print(f"{'case':<34} {'entries':>13}")
        gaps: dict[str, list[float]] = {}
        for size, parallel_turns in ((10, 4), (1000, 2)):
            if size not in sizes:
                continue
            sessions = [f"bench-{size}-{i:02d}" for i in range(51)]
            if size == 10:
                await many_sessions(http, url, sessions, 5)  # seeded with 5 real turns each
            samples = await run_case(http, url, "1 session", sessions[:1], turns)
            gaps[f"{size:,} entries"] = await finish_to_return(http, url, samples)
            await run_case(http, url, "50 sessions in parallel", sessions[1:], parallel_turns)
        for label, values in gaps.items():
            print(
                f"turn recorded -> HTTP answer received, 1 session, {label}:"
                f" p50 {statistics.median(values):.1f} ms  p99 {pct(values, 0.99):.1f} ms"
                " (save + commit + wait poll + HTTP)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=60, help="turns of the 1-session cases")
    parser.add_argument("--sizes", default="10,1000", help="history sizes to run (10 and/or 1000)")
    parser.add_argument("--keep-log", action="store_true", help="print where the host log is and keep it")
    args = parser.parse_args()

    def answer(request: ModelRequest) -> Reply:
        return Reply.text("ok")

    print(
        f"host_bench {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, {platform.machine()}"
    )
    with ModelServer(mode="scripted") as model, tempfile.TemporaryDirectory() as tmp:
        model.handler = answer
        data = pathlib.Path(tmp) / "data"
        started = time.perf_counter()
        document = seeded_state(500)
        plant(data / "devhost.db", [f"bench-1000-{i:02d}" for i in range(51)], document)
        print(
            f"seeded 51 sessions with 1,000 entries ({len(document) // 1024} KB each) in "
            f"{time.perf_counter() - started:.1f} s"
        )
        log = pathlib.Path(tempfile.mkdtemp() if args.keep_log else tmp) / "host.log"
        host = Host(data, model.base_url, log)
        host.start()
        try:
            asyncio.run(bench(host.url, args.turns, {int(x) for x in args.sizes.split(",")}))
        finally:
            host.stop()
        if args.keep_log:
            print(f"host log: {log}")


if __name__ == "__main__":
    main()
