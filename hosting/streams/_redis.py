"""The Redis Streams stream store, for Azure (Azure Managed Redis, Azure Cache for Redis) and any
deployment with more than one process or instance.

A run is one Redis stream whose entry ids are ``0-<seq>``: Redis itself refuses an id that is not
higher than the last one, so a second writer of the same run can never interleave events.
Readers replay with ``XRANGE`` and follow with a blocking ``XREAD``. Every append renews the
key's expiry (``retention``).
"""

from __future__ import annotations

import asyncio
import json
import threading
import weakref
from collections.abc import AsyncIterator, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.credentials import CredentialProvider
from redis.exceptions import ResponseError

from ._store import READ_BATCH, RunClaim, StreamConflict, StreamEvent, StreamKey

_PREFIX = "dafx:stream:"


def _seq(entry_id: bytes | str) -> int:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.split("-", 1)[1])


def _claim_text(claim: RunClaim) -> str:
    return json.dumps({"request": claim.request_hash, "live": claim.live}, separators=(",", ":"))


def _parse_claim(value: bytes | str) -> RunClaim:
    try:
        fields = json.loads(value)
        return RunClaim(fields.get("request"), bool(fields.get("live", True)))
    except (ValueError, AttributeError):  # a bare declaration ("1"): nothing known
        return RunClaim(None)


def _event(entry_id: bytes | str, fields: dict[Any, Any]) -> StreamEvent:
    def field(name: str) -> str:
        value = fields.get(name.encode(), fields.get(name))
        return value.decode() if isinstance(value, bytes) else str(value)

    return StreamEvent(_seq(entry_id), field("type"), json.loads(field("data")))


class RedisStreamStore:
    """`StreamStore` on Redis Streams; one client (connection pool) per event loop."""

    def __init__(
        self, url: str, retention: float, *, credential_provider: CredentialProvider | None = None
    ) -> None:
        self.url = url
        self.retention = retention
        self._credentials = credential_provider
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aioredis.Redis] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def _client(self) -> aioredis.Redis:
        # Connections belong to the loop that opened them (hosting runs a loop per entity thread).
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.get(loop)
            if client is None:
                options: dict[str, Any] = {}
                if self._credentials is not None:
                    options["credential_provider"] = self._credentials
                client = self._clients[loop] = aioredis.Redis.from_url(self.url, **options)
        return client

    def _name(self, key: StreamKey) -> str:
        return _PREFIX + key.text()

    def _marker(self, key: StreamKey) -> str:
        return _PREFIX + "declared:" + key.text()

    def _ttl(self) -> int:
        return max(1, int(self.retention))

    async def declare(self, key: StreamKey) -> None:
        await self._client().set(self._marker(key), b"1", ex=self._ttl())

    async def claim(self, key: StreamKey, claim: RunClaim, *, replace: bool = False) -> RunClaim | None:
        client = self._client()
        text = _claim_text(claim)
        while True:
            # SET NX: of two requests racing for one run, exactly one claims it.
            if await client.set(self._marker(key), text, ex=self._ttl(), nx=not replace):
                return None
            found = await client.get(self._marker(key))
            if found is not None:
                return _parse_claim(found)
            # It expired between the two commands: try again.

    async def claimed(self, key: StreamKey) -> RunClaim | None:
        found = await self._client().get(self._marker(key))
        return None if found is None else _parse_claim(found)

    async def opening(self, key: StreamKey) -> tuple[RunClaim | None, StreamEvent | None]:
        # One round trip (a pipeline without MULTI): both are reads.
        pipe = self._client().pipeline(transaction=False)
        pipe.get(self._marker(key))
        pipe.xrevrange(self._name(key), count=1)
        found, entries = await pipe.execute()
        claim = None if found is None else _parse_claim(found)
        return claim, (_event(*entries[0]) if entries else None)

    async def release(self, key: StreamKey) -> None:
        await self._client().delete(self._marker(key))

    async def exists(self, key: StreamKey) -> bool:
        return bool(await self._client().exists(self._name(key), self._marker(key)))

    async def append(self, key: StreamKey, event: StreamEvent) -> None:
        await self.append_many(key, [event])

    async def append_many(self, key: StreamKey, events: Sequence[StreamEvent]) -> None:
        name = self._name(key)
        pipe = self._client().pipeline(transaction=True)
        for event in events:
            fields = {"type": event.type, "data": json.dumps(event.data, separators=(",", ":"))}
            pipe.xadd(name, fields, id=f"0-{event.seq}")  # type: ignore[arg-type]
        pipe.expire(name, self._ttl())
        pipe.expire(self._marker(key), self._ttl())
        try:
            await pipe.execute()
        except ResponseError as exc:
            if "equal or smaller" in str(exc):
                raise StreamConflict(
                    f"events {events[0].seq}-{events[-1].seq} of {key.text()}: a number is taken"
                ) from exc
            raise

    async def last(self, key: StreamKey) -> StreamEvent | None:
        entries: Any = await self._client().xrevrange(self._name(key), count=1)
        if not entries:
            return None
        entry_id, fields = entries[0]
        return _event(entry_id, fields)

    async def discard(self, key: StreamKey) -> None:
        await self._client().delete(self._name(key))

    async def follow(self, key: StreamKey, after: int, idle: float) -> AsyncIterator[StreamEvent | None]:
        client = self._client()
        name = self._name(key)
        block = max(1, int(idle * 1000))
        while True:
            found: Any = await client.xread({name: f"0-{after}"}, count=READ_BATCH, block=block)
            if not found:
                yield None  # `idle` passed without an event
                continue
            for _, entries in found:
                for entry_id, fields in entries:
                    event = _event(entry_id, fields)
                    yield event
                    if event.terminal:
                        return
                    after = event.seq

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.pop(loop, None)
        if client is not None:
            await client.aclose()
