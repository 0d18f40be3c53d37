"""Instance lifecycle in the orchestration tables: create, finish, continue, terminate, suspend.

Every method runs on the engine's database thread; the ``*_tx`` ones open their own
transaction, the others are building blocks used inside an episode's transaction. What the
event loop must do afterwards (start or cancel work, wake instances) is returned as
``Effects``.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ._replay import EventType, event, format_time, utcnow
from ._runtime_status import RuntimeStatus
from ._status import render_status
from ._store import Instance, OrchestrationStore, WorkItem

TERMINAL_STATUSES = frozenset({RuntimeStatus.COMPLETED, RuntimeStatus.FAILED, RuntimeStatus.TERMINATED})


@dataclass
class Effects:
    """What an episode (or a control call) asks the event loop to do after its commit."""

    launch: list[WorkItem] = field(default_factory=list)
    cancel: list[int] = field(default_factory=list)
    wake: list[str] = field(default_factory=list)
    more: bool = False


class Transitions:
    """State changes of orchestration instances."""

    def __init__(self, store: OrchestrationStore, log: logging.Logger) -> None:
        self._store = store
        self._log = log

    def create(
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
        inst = Instance(iid, name, uuid.uuid4().hex, RuntimeStatus.PENDING, input_text, None, None, now, now)
        if parent is not None:
            inst.parent_instance_id, inst.parent_execution_id, inst.parent_task_id = parent
        self._store.put(inst)
        self._store.add_inbox(iid, inst.execution_id, "start", {})

    def create_tx(self, name: str, iid: str, input_text: str | None) -> None:
        with self._store.transaction():
            self.create(name, iid, input_text)

    def create_attempt_tx(
        self, name: str, iid: str, input_text: str | None, parent: tuple[str, str], again: bool
    ) -> str | None:
        """Start one attempt of a retried sub-orchestration; a problem message if it cannot."""
        with self._store.transaction():
            existing = self._store.get(iid)
            ours = existing is not None and existing.parent_execution_id == parent[1]
            if existing is not None and existing.status not in TERMINAL_STATUSES:
                # After a host restart the attempt may be running already: wait for it.
                return (
                    None
                    if ours
                    else f"An orchestration with instance id {iid!r} is already {existing.status}."
                )
            if ours and not again:
                return None  # finished before a restart: its outcome is the attempt's
            self.create(name, iid, input_text, (parent[0], parent[1], None))
            return None

    def status(
        self, iid: str, show_history: bool, show_history_output: bool, show_input: bool
    ) -> dict[str, Any] | None:
        inst = self._store.get(iid)
        if inst is None:
            return None
        history = self._store.history(iid) if show_history else None
        return render_status(inst, history, show_input=show_input, show_history_output=show_history_output)

    def raise_tx(self, iid: str, name: str, data: Any) -> bool:
        with self._store.transaction():
            inst = self._store.get(iid)
            if inst is None:
                return False
            if inst.status not in TERMINAL_STATUSES:
                raised = event(EventType.EVENT_RAISED, utcnow(), Name=name, Input=json.dumps(data))
                self._store.add_inbox(iid, None, "events", [raised])
            return True

    def terminate_tx(self, iid: str, reason: str) -> Effects | None:
        fx = Effects()
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
                        OrchestrationStatus=RuntimeStatus.TERMINATED,
                        Result=reason_text,
                    ),
                ],
            )
            self._store.clear_inbox(iid)
            self.finish(inst, RuntimeStatus.TERMINATED, reason_text, now, fx, failure=f"terminated: {reason}")
            self._store.put(inst)
        self._log.info("orchestration %s: terminated (%s)", iid, reason)
        return fx

    def fail_instance(self, iid: str, message: str) -> Effects:
        fx = Effects()
        with self._store.transaction():
            inst = self._store.get(iid)
            if inst is None or inst.status in TERMINAL_STATUSES:
                return fx
            self._store.clear_inbox(iid)
            history = self._store.history(iid)
            self.complete(inst, history, len(history), utcnow(), fx, error=message)
        return fx

    def purge_tx(self, iid: str) -> Effects | None:
        with self._store.transaction():
            work = [w.id for w in self._store.all_work(iid)]
            if not self._store.delete(iid):
                return None
        return Effects(cancel=work)

    def suspend_tx(self, iid: str, reason: str, suspend: bool) -> bool:
        with self._store.transaction():
            inst = self._store.get(iid)
            if inst is None:
                return False
            history = self._store.history(iid)
            started = any(e["EventType"] == EventType.EXECUTION_STARTED for e in history)
            live = (RuntimeStatus.PENDING, RuntimeStatus.RUNNING, RuntimeStatus.CONTINUED_AS_NEW)
            if suspend and inst.status in live:
                inst.status, kind = RuntimeStatus.SUSPENDED, EventType.EXECUTION_SUSPENDED
            elif not suspend and inst.status == RuntimeStatus.SUSPENDED:
                inst.status = RuntimeStatus.RUNNING if started else RuntimeStatus.PENDING
                kind = EventType.EXECUTION_RESUMED
            else:
                return True
            now = utcnow()
            # Before its first episode an instance has no history to note this in (the SDK
            # expects OrchestratorStarted, ExecutionStarted first).
            if started:
                self._store.append_history(iid, len(history), [event(kind, now, Reason=reason)])
            inst.last_updated_time = format_time(now)
            self._store.put(inst)
        return True

    def complete(
        self,
        inst: Instance,
        full: list[dict[str, Any]],
        old: int,
        now: datetime,
        fx: Effects,
        *,
        output: str | None = None,
        error: str | None = None,
    ) -> None:
        if error is not None:
            status = RuntimeStatus.FAILED
            message = f"Orchestrator function '{inst.name}' failed: {error}"
            output = json.dumps(message)
            completed = event(
                EventType.EXECUTION_COMPLETED,
                now,
                OrchestrationStatus=RuntimeStatus.FAILED,
                Result=output,
                FailureDetails={"ErrorType": "OrchestrationFailure", "ErrorMessage": error},
            )
            self._log.warning("orchestration %s: failed: %s", inst.instance_id, error)
        else:
            status = RuntimeStatus.COMPLETED
            completed = event(
                EventType.EXECUTION_COMPLETED, now, OrchestrationStatus=RuntimeStatus.COMPLETED, Result=output
            )
            self._log.info("orchestration %s: completed", inst.instance_id)
        full.extend([completed, event(EventType.ORCHESTRATOR_COMPLETED, now)])
        self._store.append_history(inst.instance_id, old, full[old:])
        self.finish(inst, status, output, now, fx, failure=error)
        self._store.put(inst)

    def finish(
        self,
        inst: Instance,
        status: str,
        output: str | None,
        now: datetime,
        fx: Effects,
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
            if status == RuntimeStatus.FAILED:
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

    def continue_as_new(self, inst: Instance, input_text: str | None, now: datetime, fx: Effects) -> None:
        """Start a fresh execution: new history and input; old work and events are dropped."""
        for work in self._store.all_work(inst.instance_id):
            if work.kind != "entity_signal":
                self._store.remove_work(work.id)
                fx.cancel.append(work.id)
        fx.launch = [w for w in fx.launch if w.kind == "entity_signal"]
        self._store.clear_history(inst.instance_id)
        inst.execution_id = uuid.uuid4().hex
        inst.input = input_text
        inst.status = RuntimeStatus.CONTINUED_AS_NEW
        inst.next_id = 0
        inst.actions_log = []
        inst.last_updated_time = format_time(now)
        self._store.put(inst)
        self._store.add_inbox(inst.instance_id, inst.execution_id, "start", {})
        fx.wake.append(inst.instance_id)
        self._log.info("orchestration %s: continued as new", inst.instance_id)
