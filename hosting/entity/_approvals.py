"""A turn's pause for tool approvals, as operations of the agent's entity (docs/hosting.md
"Tool approvals").

A step whose tool calls need a decision does not run (agents._approvals): `pause` records the
calls waiting in the turn in progress (`data.activeTurn.approvals`) and ends the operation
without signalling a next step (only `announce_approvals`, which publishes `approval.required`
once the pause is committed), so nothing runs or waits in a worker while people decide.
`decide` records one decision; the one that leaves no call of the step undecided signals the
step again, which then runs with the decisions. `expire_approvals` rejects
what is still undecided when the approval time is up (hosting.lifecycle._approval_expiry). The
time the turn spent waiting does not count towards its deadline: its start moves on by it.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Final

from agents import AwaitingApproval, TurnResult, now_iso
from state import dump_state

from .._errors import InvalidOperation
from ..lifecycle import approval_timeout, approvals_due
from ..stored import (
    ActiveTurn,
    Decision,
    StoredDocument,
    UnreadableTurn,
    active_turn,
    find_approval,
    queued_requests,
    refused_result,
    unrecorded_run,
    with_decision,
    with_requested,
)
from ..streams import RunEvents
from ._context import EntityContext, Loaded, cache_load, load, operation_input, store_text
from ._services import EntityServices
from ._signals import send_signal
from ._wire import (
    AnnounceSignal,
    DecideAnswer,
    ExpiredApprovals,
    Paused,
    RunStatus,
    StepSignal,
    WaitingStatus,
    announce_input,
    correlation_input,
    decide_input,
    expire_input,
    pending,
    turn_json,
)

log = logging.getLogger("hosting.entity")

# What a `decide` operation answers (its `outcome`).
DECIDED: Final = "decided"
UNCHANGED: Final = "unchanged"
CONFLICT: Final = "conflict"
UNKNOWN_CALL: Final = "unknown_call"
NOT_AWAITING: Final = "not_awaiting"
ANNOUNCE_OPERATION = "announce_approvals"
"""The operation a pause signals its entity, to publish `approval.required` once committed."""


def expired_reason(seconds: float) -> str:
    """The reason an expired approval is rejected with (the model reads it)."""
    return f"no decision was made within {seconds:g} seconds, so the call was rejected"


def pause(
    services: EntityServices,
    context: EntityContext,
    loaded: Loaded,
    turn: ActiveTurn,
    waiting: AwaitingApproval,
    events: RunEvents,
) -> Paused:
    """Record the calls the turn's next step waits on; no next step is signalled."""
    state = loaded.state
    approvals = with_requested(turn.approvals, waiting.calls, turn.progress.steps, now_iso())
    paused = replace(turn, approvals=approvals)
    shown = [a.to_json() for a in paused.waiting]
    # approval.required goes out once this is committed (`announce_approvals`, signalled to
    # this entity: the extension sends a batch's signals with its commit, and none for a
    # batch that fails or is aborted), so it never names a pause that was not stored. Its
    # number in the run's stream is reserved here, so the next step continues after it.
    reserved = events.seq + 1 if events.store is not None else events.seq
    state.active_turn = replace(paused, stream_seq=reserved).to_json()
    state.last_activity_at = now_iso()
    text = dump_state(state)
    store_text(context, text)
    cache_load(context, Loaded(text, state))
    cid = turn.correlation_id
    key = context.entity_key
    announce: AnnounceSignal = {"correlationId": cid, "step": turn.progress.steps, "seq": reserved}
    send_signal(services.name, str(key), ANNOUNCE_OPERATION, announce)
    log.info("entity %s@%s run %s: awaiting approval of %d call(s)", services.name, key, cid, len(shown))
    return {"correlationId": cid, "status": "awaiting_approval", "approvals": shown}


def decide(services: EntityServices, context: EntityContext) -> DecideAnswer:
    """The `decide` operation: `{correlationId, callId, approved, reason?}`."""
    value = decide_input(operation_input(context), services.name)
    cid, call_id, approved = value["correlationId"], value["callId"], value["approved"]
    reason = value["reason"]
    loaded = load(context)
    turn = _paused_turn(services, context, loaded, cid)
    if turn is None:
        return {"correlationId": cid, "callId": call_id, "outcome": NOT_AWAITING}
    approval = find_approval(turn.approvals, call_id)
    if approval is None:
        return {"correlationId": cid, "callId": call_id, "outcome": UNKNOWN_CALL}
    if approval.decision is not None:
        same = approval.decision.same_as(approved, reason)
        return {"correlationId": cid, "callId": call_id, "outcome": UNCHANGED if same else CONFLICT}
    decision = Decision(approved, now_iso(), reason)
    turn = replace(turn, approvals=with_decision(turn.approvals, call_id, decision))
    resumed = _store_decided(services, context, loaded, turn)
    return {"correlationId": cid, "callId": call_id, "outcome": DECIDED, "resumed": resumed}


def expire_approvals(services: EntityServices, context: EntityContext) -> ExpiredApprovals | None:
    """The `expire_approvals` operation: `{correlationId, step, seconds}`: what step `step`
    of the run still waits on is rejected as expired (a later step, or a finished run: nothing)."""
    value = expire_input(operation_input(context), services.name)
    loaded = load(context)
    turn = _paused_turn(services, context, loaded, value["correlationId"])
    if turn is None or turn.progress.steps != value["step"] or not turn.waiting:
        return None
    seconds = value["seconds"]
    reason = expired_reason(float(seconds) if seconds is not None else 0.0)
    approvals = turn.approvals
    expired = [a.call_id for a in turn.waiting]
    for call_id in expired:
        approvals = with_decision(approvals, call_id, Decision(False, now_iso(), reason, expired=True))
    _store_decided(services, context, loaded, replace(turn, approvals=approvals))
    return {"correlationId": turn.correlation_id, "expired": expired}


def announce_approvals(services: EntityServices, context: EntityContext) -> None:
    """The `announce_approvals` operation: `{correlationId, step, seq}`: publish
    `approval.required` with the calls step `step` of the run waits on, as stored (nothing
    when it waits on none any more, or the run moved on). It answers nothing."""
    value = announce_input(operation_input(context), services.name)
    loaded = load(context)
    turn = _paused_turn(services, context, loaded, value["correlationId"])
    if turn is None or turn.progress.steps != value["step"] or not turn.waiting:
        return
    shown = [a.public_json() for a in turn.waiting]
    data = {"step": turn.progress.steps, "approvals": shown}
    services.events(context, turn.correlation_id).approval_required(value["seq"], data)


def run_status(services: EntityServices, context: EntityContext) -> RunStatus | None:
    """The `run_status` operation: `{correlationId}`: the run's result once it has one, else
    where it is (`pending`, `running`, or `awaiting_approval` with the calls waiting and when
    they are due); None for a run the session does not hold (never sent, or discarded by a
    reset). What an orchestration waiting for its turn reads (hosting._orchestration)."""
    cid = correlation_input(operation_input(context))
    if cid is None:
        expected = "{'correlationId': str}"
        raise InvalidOperation(f"invalid input for {services.name} run_status: expected {expected}")
    loaded = load(context)
    recorded = TurnResult.from_state(loaded.state, cid)
    if recorded is not None:
        return turn_json(recorded)
    unrecorded = unrecorded_run(StoredDocument.of_state(loaded.state), cid)
    if unrecorded is not None:
        return None if unrecorded.discarded else turn_json(refused_result(cid))
    try:
        turn = active_turn(loaded.state)
        queued = queued_requests(loaded.state)
    except UnreadableTurn:
        log.exception("entity %s@%s: the turn in progress cannot be read", services.name, context.entity_key)
        return None
    if turn is not None and turn.correlation_id == cid:
        if not turn.waiting:
            return {"correlationId": cid, "step": turn.progress.steps, "status": "running"}
        return _waiting_status(turn)
    if any(q.correlation_id == cid for q in queued):
        return pending(cid)
    return None


def _waiting_status(turn: ActiveTurn) -> WaitingStatus:
    seconds = approval_timeout()
    when = approvals_due(turn.waiting, seconds) or datetime.now(UTC) + timedelta(seconds=seconds)
    return {
        "correlationId": turn.correlation_id,
        "step": turn.progress.steps,
        "status": "awaiting_approval",
        "approvals": [a.to_json() for a in turn.waiting],
        "dueAt": when.isoformat(),
        "seconds": seconds,
    }


def _paused_turn(
    services: EntityServices, context: EntityContext, loaded: Loaded, correlation_id: str
) -> ActiveTurn | None:
    try:
        turn = active_turn(loaded.state)
    except UnreadableTurn:
        log.exception("entity %s@%s: the turn in progress cannot be read", services.name, context.entity_key)
        return None
    if turn is None or turn.correlation_id != correlation_id or not turn.approvals:
        return None
    return turn


def _store_decided(
    services: EntityServices, context: EntityContext, loaded: Loaded, turn: ActiveTurn
) -> bool:
    """Store the turn with its new decisions; when its step waits on nothing more, move its
    start on by the time it waited and signal the step. Whether it resumed."""
    resumed = not turn.waiting
    if resumed:
        turn = replace(turn, started_at=_shifted(turn))
    state = loaded.state
    state.active_turn = turn.to_json()
    state.last_activity_at = now_iso()
    text = dump_state(state)
    store_text(context, text)
    cache_load(context, Loaded(text, state))
    if resumed:
        step: StepSignal = {"correlationId": turn.correlation_id, "step": turn.progress.steps}
        send_signal(services.name, str(context.entity_key), "step", step)
    return resumed


def _shifted(turn: ActiveTurn) -> str:
    """The turn's start moved on by how long its step waited for decisions (from the first
    request of the step to now): waiting for people is not the turn's working time."""
    asked = [a.requested_at for a in turn.approvals if a.step == turn.progress.steps]
    try:
        started = datetime.fromisoformat(turn.started_at)
        waited = datetime.fromisoformat(now_iso()) - datetime.fromisoformat(min(asked))
    except ValueError:
        return turn.started_at
    return (started + max(waited, timedelta(0))).isoformat()
