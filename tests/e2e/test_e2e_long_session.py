"""Sessions without a size ceiling, over real HTTP on the local host: ~20 MB of history with a
bounded entity state, paged back byte for byte; kill -9 at every archiving point; missing and
corrupt chunks. Each test runs with the embedded file store and with Azure Blob Storage (Azurite)."""

from __future__ import annotations

import asyncio
import json
import pathlib
import sqlite3
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import orjson
import pytest
from azurite_support import Azurite, azurite  # noqa: F401 - the fixture
from e2e_support import REPO, Client, HostProcess

from agents.testing import ModelServer, Reply
from hosting.archive import ChunkStore, session_prefix, store_from_env
from state import ChunkRef, read_chunk

AGENT = "assistant"
ENTITY = "dafx-assistant"
BOUND = 64 * 1024  # the default entity-state bound, besides the latest turn


@pytest.fixture(params=["files", "azure"])
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> dict[str, str]:
    """The history-store settings of one backend (the host and the test's own store read them)."""
    if request.param == "files":
        return {
            "DURABLE_AGENTS_HISTORY_STORE": "files",
            "DURABLE_AGENTS_HISTORY_DIR": str(tmp_path / "history"),
        }
    server: Azurite = request.getfixturevalue("azurite")
    return {
        "DURABLE_AGENTS_HISTORY_STORE": "azure",
        "DURABLE_AGENTS_HISTORY_CONNECTION": "HistoryStorage",
        "HistoryStorage": server.connection_string,
        "DURABLE_AGENTS_HISTORY_CONTAINER": f"t{abs(hash(tmp_path)) % 10**12}",
    }


def echo(request: Any) -> Reply:
    # Deterministic from the request, so a turn run again after a crash answers the same.
    text = request.last_user_text or ""
    return Reply.text("answer to " + text[::-1])


@pytest.fixture
def long_model() -> Iterator[ModelServer]:
    with ModelServer(mode="scripted") as server:
        server.handler = echo
        yield server


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        yield session


class Session:
    """One long session on a host of its own, and what was sent to it."""

    def __init__(self, tmp: pathlib.Path, model: ModelServer, env: dict[str, str]) -> None:
        self.data = tmp / "host"
        self.model = model
        self.env = env
        self.sent: list[str] = []
        self.host: HostProcess | None = None
        self.store: ChunkStore = store_from_env(env)

    def start(self, **extra: str) -> HostProcess:
        self.host = HostProcess(
            self.data, self.model.base_url, self.data.parent / "host.log", extra_env={**self.env, **extra}
        ).start()
        return self.host

    def client(self, http: aiohttp.ClientSession) -> Client:
        assert self.host is not None
        return Client(http, self.host.url)

    async def stop(self) -> None:
        if self.host is not None:
            self.host.stop()
        await self.store.close()

    def stored(self, session_id: str) -> str | None:
        with sqlite3.connect(self.data / "devhost.db") as db:
            row = db.execute(
                "SELECT state FROM entity_states WHERE entity_id = ?", (f"@{ENTITY}@{session_id}",)
            ).fetchone()
        return None if row is None else str(row[0])


SMALL = {"DURABLE_AGENTS_ARCHIVE_AT_BYTES": "4096", "DURABLE_AGENTS_ARCHIVE_KEEP_BYTES": "1024"}


def start_small(
    tmp: pathlib.Path, model: ModelServer, backend: dict[str, str], http: aiohttp.ClientSession, **env: str
) -> tuple[Session, Client]:
    """A host of its own that archives above 4 KiB (so a few turns make several chunks)."""
    session = Session(tmp, model, {**backend, **SMALL, **env})
    session.start()
    return session, session.client(http)


def message(turn: int, size: int) -> str:
    unit = f'<turn {turn:05d} \u00e9\u6f22 {{"k": [1, 2]}}>'
    return (unit * (size // len(unit) + 1))[:size]


async def run_turn(client: Client, session_id: str, turn: int, size: int) -> Any:
    """One turn, retry-safe (an Idempotency-Key per turn)."""
    return await client.post(
        f"/api/agents/{AGENT}/run",
        json_body={"message": message(turn, size), "session_id": session_id},
        headers={"Idempotency-Key": f"{session_id}-{turn}"},
    )


def last_turn_bytes(text: str) -> int:
    history = json.loads(text)["data"]["conversationHistory"]
    return sum(len(orjson.dumps(e)) for e in history[-2:])


async def full_history(client: Client, session_id: str, limit: int) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        query = f"?limit={limit}" + (f"&before={cursor}" if cursor else "")
        answer = await client.get(f"/api/agents/{AGENT}/sessions/{session_id}/history{query}")
        assert answer.status == 200, answer.body[:400]
        page = answer.json()
        entries.extend(page["entries"])
        cursor = page["next"]
        if cursor is None:
            return entries[::-1]


def check_history(entries: list[dict[str, Any]], turns: list[int], size: int) -> None:
    assert len(entries) == 2 * len(turns)
    for n, turn in enumerate(turns):
        request, response = entries[2 * n], entries[2 * n + 1]
        assert (request["$type"], response["$type"]) == ("request", "response")
        assert request["correlationId"] == response["correlationId"]
        sent = message(turn, size)
        assert request["messages"][0]["contents"][0]["text"] == sent
        assert response["messages"][0]["contents"][0]["text"] == "answer to " + sent[::-1]


async def referenced_chunks(store: ChunkStore, session_id: str, document: dict[str, Any]) -> set[str]:
    archive = document["data"].get("archive")
    if archive is None:
        return set()
    prefix = session_prefix(ENTITY, session_id) + archive["epoch"] + "/"
    names: set[str] = set()
    ref: ChunkRef | None = ChunkRef.from_json(archive["chunks"][-1])
    while ref is not None:
        data = await store.get(prefix + ref.name)
        assert data is not None, f"referenced chunk {ref.name} is missing"
        chunk = read_chunk(ref, data, epoch=archive["epoch"])
        names.add(prefix + ref.name)
        ref = chunk.previous
    return names


async def test_twenty_megabytes_of_history(
    tmp_path: pathlib.Path, long_model: ModelServer, backend: dict[str, str], http: aiohttp.ClientSession
) -> None:
    session = Session(tmp_path, long_model, backend)
    session.start()
    client = session.client(http)
    size = 100_000  # ~100 KB asked, ~100 KB answered: ~200 KB of history per turn
    turns = list(range(100))
    try:
        largest = 0
        for turn in turns:
            answer = await run_turn(client, "long", turn, size)
            assert answer.status == 200, (turn, answer.body[:300])
            stored = session.stored("long")
            assert stored is not None
            assert len(stored.encode()) <= BOUND + last_turn_bytes(stored), (turn, len(stored))
            largest = max(largest, len(stored.encode()) - last_turn_bytes(stored))
        body = await client.session_state(AGENT, "long")
        assert body["entries"] == 200 and body["archived_entries"] > 150
        entries = await full_history(client, "long", limit=37)
        check_history(entries, turns, size)
        total = sum(len(orjson.dumps(e)) for e in entries)
        assert total > 20_000_000
        # The recent part in the state is exactly what the history pages hold at its end.
        recent = body["state"]["data"]["conversationHistory"]
        assert entries[-len(recent) :] == recent
        assert largest <= BOUND
    finally:
        await session.stop()


@pytest.mark.parametrize("point", ["archive-before-chunk", "archive-after-chunk", "after-commit"])
async def test_kill_at_each_archiving_point(
    tmp_path: pathlib.Path, long_model: ModelServer, backend: dict[str, str], http: aiohttp.ClientSession,
    point: str,
) -> None:  # fmt: skip
    env = {**backend, **SMALL}
    session = Session(tmp_path, long_model, env)
    size = 1500
    session.start()
    client = session.client(http)
    sent: list[int] = []
    try:
        for turn in range(3):  # the third turn archives for the first time
            assert (await run_turn(client, "crash", turn, size)).status == 200
            sent.append(turn)
        assert session.host is not None
        session.host.stop()
        # the kill switch is the tests' own (crash_points/sitecustomize.py), loaded in every process
        crash_points = pathlib.Path(__file__).parent / "crash_points"
        crash = {} if point == "after-commit" else {
            "DURABLE_AGENTS_CRASH_AT": point, "PYTHONPATH": f"{crash_points}:{REPO}",
        }  # fmt: skip
        session.start(**crash)
        client = session.client(http)
        turn = len(sent)
        try:
            answer = await run_turn(client, "crash", turn, size)
            assert point == "after-commit" and answer.status == 200
        except (TimeoutError, aiohttp.ClientError):
            assert point != "after-commit"
        sent.append(turn)
        session.host.kill()  # the crash point already killed it, or kill -9 right after the commit
        session.start()
        client = session.client(http)
        # The turn's signal was stored before the crash: it runs (again) after the restart, and
        # its retry is answered (from the history, or after waiting for it).
        assert (await run_turn(client, "crash", turn, size)).status == 200
        for turn in range(len(sent), len(sent) + 4):
            assert (await run_turn(client, "crash", turn, size)).status == 200
            sent.append(turn)
        check_history(await full_history(client, "crash", limit=5), sent, size)
        document = (await client.session_state(AGENT, "crash"))["state"]
        stored = set(await session.store.list_paths(session_prefix(ENTITY, "crash")))
        assert stored == await referenced_chunks(session.store, "crash", document)  # no orphan left
    finally:
        await session.stop()


async def test_missing_and_corrupt_chunks_are_typed_errors(
    tmp_path: pathlib.Path, long_model: ModelServer, backend: dict[str, str], http: aiohttp.ClientSession
) -> None:
    session, client = start_small(tmp_path, long_model, backend, http)
    try:
        for turn in range(8):
            assert (await run_turn(client, "broken", turn, 1500)).status == 200
        document = (await client.session_state(AGENT, "broken"))["state"]
        oldest = sorted(await referenced_chunks(session.store, "broken", document))[0]
        good = await session.store.get(oldest)
        assert good is not None
        before = session.stored("broken")
        for damage in (good[:-10] + b"0123456789", None):
            if damage is None:
                await session.store.delete(oldest)
            else:
                await session.store.put(oldest, damage)
            answer = await client.get(f"/api/agents/{AGENT}/sessions/broken/history?limit=1000")
            assert answer.status == 409, answer.body[:300]
            problem = answer.json()
            assert problem["code"] == "history_unavailable"
            assert problem["chunk"] == oldest.rsplit("/", 1)[-1]
            assert answer.content_type == "application/problem+json"
            # A retry of the first (archived) run needs that chunk too: 409, nothing re-run.
            retry = await run_turn(client, "broken", 0, 1500)
            assert retry.status == 409 and retry.json()["code"] == "history_unavailable"
            assert session.stored("broken") == before
        await session.store.put(oldest, good)
        check_history(await full_history(client, "broken", limit=3), list(range(8)), 1500)
        retry = await run_turn(client, "broken", 0, 1500)
        assert retry.status == 200  # answered from the archive, not run again
        assert session.stored("broken") == before
    finally:
        await session.stop()


async def eventually_true(probe: Any, what: str, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await probe():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


async def test_reset_and_delete_remove_the_chunks_after_commit(
    tmp_path: pathlib.Path, long_model: ModelServer, backend: dict[str, str], http: aiohttp.ClientSession
) -> None:
    session, client = start_small(tmp_path, long_model, backend, http)
    try:
        for name in ("to-reset", "to-delete"):
            for turn in range(6):
                assert (await run_turn(client, name, turn, 1500)).status == 200
            assert await session.store.list_paths(session_prefix(ENTITY, name))
        assert (await client.post(f"/api/agents/{AGENT}/sessions/to-reset/reset")).status == 202
        assert (await client.request("DELETE", f"/api/agents/{AGENT}/sessions/to-delete")).status == 202

        async def gone(name: str) -> bool:
            return not await session.store.list_paths(session_prefix(ENTITY, name))

        await eventually_true(lambda: gone("to-reset"), "the reset session's chunks to go")
        await eventually_true(lambda: gone("to-delete"), "the deleted session's chunks to go")
        tombstone = session.stored("to-delete")  # run ids only (hosting.stored), no content
        assert tombstone is not None and "deletedAt" in tombstone and "<turn" not in tombstone
        assert json.loads(tombstone)["data"]["conversationHistory"] == []
        assert (await client.get(f"/api/agents/{AGENT}/sessions/to-delete")).status == 404
        body = await client.session_state(AGENT, "to-reset")
        assert body["entries"] == 0 and body["archived_entries"] == 0
        # The reset session goes on, archiving into a new epoch.
        for turn in range(6):
            assert (await run_turn(client, "to-reset", 100 + turn, 1500)).status == 200
        check_history(await full_history(client, "to-reset", limit=4), list(range(100, 106)), 1500)
    finally:
        await session.stop()


async def test_idle_sessions_expire_with_their_chunks(
    tmp_path: pathlib.Path, long_model: ModelServer, backend: dict[str, str], http: aiohttp.ClientSession
) -> None:
    ttl = 4
    ttl_env = {f"DURABLE_AGENTS_SESSION_TTL__{AGENT}": str(ttl)}
    session, client = start_small(tmp_path, long_model, backend, http, **ttl_env)
    try:
        for turn in range(6):
            assert (await run_turn(client, "idle", turn, 1500)).status == 200
        body = await client.session_state(AGENT, "idle")
        assert body["expires_at"] is not None
        assert await session.store.list_paths(session_prefix(ENTITY, "idle"))

        async def expired() -> bool:
            answer = await client.get(f"/api/agents/{AGENT}/sessions/idle")
            return answer.status == 404 and not await session.store.list_paths(session_prefix(ENTITY, "idle"))

        await eventually_true(expired, "the idle session to expire", timeout=ttl + 30)

        # Turns racing the expiry: each runs on the old session or on a fresh one, never on half.
        for turn in range(6):
            assert (await run_turn(client, "racing", turn, 1500)).status == 200
        sent = list(range(6))
        fresh_seen = 0
        for attempt, turn in enumerate(range(6, 12)):
            # Arrive around the moment the session falls due: a little before, at, or after it
            # (the last one a sweep interval and a loaded machine's delay after it, so that at
            # least one turn finds the session expired).
            await asyncio.sleep(ttl + (-0.15, 0.0, 0.05, 0.1, 0.2, 1.0)[attempt])
            assert (await run_turn(client, "racing", turn, 1500)).status == 200
            fresh = (await client.session_state(AGENT, "racing"))["entries"] == 2
            fresh_seen += fresh
            sent = [turn] if fresh else [*sent, turn]
            check_history(await full_history(client, "racing", limit=7), sent, 1500)
        assert fresh_seen >= 1  # the session did expire between some of those turns

        # A session recreated by a turn racing its expiry is swept like any other: the agent's
        # sweeper finds every idle session, not only the ones a request created.
        async def racing_expired() -> bool:
            return (await client.get(f"/api/agents/{AGENT}/sessions/racing")).status == 404

        await eventually_true(racing_expired, "the recreated session to expire", timeout=ttl + 30)
        status = await client.get(f"/runtime/webhooks/durabletask/instances/dafx-sweeper-{AGENT}")
        assert status.status == 202 and status.json()["runtimeStatus"] in ("Running", "Pending")
    finally:
        await session.stop()
