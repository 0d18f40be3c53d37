"""The local host's orchestration engine: the Durable replay loop over SQLite.

Every change to an instance arrives as an inbox message (start, activity result, timer,
external event, entity response, sub-orchestration result). One *episode* takes the pending
messages of an instance, appends them to its history after an ``OrchestratorStarted`` event,
replays the orchestrator function over the whole history and turns the new actions into
history events and outstanding work, all committed in one transaction. Work (activities,
timers, entity calls and signals) runs on the event loop; its completion goes back into the
inbox. Episodes run one at a time on the engine's database thread, so the event loop never
waits on SQLite or on orchestrator code.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import pathlib
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from ..functions import AppModel
from ..worker import WorkerDied, Workers
from ._episodes import Episodes
from ._functions import ClientBinding, DurableFunctions
from ._replay import parse_time
from ._status import render_status
from ._store import OrchestrationStore, WorkItem
from ._transitions import TERMINAL_STATUSES, Effects, Transitions
from ._work import EntityRuntime, WorkRunner

__all__ = ["TERMINAL_STATUSES", "EntityRuntime", "OrchestrationEngine"]

T = TypeVar("T")


class OrchestrationEngine:
    """Runs the app's orchestrator functions through the SDK's replay protocol."""

    def __init__(
        self,
        *,
        db_path: pathlib.Path,
        workers: Workers,
        model: AppModel,
        entities: EntityRuntime,
        logger: logging.Logger,
        client_binding: ClientBinding | None = None,
        max_activities: int = 10,
        message_delay: float = 0.0,
    ) -> None:
        """``model`` is the host's index of the app, whose functions run in ``workers``;
        ``client_binding`` makes a durableClient binding's JSON for activities that take one;
        ``max_activities`` is host.json's maxConcurrentActivityFunctions; ``message_delay``
        (seconds) holds every message to an orchestration that long before its episode runs, as
        a control queue polled with back-off does in Azure (``DEVHOST_ORCHESTRATION_DELAY_SECONDS``)."""
        self._store = OrchestrationStore(db_path)
        functions = DurableFunctions.of(model)
        self._functions = functions
        self._log = logger
        self._db = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="devhost-orch")
        self._transitions = Transitions(self._store, logger)
        self._episodes = Episodes(self._store, self._transitions, functions, workers, logger)
        self._runner = WorkRunner(
            store=self._store,
            states=self._transitions,
            functions=functions,
            entities=entities,
            workers=workers,
            max_activities=max_activities,
            run=self._run,
            wake=self._wake,
            log=logger,
            client_binding=client_binding,
        )
        self._work: dict[int, asyncio.Task[None]] = {}
        self._wakes: set[str] = set()
        self._drainer: asyncio.Task[None] | None = None
        self._stopping = False
        self._message_delay = message_delay

    @property
    def replay_schema(self) -> int:
        """The replay schema (``upperSchemaVersion``) offered to the SDK."""
        return self._episodes.replay_schema

    @replay_schema.setter
    def replay_schema(self, value: int) -> None:
        self._episodes.replay_schema = value

    async def start(self) -> None:
        """Open the tables and resume what a previous run left: inbox messages and work."""
        self._stopping = False
        self._episodes.loop = asyncio.get_running_loop()
        await self._run(self._store.open)
        work = await self._run(self._store.all_work)
        for item in work:
            self._launch(item)
        for instance_id in await self._run(self._store.instances_with_inbox):
            self._wake(instance_id)
        if work:
            self._log.info("orchestrations: resumed %d outstanding work item(s)", len(work))

    async def stop(self) -> None:
        """Stop running work (it is re-issued on the next start) and close the tables."""
        self._stopping = True
        tasks = [t for t in [self._drainer, *self._work.values()] if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._work.clear()
        await self._run(self._store.close)
        self._db.shutdown(wait=True)

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._db, fn, *args)

    async def start_new(self, name: str, instance_id: str | None, input: Any) -> str:
        """Schedule a new instance; ``KeyError`` for an unknown orchestrator, ``ValueError`` if
        an instance with that id is still pending, running or suspended."""
        if self._functions.orchestrator(name) is None:
            raise KeyError(name)
        iid = instance_id or uuid.uuid4().hex
        input_text = None if input is None else json.dumps(input)
        await self._run(self._transitions.create_tx, name, iid, input_text)
        self._log.debug("orchestration %s: scheduled %s", iid, name)
        self._wake(iid)
        return iid

    async def get_status(
        self, instance_id: str, *, show_history: bool, show_history_output: bool, show_input: bool
    ) -> dict[str, Any] | None:
        """The Durable HTTP API's status object, or None when there is no such instance."""
        return await self._run(
            self._transitions.status, instance_id, show_history, show_history_output, show_input
        )

    async def query(
        self,
        *,
        runtime_status: list[str] | None,
        created_from: Any,
        created_to: Any,
        instance_id_prefix: str | None,
    ) -> list[dict[str, Any]]:
        """Status objects (without history) of the instances matching every given filter."""
        instances = await self._run(self._store.query, runtime_status, instance_id_prefix)
        low, high = _as_time(created_from), _as_time(created_to)
        found = []
        for inst in instances:
            created = parse_time(inst.created_time)
            if (low is None or created >= low) and (high is None or created <= high):
                found.append(render_status(inst, None, show_input=True, show_history_output=False))
        return found

    async def raise_event(self, instance_id: str, event_name: str, data: Any) -> bool:
        """Deliver an external event (buffered by the SDK until the orchestrator waits for it)."""
        found = await self._run(self._transitions.raise_tx, instance_id, event_name, data)
        if found:
            self._wake(instance_id)
        return found

    async def terminate(self, instance_id: str, reason: str) -> bool:
        """Terminate a pending, running or suspended instance (no-op for a finished one)."""
        fx = await self._run(self._transitions.terminate_tx, instance_id, reason)
        self._apply(fx)
        return fx is not None

    async def purge(self, instance_id: str) -> bool:
        """Delete an instance with its history; False when there is none."""
        fx = await self._run(self._transitions.purge_tx, instance_id)
        self._apply(fx)
        return fx is not None

    async def suspend(self, instance_id: str, reason: str) -> bool:
        """Stop running episodes for the instance; messages queue up until ``resume``."""
        return await self._run(self._transitions.suspend_tx, instance_id, reason, True)

    async def resume(self, instance_id: str, reason: str) -> bool:
        """Resume a suspended instance and deliver what queued up meanwhile."""
        found = await self._run(self._transitions.suspend_tx, instance_id, reason, False)
        if found:
            self._wake(instance_id)
        return found

    def _wake(self, instance_id: str) -> None:
        if self._stopping:
            return
        if self._message_delay > 0:
            # Each message waits for the next poll of its queue: an orchestration's hops (start,
            # entity call, its answer) add up, while a direct entity signal takes one.
            asyncio.get_running_loop().call_later(self._message_delay, self._wake_now, instance_id)
            return
        self._wake_now(instance_id)

    def _wake_now(self, instance_id: str) -> None:
        if self._stopping:
            return
        self._wakes.add(instance_id)
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        while self._wakes and not self._stopping:
            iid = self._wakes.pop()
            try:
                fx = await self._run(self._episodes.episode, iid)
            except asyncio.CancelledError:
                raise
            except WorkerDied as exc:
                # As DTFx does when the worker goes away mid-episode: nothing was recorded, so the
                # same messages run again once a worker is back.
                self._log.warning("orchestration %s: %s; the episode runs again", iid, exc)
                asyncio.get_running_loop().call_later(0.5, self._wake, iid)
                continue
            except Exception as exc:
                # A bug of ours or an unreadable row: fail the instance visibly rather than
                # retrying the same messages forever.
                self._log.exception("orchestration %s: episode failed inside the local host", iid)
                fx = await self._run(self._transitions.fail_instance, iid, f"local host error: {exc!r}")
            self._apply(fx)
            if fx.more:
                self._wakes.add(iid)

    def _apply(self, fx: Effects | None) -> None:
        if fx is None:
            return
        for work_id in fx.cancel:
            task = self._work.pop(work_id, None)
            if task is not None:
                task.cancel()
        for item in fx.launch:
            self._launch(item)
        for iid in fx.wake:
            self._wake(iid)

    def _launch(self, item: WorkItem) -> None:
        if self._stopping or item.id in self._work:
            return
        task = asyncio.get_running_loop().create_task(self._perform(item))
        self._work[item.id] = task

    async def _perform(self, item: WorkItem) -> None:
        try:
            kind, payload = await self._runner.execute(item)
            delivered = await self._run(self._deliver, item, kind, payload)
            if delivered and kind is not None:
                self._wake(item.instance_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            self._log.exception(
                "orchestration %s: work item %s failed in the local host", item.instance_id, item.kind
            )
        finally:
            if self._work.get(item.id) is asyncio.current_task():
                del self._work[item.id]

    def _deliver(self, item: WorkItem, kind: str | None, payload: Any) -> bool:
        with self._store.transaction():
            if not self._store.remove_work(item.id):
                return False  # the instance finished, moved on or was purged meanwhile
            if kind is not None:
                self._store.add_inbox(item.instance_id, item.execution_id, kind, payload)
            return True


def _as_time(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return parse_time(value.isoformat())
    return parse_time(str(value))
