"""Deciding a tool call a run waits on: `POST agents/{agent}/sessions/{session_id}/runs/
{correlation_id}/approvals` with `{"call_id", "approved", "reason"?}` (docs/hosting.md "Tool
approvals").

The route checks the decision against the stored turn (the call must be one the run waits or
waited on), then signals the entity's `decide` operation, which records it in order with every
other operation of the session; the decision that leaves nothing of the step undecided resumes
the turn. The same decision again changes nothing (200 `unchanged`); another one on a decided
call is a 409 `approval_conflict`. The route then reads the session until the decision is
stored (a few seconds at most): a decision that lost a race with another is a 409 as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import azure.durable_functions as df
import azure.functions as func
from pydantic import ValidationError

from agents import Agent

from .._errors import ProblemCode, ProblemError
from .._ids import entity_name
from ..client import (
    Answerable,
    Awaiting,
    DurableClient,
    Finished,
    RunOutcome,
    Snapshot,
    read_session,
    state_problem,
    wait_for_run,
)
from ..lifecycle import start_approval_expiry
from ..stored import Approval, RunApprovals, approvals_of, decided_event
from ._answers import Answers
from ._lookup import hosted_agent
from ._models import ApprovalDecisionBody, ApprovalDecisionRequest
from ._problems import json_response, validation_problem
from ._refusals import no_session, unreadable
from ._requests import check_id, parse_json_object
from ._users import caller_user

DECIDE_OPERATION = "decide"
RECORD_WAIT_SECONDS = 5.0
"""How long the route reads the session for its decision to be stored before it answers 202."""


def parse_decision(req: func.HttpRequest) -> ApprovalDecisionRequest:
    """The body as a decision; a 400 naming the field otherwise."""
    return approval_decision(parse_json_object(req))


def approval_decision(raw: Mapping[str, Any]) -> ApprovalDecisionRequest:
    """A decision from its fields (`call_id`, `approved`, `reason`), checked as the route checks
    its body (a protocol edge's decision gets the route's problems)."""
    try:
        return ApprovalDecisionRequest.model_validate(dict(raw))
    except ValidationError as error:
        raise validation_problem(error) from error


@dataclass(frozen=True)
class Decided:
    """What a decision came to: `decided` / `unchanged` (200) or `decision_requested` (202: sent,
    not seen stored yet); a refusal is raised as its problem instead."""

    body: ApprovalDecisionBody
    status: int
    location: str


async def decide_approval(
    req: func.HttpRequest,
    client: DurableClient,
    agents: Mapping[str, Agent],
    answers: Answers,
    answerable: Callable[[RunOutcome, str, str, str], Answerable],
) -> func.HttpResponse:
    """The route: 200 `decided` once stored (202 `decision_requested` when not seen stored yet),
    200 `unchanged` for the same decision again; 404, 409 and 400 problems (nothing is stored)."""
    agent = hosted_agent(agents, req)
    session_id = req.route_params.get("session_id", "")
    cid = req.route_params.get("correlation_id", "")
    check_id(session_id, "session_id")
    check_id(cid, "correlation_id", ProblemCode.INVALID_CORRELATION_ID)
    user = caller_user(req)
    decision = parse_decision(req)
    decided = await decide(client, agent.name, session_id, cid, user, decision, answers, answerable)
    return json_response(decided.body, decided.status, {"Location": decided.location})


async def decide(
    client: DurableClient,
    agent: str,
    session_id: str,
    cid: str,
    user: str | None,
    decision: ApprovalDecisionRequest,
    answers: Answers,
    answerable: Callable[[RunOutcome, str, str, str], Answerable],
) -> Decided:
    """Decide one call the run `cid` waits on, for `user`: the one way a decision is made (the
    route, the protocol edges); the run's ids are checked as the route checks its path."""
    check_id(session_id, "session_id")
    check_id(cid, "correlation_id", ProblemCode.INVALID_CORRELATION_ID)
    entity_id = df.EntityId(entity_name(agent), session_id)
    snapshot = await read_session(client, entity_id)
    if not snapshot.exists or not snapshot.stored.visible_to(user):
        raise no_session(agent, session_id)  # another user's session is no session to them
    reason = state_problem(snapshot.document)
    if reason is not None:
        raise unreadable(agent, session_id, reason)
    location = answers.run_location(agent, session_id, cid)
    paused = await _paused(client, entity_id, snapshot, (agent, session_id, cid), user, location, answerable)
    approval = next((a for a in paused.approvals if a.call_id == decision.call_id), None)
    if approval is None:
        known = ", ".join(a.call_id for a in paused.waiting) or "none"
        raise ProblemError(
            ProblemCode.APPROVAL_NOT_FOUND,
            f"run {cid!r} waits on no call {decision.call_id!r} (waiting: {known})",
            field="call_id",
        )
    answer = _answer_of(agent, session_id, cid, decision, location)
    if approval.decision is not None:
        return _settled(approval, decision, answer, location)
    operation = {"correlationId": cid, "callId": decision.call_id, "approved": decision.approved}
    if decision.reason is not None:
        operation["reason"] = decision.reason
    await client.signal_entity(entity_id, DECIDE_OPERATION, operation)
    await start_approval_expiry(client, agent, session_id, cid, paused)
    stored = await _recorded(client, entity_id, cid, decision.call_id)
    await _wake(client, paused, cid, decision.call_id)
    if stored is None:
        return Decided(answer("decision_requested"), 202, location)
    if stored is _MOVED_ON:
        return Decided(answer("decided"), 200, location)
    return _settled(stored, decision, answer, location, fresh=True)


async def _paused(
    client: DurableClient,
    entity_id: df.EntityId,
    snapshot: Snapshot,
    run: tuple[str, str, str],
    user: str | None,
    location: str,
    answerable: Callable[[RunOutcome, str, str, str], Answerable],
) -> RunApprovals:
    """The pause of the run (agent, session, correlation id) there is something to decide in;
    its problems otherwise."""
    agent, session_id, cid = run
    waited = await wait_for_run(
        client, entity_id, agent=agent, session_id=session_id, correlation_id=cid,
        timeout=0, state_checked=True, user=user,
    )
    outcome = answerable(waited, agent, session_id, cid)  # discarded, archived and unreadable raised
    paused = approvals_of(snapshot.document, cid)
    running = cid in snapshot.stored.waiting_ids()
    if not isinstance(outcome, Finished) and (paused is None or not paused.approvals) and running:
        # A caller that decides a call before the pause is stored (one that guessed it, or
        # decided from an earlier attempt of a pause run again after a crash) reads the run still
        # running. Wait for it to pause (or end) as a waiting run would, before saying there is
        # nothing to decide.
        waited = await wait_for_run(
            client, entity_id, agent=agent, session_id=session_id, correlation_id=cid,
            timeout=RECORD_WAIT_SECONDS, state_checked=True, user=user,
        )
        outcome = answerable(waited, agent, session_id, cid)
        paused = outcome.approvals if isinstance(outcome, Awaiting) else None
    if not isinstance(outcome, Finished) and paused is None and not running:
        raise ProblemError(
            ProblemCode.RUN_NOT_FOUND,
            f"session {session_id!r} of agent {agent!r} has no run {cid!r} in progress",
            field="correlation_id",
        )
    if isinstance(outcome, Finished) or paused is None or not paused.approvals:
        state = "has finished" if isinstance(outcome, Finished) else "waits on no tool call"
        raise ProblemError(
            ProblemCode.RUN_NOT_AWAITING_APPROVAL, f"run {cid!r} {state}; there is nothing to decide",
            location=location,
        )
    return paused


async def _wake(client: DurableClient, paused: RunApprovals, cid: str, call_id: str) -> None:
    """Tell the orchestration waiting for the run, if one is, that the call was decided
    (documented for Python clients: `DurableOrchestrationClient.raise_event`), with the call's
    own event name (`decided_event`). Its wait has a timer as well, so an event that fails or is
    lost only delays it."""
    if paused.orchestration_id is None:
        return
    with contextlib.suppress(Exception):  # finished, purged, or the backend unreachable
        event = decided_event(cid, call_id)
        await client.raise_event(paused.orchestration_id, event, {"correlationId": cid, "callId": call_id})


def _answer_of(
    agent: str, session_id: str, cid: str, decision: ApprovalDecisionRequest, location: str
) -> Callable[[str], ApprovalDecisionBody]:
    def body(status: str) -> ApprovalDecisionBody:
        return ApprovalDecisionBody.model_validate(
            {
                "agent": agent,
                "session_id": session_id,
                "correlation_id": cid,
                "call_id": decision.call_id,
                "approved": decision.approved,
                "status": status,
                "location": location,
            }
        )

    return body


def _settled(
    approval: Approval,
    decision: ApprovalDecisionRequest,
    answer: Callable[[str], ApprovalDecisionBody],
    location: str,
    fresh: bool = False,
) -> Decided:
    """The answer once the call has a stored decision: this one (200) or another (409)."""
    stored = approval.decision
    assert stored is not None
    if stored.same_as(decision.approved, decision.reason):
        return Decided(answer("decided" if fresh else "unchanged"), 200, location)
    how = "expired" if stored.expired else "approved" if stored.approved else "rejected"
    raise ProblemError(
        ProblemCode.APPROVAL_CONFLICT,
        f"call {approval.call_id!r} was {how} already ({stored.decided_at}); a decision cannot change",
        field="approved",
        location=location,
    )


_MOVED_ON = Approval("", "", {}, "", 0)
"""The run ended meanwhile: it only goes on once every call of its step is decided."""


async def _recorded(
    client: DurableClient, entity_id: df.EntityId, cid: str, call_id: str
) -> Approval | None:
    """The call's approval once it has a stored decision; `_MOVED_ON` when the run ended (which
    it does only once the call is decided); None when neither is seen within the wait."""
    deadline = time.monotonic() + RECORD_WAIT_SECONDS
    delay = 0.005  # a decision is stored within a few milliseconds on an idle session
    while time.monotonic() < deadline:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.25)
        snapshot = await read_session(client, entity_id)
        paused = approvals_of(snapshot.document, cid) if snapshot.exists else None
        if paused is None:
            return _MOVED_ON
        approval = next((a for a in paused.approvals if a.call_id == call_id), None)
        if approval is not None and approval.decision is not None:
            return approval
    return None
