"""Hosted agents inside orchestrator functions: deterministic entity calls with typed results.

An orchestrator is replayed from its history, so everything here is derived from the
orchestration context: correlation ids come from `context.new_uuid()` (the same on every replay)
and the turn itself runs in the agent's entity, never in the orchestrator. A turn is addressed and
encoded as every submission is (hosting.client._submit), through the orchestration context.

A turn that may pause for tool approvals (docs/hosting.md "Tool approvals") answers the `run`
call before it ends; `run` then waits for its end on durable timers, reading the entity's
`run_status` after each (every 2 s at first, doubling up to a minute while the turn runs and up
to an hour while it waits for decisions; back to 2 s when the run moves on). A decision over HTTP
wakes it at once with an external event of the decided call, and what is still undecided when
the approvals are due is rejected. Timers and entity calls are
what the Durable extension documents for Python orchestrators, and both are replayed from the
history, so the wait is deterministic; the first call is the one `run` always made, so an
orchestration already past it replays unchanged.
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import datetime, timedelta
from typing import Any, Protocol

import azure.durable_functions as df

from agents import InputMessage, InvalidTurnRequest, TurnRequest, TurnResult, failure

from ._errors import AgentRunFailed, InvalidOperation, ProblemCode
from ._ids import id_problem
from ._telemetry import orchestration_trace_context
from .client import RUN_OPERATION, session_entity
from .stored import decided_event

STATUS_OPERATION = "run_status"
"""The entity operation that answers a run's result, or where it is (hosting.entity._approvals)."""


class OrchestrationContext(Protocol):
    """What the helpers use of the SDK's `DurableOrchestrationContext`."""

    @property
    def instance_id(self) -> str: ...

    def new_uuid(self) -> str: ...

    @property
    def current_utc_datetime(self) -> datetime: ...

    def create_timer(self, fire_at: datetime) -> Any: ...

    def wait_for_external_event(self, name: str) -> Any: ...

    def task_any(self, activities: list[Any]) -> Any: ...

    def call_entity(self, entityId: df.EntityId, operationName: str, operationInput: Any = None) -> Any: ...

    def signal_entity(self, entityId: df.EntityId, operationName: str, operationInput: Any = None) -> Any: ...


UNFINISHED = frozenset({"pending", "running", "awaiting_approval"})
"""The statuses a `run` or `run_status` answer has while the turn has not ended."""
FIRST_POLL_SECONDS, LAST_POLL_SECONDS, PAUSED_POLL_SECONDS = 2.0, 60.0, 3600.0
"""How long a waiting orchestration sleeps between two reads of its run: short at first (a turn
that goes on ends soon), doubling up to a minute while the turn runs, and up to an hour while it
waits for decisions (their events wake it; each read is an entity batch, which on Azure Storage
rewrites the entity's whole state, so a day of waiting costs a few dozen, not 1,440)."""


def _unfinished(answer: Any) -> bool:
    return isinstance(answer, dict) and answer.get("status") in UNFINISHED


class AgentHandle:
    """One hosted agent as seen from an orchestrator; get one with `get_agent(context, name)`."""

    def __init__(self, context: OrchestrationContext, agent_name: str) -> None:
        self._context = context
        self.name = agent_name

    def _operation(
        self,
        message: str,
        session_id: str,
        response_format: dict[str, Any] | None,
        role: str,
        options: dict[str, Any] | None,
    ) -> tuple[df.EntityId, TurnRequest]:
        problem = id_problem(session_id)
        if problem is not None:
            raise InvalidOperation(f"session_id {session_id!r} {problem}")
        if not message.strip():
            raise InvalidOperation("message must not be empty")
        try:
            operation = TurnRequest(
                correlation_id=str(self._context.new_uuid()),
                messages=[InputMessage(role, message)],  # type: ignore[arg-type]
                response_format=response_format,
                orchestration_id=self._context.instance_id,
                options=dict(options or {}),
                trace_context=orchestration_trace_context(self._context),
            )
        except InvalidTurnRequest as error:
            raise InvalidOperation(f"{error.field}: {error.message}") from None
        return session_entity(self.name, session_id), operation

    def run(
        self,
        message: str,
        *,
        session_id: str,
        response_format: dict[str, Any] | None = None,
        role: str = "user",
        options: dict[str, Any] | None = None,
    ) -> Generator[Any, Any, TurnResult]:
        """One turn on the agent's session entity; use as ``result = yield from agent.run(...)``.

        Returns the `TurnResult`; raises `AgentRunFailed` when the turn failed (the failure is in
        the session's history as well). A turn that waits for tool approvals keeps the
        orchestration waiting (Running) until it is decided, or its approvals expire as rejected.
        """
        entity_id, operation = self._operation(message, session_id, response_format, role, options)
        raw = yield self._context.call_entity(entity_id, RUN_OPERATION, operation.to_json())
        if _unfinished(raw):
            # A stepped turn (its agent has tools that need approval): wait for its end.
            raw = yield from self._wait(entity_id, session_id, operation.correlation_id, raw)
        result = TurnResult.from_json(raw)
        if result.error is not None:
            raise AgentRunFailed(self.name, session_id, operation.correlation_id, result.error)
        return result

    def _wait(
        self, entity_id: df.EntityId, session_id: str, correlation_id: str, answer: Any
    ) -> Generator[Any, Any, Any]:
        """Sleep and read the run's status until it has ended; its result. Approvals due and
        still undecided are expired here (the entity cannot start the expiry orchestration,
        and this orchestration is waiting anyway)."""
        interval = FIRST_POLL_SECONDS
        expired: set[Any] = set()
        heard: set[str] = set()
        while _unfinished(answer):
            now = self._context.current_utc_datetime
            wake = now + timedelta(seconds=interval)
            due = _due(answer)
            step = answer.get("step")
            if due is not None and step not in expired:
                if due <= now:
                    expired.add(step)
                    expire = {"correlationId": correlation_id, "step": step, "seconds": answer["seconds"]}
                    self._context.signal_entity(entity_id, "expire_approvals", expire)
                    wake = now + timedelta(seconds=FIRST_POLL_SECONDS)  # the turn goes on now
                else:
                    wake = min(wake, due)
            timer = self._context.create_timer(wake)
            # A decision over HTTP raises its call's event (hosting.http._approvals): no need to
            # sleep out the interval. Each call's event is listened for until it comes once (a
            # name is never waited on again after its event: the SDK would hand the same event
            # to that wait at once). The timer stays the safety net for a lost event and for a
            # decision by signal (`decide`), which raises none.
            events = {
                self._context.wait_for_external_event(decided_event(correlation_id, call)): call
                for call in _waiting_calls(answer)
                if call not in heard
            }
            if events:
                winner = yield self._context.task_any([timer, *events])
                if winner is not timer:
                    timer.cancel()
                    heard.add(events[winner])
                    interval = FIRST_POLL_SECONDS / 2  # the turn goes on now: read it soon again
            else:
                yield timer
            before = (answer.get("status"), step)
            asked = {"correlationId": correlation_id}
            answer = yield self._context.call_entity(entity_id, STATUS_OPERATION, asked)
            if answer is None:
                gone = failure(ProblemCode.RUN_DISCARDED, "a reset or delete discarded the run")
                raise AgentRunFailed(self.name, session_id, correlation_id, gone)
            moved = (answer.get("status"), answer.get("step")) != before if isinstance(answer, dict) else True
            ceiling = PAUSED_POLL_SECONDS if _waiting_calls(answer) else LAST_POLL_SECONDS
            interval = FIRST_POLL_SECONDS if moved else min(interval * 2, ceiling)
        return answer

    def decide(
        self, session_id: str, correlation_id: str, call_id: str, approved: bool, reason: str | None = None
    ) -> None:
        """Decide a call the run `correlation_id` waits on, as `POST .../runs/{id}/approvals` does
        (a signal: the decision is recorded when the entity runs it; a call decided already, or
        a run that waits on nothing, is left as it is)."""
        problem = id_problem(session_id)
        if problem is not None:
            raise InvalidOperation(f"session_id {session_id!r} {problem}")
        decision: dict[str, Any] = {"correlationId": correlation_id, "callId": call_id, "approved": approved}
        if reason is not None:
            decision["reason"] = reason
        self._context.signal_entity(session_entity(self.name, session_id), "decide", decision)

    def signal(
        self,
        message: str,
        *,
        session_id: str,
        response_format: dict[str, Any] | None = None,
        role: str = "user",
        options: dict[str, Any] | None = None,
    ) -> str:
        """Queue a turn without waiting for it (fire and forget); returns its correlation id, which
        names the run resource `GET /api/agents/{agent}/sessions/{session}/runs/{id}`."""
        entity_id, operation = self._operation(message, session_id, response_format, role, options)
        self._context.signal_entity(entity_id, RUN_OPERATION, operation.to_json())
        return operation.correlation_id


def _waiting_calls(answer: Any) -> list[str]:
    """The ids of the calls an `awaiting_approval` answer shows undecided (none for any other)."""
    if not isinstance(answer, dict) or answer.get("status") != "awaiting_approval":
        return []
    shown = answer.get("approvals")
    calls = [a.get("callId") for a in shown if isinstance(a, dict)] if isinstance(shown, list) else []
    return [c for c in calls if isinstance(c, str)]


def _due(answer: dict[str, Any]) -> datetime | None:
    """When the approvals a `run_status` answer shows are due (None: it waits on none)."""
    due = answer.get("dueAt")
    try:
        return datetime.fromisoformat(due) if isinstance(due, str) else None
    except ValueError:
        return None


def get_agent(context: OrchestrationContext, name: str) -> AgentHandle:
    """The hosted agent `name` for use inside an orchestrator function."""
    return AgentHandle(context, name)
