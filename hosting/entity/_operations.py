"""The operations every agent entity understands, by name: `OPERATION_HANDLERS` maps each to the
function that carries it out on the session in the entity context, with the entity's services.

A handler sets the operation's answer itself (`set_result`), or not at all: `announce_approvals`
answers nothing, and the lifecycle operations that leave no entity must call `destruct_on_exit`
after their answer. Most handlers just answer what a function returns (`answering`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from .._errors import InvalidOperation
from .._telemetry import TRACE_CONTEXT_FIELD, traced_entity_run
from ._approvals import announce_approvals, decide, expire_approvals, run_status
from ._context import EntityContext, operation_input, stored_text
from ._lifecycle import answer_archive_epoch, delete, expire, reset
from ._queue import cancel
from ._services import EntityServices
from ._steps import due_step, step
from ._turns import run

Handler = Callable[[EntityServices, EntityContext], None]
"""An operation: carried out on the session in the context, its answer set on the context."""


def answering(answer: Callable[[EntityServices, EntityContext], object]) -> Handler:
    """The operation whose answer is what `answer` returns."""

    def handler(services: EntityServices, context: EntityContext) -> None:
        context.set_result(answer(services, context))

    return handler


def traced_run(services: EntityServices, context: EntityContext) -> None:
    """The `run` operation, in its span (hosting._telemetry), a child of the trace its request carried."""
    run_input = operation_input(context)
    key = context.entity_key
    name, agent = services.name, services.agent.name
    context.set_result(traced_entity_run(name, agent, key, run_input, lambda: dict(run(services, context))))


def traced_step(services: EntityServices, context: EntityContext) -> None:
    """The `step` operation: the next step of the turn in progress, signalled by the step before
    it, in its span; a stale signal answers None and runs nothing."""
    due = due_step(services, context)
    if due is None:
        context.set_result(None)
        return
    loaded, turn = due
    # Each step's operation has its span, a child of the trace the turn's request carried
    # (the span reads only these two fields: no need to write the whole request out).
    carried = {"correlationId": turn.correlation_id, TRACE_CONTEXT_FIELD: turn.request.trace_context}
    context.set_result(
        traced_entity_run(
            services.name, services.agent.name, context.entity_key, carried,
            lambda: dict(step(services, context, loaded, turn)), operation="step",
        )
    )


def get(services: EntityServices, context: EntityContext) -> None:
    """The `get` operation: the stored session document as it is (None: no session)."""
    text = stored_text(context)
    context.set_result(None if text is None else json.loads(text))


OPERATION_HANDLERS: Mapping[str, Handler] = {
    "run": traced_run,
    "step": traced_step,
    # The run ends cancelled if it is queued or between steps (hosting.entity._queue).
    "cancel": answering(cancel),
    # A decision on a call the turn waits on (hosting.entity._approvals).
    "decide": answering(decide),
    "expire_approvals": answering(expire_approvals),
    # A pause, committed: its approval.required event goes out (hosting.entity._approvals).
    "announce_approvals": announce_approvals,
    # A waiting orchestration reads where its run is (hosting._orchestration).
    "run_status": answering(run_status),
    "reset": reset,
    # Leaves a tombstone of the discarded run ids (hosting.stored); a user's erasure's names no user.
    "delete": delete,
    "get": get,
    "expire": expire,
    "archive_epoch": answer_archive_epoch,
}

OPERATIONS = tuple(OPERATION_HANDLERS)
"""The operations every agent entity understands."""


def operate(services: EntityServices, context: EntityContext) -> None:
    """Carry out the operation in `context`; `InvalidOperation` for one no entity has."""
    operation = context.operation_name
    handler = OPERATION_HANDLERS.get(operation) if operation is not None else None
    if handler is None:
        raise InvalidOperation(
            f"entity {services.name} has no operation {operation!r}; known: {', '.join(OPERATIONS)}"
        )
    handler(services, context)
