"""Submitting a turn: the one path the HTTP API, the MCP tools and the orchestration helpers share.

A `Submission` is a turn addressed to a session: the entity it goes to and the operation input,
built and validated the same way for every caller (an orchestrator signals or calls it through its
own context, deterministically). `Submitter` is what a caller outside an orchestration does with
one, in order:

1. `prepare`: read the session once (unless its id was drawn for this request) and refuse at
   once, sending nothing and handing out no run id, what would otherwise wait for nothing: a
   state the entity cannot read (409), a session already too full for the request (409, the
   entity's own first check on what was just read), a run id a reset or delete discarded (410);
   a named run that already finished is found instead (stored, archived or refused by id), so a
   retry is answered without sending the turn again.
2. `send`: signal the entity.
3. `after_send`: a request that created a session makes sure the agents' expiry sweepers run
   (`on_new_session`: hosting.lifecycle.ensure_sweepers, once per process and backend), so an
   app reached through any one of its front doors expires its sessions.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import azure.durable_functions as df

from agents import Agent, TurnRequest
from state import HistoryUnavailable

from .._ids import STRATEGY_KEY, USER_KEY, entity_name
from ..stored import Unrecorded, unrecorded_run
from ._archived import find_archived_run
from ._binding import DurableClient
from ._outcome import PENDING, RunOutcome, SameRequest, finished
from ._read import Snapshot, checked_state, read_session

log = logging.getLogger("hosting.client")

RUN_OPERATION = "run"


def session_entity(agent: str, session_id: str) -> df.EntityId:
    """The entity of `agent`'s session `session_id`, which every turn of it is sent to."""
    return df.EntityId(entity_name(agent), session_id)


@dataclass(frozen=True)
class Submission:
    """A turn addressed to a session of an agent."""

    agent: Agent
    session_id: str
    request: TurnRequest
    fresh_session: bool = False
    """The session id was drawn for this request: there is nothing stored to look at."""
    retry_safe: bool = False
    """The run id is the caller's own (an idempotency key): a finished run with it answers it."""
    user_id: str | None = None
    """The user the turn acts for (checked by the edge): only their session, or one of no one
    in particular, is run; a session this turn creates is theirs."""
    multitask_strategy: str = "enqueue"
    """What the entity does when the session is busy (docs/hosting.md "Runs sent to a busy
    session"): `enqueue`, `reject` or `interrupt`."""

    @property
    def correlation_id(self) -> str:
        return self.request.correlation_id

    @property
    def entity_id(self) -> df.EntityId:
        """The session's entity."""
        return session_entity(self.agent.name, self.session_id)

    def operation_input(self) -> dict[str, Any]:
        """The `run` operation's input: the turn request's JSON, and the user it acts for."""
        data = self.request.to_json()
        if self.user_id is not None:
            data[USER_KEY] = self.user_id
        if self.multitask_strategy != "enqueue":
            data[STRATEGY_KEY] = self.multitask_strategy
        return data

    def same_request(self, stored_hash: str | None, stored_request: Mapping[str, Any] | None) -> bool:
        """Whether a stored run (its request hash, or its request entry) asked what this asks."""
        return self.agent.same_request(self.request, stored_hash, stored_request)


@dataclass(frozen=True)
class Prepared:
    """What `prepare` found: the session as read, and the run's outcome so far: pending (send
    the turn), finished (answer it), or refused (send nothing)."""

    snapshot: Snapshot
    outcome: RunOutcome = PENDING

    @property
    def creates_session(self) -> bool:
        return not self.snapshot.exists


class Submitter:
    """Submits turns to the agents' entities through a durable client."""

    def __init__(
        self,
        max_session_bytes: int,
        log: logging.Logger = log,
        on_new_session: Callable[[DurableClient], Awaitable[None]] | None = None,
    ) -> None:
        self.max_session_bytes = max_session_bytes
        self.log = log
        """Where a sent turn is logged (the edge's own logger: hosting.http, hosting.mcp)."""
        self.on_new_session = on_new_session
        """Due once a turn created its session: the app makes sure the expiry sweepers run
        (hosting.lifecycle.ensure_sweepers)."""

    async def prepare(self, client: DurableClient, submission: Submission) -> Prepared:
        """Read the session and find what must not be sent (see the module)."""
        if submission.fresh_session:
            return Prepared(Snapshot(False, None))
        agent, session_id, cid = submission.agent.name, submission.session_id, submission.correlation_id
        snapshot = await read_session(client, submission.entity_id)
        stored = snapshot.stored
        if (snapshot.exists or snapshot.deleted) and not stored.visible_to(submission.user_id):
            return Prepared(snapshot, RunOutcome(hidden=True))  # another user's: as if there were none
        if snapshot.exists:
            checked = checked_state(snapshot.document)
            if checked.problem is not None:
                return Prepared(snapshot, RunOutcome(unreadable=checked.problem))
            if submission.retry_safe:
                done = stored.find_run(cid)
                if done is None:
                    try:
                        done = await find_archived_run(agent, session_id, stored, cid)
                    except HistoryUnavailable as error:
                        return Prepared(snapshot, RunOutcome(history=error))
                if done is not None:
                    return Prepared(snapshot, finished(done, submission.same_request))
                unrecorded = unrecorded_run(stored, cid)  # discarded (410), or refused by id only
                if unrecorded is not None:
                    return Prepared(snapshot, _unrecorded(unrecorded, submission.same_request))
            asked = sum(len(m.text.encode("utf-8")) for m in submission.request.messages)
            size = checked.size_bytes  # stored.size_bytes(), measured by the check
            # The entity's own first check (stored + asked bytes over `max_session_bytes`): retries
            # against a full session never pile up refusal records until even a record no longer
            # fits (which would leave the run without an answer).
            if size + asked > self.max_session_bytes:
                return Prepared(snapshot, RunOutcome(full=(size, asked)))
        elif snapshot.deleted and submission.retry_safe:  # a retry of a deleted session's run: 410
            unrecorded = unrecorded_run(stored, cid, deleted=True)
            if unrecorded is not None and unrecorded.discarded:
                return Prepared(snapshot, RunOutcome(discarded=unrecorded))
        return Prepared(snapshot)

    async def send(self, client: DurableClient, submission: Submission) -> None:
        """Signal the session's entity to run the turn."""
        await client.signal_entity(submission.entity_id, RUN_OPERATION, submission.operation_input())
        self.log.info(
            "run %s session %s correlation %s signalled",
            submission.agent.name,
            submission.session_id,
            submission.correlation_id,
        )

    def after_send(self, client: DurableClient, prepared: Prepared) -> Callable[[], Awaitable[None]] | None:
        """The work due once a turn was sent: for one that created its session, `on_new_session`
        (the expiry sweepers; a session itself costs no orchestration); else None."""
        if not prepared.creates_session or self.on_new_session is None:
            return None
        return partial(self.on_new_session, client)


def _unrecorded(unrecorded: Unrecorded, asked: SameRequest) -> RunOutcome:
    if unrecorded.run is None:
        return RunOutcome(discarded=unrecorded)
    return finished(unrecorded.run, asked)
