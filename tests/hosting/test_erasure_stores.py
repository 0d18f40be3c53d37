"""The erasure's store work (hosting.lifecycle._erasure.Eraser) on the real stores: a session's
runs' stream events are counted, then their events, declarations and claims deleted with its
archived chunks (every epoch), nothing of another session's; doing it again deletes nothing
more; an app without a shared stream store counts none and still erases."""

from __future__ import annotations

import pathlib
import uuid
from collections.abc import AsyncIterator

import pytest

from hosting.archive import FileChunkStore, HistoryArchive, chunk_path, policy_from_env
from hosting.lifecycle._erasure import Eraser
from hosting.streams import RunClaim, SqliteStreamStore, StreamEvent, StreamKey, StreamStore
from hosting.streams._redis import RedisStreamStore
from hosting.streams._unshared import UnsharedStreamStore


@pytest.fixture(params=["sqlite", "redis", "redis-cluster", "unshared"])
async def store(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> AsyncIterator[StreamStore]:
    made: StreamStore
    if request.param == "redis":
        made = RedisStreamStore(request.getfixturevalue("redis_url"), retention=60)
    elif request.param == "redis-cluster":
        made = RedisStreamStore(request.getfixturevalue("redis_cluster_url"), retention=60)
    elif request.param == "unshared":
        made = UnsharedStreamStore(retention=60)
    else:
        made = SqliteStreamStore(tmp_path / "streams.db", retention=60, poll_interval=0.05)
    yield made
    await made.aclose()


async def _events(store: StreamStore, key: StreamKey, count: int) -> None:
    if isinstance(store, UnsharedStreamStore):
        return  # it keeps nothing (and refuses claims)
    await store.claim(key, RunClaim("hash", live=True))
    await store.append_many(key, [StreamEvent(n, "text.delta", {"n": n}) for n in range(1, count + 1)])


async def test_a_sessions_streams_and_chunks_are_counted_then_erased_and_no_one_elses(
    store: StreamStore, tmp_path: pathlib.Path
) -> None:
    agent, mine, other = "assistant", f"s-{uuid.uuid4().hex[:8]}", f"o-{uuid.uuid4().hex[:8]}"
    r1, r2 = StreamKey(agent, mine, "r1"), StreamKey(agent, mine, "r2")
    theirs = StreamKey(agent, other, "r1")
    for key, count in ((r1, 3), (r2, 2), (theirs, 4)):
        await _events(store, key, count)
    chunks = FileChunkStore(tmp_path / "history")
    for session, epoch in ((mine, "e1"), (mine, "e2"), (other, "e1")):
        await chunks.put(chunk_path(f"dafx-{agent}", session, epoch, "00000000-ab"), b"{}")
    eraser = Eraser(store, HistoryArchive(chunks, policy_from_env({})))
    shared = not isinstance(store, UnsharedStreamStore)

    assert await eraser.events(agent, mine, ["r1", "r2", "never-ran"]) == (5 if shared else 0)
    spec = {"agent": agent, "sessions": [{"session": mine, "run_ids": ["r1", "r2", "never-ran"]}]}
    for _ in range(2):  # a replay after a crash repeats it: nothing more goes, nothing fails
        assert await eraser.forget_sessions(spec) == 1
        for key in (r1, r2):
            assert await store.claimed(key) is None
            if shared:
                assert await store.last(key) is None and not await store.exists(key)
        assert await chunks.list_paths(f"dafx-{agent}/s-{mine}/") == []
    # Another session's stream and chunks are untouched.
    assert len(await chunks.list_paths(f"dafx-{agent}/s-{other}/")) == 1
    if shared:
        last = await store.last(theirs)
        assert last is not None and last.seq == 4 and await store.claimed(theirs) is not None
