"""The Redis Streams stream store, for Azure (Azure Managed Redis, Azure Cache for Redis) and any
deployment with more than one process or instance.

A run is one Redis stream whose entry ids are ``0-<seq>``: Redis itself refuses an id that is not
higher than the last one, so a second writer of the same run can never interleave events.
Every append renews the key's expiry (``retention``).

Keys start with the app's prefix (app and task hub: `key_prefix`) and carry the run as a hash tag
(``{agent:session:correlation}``), so a run's keys (events, claim, cancel request) live in one slot of a
cluster and its transactions stay valid there. A cluster (``DURABLE_AGENTS_STREAM_REDIS_CLUSTER``,
or a server that reports ``cluster_enabled:1``) is spoken to with redis-py's cluster client.

Connections: per event loop, one pool for short commands (claims, appends, reads) and another for
blocking reads, so readers never take the connections run admission needs. The blocking reads are
shared: one ``XREAD BLOCK`` per run and loop (`_Tail`) serves every reader of that run in the
loop, and ends once its readers have left. Redis errors (unreachable, out of connections) are
`StreamStoreUnavailable`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.credentials import CredentialProvider
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from agents import PerLoop

from ._store import READ_BATCH, RunClaim, StreamConflict, StreamEvent, StreamKey, StreamStoreUnavailable

T = TypeVar("T")

COMMAND_CONNECTIONS = 100
"""Most connections one event loop opens for short commands."""
COMMAND_WAIT_SECONDS = 5.0
"""How long a command waits for one of them (a burst of readers replaying at once) before the
store is unavailable (503 with Retry-After)."""
READER_CONNECTIONS = 200
"""Most connections one event loop holds for blocking reads (one per run being read there); a
run's readers past it wait for one, with heartbeats meanwhile."""
TAIL_BLOCK_MS = 1000
"""How long one blocking read waits; a tail whose readers left ends within it."""
TAIL_KEEP = 1024
"""Events a tail keeps for its readers; one further behind reads them again (XRANGE)."""
DOWN = (RedisConnectionError, RedisTimeoutError, OSError)


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


def _unavailable(error: Exception) -> StreamStoreUnavailable:
    name = type(error).__name__
    return StreamStoreUnavailable(f"the stream store (Redis) could not be reached: {name}: {error}")


async def _guard(call: Awaitable[T]) -> T:
    try:
        return await call
    except DOWN as error:
        raise _unavailable(error) from error


@dataclass
class _Clients:
    commands: Any  # aioredis.Redis or aioredis.RedisCluster
    readers: Any
    tails: dict[str, _Tail]
    slots: asyncio.Semaphore
    """One per command connection: a command waits for a free one (the pools of redis-py, the
    cluster's too, refuse at once when full)."""


class _Tail:
    """The one blocking read of a run in an event loop, shared by that run's readers there."""

    def __init__(self, readers: Any, name: str, after: int, done: Callable[[], None]) -> None:
        self.events: list[StreamEvent] = []
        self.position = after  # the last seq read
        self.changed = asyncio.Event()
        self.error: StreamStoreUnavailable | None = None
        self.readers = 0
        self._done = done
        self._task = asyncio.get_running_loop().create_task(self._run(readers, name))

    def since(self, after: int) -> list[StreamEvent] | None:
        """The kept events after `after`; None when some of them are no longer kept."""
        if self.events and after + 1 < self.events[0].seq:
            return None
        if not self.events and after < self.position:
            return None
        return [e for e in self.events if e.seq > after]

    @property
    def ended(self) -> bool:
        return self._task.done()

    def cancel(self) -> None:
        self._task.cancel()

    def _publish(self) -> None:
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()

    async def _run(self, readers: Any, name: str) -> None:
        try:
            while self.readers > 0:
                since = {name: f"0-{self.position}"}
                found: Any = await readers.xread(since, count=READ_BATCH, block=TAIL_BLOCK_MS)
                entries = [e for _, batch in (found or []) for e in batch]
                if not entries:
                    continue
                new = [_event(entry_id, fields) for entry_id, fields in entries]
                self.events = (self.events + new)[-TAIL_KEEP:]
                self.position = new[-1].seq
                self._publish()
                if any(e.terminal for e in new):
                    break
        except DOWN as error:
            self.error = _unavailable(error)
        except Exception as error:  # not expected; the readers must not wait for nothing
            self.error = StreamStoreUnavailable(f"the stream store (Redis) failed: {error!r}")
        finally:
            self._done()
            self._publish()


class RedisStreamStore:
    """`StreamStore` on Redis Streams (see the module)."""

    def __init__(
        self,
        url: str,
        retention: float,
        *,
        credential_provider: CredentialProvider | None = None,
        cluster: bool | None = None,
        prefix: str = "dafx:",
        command_connections: int = COMMAND_CONNECTIONS,
        command_wait: float = COMMAND_WAIT_SECONDS,
    ) -> None:
        self.url = url
        self.retention = retention
        self.prefix = prefix
        self.cluster = cluster
        """True/False as configured; None: asked of the server once."""
        self._credentials = credential_provider
        self._command_connections = command_connections
        self._command_wait = command_wait
        self._clients_by_loop: PerLoop[_Clients] = PerLoop()

    # -- connections ------------------------------------------------------------------------

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"socket_connect_timeout": 5, "socket_timeout": 10}
        if self._credentials is not None:
            options["credential_provider"] = self._credentials
        return options

    async def _is_cluster(self) -> bool:
        if self.cluster is None:
            probe = aioredis.Redis.from_url(self.url, **self._options())
            try:
                info: Any = await _guard(probe.info("cluster"))
                self.cluster = bool(info.get("cluster_enabled"))
            finally:
                await probe.aclose()
        return self.cluster

    async def _clients(self) -> _Clients:
        # Connections belong to the loop that opened them (hosting runs a loop per entity thread).
        made = self._clients_by_loop.get()
        if made is not None:
            return made
        options = self._options()
        if await self._is_cluster():
            cluster = aioredis.RedisCluster
            commands: Any = cluster.from_url(self.url, max_connections=self._command_connections, **options)
            readers: Any = cluster.from_url(self.url, max_connections=READER_CONNECTIONS, **options)
        else:
            commands = aioredis.Redis.from_url(self.url, max_connections=self._command_connections, **options)
            pool = aioredis.BlockingConnectionPool.from_url(
                self.url, max_connections=READER_CONNECTIONS, timeout=None, **options
            )
            readers = aioredis.Redis(connection_pool=pool)
        fresh = _Clients(commands, readers, {}, asyncio.Semaphore(self._command_connections))
        made = self._clients_by_loop.setdefault(fresh)
        if made.commands is not commands:  # another task of this loop made them first
            await commands.aclose()
            await readers.aclose()
        return made

    async def _run(self, command: Callable[[Any], Awaitable[T]]) -> T:
        """`command(client)` on the loop's command client, Redis errors as `StreamStoreUnavailable`."""
        clients = await self._clients()
        try:
            async with asyncio.timeout(self._command_wait):
                await clients.slots.acquire()
        except TimeoutError:
            raise StreamStoreUnavailable(
                f"the stream store (Redis): all {self._command_connections} connections of this "
                f"process stayed in use for {self._command_wait:g} s"
            ) from None
        try:
            return await _guard(command(clients.commands))
        finally:
            clients.slots.release()

    # -- keys -------------------------------------------------------------------------------

    def _name(self, key: StreamKey) -> str:
        return f"{self.prefix}stream:{{{key.text()}}}"

    def _marker(self, key: StreamKey) -> str:
        return f"{self.prefix}claim:{{{key.text()}}}"

    def _cancel_key(self, key: StreamKey) -> str:
        return f"{self.prefix}cancel:{{{key.text()}}}"

    def _ttl(self) -> int:
        return max(1, int(self.retention))

    # -- the store --------------------------------------------------------------------------

    async def declare(self, key: StreamKey) -> None:
        await self._run(lambda c: c.set(self._marker(key), b"1", ex=self._ttl()))

    async def claim(self, key: StreamKey, claim: RunClaim, *, replace: bool = False) -> RunClaim | None:
        text, marker = _claim_text(claim), self._marker(key)
        while True:
            # SET NX: of two requests racing for one run, exactly one claims it.
            if await self._run(lambda c: c.set(marker, text, ex=self._ttl(), nx=not replace)):
                return None
            found = await self._run(lambda c: c.get(marker))
            if found is not None:
                return _parse_claim(found)
            # It expired between the two commands: try again.

    async def claimed(self, key: StreamKey) -> RunClaim | None:
        found = await self._run(lambda c: c.get(self._marker(key)))
        return None if found is None else _parse_claim(found)

    async def request_cancel(self, key: StreamKey) -> bool:
        await self._run(lambda c: c.set(self._cancel_key(key), b"1", ex=self._ttl()))
        return True

    async def withdraw_cancel(self, key: StreamKey) -> None:
        await self._run(lambda c: c.delete(self._cancel_key(key)))

    async def cancel_requested(self, key: StreamKey) -> bool:
        return bool(await self._run(lambda c: c.exists(self._cancel_key(key))))

    async def opening(self, key: StreamKey) -> tuple[RunClaim | None, StreamEvent | None]:
        async def both(client: Any) -> list[Any]:
            # One round trip (a pipeline without MULTI): both are reads (of one slot).
            pipe = client.pipeline(transaction=False)
            pipe.get(self._marker(key))
            pipe.xrevrange(self._name(key), count=1)
            return list(await pipe.execute())

        found, entries = await self._run(both)
        claim = None if found is None else _parse_claim(found)
        return claim, (_event(*entries[0]) if entries else None)

    async def release(self, key: StreamKey) -> None:
        await self._run(lambda c: c.delete(self._marker(key)))

    async def exists(self, key: StreamKey) -> bool:
        return bool(await self._run(lambda c: c.exists(self._name(key), self._marker(key))))

    async def append(self, key: StreamKey, event: StreamEvent) -> None:
        await self.append_many(key, [event])

    async def append_many(self, key: StreamKey, events: Sequence[StreamEvent]) -> None:
        name = self._name(key)

        async def write(client: Any) -> None:
            # MULTI on one node; on a cluster a plain pipeline: redis-py 8.1's cluster transaction
            # failed on a second event loop of the process ("attached to a different loop"), and
            # hosting runs a loop per entity thread. No other writer can interleave either way:
            # Redis refuses an id that is not above the last.
            pipe = client.pipeline(transaction=not self.cluster)
            for event in events:
                fields = {"type": event.type, "data": json.dumps(event.data, separators=(",", ":"))}
                pipe.xadd(name, fields, id=f"0-{event.seq}")
            pipe.expire(name, self._ttl())
            pipe.expire(self._marker(key), self._ttl())
            await pipe.execute()

        try:
            await self._run(write)
        except ResponseError as exc:
            if "equal or smaller" in str(exc):
                raise StreamConflict(
                    f"events {events[0].seq}-{events[-1].seq} of {key.text()}: a number is taken"
                ) from exc
            raise

    async def _range(self, key: StreamKey, after: int) -> list[StreamEvent]:
        start = f"(0-{after}"  # exclusive
        entries: Any = await self._run(lambda c: c.xrange(self._name(key), start, count=READ_BATCH))
        return [_event(entry_id, fields) for entry_id, fields in entries]

    async def last(self, key: StreamKey) -> StreamEvent | None:
        entries: Any = await self._run(lambda c: c.xrevrange(self._name(key), count=1))
        if not entries:
            return None
        entry_id, fields = entries[0]
        return _event(entry_id, fields)

    async def discard(self, key: StreamKey) -> None:
        await self._run(lambda c: c.delete(self._name(key)))

    @contextlib.asynccontextmanager
    async def _tail(self, key: StreamKey, after: int) -> AsyncIterator[_Tail]:
        clients = await self._clients()
        name = self._name(key)
        tail = clients.tails.get(name)
        if tail is None or tail.error is not None:

            def done() -> None:
                if clients.tails.get(name) is tail:
                    del clients.tails[name]

            tail = clients.tails[name] = _Tail(clients.readers, name, after, done)
        tail.readers += 1
        try:
            yield tail
        finally:
            tail.readers -= 1

    async def follow(self, key: StreamKey, after: int, idle: float) -> AsyncIterator[StreamEvent | None]:
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        while True:
            # Replay (short reads on the command pool), then follow the run's shared tail.
            events = await self._range(key, after)
            if not events:
                break
            for event in events:
                yield event
                if event.terminal:
                    return
                after = event.seq
        quiet_since = loop.time()
        while True:
            async with self._tail(key, after) as tail:
                while True:
                    changed = tail.changed
                    kept = tail.since(after)
                    # None: behind what the tail keeps; read them again.
                    events = kept if kept is not None else await self._range(key, after)
                    for event in events:
                        yield event
                        if event.terminal:
                            return
                        after = event.seq
                    if events:
                        quiet_since = loop.time()
                        continue
                    if tail.error is not None:
                        raise tail.error
                    if tail.ended:
                        break  # it read a terminal event this reader had passed: a tail of its own
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(changed.wait(), max(0.0, quiet_since + idle - loop.time()))
                    if loop.time() - quiet_since >= idle:
                        yield None
                        quiet_since = loop.time()

    async def ping(self) -> str:
        started = time.perf_counter()
        await self._run(lambda c: c.ping())
        kind = "Redis cluster" if self.cluster else "Redis"
        return f"{kind} answered in {(time.perf_counter() - started) * 1000:.0f} ms"

    async def aclose(self) -> None:
        clients = self._clients_by_loop.pop()
        if clients is not None:
            for tail in list(clients.tails.values()):
                tail.cancel()
            await clients.commands.aclose()
            await clients.readers.aclose()
