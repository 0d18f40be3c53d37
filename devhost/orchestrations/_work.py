"""Running what episodes schedule: activities (with retries), timers, entity calls and signals,
retried sub-orchestrations. Each returns the inbox message its completion produces."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Protocol

from ..worker import Workers
from ._functions import ActivityFailed, ClientBinding, DurableFunctions, run_activity
from ._replay import EventType, event, parse_time, utcnow
from ._runtime_status import RuntimeStatus
from ._store import OrchestrationStore, WorkItem
from ._transitions import TERMINAL_STATUSES, Transitions


class EntityRuntime(Protocol):
    """What the engine needs from the entity runtime (``devhost.entities.EntityGateway``).

    Inputs and results are Python values (JSON-decoded); entity ids are ``@name@key``.
    """

    async def call(
        self, entity_id: str, operation: str, input: Any, *, parent: str | None = None
    ) -> tuple[bool, Any]: ...

    async def signal(
        self, entity_id: str, operation: str, input: Any, *, scheduled_time: datetime | None = None
    ) -> None: ...


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class WorkRunner:
    """Executes work items on the event loop."""

    def __init__(
        self,
        *,
        store: OrchestrationStore,
        states: Transitions,
        functions: DurableFunctions,
        entities: EntityRuntime,
        workers: Workers,
        max_activities: int,
        run: Callable[..., Awaitable[Any]],
        wake: Callable[[str], None],
        log: logging.Logger,
        client_binding: ClientBinding | None = None,
    ) -> None:
        self._log = log
        self._client_binding = client_binding
        self._store = store
        self._states = states
        self._functions = functions
        self._entities = entities
        self._workers = workers
        # Activities running at once: host.json's maxConcurrentActivityFunctions.
        self._activity_slots = asyncio.Semaphore(max(1, max_activities))
        self._run = run
        self._wake = wake
        self._call_takes_request_id = "request_id" in inspect.signature(entities.call).parameters

    async def execute(self, item: WorkItem) -> tuple[str | None, Any]:
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
            try:
                await self._entities.signal(p["entity_id"], p["operation"], _loads(p["input"]))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                # Fire-and-forget: the orchestrator cannot observe it, so say it and move on.
                self._log.warning(
                    "orchestration %s: signal %s to %s failed: %s",
                    item.instance_id,
                    p["operation"],
                    p["entity_id"],
                    exc,
                )
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
        limit, interval = _retry_options(p["retry"])
        attempts: list[dict[str, Any]] = []
        parent = (item.instance_id, item.execution_id)
        while True:
            problem = await self._run(
                self._states.create_attempt_tx,
                p["name"],
                p["instance_id"],
                p["input"],
                parent,
                bool(attempts),
            )
            if problem is None:
                self._wake(p["instance_id"])
                outcome = await self._finished(p["instance_id"])
            else:
                outcome = {"ok": False, "reason": problem, "details": None}
            attempts.append(outcome)
            if outcome["ok"] or len(attempts) >= limit:
                break
            await asyncio.sleep(interval)
        return _retried(item, limit, attempts, instance_id=p["instance_id"])

    async def _finished(self, iid: str) -> dict[str, Any]:
        """Poll until ``iid`` is finished; its outcome as a retry attempt."""
        while True:
            inst = await self._run(self._store.get, iid)
            if inst is None:
                return {"ok": False, "reason": f"Sub-orchestration {iid!r} was purged", "details": None}
            if inst.status == RuntimeStatus.COMPLETED:
                return {"ok": True, "result": inst.output}
            if inst.status in TERMINAL_STATUSES:
                message = _loads(inst.output)
                return {"ok": False, "reason": str(message), "details": None}
            await asyncio.sleep(0.02)

    async def _activity(self, item: WorkItem) -> tuple[str, Any]:
        p = item.payload
        activity = self._functions.activity(p["name"])
        retry = p.get("retry")
        limit, interval = _retry_options(retry)
        attempts: list[dict[str, Any]] = []
        while True:
            try:
                if activity is None:
                    raise ActivityFailed(
                        f"The function '{p['name']}' doesn't exist or is not an activity.", ""
                    )
                async with self._activity_slots:
                    result = await run_activity(activity, p["input"], self._workers, self._client_binding)
                attempts.append({"ok": True, "result": result})
                break
            except ActivityFailed as exc:
                attempts.append({"ok": False, "reason": exc.reason, "details": exc.details})
            if len(attempts) >= limit:
                break
            await asyncio.sleep(interval)
        if retry:
            return _retried(item, limit, attempts)
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


def _retry_options(retry: dict[str, Any] | None) -> tuple[int, float]:
    """(most attempts, seconds between them) of a task's retry options; one attempt without any."""
    if not retry:
        return 1, 0.0
    return (
        int(retry.get("maxNumberOfAttempts", 1)),
        float(retry.get("firstRetryIntervalInMilliseconds", 0)) / 1000,
    )


def _retried(item: WorkItem, limit: int, attempts: list[dict[str, Any]], **extra: Any) -> tuple[str, Any]:
    """The "retry" outcome of a retried task: all its attempts, handed to the orchestration at once."""
    p = item.payload
    return "retry", {
        "task_id": item.task_id,
        "max": limit,
        "attempts": attempts,
        "name": p["name"],
        "input": p["input"],
        **extra,
    }
