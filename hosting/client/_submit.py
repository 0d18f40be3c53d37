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
   (once per process and backend: hosting.lifecycle._sweeper), so an app reached through any
   one of its front doors expires its sessions.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import azure.durable_functions as df

from agents import Agent, TurnRequest

from .._errors import ProblemCode, ProblemError
from .._ids import entity_name
from ..lifecycle._sweeper import ensure_sweepers
from ..stored._refused import unrecorded_run
from ..stored._runs import StoredRun, find_stored_run, stored_bytes
from ._archived import find_archived_run
from ._binding import DurableClient
from ._read import Snapshot, read_session, state_problem
from ._waiting import check_same_request, unreadable

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

    @property
    def correlation_id(self) -> str:
        return self.request.correlation_id

    @property
    def entity_id(self) -> df.EntityId:
        """The session's entity."""
        return session_entity(self.agent.name, self.session_id)

    def operation_input(self) -> dict[str, Any]:
        """The `run` operation's input: the turn request's JSON."""
        return self.request.to_json()

    def same_request(self, stored_hash: str | None, stored_request: Mapping[str, Any] | None) -> bool:
        """Whether a stored run (its request hash, or its request entry) asked what this asks."""
        return self.agent.same_request(self.request, stored_hash, stored_request)


@dataclass(frozen=True)
class Prepared:
    """What `prepare` found: the session as read, and the finished run the submission names."""

    snapshot: Snapshot
    done: StoredRun | None = None

    @property
    def creates_session(self) -> bool:
        return not self.snapshot.exists


class Submitter:
    """Submits turns to the agents' entities through a durable client."""

    def __init__(self, agents: Sequence[str], max_session_bytes: int, log: logging.Logger = log) -> None:
        self.agents = list(agents)
        self.max_session_bytes = max_session_bytes
        self.log = log
        """Where a sent turn is logged (the edge's own logger: hosting.http, hosting.mcp)."""

    async def prepare(self, client: DurableClient, submission: Submission) -> Prepared:
        """Read the session and refuse or answer what must not be sent (see the module)."""
        if submission.fresh_session:
            return Prepared(Snapshot(False, None))
        agent, session_id, cid = submission.agent.name, submission.session_id, submission.correlation_id
        snapshot = await read_session(client, submission.entity_id)
        if snapshot.exists:
            reason = state_problem(snapshot.document)
            if reason is not None:
                raise unreadable(agent, session_id, reason)
            done = None
            if submission.retry_safe:
                done = find_stored_run(snapshot.document, cid)
                if done is None:
                    done = await find_archived_run(agent, session_id, snapshot.document, cid)
                if done is None:  # discarded (410), or refused by id only
                    done = unrecorded_run(snapshot.document, agent, session_id, cid)
            if done is not None:
                check_same_request(done, submission.same_request, agent, session_id)
                return Prepared(snapshot, done)
            self._refuse_full_session(submission, snapshot.document)
        elif snapshot.deleted and submission.retry_safe:  # a retry of a deleted session's run: 410
            unrecorded_run(snapshot.document, agent, session_id, cid, deleted=True)
        return Prepared(snapshot)

    def _refuse_full_session(self, submission: Submission, document: Any) -> None:
        """409 when the session is already too full for this request: the entity's own first check
        (stored + asked bytes over `max_session_bytes`). Retries against a full session therefore
        never pile up refusal records until even a record no longer fits (which would leave the
        run without an answer)."""
        stored = stored_bytes(document)
        asked = sum(len(m.text.encode("utf-8")) for m in submission.request.messages)
        if stored + asked > self.max_session_bytes:
            raise ProblemError(
                ProblemCode.SESSION_TOO_LARGE,
                f"session {submission.session_id!r} of agent {submission.agent.name!r} holds {stored} "
                f"bytes; with this request's {asked} it would pass its limit of {self.max_session_bytes} "
                "bytes (max_session_bytes). Nothing was run or recorded; start a new session (or reset "
                "this one)",
                retryable=False,
                max_session_bytes=self.max_session_bytes,
                agent=submission.agent.name,
                session_id=submission.session_id,
            )

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
        """The work due once a turn was sent: for one that created its session, making sure the
        agents' expiry sweepers run (a session itself costs no orchestration); else None."""
        if not prepared.creates_session:
            return None
        return partial(ensure_sweepers, client, self.agents)
