"""An undecided tool approval expires as rejected (docs/hosting.md "Tool approvals").

`dafx_approval_expiry` (instance `dafx-approval-{agent}-{session}-{step}-{run}`) sleeps on a
durable timer until the step's approvals are due, then signals the entity `expire_approvals`,
which rejects what is still undecided and resumes the turn (a step decided meanwhile: nothing
happens). The entity cannot start an orchestration itself (the Python SDK's entity context has
no such call, and the out-of-process batch answer carries only state, results and signals:
azure-functions-durable-extension `OutOfProcResult`), so the API side starts it when it first sees
the turn paused: the waiting `POST .../run`, the run resource, the decision route, the MCP
tool and a stream reader at `approval.required`. The start is idempotent by its instance id;
the agent's sweeper purges finished ones (hosting.lifecycle._purge). Durable timers and entity
signals are what the extension documents for Python, so this works the same on Azure and on the
local host.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Sequence
from datetime import datetime, timedelta
from typing import Any

import azure.durable_functions as df

from .._ids import entity_name
from .._settings import (
    APPROVAL_TIMEOUT_SETTING,
    DEFAULT_APPROVAL_TIMEOUT_SECONDS,
    MAX_APPROVAL_TIMEOUT_SECONDS,
    LifecycleSettings,
    current,
)
from ..client import DurableClient
from ..stored import Approval, RunApprovals, StoredDocument, approvals_of
from ._names import APPROVAL_EXPIRY, approval_instance

log = logging.getLogger("hosting.lifecycle")

__all__ = ["APPROVAL_TIMEOUT_SETTING", "DEFAULT_APPROVAL_TIMEOUT_SECONDS", "MAX_APPROVAL_TIMEOUT_SECONDS"]


def approval_timeout(settings: LifecycleSettings | None = None) -> float:
    """How long a call waits for its decision before it expires as rejected (seconds), by
    `settings` (default: the app's, read at startup)."""
    return (current().lifecycle if settings is None else settings).approval_timeout


def approvals_due(waiting: Sequence[Approval], seconds: float) -> datetime | None:
    """When the earliest of the `waiting` calls expires, `seconds` after it was asked for; None
    when a stored request time cannot be read."""
    try:
        first = min(datetime.fromisoformat(a.requested_at) for a in waiting)
    except ValueError:
        return None
    return first + timedelta(seconds=seconds)


def approval_expiry_orchestrator(context: df.DurableOrchestrationContext) -> Generator[Any, Any, str]:
    """Sleep until the step's approvals are due, then ask the entity to expire what is left."""
    spec = context.get_input()
    yield context.create_timer(datetime.fromisoformat(spec["dueAt"]))
    entity = df.EntityId(entity_name(spec["agent"]), spec["session"])
    operation = {"correlationId": spec["correlationId"], "step": spec["step"], "seconds": spec["seconds"]}
    context.signal_entity(entity, "expire_approvals", operation)
    return "signalled"


def approval_expiries(agent: str, session_id: str, document: StoredDocument) -> list[str]:
    """The instance ids of the expiries the session's turn in progress may have running (one
    per step of its that paused): what a user's erasure stops before they signal a deleted
    session."""
    waiting = document.waiting_ids()
    paused = approvals_of(document.document, waiting[0]) if waiting else None
    if paused is None:
        return []
    steps = sorted({a.step for a in paused.approvals})
    return [approval_instance(agent, session_id, waiting[0], step) for step in steps]


async def stop_approval_expiries(client: DurableClient, instances: Sequence[str]) -> None:
    """Terminate these expiries (documented for Python clients:
    `DurableOrchestrationClient.terminate`); one finished or never started is left as it is."""
    for instance in instances:
        try:
            await client.terminate(instance, "the session was erased")
        except Exception as error:  # finished, never started, or refused: nothing to stop
            log.debug("approval expiry %s not terminated: %s", instance, error)


async def start_approval_expiry(
    client: DurableClient, agent: str, session_id: str, correlation_id: str, paused: RunApprovals
) -> None:
    """Start the expiry of the step's approvals unless it runs already (once per process and
    step: each process that sees the turn paused asks once)."""
    waiting = paused.waiting
    if not waiting:
        return
    seconds = approval_timeout()
    due = approvals_due(waiting, seconds)
    if due is None:
        return
    spec = {
        "agent": agent,
        "session": session_id,
        "correlationId": correlation_id,
        "step": paused.step,
        "seconds": seconds,
        "dueAt": due.isoformat(),
    }
    instance = approval_instance(agent, session_id, correlation_id, paused.step)
    if instance in _started:
        return
    try:
        # The backend refuses a second start while one runs; one that finished and starts
        # again only signals a step that is decided by then, which changes nothing.
        await client.start_new(APPROVAL_EXPIRY, instance, spec)
    except Exception as error:  # running already (the usual case), or refused
        log.debug("approval expiry %s not started: %s", instance, error)
    _started[instance] = None
    while len(_started) > _REMEMBERED:
        _started.pop(next(iter(_started)))


_REMEMBERED = 10_000
_started: dict[str, None] = {}
"""The expiries this process started or saw running (oldest first): not asked again."""
