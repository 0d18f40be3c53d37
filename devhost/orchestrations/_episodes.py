"""One episode: replay the orchestrator over its history and record what it asked for.

The SDK numbers the tasks it schedules (activities, timers, entity calls and signals,
sub-orchestrations) in the order it schedules them; the engine gives the matching history
events (``TaskScheduled``, ``TimerCreated``, ``EventSent``, ``SubOrchestrationInstanceCreated``)
the same ``EventId`` and answers with completions carrying it. The numbered actions seen so
far are remembered per execution, so the actions beyond them in a replay's answer are new.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import uuid
from datetime import datetime
from typing import Any

from ..functions import NamedFunction
from ..worker import FunctionFailed, Workers, invocation
from ._functions import DurableFunctions
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
from ._runtime_status import RuntimeStatus
from ._store import InboxItem, Instance, OrchestrationStore, WorkItem
from ._transitions import TERMINAL_STATUSES, Effects, Transitions

HTTP_NOT_SUPPORTED = (
    "context.call_http is not supported by the devhost local host; call the endpoint from an "
    "activity function instead (it works the same under the Functions host)"
)


class Episodes:
    """Runs episodes (on the engine's database thread); instance state changes go through the
    engine's ``Transitions``, shared with the control calls."""

    def __init__(
        self,
        store: OrchestrationStore,
        transitions: Transitions,
        functions: DurableFunctions,
        workers: Workers,
        log: logging.Logger,
    ) -> None:
        self._store = store
        self._transitions = transitions
        self._functions = functions
        self._workers = workers
        self._log = log
        self.loop: asyncio.AbstractEventLoop | None = None  # the engine's, set when it starts
        # The replay schema offered to the SDK (tests also run the oldest, list-of-lists one).
        self.replay_schema = UPPER_SCHEMA_VERSION

    def episode(self, iid: str) -> Effects:
        # Only this thread writes the orch_* tables, so what is read here stays true until the
        # write transaction below; the orchestrator code runs without holding SQLite's lock.
        fx = Effects()
        inst = self._store.get(iid)
        items = self._store.inbox(iid)
        if inst is None or inst.status in TERMINAL_STATUSES:
            with self._store.transaction():
                self._store.remove_inbox([i.id for i in items])
            return fx
        if inst.status == RuntimeStatus.SUSPENDED:
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
        return now, full, run_episode(functools.partial(self._invoke, orchestrator), context)

    def _invoke(self, orchestrator: NamedFunction, context: Any) -> str:
        """One orchestrator invocation in a worker, from the engine's database thread.

        A failing orchestrator raises with the runtime's message (the exception's type, then its
        text, which carries the SDK's out-of-process state after its marker).
        """
        if self.loop is None:
            raise RuntimeError("the orchestration engine is not running")
        call = invocation.request(orchestrator.function_id,
                                  {orchestrator.param: invocation.string(context.body)})
        invoked = self._workers.invoke("orchestrationTrigger", call)
        pending = asyncio.run_coroutine_threadsafe(invoked, self.loop)
        try:
            answer = invocation.text_of(invocation.returned(pending.result()))
        except FunctionFailed as exc:
            raise RuntimeError(exc.message) from None
        return answer if answer is not None else "null"

    def _record(
        self,
        inst: Instance,
        history: list[dict[str, Any]],
        now: datetime,
        full: list[dict[str, Any]],
        result: EpisodeResult,
        fx: Effects,
    ) -> None:
        """Turn the episode's answer into history, work, status (inside the transaction)."""
        if result.has_custom_status:
            inst.custom_status = json.dumps(result.custom_status)
        if inst.status in (RuntimeStatus.PENDING, RuntimeStatus.CONTINUED_AS_NEW):
            inst.status = RuntimeStatus.RUNNING
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
            self._transitions.complete(inst, full, len(history), now, fx, error=error)
        elif result.is_done and continued:
            self._transitions.continue_as_new(inst, continue_input, now, fx)
        elif result.is_done:
            self._transitions.complete(inst, full, len(history), now, fx, output=json.dumps(result.output))
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

    def _cancel_timers(self, inst: Instance, numbered: list[Action], fx: Effects) -> None:
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

    def _add_work(self, inst: Instance, task_id: int, kind: str, payload: Any, fx: Effects) -> None:
        work_id = self._store.add_work(inst.instance_id, inst.execution_id, task_id, kind, payload)
        fx.launch.append(WorkItem(work_id, inst.instance_id, inst.execution_id, task_id, kind, payload))

    def _fail_soon(self, inst: Instance, events: list[dict[str, Any]], fx: Effects) -> None:
        self._store.add_inbox(inst.instance_id, inst.execution_id, "events", events)
        fx.wake.append(inst.instance_id)

    def _schedule(
        self, inst: Instance, task_id: int, action: Action, now: datetime, fx: Effects
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
        self, inst: Instance, task_id: int, body: dict[str, Any], now: datetime, fx: Effects, *, retry: bool
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
            parent = (inst.instance_id, inst.execution_id, task_id)
            self._transitions.create(name, child_id, body.get("input"), parent)
            fx.wake.append(child_id)
        return [created]
