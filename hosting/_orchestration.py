"""Hosted agents inside orchestrator functions: deterministic entity calls with typed results.

An orchestrator is replayed from its history, so everything here is derived from the
orchestration context: correlation ids come from `context.new_uuid()` (the same on every replay)
and the turn itself runs in the agent's entity, never in the orchestrator. A turn is addressed and
encoded as every submission is (hosting.client._submit), through the orchestration context.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Protocol

import azure.durable_functions as df

from agents import InputMessage, InvalidTurnRequest, TurnRequest, TurnResult

from ._errors import AgentRunFailed, InvalidOperation
from ._ids import id_problem
from ._telemetry import orchestration_trace_context
from .client._submit import RUN_OPERATION, session_entity


class OrchestrationContext(Protocol):
    """What the helpers use of the SDK's `DurableOrchestrationContext`."""

    @property
    def instance_id(self) -> str: ...

    def new_uuid(self) -> str: ...

    def call_entity(self, entityId: df.EntityId, operationName: str, operationInput: Any = None) -> Any: ...

    def signal_entity(self, entityId: df.EntityId, operationName: str, operationInput: Any = None) -> Any: ...


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
        the session's history as well).
        """
        entity_id, operation = self._operation(message, session_id, response_format, role, options)
        raw = yield self._context.call_entity(entity_id, RUN_OPERATION, operation.to_json())
        result = TurnResult.from_json(raw)
        if result.error is not None:
            raise AgentRunFailed(self.name, session_id, operation.correlation_id, result.error)
        return result

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


def get_agent(context: OrchestrationContext, name: str) -> AgentHandle:
    """The hosted agent `name` for use inside an orchestrator function."""
    return AgentHandle(context, name)
