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
from typing import Any

from agents import Agent, AwaitingApproval, TurnResult, now_iso
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
from ..streams import RunEvents, StreamKey, StreamStore
from ._context import EntityContext, Loaded, cache_load, load, operation_input, store_text
from ._signals import send_signal

log = logging.getLogger("hosting.entity")

DECIDED, UNCHANGED, CONFLICT = "decided", "unchanged", "conflict"
UNKNOWN_CALL, NOT_AWAITING = "unknown_call", "not_awaiting"
"""What a `decide` operation answers (its `outcome`)."""
ANNOUNCE_OPERATION = "announce_approvals"
"""The operation a pause signals its entity, to publish `approval.required` once committed."""


def expired_reason(seconds: float) -> str:
    """The reason an expired approval is rejected with (the model reads it)."""
    return f"no decision was made within {seconds:g} seconds, so the call was rejected"


class TurnApprovals:
    """The `decide` and `expire_approvals` operations and a step's pause (a mixin of `AgentEntity`)."""

    name: str
    agent: Agent
    streams: StreamStore | None

    def _pause(
        self,
        context: EntityContext,
        loaded: Loaded,
        turn: ActiveTurn,
        waiting: AwaitingApproval,
        events: RunEvents,
    ) -> dict[str, Any]:
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
        announce = {"correlationId": cid, "step": turn.progress.steps, "seq": reserved}
        send_signal(self.name, str(key), ANNOUNCE_OPERATION, announce)
        log.info("entity %s@%s run %s: awaiting approval of %d call(s)", self.name, key, cid, len(shown))
        return {"correlationId": cid, "status": "awaiting_approval", "approvals": shown}

    def _decide(self, context: EntityContext) -> dict[str, Any]:
        """The `decide` operation: `{correlationId, callId, approved, reason?}`."""
        value = operation_input(context)
        ok = isinstance(value, dict) and isinstance(value.get("correlationId"), str)
        ok = ok and isinstance(value.get("callId"), str) and isinstance(value.get("approved"), bool)
        reason = value.get("reason") if isinstance(value, dict) else None
        if not ok or not (reason is None or isinstance(reason, str)):
            raise InvalidOperation(
                f"invalid input for {self.name} decide: expected "
                "{'correlationId': str, 'callId': str, 'approved': bool, 'reason'?: str}"
            )
        cid, call_id, approved = value["correlationId"], value["callId"], value["approved"]
        answer = {"correlationId": cid, "callId": call_id}
        loaded = load(context)
        turn = self._paused_turn(context, loaded, cid)
        if turn is None:
            return {**answer, "outcome": NOT_AWAITING}
        approval = find_approval(turn.approvals, call_id)
        if approval is None:
            return {**answer, "outcome": UNKNOWN_CALL}
        if approval.decision is not None:
            same = approval.decision.same_as(approved, reason)
            return {**answer, "outcome": UNCHANGED if same else CONFLICT}
        decision = Decision(approved, now_iso(), reason)
        turn = replace(turn, approvals=with_decision(turn.approvals, call_id, decision))
        resumed = self._store_decided(context, loaded, turn)
        return {**answer, "outcome": DECIDED, "resumed": resumed}

    def _expire_approvals(self, context: EntityContext) -> dict[str, Any] | None:
        """The `expire_approvals` operation: `{correlationId, step, seconds}`: what step `step`
        of the run still waits on is rejected as expired (a later step, or a finished run: nothing)."""
        value = operation_input(context)
        if not isinstance(value, dict) or not isinstance(value.get("correlationId"), str):
            raise InvalidOperation(f"invalid input for {self.name} expire_approvals")
        seconds = value.get("seconds")
        loaded = load(context)
        turn = self._paused_turn(context, loaded, value["correlationId"])
        if turn is None or turn.progress.steps != value.get("step") or not turn.waiting:
            return None
        reason = expired_reason(float(seconds) if isinstance(seconds, (int, float)) else 0.0)
        approvals = turn.approvals
        expired = [a.call_id for a in turn.waiting]
        for call_id in expired:
            approvals = with_decision(approvals, call_id, Decision(False, now_iso(), reason, expired=True))
        self._store_decided(context, loaded, replace(turn, approvals=approvals))
        return {"correlationId": turn.correlation_id, "expired": expired}

    def _announce_approvals(self, context: EntityContext) -> None:
        """The `announce_approvals` operation: `{correlationId, step, seq}`: publish
        `approval.required` with the calls step `step` of the run waits on, as stored (nothing
        when it waits on none any more, or the run moved on)."""
        value = operation_input(context)
        ok = isinstance(value, dict) and isinstance(value.get("correlationId"), str)
        numbers = [value.get(k) for k in ("step", "seq")] if ok else []
        ok = ok and all(isinstance(n, int) and not isinstance(n, bool) for n in numbers)
        if not ok:
            raise InvalidOperation(f"invalid input for {self.name} announce_approvals")
        loaded = load(context)
        turn = self._paused_turn(context, loaded, value["correlationId"])
        if turn is None or turn.progress.steps != value["step"] or not turn.waiting:
            return
        shown = [a.public_json() for a in turn.waiting]
        key = StreamKey(self.agent.name, str(context.entity_key), turn.correlation_id)
        data = {"step": turn.progress.steps, "approvals": shown}
        RunEvents(self.streams, key).approval_required(value["seq"], data)

    def _run_status(self, context: EntityContext) -> dict[str, Any] | None:
        """The `run_status` operation: `{correlationId}`: the run's result once it has one, else
        where it is (`pending`, `running`, or `awaiting_approval` with the calls waiting and when
        they are due); None for a run the session does not hold (never sent, or discarded by a
        reset). What an orchestration waiting for its turn reads (hosting._orchestration)."""
        value = operation_input(context)
        cid = value.get("correlationId") if isinstance(value, dict) else None
        if not isinstance(cid, str):
            expected = "{'correlationId': str}"
            raise InvalidOperation(f"invalid input for {self.name} run_status: expected {expected}")
        loaded = load(context)
        recorded = TurnResult.from_state(loaded.state, cid)
        if recorded is not None:
            return recorded.to_json()
        unrecorded = unrecorded_run(StoredDocument.of_state(loaded.state), cid)
        if unrecorded is not None:
            return None if unrecorded.discarded else refused_result(cid).to_json()
        try:
            turn = active_turn(loaded.state)
            queued = queued_requests(loaded.state)
        except UnreadableTurn:
            log.exception("entity %s@%s: the turn in progress cannot be read", self.name, context.entity_key)
            return None
        if turn is not None and turn.correlation_id == cid:
            answer: dict[str, Any] = {"correlationId": cid, "step": turn.progress.steps}
            if not turn.waiting:
                return {**answer, "status": "running"}
            seconds = approval_timeout()
            when = approvals_due(turn.waiting, seconds) or datetime.now(UTC) + timedelta(seconds=seconds)
            due = when.isoformat()
            shown = [a.to_json() for a in turn.waiting]
            waiting = {"status": "awaiting_approval", "approvals": shown, "dueAt": due, "seconds": seconds}
            return {**answer, **waiting}
        if any(q.correlation_id == cid for q in queued):
            return {"correlationId": cid, "status": "pending"}
        return None

    def _paused_turn(self, context: EntityContext, loaded: Loaded, correlation_id: str) -> ActiveTurn | None:
        try:
            turn = active_turn(loaded.state)
        except UnreadableTurn:
            log.exception("entity %s@%s: the turn in progress cannot be read", self.name, context.entity_key)
            return None
        if turn is None or turn.correlation_id != correlation_id or not turn.approvals:
            return None
        return turn

    def _store_decided(self, context: EntityContext, loaded: Loaded, turn: ActiveTurn) -> bool:
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
            step = {"correlationId": turn.correlation_id, "step": turn.progress.steps}
            send_signal(self.name, str(context.entity_key), "step", step)
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
