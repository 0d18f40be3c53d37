"""Turns per second and latency of `POST /api/agents/{agent}/run` through the real local host.

Starts `python -m devhost` (the project's `function_app.py`) as a subprocess on a free port, its
model endpoint a local `ModelServer` in this process answering every call at once, and sends
waiting runs (`wait_for_response` true) over real HTTP with aiohttp:

* 1 session (one request at a time, so the session's turns run back to back) and 50 sessions in
  parallel (one request in flight per session);
* histories of 10, 1,000, 10,000 and 100,000 entries (a turn adds 2 entries; the range a case
  went through is printed); 50 parallel sessions only at 10 and 1,000.

It also prints how long after a turn finished in the entity the waiting HTTP call returned
(client receive time minus the stored response entry's `createdAt`; same machine clock).

Seeding: the 10-entry sessions get 5 real turns over HTTP. The longer sessions get a valid 1.3.0
state built with the `state` package turn by turn with the host's default archiving (so older
entries are in chunks, written into the host's history folder), written while the host is stopped
through the host's own storage commit (`devhost.entities._store.EntityStore.commit_turn`, the call an entity
batch commits with; private API, this script only) under the entity id `@dafx-assistant@{session}`
— 25,000 real turns for 50 sessions would take too long. The benchmark's own turns on those
sessions then go through the normal path (load, replay, save), so a state the host could not read
would fail the run.

Usage: .venv/bin/python bench/host_bench.py [--turns 60] [--sizes 10,1000,10000,100000] [--keep-log]
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
from state_bench import build_archived  # noqa: E402

from agents.testing import ModelRequest, ModelServer, Reply  # noqa: E402
from devhost import make_entity_id  # noqa: E402
from devhost.entities._store import EntityStore  # noqa: E402
from hosting.archive import FileChunkStore, chunk_path  # noqa: E402
from state import PendingChunk, load_state  # noqa: E402

AGENT = "assistant"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu(pid: int) -> float:
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:  # gone meanwhile
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in pathlib.Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue
    return found


class Host:
    """`python -m devhost` as a subprocess, stopped with SIGTERM."""

    def __init__(
        self,
        data_dir: pathlib.Path,
        model_url: str,
        log: pathlib.Path,
        extra_env: dict[str, str] | None = None,
        tree: pathlib.Path = ROOT,
    ) -> None:
        self.data_dir, self.model_url, self.log = data_dir, model_url, log
        self.tree = tree  # the checkout whose `devhost` and app run
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
            PYTHON_ENABLE_INIT_INDEXING="1",
            PYTHONPATH=str(self.tree),
        )
        # As the app is deployed and `make run` runs it (local.settings.sample.json): the worker's
        # default, min(32, cores + 4) threads, would run only that many turns at once.
        env.setdefault("PYTHON_THREADPOOL_THREAD_COUNT", "300")
        env.update(self.extra_env)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "devhost", "--port", str(self.port), "--data-dir", str(self.data_dir)],
                cwd=self.tree,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 90  # a loaded machine: the host took 27 s to be ready
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"the host exited:\n{self.log.read_text()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/openapi.json", timeout=2):
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.05)
        raise SystemExit(f"the host did not start:\n{self.log.read_text()}")

    def cpu_seconds(self) -> float:
        """User plus system CPU time the host and its worker processes have used so far (Linux
        /proc: the children's time counts once they are gone, so live ones are read too)."""
        assert self.proc is not None
        return sum(_cpu(pid) for pid in (self.proc.pid, *_children(self.proc.pid)))

    def cpu_split(self) -> tuple[float, float]:
        """CPU seconds so far of the host process alone, and of its live worker processes."""
        assert self.proc is not None
        return _cpu(self.proc.pid), sum(_cpu(pid) for pid in _children(self.proc.pid))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(20)


def seed_chunks(
    history: pathlib.Path, sessions: Sequence[str], document: str, chunks: list[PendingChunk]
) -> None:
    """Write a seeded session's archived chunks where the host's file store keeps them."""
    info = load_state(document).to_document()["data"].get("archive")
    if info is None:
        return
    store = FileChunkStore(history)
    for session in sessions:
        for chunk in chunks:
            path = store._file(chunk_path(f"dafx-{AGENT}", session, info["epoch"], chunk.ref.name))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(chunk.data)


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
    """Entries in the session, and each recent response entry's createdAt by correlation id."""
    async with http.get(f"{url}/api/agents/{AGENT}/sessions/{session}") as resp:
        body = json.loads(await resp.read())
    entries = body["state"]["data"]["conversationHistory"]
    finished = {e["correlationId"]: e["createdAt"] for e in entries if e["$type"] == "response"}
    return int(body.get("entries") or len(entries)), finished


def stored_bytes(db_path: pathlib.Path, session: str) -> int:
    """The size of a session's stored entity state (read from the host's SQLite file)."""
    import sqlite3

    with sqlite3.connect(db_path) as db:
        row = db.execute(
            "SELECT length(CAST(state AS BLOB)) FROM entity_states WHERE entity_id = ?",
            (make_entity_id(f"dafx-{AGENT}", session),),
        ).fetchone()
    return int(row[0]) if row else 0


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


async def bench(url: str, turns: int, sizes: set[int], db_path: pathlib.Path) -> None:
    connector = aiohttp.TCPConnector(limit=100)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as http:
        # Warm-up: every worker thread of the host creates its model client on its first turn.
        await many_sessions(http, url, [f"warm-up-{i:02d}" for i in range(16)], 2)
        print(f"{'case':<34} {'entries':>13}")
        gaps: dict[str, list[float]] = {}
        p50: dict[int, float] = {}
        for size, parallel_turns in ((10, 4), (1000, 2), (10_000, 0), (100_000, 0)):
            if size not in sizes:
                continue
            sessions = [f"bench-{size}-{i:02d}" for i in range(51 if parallel_turns else 1)]
            if size == 10:
                await many_sessions(http, url, sessions, 5)  # seeded with 5 real turns each
            samples = await run_case(http, url, "1 session", sessions[:1], turns)
            p50[size] = statistics.median(s.latency_ms for s in samples)
            print(f"{'':<34} stored entity state after: {stored_bytes(db_path, sessions[0]):,} bytes")
            gaps[f"{size:,} entries"] = await finish_to_return(http, url, samples)
            if parallel_turns:
                await run_case(http, url, "50 sessions in parallel", sessions[1:], parallel_turns)
        if 10 in p50 and 10_000 in p50:
            print(
                f"target: 10,000-entry POST .../run p50 within 1.5x of 10-entry: x{p50[10_000] / p50[10]:.2f}"
            )
        for label, values in gaps.items():
            print(
                f"turn recorded -> HTTP answer received, 1 session, {label}:"
                f" p50 {statistics.median(values):.1f} ms  p99 {pct(values, 0.99):.1f} ms"
                " (save + commit + wait poll + HTTP)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=60, help="turns of the 1-session cases")
    parser.add_argument("--sizes", default="10,1000,10000,100000", help="history sizes to run")
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
        history = pathlib.Path(tmp) / "history"
        sizes = {int(x) for x in args.sizes.split(",")}
        for size in sorted(sizes - {10}):
            started = time.perf_counter()
            document, chunks = build_archived(size)
            sessions = [f"bench-{size}-{i:02d}" for i in range(51 if size <= 1000 else 1)]
            plant(data / "devhost.db", sessions, document)
            seed_chunks(history, sessions, document, chunks)
            print(
                f"seeded {len(sessions)} session(s) of {size:,} entries ({len(document) // 1024} KB state, "
                f"{len(chunks)} chunks) in {time.perf_counter() - started:.1f} s"
            )
        log = pathlib.Path(tempfile.mkdtemp() if args.keep_log else tmp) / "host.log"
        history_env = {"DURABLE_AGENTS_HISTORY_STORE": "files", "DURABLE_AGENTS_HISTORY_DIR": str(history)}
        host = Host(data, model.base_url, log, extra_env=history_env)
        host.start()
        try:
            asyncio.run(bench(host.url, args.turns, sizes, data / "devhost.db"))
        finally:
            host.stop()
        if args.keep_log:
            print(f"host log: {log}")


if __name__ == "__main__":
    main()
