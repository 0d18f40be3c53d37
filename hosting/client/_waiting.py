"""Waiting for a run: read the session's entity state until the run is stored.

A signal returns before the entity runs, so the only way to learn the outcome through the durable
client is to read the entity state. When the entity runs in this process its end wakes the
caller, which re-reads at once; otherwise the reads back off (`hosting.client._pacing`). Each read
looks only at the run's two entries via `data.runs`; `snapshot_outcome` is what one read shows
(the cancel route reads the session once and asks it).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import replace

import azure.durable_functions as df

from state import HistoryUnavailable

from ..stored import INTERNAL, Viewer, approvals_of, unrecorded_run
from ._archived import find_archived_run
from ._outcome import (
    PENDING,
    Awaiting,
    Discarded,
    Finished,
    Hidden,
    HistoryMissing,
    Pending,
    RunOutcome,
    SameRequest,
    Unreadable,
    finished,
)
from ._pacing import ReadPacer, read_pacer
from ._read import DurableClient, Snapshot, read_session, state_problem


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
    user: Viewer = INTERNAL,
) -> RunOutcome:
    """The run's outcome once it has one, or `PENDING` when `timeout` seconds pass first; a run
    that waits for approvals is answered at once (`Awaiting`).

    The outcome says when the session's state is unreadable (checked on the first read, unless
    the caller has just done so: `state_checked`), when the id answered another request, when a
    reset or delete discarded the run, or when its archived chunk cannot be read. `pacer`: one the
    caller entered before sending the turn; when the caller marked it `sent` (it sent the turn
    just now), the first read waits for the pacer's first pause instead of reading a state the
    turn cannot be in yet. `user`: whom the caller acts for (the edges pass their caller's);
    another user's session is `hidden`.
    """
    deadline = time.monotonic() + max(0.0, timeout)
    checked = state_checked
    steered: str | None = None
    with contextlib.ExitStack() as stack:
        pace = pacer if pacer is not None else stack.enter_context(read_pacer(entity_id.name, entity_id.key))
        if pace.just_sent:
            await pace.pause(max(0.0, deadline - time.monotonic()))
        while True:
            pace.reading()
            snapshot = await read_session(client, entity_id)
            outcome = await snapshot_outcome(
                snapshot,
                agent=agent,
                session_id=session_id,
                correlation_id=correlation_id,
                asked=asked,
                check_state=not checked,
                user=user,
            )
            unfinished = isinstance(outcome, Pending | Awaiting)
            into = snapshot.stored.steered_into(correlation_id) if unfinished else None
            if into is not None and into != correlation_id:
                # Sent with `steer`, it joined a running run: its answer is that run's.
                correlation_id, asked, steered = into, None, into
                continue
            if steered is not None and isinstance(outcome, Finished | Discarded | Pending | Awaiting):
                outcome = replace(outcome, steered_into=steered)
            if not isinstance(outcome, Pending):
                return outcome
            # Once per wait: what the entity writes afterwards it could read itself.
            checked = checked or snapshot.exists
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return outcome
            await pace.pause(remaining)


async def snapshot_outcome(
    snapshot: Snapshot,
    *,
    agent: str,
    session_id: str,
    correlation_id: str,
    asked: SameRequest | None = None,
    check_state: bool = True,
    user: Viewer = INTERNAL,
) -> RunOutcome:
    """The run's outcome as one read of its session shows it, or `PENDING` when it has none yet.

    `check_state`: whether to refuse a state this build cannot read (a caller that checked it
    on an earlier read of the same wait need not again); the other arguments as `wait_for_run`'s.
    Reads nothing more of the session; only a run whose entries were archived reads its chunk.
    """
    stored = snapshot.stored
    if (snapshot.exists or snapshot.deleted) and not stored.visible_to(user):
        return Hidden()
    if snapshot.exists:
        if check_state:
            reason = state_problem(snapshot.document)
            if reason is not None:
                return Unreadable(reason)
        run = stored.find_run(correlation_id)
        if run is None:
            # A retry of a run whose entries were archived: answered from its chunk.
            try:
                run = await find_archived_run(agent, session_id, stored, correlation_id)
            except HistoryUnavailable as error:
                return HistoryMissing(error)
        if run is not None:
            return finished(run, asked)
        paused = approvals_of(snapshot.document, correlation_id)
        if paused is not None and paused.waiting:
            # Nothing happens until people decide: the wait is over (the caller is told).
            return Awaiting(paused)
    # Runs without a record of their own: discarded by a reset or delete, or refused.
    unrecorded = unrecorded_run(stored, correlation_id, deleted=snapshot.deleted)
    if unrecorded is not None:
        return Finished(unrecorded.run) if unrecorded.run is not None else Discarded(unrecorded)
    return PENDING
