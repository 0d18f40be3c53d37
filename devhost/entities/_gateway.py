"""Entities: one writer per instance, batches through the app's entity functions, SQLite queue.

An operation is first committed as a pending message; its worker then runs the queued
operations of that instance as one batch through the Durable JSON batch protocol and commits
the new state, the removal of the consumed messages, the results of called operations and the
signals the entity emitted in one transaction. A killed host therefore redelivers exactly the
operations whose turn was not committed.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from .._errors import EntityBatchAborted, EntityIdError
from .._settings import DEFAULT_MAX_STATE_BYTES
from ..functions import AppModel
from ..worker import FunctionTimedOut, Workers, invocation
from ._store import EntityStore, Message, NewMessage, StoredResult

DEFAULT_MAX_BATCH = 50
# After a storage failure (e.g. the file is locked too long) or an aborted batch, retry the
# instance's queue: after 1 s, doubling per failure in a row up to 30 s.
_RETRY_SECONDS = 1.0
_MAX_RETRY_SECONDS = 30.0


def _split(entity_id: str) -> tuple[str, str]:
    if not entity_id.startswith("@"):
        raise EntityIdError(f"entity id {entity_id!r} is not of the form @name@key")
    name, sep, key = entity_id[1:].partition("@")
    if not sep or not name or not key:
        raise EntityIdError(f"entity id {entity_id!r} is not of the form @name@key")
    return name, key


def parse_entity_id(entity_id: str) -> tuple[str, str]:
    """Split ``@name@key`` (the SDK's ``EntityId`` string form) into lower-case name and key: the
    ``EntityId`` the extension builds from an instance id (``GetEntityIdFromSchedulerId``, whose
    constructor lower-cases the name), which picks the entity function and is the batch's ``self``."""
    name, key = _split(entity_id)
    return name.lower(), key


def make_entity_id(name: str, key: str) -> str:
    """The ``@name@key`` instance id of an ``EntityId`` the extension constructs (a client's HTTP
    call, an orchestration's entity action): its constructor lower-cases the name."""
    return signal_target_id(name.lower(), key)


def signal_target_id(name: str, key: str) -> str:
    """The instance id a signal in an entity's batch output goes to: the name as written. The
    extension deserialises the target into an ``EntityId`` by its JSON setters, so nothing
    lower-cases it, and a target ``Counter`` reaches ``@Counter@key``, another instance than the
    ``@counter@key`` every client call reaches (``EntityScheduler/EntityId.cs``;
    ``TaskEntityShim.ExecuteOutOfProcBatch``, ``OutOfProcResult.Signal.Target``)."""
    if not name or not key or "@" in name:
        raise EntityIdError(f"bad entity name/key {name!r}/{key!r}")
    return f"@{name}@{key}"


def canonical_entity_id(entity_id: str) -> str:
    """``entity_id`` as the extension's ``EntityId`` has it (the name lower-cased)."""
    return make_entity_id(*_split(entity_id))


def encode_input(value: Any) -> str:
    """Wire text of an operation input, as the extension hands it to the Python SDK.

    The SDK decodes a batch item's ``input`` twice (``json.loads`` then ``df_loads``), so the
    value travels as the JSON encoding of its JSON text.
    """
    return json.dumps(json.dumps(value))


def _input_ids(input_text: str | None) -> tuple[str | None, str | None]:
    """The correlation id and the W3C trace id an operation's input names, for its log line."""
    if not input_text:
        return None, None
    try:
        value = json.loads(input_text)
        if isinstance(value, str):
            value = json.loads(value)
    except ValueError:
        return None, None
    if not isinstance(value, dict):
        return None, None
    keys = ("correlationId", "correlation_id")
    correlation = next((str(value[key]) for key in keys if isinstance(value.get(key), str)), None)
    carried = value.get("traceContext")
    parent = carried.get("traceparent") if isinstance(carried, dict) else None
    trace_id = parent.split("-")[1] if isinstance(parent, str) and parent.count("-") == 3 else None
    return correlation, trace_id


def _decode_result(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _emitted(signals: Any, parent: str) -> list[NewMessage]:
    """Signals an entity returned in its batch output, as queue messages."""
    out: list[NewMessage] = []
    for item in signals if isinstance(signals, list) else []:
        if not isinstance(item, dict):
            continue
        target = item.get("target")
        if isinstance(target, dict):
            target = signal_target_id(str(target.get("name")), str(target.get("key")))
        if not isinstance(target, str) or not isinstance(item.get("name"), str):
            continue
        raw = item.get("input")
        text = raw if isinstance(raw, str) or raw is None else json.dumps(json.dumps(raw))
        out.append(NewMessage(target, item["name"], text, None, True, parent))
    return out


@dataclass
class _Outcome:
    is_error: bool
    result: str | None  # JSON text (as the SDK produces it)
    duration_ms: int


class EntityGateway:
    """Runs entity operations; the orchestration engine and the RPC API go through it."""

    def __init__(
        self,
        *,
        store: EntityStore,
        model: AppModel,
        functions: Workers,
        logger: logging.Logger,
        max_batch: int = DEFAULT_MAX_BATCH,
        max_state_bytes: int = DEFAULT_MAX_STATE_BYTES,
        concurrency: int = 32,
    ) -> None:
        self._store = store
        self._model = model
        self._functions = functions
        # Entity batches running at once: host.json's maxConcurrentEntityFunctions.
        self._slots = asyncio.Semaphore(max(1, concurrency))
        self._log = logger
        self.max_batch = max(1, max_batch)
        self.max_state_bytes = max_state_bytes
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._dirty: set[str] = set()
        self._waiters: dict[str, list[asyncio.Future[tuple[bool, Any]]]] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._stopping = False
        self._failures: dict[str, int] = {}  # batches failed in a row, per entity (back-off)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> int:
        """Redeliver every message left pending by a previous run; returns how many entities."""
        pending = await self._store.run(self._store.pending_entities)
        for entity_id, due_at in pending:
            self._schedule(entity_id, due_at)
        return len(pending)

    async def stop(self, timeout: float = 5.0) -> None:
        """Let running batches finish (up to ``timeout``); the rest is redelivered next start."""
        self._stopping = True
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        tasks = list(self._workers.values())
        if tasks:
            _, still_running = await asyncio.wait(tasks, timeout=timeout)
            if still_running:
                # Their batches are not committed, so they are redelivered at the next start;
                # waiting for them (a model call can take minutes) would make Ctrl-C hang.
                self._log.warning("abandoning %d running function call(s); uncommitted entity operations "
                                  "are redelivered at the next start", len(still_running))
            for task in still_running:
                task.cancel()
            await asyncio.gather(*still_running, return_exceptions=True)
        for futures in self._waiters.values():
            for fut in futures:
                fut.cancel()
        self._waiters.clear()

    # -- public API used by the orchestration engine -----------------------------------------

    async def call(
        self,
        entity_id: str,
        operation: str,
        input: Any,
        *,
        parent: str | None = None,
        request_id: str | None = None,
    ) -> tuple[bool, Any]:
        """Run ``operation`` and wait for it: ``(True, result)`` or ``(False, error message)``.

        ``input`` is the Python value (decode an action's JSON ``input`` text first). With a
        ``request_id`` the call is idempotent across host restarts: an already committed
        result is returned, an already queued operation is awaited, not queued again.
        """
        # An orchestration's entity action names its target by instance id, which the extension
        # turns into an EntityId (OutOfProcOrchestrationShim: GetEntityIdFromSchedulerId).
        entity_id = canonical_entity_id(entity_id)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[tuple[bool, Any]] = loop.create_future()
        rid = request_id or uuid.uuid4().hex
        self._waiters.setdefault(rid, []).append(fut)
        try:
            queued = False
            if request_id is not None:
                done, queued = await self._store.run(self._store.lookup_request, request_id)
                if done is not None:
                    return (not done.is_error, _decode_result(done.result))
            if not queued and not fut.done():
                await self.enqueue(
                    NewMessage(entity_id, operation, encode_input(input), rid, False, parent)
                )
            return await fut
        finally:
            waiters = self._waiters.get(rid)
            if waiters is not None and fut in waiters:
                waiters.remove(fut)
                if not waiters:
                    del self._waiters[rid]

    async def signal(
        self,
        entity_id: str,
        operation: str,
        input: Any,
        *,
        scheduled_time: datetime | None = None,
    ) -> None:
        """Queue ``operation`` (committed when this returns); ``input`` is the Python value."""
        await self.signal_raw(entity_id, operation, encode_input(input), scheduled_time=scheduled_time)

    async def signal_raw(
        self,
        entity_id: str,
        operation: str,
        input_text: str | None,
        *,
        scheduled_time: datetime | None = None,
        parent: str | None = None,
    ) -> None:
        """Like ``signal`` with the input already in wire form (an HTTP signal's body)."""
        entity_id = canonical_entity_id(entity_id)
        due = None
        if scheduled_time is not None:
            if scheduled_time.tzinfo is None:
                scheduled_time = scheduled_time.replace(tzinfo=UTC)
            due = scheduled_time.timestamp()
        await self.enqueue(
            NewMessage(entity_id, operation, input_text, None, True, parent, due)
        )

    async def read_state(self, entity_id: str) -> tuple[bool, str | None]:
        """``(exists, state JSON text)`` of the last committed turn."""
        parse_entity_id(entity_id)
        state = await self._store.run(self._store.load_state, entity_id)
        return (state is not None, state)

    def has_entity(self, name: str) -> bool:
        """Whether the app registers an entity function called ``name`` (case-insensitive)."""
        return name.lower() in self._model.entities

    async def enqueue(self, message: NewMessage) -> None:
        """Commit ``message`` to the queue, then wake its entity's worker."""
        await self._store.run(self._store.enqueue, [message])
        self._schedule(message.entity_id, message.due_at)

    # -- workers -------------------------------------------------------------------------

    def _schedule(self, entity_id: str, due_at: float | None) -> None:
        if self._stopping:
            return
        delay = 0.0 if due_at is None else due_at - time.time()
        if delay > 0.001:
            old = self._timers.pop(entity_id, None)
            if old is not None and old.when() - asyncio.get_running_loop().time() < delay:
                self._timers[entity_id] = old  # an earlier wake-up is already set
                return
            if old is not None:
                old.cancel()
            self._timers[entity_id] = asyncio.get_running_loop().call_later(
                delay, self._wake, entity_id
            )
            return
        self._wake(entity_id)

    def _wake(self, entity_id: str) -> None:
        self._timers.pop(entity_id, None)
        if self._stopping:
            return
        if entity_id in self._workers:
            self._dirty.add(entity_id)
            return
        self._workers[entity_id] = asyncio.create_task(
            self._worker(entity_id), name=f"entity {entity_id}"
        )

    async def _worker(self, entity_id: str) -> None:
        try:
            name, key = parse_entity_id(entity_id)
            state: str | None = None
            loaded = False
            while not self._stopping:
                self._dirty.discard(entity_id)
                # One trip to the database thread per batch: each trip is two thread wakeups on
                # the path from a signal to its batch (and from a commit to the next read).
                stored, messages, next_due = await self._store.run(
                    functools.partial(self._store.next_batch, with_state=not loaded),
                    entity_id, time.time(), self.max_batch,
                )
                if not loaded:
                    state, loaded = stored, True
                if not messages:
                    if entity_id in self._dirty:
                        continue
                    if next_due is not None:
                        self._workers.pop(entity_id, None)
                        self._schedule(entity_id, next_due)
                        return
                    if entity_id in self._dirty:
                        continue
                    break
                state = await self._turn(entity_id, name, key, state, messages)
                self._failures.pop(entity_id, None)
        except Exception as error:
            failures = self._failures[entity_id] = self._failures.get(entity_id, 0) + 1
            delay = min(_RETRY_SECONDS * 2 ** (failures - 1), _MAX_RETRY_SECONDS)
            if isinstance(error, EntityBatchAborted):
                self._log.error("entity %s: %s; nothing was committed, the batch is retried in %ss",
                                entity_id, error, delay)
            else:
                self._log.exception("entity worker %s failed; its queue is kept and retried in %ss",
                                    entity_id, delay)
            if self._workers.get(entity_id) is asyncio.current_task():
                del self._workers[entity_id]
            self._schedule(entity_id, time.time() + delay)
        finally:
            if self._workers.get(entity_id) is asyncio.current_task():
                del self._workers[entity_id]

    async def _turn(
        self, entity_id: str, name: str, key: str, state: str | None, messages: list[Message]
    ) -> str | None:
        """Run ``messages`` as one batch (or one by one when the batch outgrows the limit)."""
        new_state, outcomes, emitted = await self._execute(name, key, state, messages)
        if new_state is not None and len(new_state.encode()) > self.max_state_bytes:
            if len(messages) > 1:
                # Find the operation that crossed the limit: replay the batch one at a time.
                return await self._one_by_one(entity_id, name, key, state, messages)
            size = len(new_state.encode())
            message = (
                f"entity state too large: the operation would store {size} bytes, more than the "
                f"limit of {self.max_state_bytes} bytes; the state was left unchanged"
            )
            outcomes = [_Outcome(True, json.dumps(message), outcomes[0].duration_ms)]
            new_state = state
            emitted = []
        await self._commit(entity_id, name, key, state, new_state, messages, outcomes, emitted)
        return new_state

    async def _one_by_one(
        self, entity_id: str, name: str, key: str, state: str | None, messages: list[Message]
    ) -> str | None:
        for message in messages:
            state = await self._turn(entity_id, name, key, state, [message])
        return state

    async def _execute(
        self, name: str, key: str, state: str | None, messages: list[Message]
    ) -> tuple[str | None, list[_Outcome], list[NewMessage]]:
        entity = self._model.entities.get(name)
        if entity is None:
            error = json.dumps(f"no entity function named {name!r} in the app")
            return state, [_Outcome(True, error, 0) for _ in messages], []
        # orjson: the envelope holds the whole state as one string, which the standard library
        # escapes and unescapes character by character (a tenth of the host's CPU per turn).
        request = orjson.dumps(
            {
                "self": {"name": name, "key": key},
                "exists": state is not None,
                "state": state,
                "batch": [
                    {
                        "id": m.request_id or str(m.seq),
                        "name": m.operation,
                        "signal": m.is_signal,
                        "input": m.input if m.input is not None else "null",
                        "parent": m.parent,
                    }
                    for m in messages
                ],
            }
        ).decode()
        try:
            call = invocation.request(entity.function_id, {entity.param: invocation.string(request)})
            async with self._slots:
                try:
                    answer = await self._functions.invoke("entityTrigger", call)
                except FunctionTimedOut as timed_out:
                    # The extension commits a batch whose invocation timed out as every operation
                    # failed, the state unchanged, and does not run it again.
                    self._log.error("entity %s@%s: %s; its %d operation(s) failed", name, key, timed_out,
                                    len(messages))
                    failed = json.dumps(f"the entity function ran past functionTimeout: {timed_out}")
                    return state, [_Outcome(True, failed, 0) for _ in messages], []
            raw = invocation.text_of(invocation.returned(answer))
            if raw is None:
                raise ValueError("the entity function returned nothing")
            # The SDK's envelope: strings, booleans and millisecond counts (nothing orjson reads
            # differently from the standard library).
            response = orjson.loads(raw)
            results = response["results"]
            if not isinstance(results, list) or len(results) != len(messages):
                raise ValueError(f"{len(results)} results for {len(messages)} operations")
            exists = bool(response.get("entityExists"))
            new_state = response.get("entityState") if exists else None
            if new_state is not None and not isinstance(new_state, str):
                new_state = json.dumps(new_state)
            outcomes = [
                _Outcome(bool(r.get("isError")), r.get("result"), int(r.get("duration") or 0))
                for r in results
            ]
        except Exception as exc:
            # The function invocation itself failed (the SDK reports an exception of the entity
            # code per operation; this is the SDK or the function raising, or no valid result).
            # The extension then aborts the batch, commits nothing and retries it later
            # (TaskEntityShim.ExecuteOutOfProcBatch: SessionAbortedException): so do we.
            self._log.exception("entity %s@%s: the entity function failed the batch", name, key)
            raise EntityBatchAborted(
                f"the entity function failed the batch of {len(messages)} operations: {exc!r}"
            ) from exc
        return new_state, outcomes, _emitted(response.get("signals"), f"@{name}@{key}")

    async def _commit(
        self,
        entity_id: str,
        name: str,
        key: str,
        old_state: str | None,
        new_state: str | None,
        messages: list[Message],
        outcomes: list[_Outcome],
        emitted: list[NewMessage],
    ) -> None:
        results = [
            StoredResult(m.request_id, o.is_error, o.result)
            for m, o in zip(messages, outcomes, strict=True)
            if m.request_id is not None
        ]
        await self._store.run(
            self._store.commit_turn,
            entity_id,
            # The instance's own name, as its id has it: a query by name matches the instance id's
            # lower-cased prefix (GetSchedulerIdPrefixFromEntityName), so `@Counter@k` is not listed.
            _split(entity_id)[0],
            key,
            new_state,
            new_state != old_state,
            [m.seq for m in messages],
            results,
            emitted,
        )
        for signal in emitted:
            self._schedule(signal.entity_id, signal.due_at)
        for m, o in zip(messages, outcomes, strict=True):
            corr, trace_id = _input_ids(m.input)
            self._log.info(
                "entity %s key=%s op=%s%s%s %s %dms%s",
                name,
                key,
                m.operation,
                f" correlation={corr}" if corr else "",
                f" parent={m.parent}" if m.parent else "",
                "error" if o.is_error else "ok",
                o.duration_ms,
                f" trace={trace_id}" if trace_id else "",
            )
            if o.is_error:
                self._log.warning("entity %s key=%s op=%s failed: %s", name, key, m.operation,
                                  _decode_result(o.result))
            if m.request_id is not None:
                for fut in self._waiters.get(m.request_id, []):
                    if not fut.done():
                        fut.set_result((not o.is_error, _decode_result(o.result)))

    async def list_entities(
        self, name: str | None, *, fetch_state: bool, limit: int = 1000,
        after: tuple[str, str] | None = None,
        operated_from: datetime | None = None, operated_to: datetime | None = None,
    ) -> list[dict[str, Any]]:
        """Existing entities in the shape of the extension's entity query API, in (name, key)
        order after the entity ``after``; with ``operated_from``/``operated_to``, only those whose
        last operation falls in that span (the query's lastOperationTimeFrom/To)."""
        span = tuple(None if t is None else _epoch(t) for t in (operated_from, operated_to))
        rows = await self._store.run(self._store.list_entities, name, fetch_state, limit, after, span)
        out = []
        for ent_name, key, last_op, state in rows:
            item: dict[str, Any] = {
                # DurableEntityStatus: the EntityId of the instance id (its name lower-cased).
                "entityId": {"name": ent_name.lower(), "key": key},
                "lastOperationTime": datetime.fromtimestamp(last_op, UTC).isoformat(),
            }
            if fetch_state:
                item["state"] = _decode_result(state)
            out.append(item)
        return out


def _epoch(moment: datetime) -> float:
    # A time without a zone is UTC, as the extension reads the query's timestamps.
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).timestamp()
