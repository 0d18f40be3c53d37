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
import inspect
import json
import logging
import pathlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar

from ._orch_functions import ActivityFailed, DurableFunctions, run_activity
from ._orch_status import render_status
from ._orch_store import InboxItem, Instance, OrchestrationStore, WorkItem
from ._replay import (
    UPPER_SCHEMA_VERSION,
    Action,
    ActionType,
    EpisodeResult,
    EventType,
    after,
    build_context,
    event,
    format_time,
    parse_time,
    run_episode,
    utcnow,
)

T = TypeVar("T")

TERMINAL_STATUSES = frozenset({"Completed", "Failed", "Terminated"})
HTTP_NOT_SUPPORTED = (
    "context.call_http is not supported by the devhost local host; call the endpoint from an "
    "activity function instead (it works the same under the Functions host)"
)


class EntityGateway(Protocol):
    """What the engine needs from the entity runtime (``devhost._entities.EntityGateway``).

    Inputs and results are Python values (JSON-decoded); entity ids are ``@name@key``.
    """

    async def call(
        self, entity_id: str, operation: str, input: Any, *, parent: str | None = None
    ) -> tuple[bool, Any]: ...

    async def signal(
        self, entity_id: str, operation: str, input: Any, *, scheduled_time: datetime | None = None
    ) -> None: ...


@dataclass
class _Effects:
    """What an episode (or a control call) asks the event loop to do after its commit."""

    launch: list[WorkItem] = field(default_factory=list)
    cancel: list[int] = field(default_factory=list)
    wake: list[str] = field(default_factory=list)
    more: bool = False


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class OrchestrationEngine:
    """Runs the app's orchestrator functions through the SDK's replay protocol."""

    def __init__(
        self, *, db_path: pathlib.Path, app: Any, entities: EntityGateway, logger: logging.Logger
    ) -> None:
        self._store = OrchestrationStore(db_path)
        self._functions = DurableFunctions.index(app)
        self._entities = entities
        self._log = logger
        self._db = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="devhost-orch")
        self._pool = concurrent.futures.ThreadPoolExecutor(8, thread_name_prefix="devhost-activity")
        self._work: dict[int, asyncio.Task[None]] = {}
        self._wakes: set[str] = set()
        self._drainer: asyncio.Task[None] | None = None
        self._stopping = False
        # The replay schema offered to the SDK (tests also run the oldest, list-of-lists one).
        self.replay_schema = UPPER_SCHEMA_VERSION
        self._call_takes_request_id = "request_id" in inspect.signature(entities.call).parameters

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the tables and resume what a previous run left: inbox messages and work."""
        self._stopping = False
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
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._db, fn, *args)

    # -- client operations -----------------------------------------------------------------

    async def start_new(self, name: str, instance_id: str | None, input: Any) -> str:
        """Schedule a new instance; ``KeyError`` for an unknown orchestrator, ``ValueError`` if
        an instance with that id is still pending, running or suspended."""
        if self._functions.orchestrator(name) is None:
            raise KeyError(name)
        iid = instance_id or uuid.uuid4().hex
        input_text = None if input is None else json.dumps(input)
        await self._run(self._create_tx, name, iid, input_text)
        self._log.debug("orchestration %s: scheduled %s", iid, name)
        self._wake(iid)
        return iid

    async def get_status(
        self, instance_id: str, *, show_history: bool, show_history_output: bool, show_input: bool
    ) -> dict[str, Any] | None:
        """The Durable HTTP API's status object, or None when there is no such instance."""
        return await self._run(self._status, instance_id, show_history, show_history_output, show_input)

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
        found = await self._run(self._raise_tx, instance_id, event_name, data)
        if found:
            self._wake(instance_id)
        return found

    async def terminate(self, instance_id: str, reason: str) -> bool:
        """Terminate a pending, running or suspended instance (no-op for a finished one)."""
        fx = await self._run(self._terminate_tx, instance_id, reason)
        self._apply(fx)
        return fx is not None

    async def purge(self, instance_id: str) -> bool:
        """Delete an instance with its history; False when there is none."""
        fx = await self._run(self._purge_tx, instance_id)
        self._apply(fx)
        return fx is not None

    async def suspend(self, instance_id: str, reason: str) -> bool:
        """Stop running episodes for the instance; messages queue up until ``resume``."""
        return await self._run(self._suspend_tx, instance_id, reason, True)

    async def resume(self, instance_id: str, reason: str) -> bool:
        """Resume a suspended instance and deliver what queued up meanwhile."""
        found = await self._run(self._suspend_tx, instance_id, reason, False)
        if found:
            self._wake(instance_id)
        return found

    # -- database-thread operations --------------------------------------------------------

    def _create(
        self,
        name: str,
        iid: str,
        input_text: str | None,
        parent: tuple[str, str, int | None] | None = None,
    ) -> None:
        existing = self._store.get(iid)
        if existing is not None:
            if existing.status not in TERMINAL_STATUSES:
                raise ValueError(f"orchestration instance {iid!r} already exists and is {existing.status}")
            self._store.delete(iid)
        now = format_time(utcnow())
        inst = Instance(iid, name, uuid.uuid4().hex, "Pending", input_text, None, None, now, now)
        if parent is not None:
            inst.parent_instance_id, inst.parent_execution_id, inst.parent_task_id = parent
        self._store.put(inst)
        self._store.add_inbox(iid, inst.execution_id, "start", {})

    def _create_tx(self, name: str, iid: str, input_text: str | None) -> None:
        with self._store.transaction():
            self._create(name, iid, input_text)

    def _status(
        self, iid: str, show_history: bool, show_history_output: bool, show_input: bool
    ) -> dict[str, Any] | None:
        inst = self._store.get(iid)
        if inst is None:
            return None
        history = self._store.history(iid) if show_history else None
        return render_status(inst, history, show_input=show_input, show_history_output=show_history_output)

    def _raise_tx(self, iid: str, name: str, data: Any) -> bool:
        with self._store.transaction():
            inst = self._store.get(iid)
            if inst is None:
                return False
            if inst.status not in TERMINAL_STATUSES:
                raised = event(EventType.EVENT_RAISED, utcnow(), Name=name, Input=json.dumps(data))
                self._store.add_inbox(iid, None, "events", [raised])
            return True

    def _terminate_tx(self, iid: str, reason: str) -> _Effects | None:
        fx = _Effects()
        with self._store.transaction():
            inst = self._store.get(iid)
            if inst is None:
                return None
            if inst.status in TERMINAL_STATUSES:
                return fx
            now = utcnow()
            history = self._store.history(iid)
            reason_text = json.dumps(reason)
            self._store.append_history(
                iid,
                len(history),
                [
                    event(EventType.EXECUTION_TERMINATED, now, Input=reason_text),
                    event(
                        EventType.EXECUTION_COMPLETED,
                        now,
                        OrchestrationStatus="Terminated",
                        Result=reason_text,
                    ),
                ],
            )
            self._store.clear_inbox(iid)
            self._finish(inst, "Terminated", reason_text, now, fx, failure=f"terminated: {reason}")
            self._store.put(inst)
        self._log.info("orchestration %s: terminated (%s)", iid, reason)
        return fx

    def _fail_instance(self, iid: str, message: str) -> _Effects:
        fx = _Effects()
        with self._store.transaction():
            inst = self._store.get(iid)
            if inst is None or inst.status in TERMINAL_STATUSES:
                return fx
            self._store.clear_inbox(iid)
            history = self._store.history(iid)
            self._complete(inst, history, len(history), utcnow(), fx, error=message)
        return fx

    def _purge_tx(self, iid: str) -> _Effects | None:
        with self._store.transaction():
            work = [w.id for w in self._store.all_work(iid)]
            if not self._store.delete(iid):
                return None
        return _Effects(cancel=work)

    def _suspend_tx(self, iid: str, reason: str, suspend: bool) -> bool:
        with self._store.transaction():
            inst = self._store.get(iid)
            if inst is None:
                return False
            if suspend and inst.status in ("Pending", "Running", "ContinuedAsNew"):
                inst.status, kind = "Suspended", EventType.EXECUTION_SUSPENDED
            elif not suspend and inst.status == "Suspended":
                history = self._store.history(iid)
                inst.status = "Running" if history else "Pending"
                kind = EventType.EXECUTION_RESUMED
            else:
                return True
            now = utcnow()
            history_len = len(self._store.history(iid))
            self._store.append_history(iid, history_len, [event(kind, now, Reason=reason)])
            inst.last_updated_time = format_time(now)
            self._store.put(inst)
        return True

    # -- episodes --------------------------------------------------------------------------

    def _wake(self, instance_id: str) -> None:
        if self._stopping:
            return
        self._wakes.add(instance_id)
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        while self._wakes and not self._stopping:
            iid = self._wakes.pop()
            try:
                fx = await self._run(self._episode, iid)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                # A bug of ours or an unreadable row: fail the instance visibly rather than
                # retrying the same messages forever.
                self._log.exception("orchestration %s: episode failed inside the local host", iid)
                fx = await self._run(self._fail_instance, iid, f"local host error: {exc!r}")
            self._apply(fx)
            if fx.more:
                self._wakes.add(iid)

    def _apply(self, fx: _Effects | None) -> None:
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

    def _episode(self, iid: str) -> _Effects:
        # Only this thread writes the orch_* tables, so what is read here stays true until the
        # write transaction below; the orchestrator code runs without holding SQLite's lock.
        fx = _Effects()
        inst = self._store.get(iid)
        items = self._store.inbox(iid)
        if inst is None or inst.status in TERMINAL_STATUSES:
            with self._store.transaction():
                self._store.remove_inbox([i.id for i in items])
            return fx
        if inst.status == "Suspended":
            return fx
        stale = [i.id for i in items if i.execution_id not in (None, inst.execution_id)]
        live = [i for i in items if i.execution_id in (None, inst.execution_id)]
        history = self._store.history(iid)
        if not history:
            # Nothing may precede ExecutionStarted (history[1] must be that event).
            starts = [i for i in live if i.kind == "start"]
            live = starts[:1] + [i for i in live if i.kind != "start"] if starts else []
        batch = self._pick(live) if live else []
        fx.more = len(batch) < len(live)
        episode = self._run_orchestrator(inst, history, batch) if batch else None
        with self._store.transaction():
            self._store.remove_inbox(stale)
            if episode is not None:
                self._record(inst, history, *episode, fx)
                self._store.remove_inbox([i.id for i in batch])
        return fx

    @staticmethod
    def _pick(live: list[InboxItem]) -> list[InboxItem]:
        # A retried task's events make the SDK number its retry timers while it reads them;
        # alone in an episode they are numbered before any new action of the user code.
        if live[0].kind == "retry":
            return live[:1]
        batch: list[InboxItem] = []
        for item in live:
            if item.kind == "retry":
                break
            batch.append(item)
        return batch

    def _run_orchestrator(
        self, inst: Instance, history: list[dict[str, Any]], batch: list[InboxItem]
    ) -> tuple[datetime, list[dict[str, Any]], EpisodeResult]:
        """Append the batch after an OrchestratorStarted event and replay; nothing is written."""
        previous = None
        for e in history:
            if e["EventType"] == EventType.ORCHESTRATOR_STARTED:
                previous = parse_time(e["Timestamp"])
        now = after(previous, utcnow())
        new_events = [event(EventType.ORCHESTRATOR_STARTED, now)]
        for item in batch:
            new_events.extend(self._materialize(inst, item, now))
        full = history + new_events
        orchestrator = self._functions.orchestrator(inst.name)
        if orchestrator is None:
            missing = f"the app has no orchestrator function named {inst.name!r}"
            return now, full, EpisodeResult(is_done=False, error=missing)
        context = build_context(
            instance_id=inst.instance_id,
            parent_instance_id=inst.parent_instance_id,
            input_text=inst.input,
            history=full,
            played=len(history),
            schema=self.replay_schema,
        )
        return now, full, run_episode(orchestrator.func, context)

    def _record(
        self,
        inst: Instance,
        history: list[dict[str, Any]],
        now: datetime,
        full: list[dict[str, Any]],
        result: EpisodeResult,
        fx: _Effects,
    ) -> None:
        """Turn the episode's answer into history, work, status (inside the transaction)."""
        if result.has_custom_status:
            inst.custom_status = json.dumps(result.custom_status)
        if inst.status in ("Pending", "ContinuedAsNew"):
            inst.status = "Running"
        numbered = [a for a in result.actions if a.numbered]
        error = result.error
        if error is None:
            error = self._check_determinism(inst, numbered)
        scheduled: list[dict[str, Any]] = []
        continue_input: str | None = None
        continued = False
        if error is None:
            self._cancel_timers(inst, numbered, fx)
            for action in numbered[len(inst.actions_log) :]:
                task_id = inst.next_id
                inst.next_id += 1
                inst.actions_log.append([task_id, int(action.type), action.name])
                if action.type == ActionType.CONTINUE_AS_NEW:
                    continued, continue_input = True, action.body.get("input")
                    continue
                if result.is_done and action.type != ActionType.SIGNAL_ENTITY:
                    continue
                scheduled.extend(self._schedule(inst, task_id, action, now, fx))
        full.extend(scheduled)
        if error is not None:
            self._complete(inst, full, len(history), now, fx, error=error)
        elif result.is_done and continued:
            self._continue_as_new(inst, continue_input, now, fx)
        elif result.is_done:
            self._complete(inst, full, len(history), now, fx, output=json.dumps(result.output))
        else:
            full.append(event(EventType.ORCHESTRATOR_COMPLETED, now))
            self._store.append_history(inst.instance_id, len(history), full[len(history) :])
            inst.last_updated_time = format_time(now)
            self._store.put(inst)

    def _materialize(self, inst: Instance, item: InboxItem, now: datetime) -> list[dict[str, Any]]:
        if item.kind == "start":
            started: dict[str, Any] = {
                "Name": inst.name,
                "Input": inst.input,
                "Version": None,
                "OrchestrationInstance": {"InstanceId": inst.instance_id, "ExecutionId": inst.execution_id},
            }
            if inst.parent_instance_id:
                started["ParentInstance"] = {
                    "Name": None,
                    "OrchestrationInstance": {"InstanceId": inst.parent_instance_id},
                    "TaskScheduleId": inst.parent_task_id,
                }
            return [event(EventType.EXECUTION_STARTED, now, **started)]
        if item.kind == "events":
            return list(item.payload)
        if item.kind == "retry":
            return self._retry_events(inst, item.payload, now)
        raise ValueError(f"unknown inbox message kind {item.kind!r}")

    def _retry_events(self, inst: Instance, payload: dict[str, Any], now: datetime) -> list[dict[str, Any]]:
        """Spell out a retried task's attempts the way the SDK's RetryAbleTask replays them.

        Each failure is followed by a retry timer and, unless it was the last allowed attempt,
        a rescheduled task; the SDK numbers both while reading, so we number them here in the
        same order.
        """
        events: list[dict[str, Any]] = []
        current = int(payload["task_id"])
        limit = int(payload["max"])
        child = payload.get("instance_id")
        if child is None:
            done, failed, again = EventType.TASK_COMPLETED, EventType.TASK_FAILED, EventType.TASK_SCHEDULED
            scheduled_fields = {"Name": payload["name"], "Input": payload["input"]}
        else:
            done, failed = EventType.SUB_ORCHESTRATION_COMPLETED, EventType.SUB_ORCHESTRATION_FAILED
            again = EventType.SUB_ORCHESTRATION_CREATED
            scheduled_fields = {"Name": payload["name"], "Input": payload["input"], "InstanceId": child}
        for attempt, outcome in enumerate(payload["attempts"], start=1):
            if outcome["ok"]:
                events.append(event(done, now, TaskScheduledId=current, Result=outcome["result"]))
                break
            events.append(
                event(
                    failed, now, TaskScheduledId=current, Reason=outcome["reason"], Details=outcome["details"]
                )
            )
            timer_id = inst.next_id
            inst.next_id += 1
            fire_at = format_time(now)
            events.append(event(EventType.TIMER_CREATED, now, event_id=timer_id, FireAt=fire_at))
            events.append(event(EventType.TIMER_FIRED, now, TimerId=timer_id, FireAt=fire_at))
            if attempt >= limit:
                break
            current = inst.next_id
            inst.next_id += 1
            events.append(event(again, now, event_id=current, **scheduled_fields))
        return events

    def _check_determinism(self, inst: Instance, numbered: list[Action]) -> str | None:
        for (task_id, kind, name), action in zip(inst.actions_log, numbered, strict=False):
            if kind != int(action.type) or name != action.name:
                return (
                    f"Non-deterministic workflow detected: task {task_id} was "
                    f"{ActionType(kind).name} {name!r} when first scheduled but the replay "
                    f"asked for {action.type.name} {action.name!r}"
                )
        return None

    def _cancel_timers(self, inst: Instance, numbered: list[Action], fx: _Effects) -> None:
        cancelled = {
            int(task_id)
            for (task_id, _, _), action in zip(inst.actions_log, numbered, strict=False)
            if action.type == ActionType.CREATE_TIMER and action.body.get("isCanceled")
        }
        if not cancelled:
            return
        for work in self._store.all_work(inst.instance_id):
            if work.kind == "timer" and work.task_id in cancelled and work.execution_id == inst.execution_id:
                self._store.remove_work(work.id)
                fx.cancel.append(work.id)

    def _add_work(self, inst: Instance, task_id: int, kind: str, payload: Any, fx: _Effects) -> None:
        work_id = self._store.add_work(inst.instance_id, inst.execution_id, task_id, kind, payload)
        fx.launch.append(WorkItem(work_id, inst.instance_id, inst.execution_id, task_id, kind, payload))

    def _fail_soon(self, inst: Instance, events: list[dict[str, Any]], fx: _Effects) -> None:
        self._store.add_inbox(inst.instance_id, inst.execution_id, "events", events)
        fx.wake.append(inst.instance_id)

    def _schedule(
        self, inst: Instance, task_id: int, action: Action, now: datetime, fx: _Effects
    ) -> list[dict[str, Any]]:
        body = action.body
        kind = action.type
        if kind in (ActionType.CALL_ACTIVITY, ActionType.CALL_ACTIVITY_WITH_RETRY):
            name = str(body.get("functionName"))
            scheduled = event(
                EventType.TASK_SCHEDULED, now, event_id=task_id, Name=name, Input=body.get("input")
            )
            if self._functions.activity(name) is None:
                reason = f"The function '{name}' doesn't exist, is disabled, or is not an activity function."
                failed = event(
                    EventType.TASK_FAILED, now, TaskScheduledId=task_id, Reason=reason, Details=None
                )
                self._fail_soon(inst, [failed], fx)
            else:
                retry = body.get("retryOptions") if kind == ActionType.CALL_ACTIVITY_WITH_RETRY else None
                self._add_work(
                    inst, task_id, "activity", {"name": name, "input": body.get("input"), "retry": retry}, fx
                )
            return [scheduled]
        if kind == ActionType.CREATE_TIMER:
            fire_at = format_time(parse_time(str(body["fireAt"])))
            if not body.get("isCanceled"):
                self._add_work(inst, task_id, "timer", {"fire_at": fire_at}, fx)
            return [event(EventType.TIMER_CREATED, now, event_id=task_id, FireAt=fire_at)]
        if kind in (ActionType.CALL_ENTITY, ActionType.SIGNAL_ENTITY):
            signal = kind == ActionType.SIGNAL_ENTITY
            request_id = str(uuid.uuid4())
            target = str(body.get("instanceId"))
            message = {
                "op": body.get("operation"),
                "signal": signal,
                "input": body.get("input"),
                "id": request_id,
                "parent": None if signal else inst.instance_id,
            }
            payload = {
                "entity_id": target,
                "operation": body.get("operation"),
                "input": body.get("input"),
                "request_id": request_id,
                "parent": None if signal else inst.instance_id,
            }
            self._add_work(inst, task_id, "entity_signal" if signal else "entity_call", payload, fx)
            return [
                event(
                    EventType.EVENT_SENT,
                    now,
                    event_id=task_id,
                    InstanceId=target,
                    Name="op",
                    Input=json.dumps(message),
                )
            ]
        if kind in (ActionType.CALL_SUB_ORCHESTRATOR, ActionType.CALL_SUB_ORCHESTRATOR_WITH_RETRY):
            return self._start_child(
                inst, task_id, body, now, fx, retry=kind == ActionType.CALL_SUB_ORCHESTRATOR_WITH_RETRY
            )
        if kind == ActionType.CALL_HTTP:
            failed = event(
                EventType.TASK_FAILED, now, TaskScheduledId=task_id, Reason=HTTP_NOT_SUPPORTED, Details=None
            )
            self._fail_soon(inst, [failed], fx)
            return [event(EventType.TASK_SCHEDULED, now, event_id=task_id, Name="BuiltIn::HttpActivity")]
        raise ValueError(f"unsupported action {kind!r}")

    def _start_child(
        self, inst: Instance, task_id: int, body: dict[str, Any], now: datetime, fx: _Effects, *, retry: bool
    ) -> list[dict[str, Any]]:
        name = str(body.get("functionName"))
        child_id = str(body.get("instanceId") or f"{inst.instance_id}:{task_id:04d}")
        created = event(
            EventType.SUB_ORCHESTRATION_CREATED,
            now,
            event_id=task_id,
            Name=name,
            InstanceId=child_id,
            Input=body.get("input"),
        )
        problem = None
        if self._functions.orchestrator(name) is None:
            problem = f"The function '{name}' doesn't exist, is disabled, or is not an orchestrator function."
        elif retry:
            payload = {
                "name": name,
                "instance_id": child_id,
                "input": body.get("input"),
                "retry": body.get("retryOptions") or {},
            }
            self._add_work(inst, task_id, "suborch_retry", payload, fx)
            return [created]
        else:
            existing = self._store.get(child_id)
            if existing is not None and existing.status not in TERMINAL_STATUSES:
                problem = f"An orchestration with instance id {child_id!r} is already {existing.status}."
        if problem is not None:
            failed = event(
                EventType.SUB_ORCHESTRATION_FAILED, now, TaskScheduledId=task_id, Reason=problem, Details=None
            )
            self._fail_soon(inst, [failed], fx)
        else:
            self._create(name, child_id, body.get("input"), (inst.instance_id, inst.execution_id, task_id))
            fx.wake.append(child_id)
        return [created]

    def _complete(
        self,
        inst: Instance,
        full: list[dict[str, Any]],
        old: int,
        now: datetime,
        fx: _Effects,
        *,
        output: str | None = None,
        error: str | None = None,
    ) -> None:
        if error is not None:
            status = "Failed"
            message = f"Orchestrator function '{inst.name}' failed: {error}"
            output = json.dumps(message)
            completed = event(
                EventType.EXECUTION_COMPLETED,
                now,
                OrchestrationStatus="Failed",
                Result=output,
                FailureDetails={"ErrorType": "OrchestrationFailure", "ErrorMessage": error},
            )
            self._log.warning("orchestration %s: failed: %s", inst.instance_id, error)
        else:
            status = "Completed"
            completed = event(
                EventType.EXECUTION_COMPLETED, now, OrchestrationStatus="Completed", Result=output
            )
            self._log.info("orchestration %s: completed", inst.instance_id)
        full.extend([completed, event(EventType.ORCHESTRATOR_COMPLETED, now)])
        self._store.append_history(inst.instance_id, old, full[old:])
        self._finish(inst, status, output, now, fx, failure=error)
        self._store.put(inst)

    def _finish(
        self,
        inst: Instance,
        status: str,
        output: str | None,
        now: datetime,
        fx: _Effects,
        *,
        failure: str | None,
    ) -> None:
        """Terminal bookkeeping: status, outstanding work dropped, the parent told."""
        inst.status = status
        inst.output = output
        inst.last_updated_time = format_time(now)
        for work in self._store.all_work(inst.instance_id):
            # Signals an orchestrator sent just before finishing still go out.
            if work.kind != "entity_signal":
                self._store.remove_work(work.id)
                fx.cancel.append(work.id)
        fx.launch = [w for w in fx.launch if w.kind == "entity_signal"]
        if inst.parent_instance_id is None or inst.parent_task_id is None:
            return
        if failure is None:
            note = event(
                EventType.SUB_ORCHESTRATION_COMPLETED, now, TaskScheduledId=inst.parent_task_id, Result=output
            )
        else:
            reason = f"Sub-orchestration '{inst.name}' ({inst.instance_id}) {failure}"
            if status == "Failed":
                reason = f"Orchestrator function '{inst.name}' failed: {failure}"
            note = event(
                EventType.SUB_ORCHESTRATION_FAILED,
                now,
                TaskScheduledId=inst.parent_task_id,
                Reason=reason,
                Details=None,
            )
        self._store.add_inbox(inst.parent_instance_id, inst.parent_execution_id, "events", [note])
        fx.wake.append(inst.parent_instance_id)

    def _continue_as_new(self, inst: Instance, input_text: str | None, now: datetime, fx: _Effects) -> None:
        """Start a fresh execution: new history and input; old work and events are dropped."""
        for work in self._store.all_work(inst.instance_id):
            if work.kind != "entity_signal":
                self._store.remove_work(work.id)
                fx.cancel.append(work.id)
        fx.launch = [w for w in fx.launch if w.kind == "entity_signal"]
        self._store.clear_history(inst.instance_id)
        inst.execution_id = uuid.uuid4().hex
        inst.input = input_text
        inst.status = "ContinuedAsNew"
        inst.next_id = 0
        inst.actions_log = []
        inst.last_updated_time = format_time(now)
        self._store.put(inst)
        self._store.add_inbox(inst.instance_id, inst.execution_id, "start", {})
        fx.wake.append(inst.instance_id)
        self._log.info("orchestration %s: continued as new", inst.instance_id)

    # -- work --------------------------------------------------------------------------------

    def _launch(self, item: WorkItem) -> None:
        if self._stopping or item.id in self._work:
            return
        task = asyncio.get_running_loop().create_task(self._perform(item))
        self._work[item.id] = task

    async def _perform(self, item: WorkItem) -> None:
        try:
            kind, payload = await self._execute(item)
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

    async def _execute(self, item: WorkItem) -> tuple[str | None, Any]:
        p = item.payload
        if item.kind == "activity":
            return await self._activity(item)
        if item.kind == "timer":
            fire_at = parse_time(p["fire_at"])
            delay = (fire_at - utcnow()).total_seconds()
            if delay > 0:
                await asyncio.sleep(delay)
            return "events", [
                event(EventType.TIMER_FIRED, utcnow(), TimerId=item.task_id, FireAt=p["fire_at"])
            ]
        if item.kind == "entity_call":
            ok, result = await self._call_entity(p)
            response: dict[str, Any] = {"result": json.dumps(result)}
            if not ok:
                response["exceptionType"] = "EntityOperationFailed"
            raised = event(EventType.EVENT_RAISED, utcnow(), Name=p["request_id"], Input=json.dumps(response))
            return "events", [raised]
        if item.kind == "entity_signal":
            await self._entities.signal(p["entity_id"], p["operation"], _loads(p["input"]))
            return None, None
        if item.kind == "suborch_retry":
            return await self._sub_orchestration_attempts(item)
        raise ValueError(f"unknown work kind {item.kind!r}")

    async def _call_entity(self, p: dict[str, Any]) -> tuple[bool, Any]:
        args = (p["entity_id"], p["operation"], _loads(p["input"]))
        parent = p.get("parent")
        try:
            if self._call_takes_request_id:
                # Re-issued after a restart, the same request id is answered, not run twice.
                call: Any = self._entities.call
                ok, value = await call(*args, parent=parent, request_id=p["request_id"])
                return bool(ok), value
            return await self._entities.call(*args, parent=parent)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return False, f"{type(exc).__name__}: {exc}"

    async def _sub_orchestration_attempts(self, item: WorkItem) -> tuple[str, Any]:
        """Run a retried sub-orchestration's attempts (each a fresh run of the same instance id).

        The child is linked to its parent but reports to this coroutine, which hands the
        parent all attempts at once, like a retried activity.
        """
        p = item.payload
        limit = int(p["retry"].get("maxNumberOfAttempts", 1))
        interval = float(p["retry"].get("firstRetryIntervalInMilliseconds", 0)) / 1000
        attempts: list[dict[str, Any]] = []
        parent = (item.instance_id, item.execution_id)
        while True:
            await self._run(
                self._create_attempt_tx, p["name"], p["instance_id"], p["input"], parent, bool(attempts)
            )
            self._wake(p["instance_id"])
            outcome = await self._finished(p["instance_id"])
            attempts.append(outcome)
            if outcome["ok"] or len(attempts) >= limit:
                break
            await asyncio.sleep(interval)
        return "retry", {
            "task_id": item.task_id,
            "max": limit,
            "attempts": attempts,
            "name": p["name"],
            "input": p["input"],
            "instance_id": p["instance_id"],
        }

    def _create_attempt_tx(
        self, name: str, iid: str, input_text: str | None, parent: tuple[str, str], again: bool
    ) -> None:
        with self._store.transaction():
            existing = self._store.get(iid)
            # After a host restart the first attempt may already be running: wait for it instead.
            if existing is not None and existing.status not in TERMINAL_STATUSES:
                return
            if existing is not None and not again and existing.parent_instance_id == parent[0]:
                return
            self._create(name, iid, input_text, (parent[0], parent[1], None))

    async def _finished(self, iid: str) -> dict[str, Any]:
        """Poll until ``iid`` is finished; its outcome as a retry attempt."""
        while True:
            inst = await self._run(self._store.get, iid)
            if inst is None:
                return {"ok": False, "reason": f"Sub-orchestration {iid!r} was purged", "details": None}
            if inst.status == "Completed":
                return {"ok": True, "result": inst.output}
            if inst.status in TERMINAL_STATUSES:
                message = _loads(inst.output)
                return {"ok": False, "reason": str(message), "details": None}
            await asyncio.sleep(0.02)

    async def _activity(self, item: WorkItem) -> tuple[str, Any]:
        p = item.payload
        activity = self._functions.activity(p["name"])
        retry = p.get("retry")
        limit = int(retry.get("maxNumberOfAttempts", 1)) if retry else 1
        interval = float(retry.get("firstRetryIntervalInMilliseconds", 0)) / 1000 if retry else 0.0
        attempts: list[dict[str, Any]] = []
        while True:
            try:
                if activity is None:
                    raise ActivityFailed(
                        f"The function '{p['name']}' doesn't exist or is not an activity.", ""
                    )
                result = await run_activity(activity, p["input"], self._pool)
                attempts.append({"ok": True, "result": result})
                break
            except ActivityFailed as exc:
                attempts.append({"ok": False, "reason": exc.reason, "details": exc.details})
            if len(attempts) >= limit:
                break
            await asyncio.sleep(interval)
        if retry:
            return "retry", {
                "task_id": item.task_id,
                "max": limit,
                "attempts": attempts,
                "name": p["name"],
                "input": p["input"],
            }
        outcome = attempts[-1]
        now = utcnow()
        if outcome["ok"]:
            return "events", [
                event(EventType.TASK_COMPLETED, now, TaskScheduledId=item.task_id, Result=outcome["result"])
            ]
        failed = event(
            EventType.TASK_FAILED,
            now,
            TaskScheduledId=item.task_id,
            Reason=outcome["reason"],
            Details=outcome["details"],
        )
        return "events", [failed]


def _as_time(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return parse_time(value.isoformat())
    return parse_time(str(value))
