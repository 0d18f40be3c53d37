"""Cancelling a run: `POST agents/{agent}/sessions/{session_id}/runs/{correlation_id}/cancel`.

A run waiting in the session's queue never starts; a running turn stops at its next step
boundary, and a step in flight (a model call, a batch of tools) is abandoned within a second
where a stream store is configured: the route marks the cancel there, where the running step
looks for it (hosting.streams), before it signals the entity's `cancel` operation, which records
the run as cancelled between steps (hosting.entity._queue). See docs/hosting.md "Cancelling a run".
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import azure.durable_functions as df
import azure.functions as func

from agents import Agent

from .._errors import ProblemCode, ProblemError
from .._ids import entity_name
from ..client import Answerable, DurableClient, Finished, RunOutcome, read_session, snapshot_outcome
from ..streams import StreamKey, StreamStore, StreamStoreUnavailable
from ._answers import Answers, is_cancelled
from ._lookup import claimed_by_other, hosted_agent
from ._models import RunActionBody
from ._problems import json_response
from ._refusals import no_session
from ._requests import check_id
from ._users import caller_user

log = logging.getLogger("hosting.http")

CANCEL_OPERATION = "cancel"


async def cancel_run(
    req: func.HttpRequest,
    client: DurableClient,
    agents: Mapping[str, Agent],
    answers: Answers,
    store: StreamStore,
    answerable: Callable[[RunOutcome, str, str, str], Answerable],
) -> func.HttpResponse:
    """The route: 202 when the run will end cancelled; 200 (status `cancelled`) when it already
    did, so a cancel sent again asks nothing; 409 `run_finished` when it finished otherwise; 404
    when the session has no such run queued or running."""
    agent = hosted_agent(agents, req)
    session_id = req.route_params.get("session_id", "")
    correlation_id = req.route_params.get("correlation_id", "")
    check_id(session_id, "session_id")
    check_id(correlation_id, "correlation_id", ProblemCode.INVALID_CORRELATION_ID)
    user = caller_user(req)
    cancelled = await cancel(client, agent.name, session_id, correlation_id, user, answers, store, answerable)
    location = cancelled.location
    body = RunActionBody.model_validate(
        {
            "agent": agent.name,
            "session_id": session_id,
            "correlation_id": correlation_id,
            "status": cancelled.status,
            "location": location,
        }
    )
    return json_response(body, 200 if cancelled.status == "cancelled" else 202, {"Location": location})


@dataclass(frozen=True)
class Cancelled:
    """What a cancel came to: `cancelled` (the run had ended so) or `cancel_requested` (it will)."""

    status: Literal["cancelled", "cancel_requested"]
    location: str


async def cancel(
    client: DurableClient,
    agent: str,
    session_id: str,
    correlation_id: str,
    user: str | None,
    answers: Answers,
    store: StreamStore,
    answerable: Callable[[RunOutcome, str, str, str], Answerable],
) -> Cancelled:
    """Cancel the run for `user`: the one way a run is cancelled (the route, the protocol
    edges); its refusals raised as their problems, the ids checked as the route checks its path."""
    check_id(session_id, "session_id")
    check_id(correlation_id, "correlation_id", ProblemCode.INVALID_CORRELATION_ID)
    entity_id = df.EntityId(entity_name(agent), session_id)
    snapshot = await read_session(client, entity_id)
    stored = snapshot.stored
    # One read answers everything below: another user's session, an unreadable state, a finished,
    # discarded or archived run, and whether the run is queued or running.
    read = await snapshot_outcome(
        snapshot, agent=agent, session_id=session_id, correlation_id=correlation_id, user=user
    )
    # Hidden, unreadable, discarded, archived: raised as their problems.
    outcome = answerable(read, agent, session_id, correlation_id)
    key = StreamKey(agent, session_id, correlation_id)
    if not (snapshot.exists or snapshot.deleted) and await claimed_by_other(store, key, user):
        raise no_session(agent, session_id)  # another user's first turn: theirs alone
    location = answers.run_location(agent, session_id, correlation_id)
    if isinstance(outcome, Finished):
        if not is_cancelled(outcome.run.result()):
            raise ProblemError(
                ProblemCode.RUN_FINISHED,
                f"run {correlation_id!r} of session {session_id!r} has finished; there is nothing to cancel",
                location=location,
            )
        return Cancelled("cancelled", location)
    # A turn's first step is stored only when it ends: until then its stream says it was sent.
    known = snapshot.exists and correlation_id in stored.waiting_ids()
    if not known and not await _streamed(store, key):
        if not snapshot.exists:
            raise no_session(agent, session_id)
        raise ProblemError(
            ProblemCode.RUN_NOT_FOUND,
            f"session {session_id!r} of agent {agent!r} has no run {correlation_id!r} queued or "
            "running (a run sent a moment ago may not have reached its session yet: try again)",
            field="correlation_id",
        )
    try:
        # First, so that a step already running sees it; the entity records the cancel between
        # steps whatever happens here.
        await store.request_cancel(key)
    except Exception:
        log.warning("run %s: the cancel could not be marked in the stream store", key.text(), exc_info=True)
    await client.signal_entity(entity_id, CANCEL_OPERATION, {"correlationId": correlation_id})
    return Cancelled("cancel_requested", location)


async def _streamed(store: StreamStore, key: StreamKey) -> bool:
    """Whether the run was sent through this app's API (its stream or claim exists)."""
    try:
        return await store.exists(key)
    except StreamStoreUnavailable:
        return False
