"""Waiting for a run: read the session's entity state until the run is stored.

A signal returns before the entity runs, so the only way to learn the outcome through the durable
client is to read the entity state. When the entity runs in this process its end wakes the
caller, which re-reads at once; otherwise the reads back off (`hosting._read_pacing`). Each read
looks only at the run's two entries via `data.runs`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from typing import Any

import azure.durable_functions as df

from .._errors import ProblemCode, ProblemError
from ..stored._refused import unrecorded_run
from ..stored._runs import StoredRun, find_stored_run
from ._archived import find_archived_run
from ._pacing import ReadPacer, read_pacer
from ._read import DurableClient, read_session, state_problem

SameRequest = Callable[[str | None, Mapping[str, Any] | None], bool]
"""Whether a stored run (its request hash, its request entry) asked what the new request asks."""


def unreadable(agent: str, session_id: str, reason: str) -> ProblemError:
    """The problem returned when a session's stored state cannot be read (it is left as it is)."""
    return ProblemError(
        ProblemCode.STATE_UNREADABLE,
        f"session {session_id!r} of agent {agent!r} has a stored state this build cannot read: "
        f"{reason}. It is kept unchanged; nothing was run.",
        agent=agent,
        session_id=session_id,
    )


def check_same_request(run: StoredRun, asked: SameRequest | None, agent: str, session_id: str) -> None:
    """Raise 409 when the stored run with this correlation id answered a different request
    (`asked` compares a stored run's `requestHash`, or its request entry, with the new request)."""
    if asked is not None and not asked(run.request_hash, run.request):
        raise idempotency_conflict(agent, session_id, run.correlation_id)


def idempotency_conflict(agent: str, session_id: str, correlation_id: str) -> ProblemError:
    """409: the run with this correlation id (stored or pending) asked a different request."""
    return ProblemError(
        ProblemCode.IDEMPOTENCY_CONFLICT,
        f"run {correlation_id!r} already exists with a different request "
        "(messages, response_format or options); use a new Idempotency-Key or correlation_id "
        "for a new request",
        agent=agent,
        session_id=session_id,
        correlation_id=correlation_id,
    )


async def wait_for_run(
    client: DurableClient,
    entity_id: df.EntityId,
    *,
    agent: str,
    session_id: str,
    correlation_id: str,
    timeout: float,
    asked: SameRequest | None = None,
    state_checked: bool = False,
    pacer: ReadPacer | None = None,
) -> StoredRun | None:
    """The finished run, or None when `timeout` seconds pass first.

    Raises a 409 problem when the session's state is unreadable (checked on the first read,
    unless the caller has just done so: `state_checked`) or the id answered another request,
    and a 410 when a reset or delete discarded the run (hosting._unrecorded). `pacer`: one the
    caller entered before sending the turn; when the caller marked it `sent` (it sent the turn
    just now), the first read waits for the pacer's first pause instead of reading a state the
    turn cannot be in yet.
    """
    deadline = time.monotonic() + max(0.0, timeout)
    checked = state_checked
    with contextlib.ExitStack() as stack:
        pace = pacer if pacer is not None else stack.enter_context(read_pacer(entity_id.name, entity_id.key))
        if pace.just_sent:
            await pace.pause(max(0.0, deadline - time.monotonic()))
        while True:
            pace.reading()
            snapshot = await read_session(client, entity_id)
            if snapshot.exists:
                if not checked:
                    # Once per wait: what the entity writes afterwards it could read itself.
                    reason = state_problem(snapshot.document)
                    if reason is not None:
                        raise unreadable(agent, session_id, reason)
                    checked = True
                run = find_stored_run(snapshot.document, correlation_id)
                if run is None:
                    # A retry of a run whose entries were archived: answered from its chunk.
                    run = await find_archived_run(agent, session_id, snapshot.document, correlation_id)
                if run is not None:
                    check_same_request(run, asked, agent, session_id)
                    return run
            # Runs without a record of their own: discarded by a reset or delete, or refused.
            unrecorded = unrecorded_run(
                snapshot.document, agent, session_id, correlation_id, deleted=snapshot.deleted
            )
            if unrecorded is not None:
                return unrecorded
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            await pace.pause(remaining)
