"""Submitting a turn: the one path every front door shares (the HTTP API, JSON and SSE, the MCP
tools, and the protocol edges through the HTTP API); the orchestration helpers build the same
`Submission` and signal it through their own context, deterministically.

A `Submission` is a turn addressed to a session: the entity it goes to and the operation input,
built and validated the same way for every caller. `Submitter.submit` is what a caller outside
an orchestration does with one, in order, and its answer is one value (`Submitted`):

1. read the session once (unless its id was drawn for this request) and refuse at once, sending
   nothing and handing out no run id, what would otherwise wait for nothing: a state the entity
   cannot read, a session already too full for the request (the entity's own first check on what
   was just read), a run id a reset or delete discarded, another user's session (`Refused`); a
   named run that already finished is found instead (stored, archived or refused by id), so a
   retry is answered without sending the turn again (`Answered`);
2. one call into hosting.client._multitask (`admit_run`): a run sent to a busy session with
   `reject` (or `interrupt`) is refused there too; otherwise it claims the run in the stream store
   (hosting.streams `start_run`): a second request for a pending run joins it, another request
   with its id is refused;
3. just before the signal: the caller's own `before_send` (a webhook's delivery, stored before the
   run can end), then an `interrupt` run's marks; signal the entity (`Accepted`, `sent`). What is
   sent is handed down as values (hosting.streams `Dispatch`), so nothing calls back into this
   module or the edge;
4. `Accepted.then`: a request that created a session makes sure the agents' expiry sweepers run
   (`on_new_session`: hosting.lifecycle.ensure_sweepers, once per process and backend), so an app
   reached through any one of its front doors expires its sessions. The caller runs it when it
   suits it (an SSE stream, once its first event is out).

Each edge converts its wire format into the `Submission` and the value out: `Refused.outcome` to
its problem (hosting.http._refusals), `Answered.run` to its answer.
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
from ..stored import StoredRun, Unrecorded, unrecorded_run
from ..streams import Admission, Dispatch, RunClaim, StreamKey, StreamStore, claim_identity
from ._archived import find_archived_run
from ._binding import DurableClient
from ._multitask import admit_run
from ._outcome import (
    PENDING,
    Conflict,
    Discarded,
    Finished,
    Full,
    Hidden,
    HistoryMissing,
    Pending,
    Refusal,
    SameRequest,
    Unreadable,
    finished,
)
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

    @property
    def stream_key(self) -> StreamKey:
        """The run's event stream (and its claim) in the stream store."""
        return StreamKey(self.agent.name, self.session_id, self.correlation_id)

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
    the turn), finished (answer it), or refused or discarded (send nothing)."""

    snapshot: Snapshot
    outcome: Finished | Discarded | Refusal | Pending = PENDING

    @property
    def creates_session(self) -> bool:
        return not self.snapshot.exists


@dataclass(frozen=True)
class Refused:
    """Nothing was sent: `outcome` says why (its edge's problem: hosting.http._refusals)."""

    outcome: Refusal | Discarded


@dataclass(frozen=True)
class Answered:
    """A retry of a finished run: its entries, as read (stored, archived, or refused by id)."""

    run: StoredRun
    snapshot: Snapshot


@dataclass(frozen=True)
class Accepted:
    """The run is under way: this request sent it (`sent`), or joined the pending run with its id."""

    sent: bool
    then: Callable[[], Awaitable[None]] | None = None
    """Due once the turn was sent (see the module); None when there is nothing to do."""


Submitted = Refused | Answered | Accepted
"""What became of a submitted turn."""


class Submitter:
    """Submits turns to the agents' entities through a durable client."""

    def __init__(
        self,
        max_session_bytes: int,
        log: logging.Logger = log,
        on_new_session: Callable[[DurableClient], Awaitable[None]] | None = None,
        streams: StreamStore | None = None,
    ) -> None:
        self.max_session_bytes = max_session_bytes
        self.log = log
        """Where a sent turn is logged (the edge's own logger: hosting.http, hosting.mcp)."""
        self.on_new_session = on_new_session
        """Due once a turn created its session: the app makes sure the expiry sweepers run
        (hosting.lifecycle.ensure_sweepers)."""
        self.streams = streams
        """The app's stream store: runs' claims and interrupt marks (None: none, every request sends)."""

    async def submit(
        self,
        client: DurableClient,
        submission: Submission,
        *,
        live: bool,
        streamed: bool = False,
        before_send: Callable[[], Awaitable[object]] | None = None,
        on_sent: Callable[[], None] | None = None,
    ) -> Submitted:
        """Submit the turn (see the module). `live`: the caller follows the run's events as they
        come (an SSE stream, or a run it does not wait for), so the model streams; `streamed`: it
        reads the run's stream, so a stream store it cannot use is its answer
        (`StreamStoreUnavailable`); `before_send`: what goes just before the signal (a webhook's
        delivery, hosting.webhooks `start_delivery` bound to the run: a value, so the turn's walk
        never comes back into its edge); `on_sent`: called once the entity was signalled, even
        when what follows fails."""
        prepared = await self.prepare(client, submission)
        match prepared.outcome:
            case Finished(run=run):
                return Answered(run, prepared.snapshot)
            case Pending():
                pass
            case refused:
                return Refused(refused)
        key = submission.stream_key
        strategy = "enqueue" if submission.fresh_session else submission.multitask_strategy
        operation = submission.operation_input()
        signal = partial(client.signal_entity, submission.entity_id, RUN_OPERATION, operation)
        identity = claim_identity(submission.agent.request_identity(submission.request), submission.user_id)
        admitted = await admit_run(
            self.streams,
            key,
            RunClaim(identity, live=live),
            user_id=submission.user_id,
            strategy=strategy,
            snapshot=prepared.snapshot,
            same_request=partial(submission.agent.same_request, submission.request),
            dispatch=Dispatch(signal, before=before_send, on_sent=on_sent),
            streamed=streamed,
        )
        match admitted:
            case Admission.HIDDEN:
                return Refused(Hidden())
            case Admission.CONFLICT:
                return Refused(Conflict())
            case Admission.JOINED:
                return Accepted(False)
            case Admission.SENT:
                pass
            case refused:
                return Refused(refused)
        self.log.info(
            "run %s session %s correlation %s signalled",
            submission.agent.name,
            submission.session_id,
            submission.correlation_id,
        )
        return Accepted(True, self.after_send(client, prepared))

    async def prepare(self, client: DurableClient, submission: Submission) -> Prepared:
        """Read the session and find what must not be sent (see the module)."""
        if submission.fresh_session:
            return Prepared(Snapshot(False, None))
        agent, session_id, cid = submission.agent.name, submission.session_id, submission.correlation_id
        snapshot = await read_session(client, submission.entity_id)
        stored = snapshot.stored
        if (snapshot.exists or snapshot.deleted) and not stored.visible_to(submission.user_id):
            return Prepared(snapshot, Hidden())  # another user's: as if there were none
        if snapshot.exists:
            checked = checked_state(snapshot.document)
            if checked.problem is not None:
                return Prepared(snapshot, Unreadable(checked.problem))
            if submission.retry_safe:
                done = stored.find_run(cid)
                if done is None:
                    try:
                        done = await find_archived_run(agent, session_id, stored, cid)
                    except HistoryUnavailable as error:
                        return Prepared(snapshot, HistoryMissing(error))
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
                return Prepared(snapshot, Full(size, asked))
        elif snapshot.deleted and submission.retry_safe:  # a retry of a deleted session's run: 410
            unrecorded = unrecorded_run(stored, cid, deleted=True)
            if unrecorded is not None and unrecorded.discarded:
                return Prepared(snapshot, Discarded(unrecorded))
        return Prepared(snapshot)

    def after_send(self, client: DurableClient, prepared: Prepared) -> Callable[[], Awaitable[None]] | None:
        """The work due once a turn was sent: for one that created its session, `on_new_session`
        (the expiry sweepers; a session itself costs no orchestration); else None."""
        if not prepared.creates_session or self.on_new_session is None:
            return None
        return partial(self.on_new_session, client)


def _unrecorded(unrecorded: Unrecorded, asked: SameRequest) -> Finished | Conflict | Discarded:
    if unrecorded.run is None:
        return Discarded(unrecorded)
    return finished(unrecorded.run, asked)
