"""The stream store contract, run the same way on both backends (SQLite file, real redis-server)."""

from __future__ import annotations

import asyncio
import pathlib
import sqlite3
import threading
import time
import uuid
from collections.abc import AsyncIterator

import pytest

from hosting._wakeup import session_operation
from hosting.streams import (
    RunClaim,
    SqliteStreamStore,
    StreamConflict,
    StreamEvent,
    StreamKey,
    StreamStore,
    StreamStoreUnavailable,
)
from hosting.streams._redis import RedisStreamStore
from hosting.streams._watch import terminal_watch


@pytest.fixture(params=["sqlite", "redis", "redis-cluster"])
async def store(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> AsyncIterator[StreamStore]:
    made: StreamStore
    if request.param == "redis":
        made = RedisStreamStore(request.getfixturevalue("redis_url"), retention=60)
    elif request.param == "redis-cluster":
        # Cluster mode as the server reports it (no setting): the cluster client, hash-tagged keys.
        made = RedisStreamStore(request.getfixturevalue("redis_cluster_url"), retention=60)
    else:
        made = SqliteStreamStore(tmp_path / "streams.db", retention=60, poll_interval=0.05)
    yield made
    await made.aclose()


def key() -> StreamKey:
    return StreamKey("agent", f"s-{uuid.uuid4().hex[:8]}", f"c-{uuid.uuid4().hex[:8]}")


def delta(seq: int) -> StreamEvent:
    return StreamEvent(seq, "text.delta", {"text": f"t{seq}"})


async def collect(store: StreamStore, k: StreamKey, after: int, idle: float = 5.0) -> list[StreamEvent]:
    return [e async for e in store.follow(k, after, idle) if e is not None]


async def test_replay_from_any_point_then_stop_at_the_terminal_event(store: StreamStore) -> None:
    k = key()
    assert not await store.exists(k) and await store.last(k) is None
    events = [
        StreamEvent(1, "run.started", {}),
        delta(2),
        delta(3),
        StreamEvent(4, "run.completed", {"x": 1}),
    ]
    for event in events:
        await store.append(k, event)
    assert await store.exists(k)
    assert await store.last(k) == events[-1]
    assert await collect(store, k, 0) == events
    assert await collect(store, k, 2) == events[2:]
    assert await collect(store, k, 3) == events[3:]


async def test_a_reader_follows_live_appends(store: StreamStore) -> None:
    k = key()
    await store.declare(k)
    assert await store.exists(k)
    reader = asyncio.create_task(collect(store, k, 0))
    await asyncio.sleep(0.1)
    assert not reader.done()
    started = time.monotonic()
    for seq in range(1, 4):
        await store.append(k, delta(seq))
        await asyncio.sleep(0.02)
    await store.append(k, StreamEvent(4, "run.failed", {}))
    got = await asyncio.wait_for(reader, 5)
    assert [e.seq for e in got] == [1, 2, 3, 4]
    assert time.monotonic() - started < 2


async def test_a_writer_on_another_thread_wakes_the_reader(store: StreamStore) -> None:
    # The entity writes from its own thread and loop; HTTP readers run on the host's loop.
    k = key()
    reader = asyncio.create_task(collect(store, k, 0))
    await asyncio.sleep(0.05)

    def write() -> None:
        async def main() -> None:
            await store.append(k, delta(1))
            await store.append(k, StreamEvent(2, "run.completed", {}))
            await store.aclose()

        asyncio.run(main())

    thread = threading.Thread(target=write)
    thread.start()
    got = await asyncio.wait_for(reader, 5)
    thread.join()
    assert [e.type for e in got] == ["text.delta", "run.completed"]


async def test_idle_ticks_while_nothing_happens(store: StreamStore) -> None:
    k = key()
    await store.declare(k)
    ticks = 0
    async for event in store.follow(k, 0, idle=0.1):
        assert event is None
        ticks += 1
        if ticks == 3:
            break
    assert ticks == 3


async def test_a_taken_sequence_number_is_a_conflict(store: StreamStore) -> None:
    k = key()
    await store.append(k, delta(1))
    with pytest.raises(StreamConflict):
        await store.append(k, delta(1))
    assert await collect_first(store, k) == [delta(1)]


async def collect_first(store: StreamStore, k: StreamKey) -> list[StreamEvent]:
    out: list[StreamEvent] = []
    async for event in store.follow(k, 0, idle=0.1):
        if event is None:
            return out
        out.append(event)
    return out


async def test_discard_starts_the_stream_afresh(store: StreamStore) -> None:
    k = key()
    await store.append(k, delta(1))
    await store.append(k, StreamEvent(2, "run.completed", {}))
    await store.discard(k)
    assert await store.last(k) is None
    await store.append(k, StreamEvent(1, "run.started", {}))
    assert [e.type for e in await collect_first(store, k)] == ["run.started"]


async def test_events_expire_after_the_retention(tmp_path: pathlib.Path, redis_url: str) -> None:
    for made in (
        SqliteStreamStore(tmp_path / "short.db", retention=1),
        RedisStreamStore(redis_url, retention=1),
    ):
        k = key()
        await made.append(k, delta(1))
        assert await made.exists(k)
        await asyncio.sleep(2.1)
        assert not await made.exists(k), type(made).__name__
        assert await made.last(k) is None
        await made.aclose()


def test_the_sqlite_store_survives_a_restart(tmp_path: pathlib.Path) -> None:
    k = key()

    async def write() -> None:
        first = SqliteStreamStore(tmp_path / "streams.db", retention=60)
        await first.append(k, delta(1))
        await first.aclose()

    async def read() -> StreamEvent | None:
        second = SqliteStreamStore(tmp_path / "streams.db", retention=60)
        try:
            return await second.last(k)
        finally:
            await second.aclose()

    asyncio.run(write())
    assert asyncio.run(read()) == delta(1)


async def test_a_run_is_claimed_once_and_later_claims_see_the_first(store: StreamStore) -> None:
    k = key()
    assert await store.claimed(k) is None
    assert await store.claim(k, RunClaim("hash-1", live=False)) is None
    assert await store.exists(k), "a claim declares the stream (a reader attaching early waits)"
    assert await store.claim(k, RunClaim("hash-2", live=True)) == RunClaim("hash-1", live=False)
    assert await store.claimed(k) == RunClaim("hash-1", live=False)
    assert await store.claim(k, RunClaim("hash-1", live=True), replace=True) is None
    assert await store.claimed(k) == RunClaim("hash-1", live=True)
    await store.release(k)
    assert await store.claimed(k) is None and not await store.exists(k)
    assert await store.claim(k, RunClaim(None)) is None
    assert await store.claimed(k) == RunClaim(None, live=True)


async def test_opening_reads_the_claim_and_the_newest_event_together(store: StreamStore) -> None:
    k = key()
    assert await store.opening(k) == (None, None)
    await store.claim(k, RunClaim("hash-1", live=False))
    assert await store.opening(k) == (RunClaim("hash-1", live=False), None)
    await store.append_many(k, [StreamEvent(1, "run.started", {"agent": "a"}), delta(2)])
    assert await store.opening(k) == (RunClaim("hash-1", live=False), delta(2))
    await store.release(k)
    assert await store.opening(k) == (None, delta(2))


async def test_of_racing_claims_from_several_processes_exactly_one_wins(store: StreamStore) -> None:
    # Other processes are other store objects on the same file / server.
    def another() -> StreamStore:
        if isinstance(store, RedisStreamStore):
            return RedisStreamStore(store.url, retention=60, cluster=store.cluster)
        assert isinstance(store, SqliteStreamStore)
        return SqliteStreamStore(store.path, retention=60)

    others = [another() for _ in range(3)]
    k = key()
    stores = [store, *others]
    results = await asyncio.gather(*(s.claim(k, RunClaim(f"h{i}")) for i, s in enumerate(stores)))
    winners = [i for i, r in enumerate(results) if r is None]
    assert len(winners) == 1, results
    assert all(r == RunClaim(f"h{winners[0]}") for r in results if r is not None)
    for other in others:
        await other.aclose()


async def test_a_claim_expires_with_the_retention(tmp_path: pathlib.Path, redis_url: str) -> None:
    for made in (
        SqliteStreamStore(tmp_path / "claims.db", retention=1),
        RedisStreamStore(redis_url, retention=1),
    ):
        k = key()
        assert await made.claim(k, RunClaim("old")) is None
        await asyncio.sleep(2.1)
        assert await made.claimed(k) is None, type(made).__name__
        assert await made.claim(k, RunClaim("new")) is None
        assert await made.claimed(k) == RunClaim("new")
        await made.aclose()


async def test_idle_sqlite_readers_do_not_poll_and_still_see_other_processes(tmp_path: pathlib.Path) -> None:
    store = SqliteStreamStore(tmp_path / "streams.db", retention=60, poll_interval=0.05)
    reads = 0
    read = store._read

    def counted(k: StreamKey, after: int) -> list[StreamEvent]:
        nonlocal reads
        reads += 1
        return read(k, after)

    store._read = counted  # type: ignore[method-assign,assignment]
    keys = [key() for _ in range(50)]
    for k in keys:
        await store.declare(k)
    readers = [asyncio.create_task(collect(store, k, 0, idle=30)) for k in keys]
    await asyncio.sleep(1.0)
    # Once each, plus at most one wake per reader when the watcher first sees its run; a reader
    # polling every 50 ms would have read about 20 times.
    assert reads <= 2 * len(keys), f"{reads} reads by {len(keys)} idle readers in a second"
    # A writer in another process (a connection of its own, no in-process wakeup).
    with sqlite3.connect(tmp_path / "streams.db") as other:
        insert = "INSERT INTO events (key, seq, type, data) VALUES (?, 1, 'run.completed', '{}')"
        other.execute(insert, (keys[0].text(),))
    got = await asyncio.wait_for(readers[0], 2)
    assert [e.type for e in got] == ["run.completed"]
    for reader in readers[1:]:
        reader.cancel()
    await store.aclose()


async def test_a_full_redis_pool_is_unavailable_for_a_while_not_a_failure(redis_url: str) -> None:
    store = RedisStreamStore(redis_url, retention=60, command_connections=2, command_wait=0.2)
    k = key()
    await store.declare(k)
    clients = await store._clients()
    for _ in range(2):  # every command connection is in use
        await clients.slots.acquire()
    try:
        with pytest.raises(StreamStoreUnavailable, match="Redis") as raised:
            await store.claim(k, RunClaim(None))
        assert raised.value.retry_after
    finally:
        for _ in range(2):
            clients.slots.release()
    assert await store.claim(k, RunClaim(None)) is not None  # declared above: claimed already
    await store.aclose()


async def test_three_hundred_readers_of_one_run_at_once(store: StreamStore) -> None:
    k = key()
    await store.declare(k)
    readers = [asyncio.create_task(collect(store, k, 0)) for _ in range(300)]
    await asyncio.sleep(0.5)
    # Admission meanwhile: readers hold none of the connections it needs.
    assert await asyncio.wait_for(store.claim(key(), RunClaim(None)), 2) is None
    await store.append_many(k, [StreamEvent(1, "run.started", {}), delta(2)])
    await store.append(k, StreamEvent(3, "run.completed", {}))
    got = await asyncio.wait_for(asyncio.gather(*readers), 10)
    assert all([e.seq for e in events] == [1, 2, 3] for events in got)


async def test_a_sessions_interrupt_mark_is_asked_for_then_withdrawn(store: StreamStore) -> None:
    run = key()
    mark = StreamKey.interrupt(run.agent, run.session_id)
    assert not await store.cancel_requested(mark)
    assert await store.request_cancel(mark) and await store.request_cancel(run)
    assert await store.cancel_requested(mark) and await store.cancel_requested(run)
    other = StreamKey.interrupt(run.agent, f"{run.session_id}-other")
    assert not await store.cancel_requested(other)  # one session's mark only
    await store.withdraw_cancel(mark)
    assert not await store.cancel_requested(mark)
    assert await store.cancel_requested(run)  # a run's own cancel stays
    await store.withdraw_cancel(mark)  # nothing to withdraw: no error


async def test_a_run_whose_session_runs_here_is_followed_without_the_watcher(tmp_path: pathlib.Path) -> None:
    # As an SSE stream is read when its entity runs in the reader's process (one worker group):
    # the operation starts here soon after the reader began, writes the events, and the
    # in-process wakeup carries them all; the file is never polled.
    with session_operation("dafx-agent", "another"):
        pass  # this process runs entity operations, as a worker of one group does
    store = SqliteStreamStore(tmp_path / "streams.db", retention=60, poll_interval=0.5)
    k = key()
    await store.declare(k)
    reader = asyncio.create_task(collect(store, k, 0, idle=30))
    await asyncio.sleep(0.01)  # the turn is on its way to the entity

    def operation() -> None:
        with session_operation(f"dafx-{k.agent}", k.session_id):
            for seq, kind in enumerate(("run.started", "text.delta", "run.completed"), 1):
                asyncio.run(store.append(k, StreamEvent(seq, kind)))

    await asyncio.to_thread(operation)
    got = await asyncio.wait_for(reader, 5)
    assert [e.type for e in got] == ["run.started", "text.delta", "run.completed"]
    assert store.checks == 0 and store._watcher is None
    await store.aclose()


async def test_a_terminal_watch_reads_nothing_while_its_session_runs_here(tmp_path: pathlib.Path) -> None:
    # A waiting JSON turn on one worker group: the operation's end wakes the caller, so its
    # watch on the terminal event does not follow the stream until the session is quiet here.
    store = SqliteStreamStore(tmp_path / "streams.db", retention=60, poll_interval=0.5)
    k = key()
    follows = 0
    follow = store.follow

    def counted(k: StreamKey, after: int, idle: float) -> AsyncIterator[StreamEvent | None]:
        nonlocal follows
        follows += 1
        return follow(k, after, idle)

    store.follow = counted  # type: ignore[method-assign,assignment]
    started, release = threading.Event(), threading.Event()

    def operation() -> None:
        with session_operation(f"dafx-{k.agent}", k.session_id):
            started.set()
            asyncio.run(store.append(k, StreamEvent(1, "run.completed")))
            release.wait(5)

    ended = asyncio.Event()
    with terminal_watch(store, k, ended.set):
        running = asyncio.create_task(asyncio.to_thread(operation))
        await asyncio.to_thread(started.wait, 5)
        await asyncio.sleep(0.3)
        assert follows == 0 and not ended.is_set()
        release.set()
        await running
        # Quiet here from now on: were the run's next step elsewhere, its events would come
        # through the stream.
        await asyncio.wait_for(ended.wait(), 5)
    assert follows == 1
    await store.aclose()


async def test_the_watcher_comes_back_for_a_run_once_its_session_stops_running_here(
    tmp_path: pathlib.Path,
) -> None:
    store = SqliteStreamStore(tmp_path / "streams.db", retention=60, poll_interval=0.02)
    k = key()
    await store.declare(k)
    started, release = threading.Event(), threading.Event()

    def operation() -> None:
        with session_operation(f"dafx-{k.agent}", k.session_id):
            started.set()
            release.wait(5)

    running = asyncio.create_task(asyncio.to_thread(operation))
    await asyncio.to_thread(started.wait, 5)
    reader = asyncio.create_task(collect(store, k, 0, idle=30))
    await asyncio.sleep(0.5)  # 25 poll intervals: none while the session runs here
    assert store.checks == 0
    release.set()
    await running
    # The watcher looks at the file again now that the session runs elsewhere (before the write:
    # a read the operation's end wakes could otherwise find it first).
    for _ in range(250):
        if store.checks:
            break
        await asyncio.sleep(0.02)
    assert store.checks > 0
    # The next step runs in another process (a connection of its own, no in-process wakeup).
    with sqlite3.connect(tmp_path / "streams.db") as other:
        insert = "INSERT INTO events (key, seq, type, data) VALUES (?, 1, 'run.completed', '{}')"
        other.execute(insert, (k.text(),))
    got = await asyncio.wait_for(reader, 5)
    assert [e.type for e in got] == ["run.completed"]
    await store.aclose()
