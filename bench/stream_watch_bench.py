"""The SQLite stream store's watcher: how late a reader sees another process's event, and its CPU.

Readers in the writer's process are woken at once; a writer in another process (the local host's
worker processes share the file) is seen by one watcher thread per process that checks the file
every `poll_interval`. For each interval given (``--intervals``, seconds; 0.2 was the default before
5 ms), alternating over ``--rounds``, this prints:

* **latency**: a writer process appends a run's terminal event stamped with ``time.monotonic()``
  (one clock for every process on the machine); a reader here, following the run, receives it:
  receive minus stamp, p50 and max over ``--events`` runs;
* **CPU, idle**: this process's CPU share while ``--readers`` readers follow runs nobody writes;
* **CPU, busy**: the same while a writer process appends an event to another run every 2 ms
  (a token stream in another worker process), so the watcher's check finds news each time.

Usage: .venv/bin/python bench/stream_watch_bench.py [--intervals 0.2,0.005] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hosting.streams import SqliteStreamStore, StreamEvent, StreamKey  # noqa: E402

WRITER = """
import asyncio, sys, time
from hosting.streams import SqliteStreamStore, StreamEvent, StreamKey
path, mode, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = SqliteStreamStore(path, retention=600)

async def main():
    if mode == "terminal":
        for line in sys.stdin:  # one line per run: its session id, once its reader follows
            key = StreamKey("bench", line.strip(), "c")
            await store.append(key, StreamEvent(1, "run.completed", {"at": time.monotonic()}))
            print("sent", flush=True)
    else:
        key = StreamKey("bench", "busy", "c")
        for seq in range(1, count + 1):
            await store.append(key, StreamEvent(seq, "text.delta", {"text": "x"}))
            await asyncio.sleep(0.002)

asyncio.run(main())
"""


def writer(path: pathlib.Path, mode: str, count: int = 0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), mode, str(count)],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )


async def latency(store: SqliteStreamStore, path: pathlib.Path, events: int) -> list[float]:
    proc = writer(path, "terminal")
    assert proc.stdin is not None and proc.stdout is not None
    seen: list[float] = []
    try:
        for n in range(events):
            key = StreamKey("bench", f"s{n}", "c")
            got: asyncio.Future[float] = asyncio.get_running_loop().create_future()

            async def follow(key: StreamKey = key, got: asyncio.Future[float] = got) -> None:
                async for event in store.follow(key, 0, 30.0):
                    if event is not None and event.terminal:
                        got.set_result(time.monotonic() - float(event.data["at"]))
                        return

            task = asyncio.create_task(follow())
            await asyncio.sleep(0.02)  # following (the watcher has seen the run's empty tail)
            proc.stdin.write(f"s{n}\n")
            proc.stdin.flush()
            seen.append(await asyncio.wait_for(got, 10))
            await task
            await asyncio.get_running_loop().run_in_executor(None, proc.stdout.readline)
    finally:
        proc.stdin.close()
        proc.wait(10)
    return seen


@contextlib.contextmanager
def idle_readers(store: SqliteStreamStore, readers: int) -> Iterator[None]:
    async def idle(n: int) -> None:
        async for _ in store.follow(StreamKey("bench", f"idle{n}", "c"), 0, 3600.0):
            pass

    tasks = [asyncio.get_event_loop().create_task(idle(n)) for n in range(readers)]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()


async def cpu_share(seconds: float) -> float:
    cpu, wall = time.process_time(), time.monotonic()
    await asyncio.sleep(seconds)
    return (time.process_time() - cpu) / (time.monotonic() - wall)


async def measure(interval: float, events: int, readers: int) -> str:
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "streams.db"
        store = SqliteStreamStore(path, retention=600, poll_interval=interval)
        await store.append(StreamKey("bench", "warm", "c"), StreamEvent(1, "text.delta", {}))
        late = await latency(store, path, events)
        with idle_readers(store, readers):
            await asyncio.sleep(0.5)
            idle = await cpu_share(3.0)
            busy_writer = writer(path, "busy", 2500)
            await asyncio.sleep(0.5)
            busy = await cpu_share(3.0)
            busy_writer.wait(60)
        await store.aclose()
    return (
        f"interval {interval * 1000:5.0f} ms: latency p50 {statistics.median(late) * 1000:6.1f} ms  "
        f"max {max(late) * 1000:6.1f} ms  |  CPU with {readers} idle readers {idle * 100:4.1f} %  "
        f"with another process writing {busy * 100:4.1f} %"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--intervals", default="0.2,0.005")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--events", type=int, default=40)
    parser.add_argument("--readers", type=int, default=200)
    args = parser.parse_args()
    intervals = [float(value) for value in args.intervals.split(",")]
    for round_ in range(1, args.rounds + 1):
        for interval in intervals:
            line = asyncio.run(measure(interval, args.events, args.readers))
            print(f"[round {round_}] {line}", flush=True)


if __name__ == "__main__":
    main()
