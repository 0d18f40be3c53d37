"""The tool calls a turn in progress waits on, as the session document keeps them (1.7.0
`data.activeTurn.approvals`; docs/state.md): one entry per call that needed a decision, from
when the turn paused for it until the turn ends, with its decision once made; then (1.8.0) on
the run's response entry. Pure: values in, values out. A turn that never needed a decision has
no `approvals` key at all."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agents import PendingCall, ToolDecision


class UnreadableApproval(ValueError):
    """A stored approval entry is not one this host wrote."""


@dataclass(frozen=True)
class Decision:
    """What was decided on one call: approved or not, why, when, and whether by expiry."""

    approved: bool
    decided_at: str
    reason: str | None = None
    expired: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"approved": self.approved, "decidedAt": self.decided_at}
        if self.reason is not None:
            out["reason"] = self.reason
        if self.expired:
            out["expired"] = True
        return out

    def public_json(self) -> dict[str, Any]:
        """As the API and the run's stream show it (snake_case, as every body and event)."""
        return {"approved": self.approved, "reason": self.reason, "decided_at": self.decided_at,
                "expired": self.expired}

    def same_as(self, approved: bool, reason: str | None) -> bool:
        """Whether a decision asked again is this one (then it changes nothing)."""
        return self.approved == approved and (reason is None or reason == self.reason)


@dataclass(frozen=True)
class Approval:
    """One call that waits (or waited) for a decision, in step `step` of its turn."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    requested_at: str
    step: int
    decision: Decision | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "callId": self.call_id,
            "name": self.name,
            "arguments": self.arguments,
            "requestedAt": self.requested_at,
            "step": self.step,
        }
        if self.decision is not None:
            out["decision"] = self.decision.to_json()
        return out

    def public_json(self) -> dict[str, Any]:
        """As the API and the run's stream show it (snake_case, as every body and event); the
        stored form (`to_json`) keeps the state document's camelCase."""
        return {
            "call_id": self.call_id,
            "name": self.name,
            "arguments": self.arguments,
            "requested_at": self.requested_at,
            "step": self.step,
            "decision": None if self.decision is None else self.decision.public_json(),
        }

    @classmethod
    def from_public_json(cls, data: Any) -> Approval:
        """A waiting call as `public_json` shows it (an `approval.required` event's)."""
        if not isinstance(data, dict):
            raise UnreadableApproval("an approval is not an object")
        keys = {"callId": "call_id", "name": "name", "arguments": "arguments",
                "requestedAt": "requested_at", "step": "step"}
        return cls.from_json({stored: data.get(shown) for stored, shown in keys.items()})

    @classmethod
    def from_json(cls, data: Any) -> Approval:
        if not isinstance(data, dict):
            raise UnreadableApproval("an approval is not an object")
        keys = ("callId", "name", "arguments", "requestedAt", "step")
        cid, name, args, at, step = (data.get(k) for k in keys)
        texts = isinstance(cid, str) and isinstance(name, str) and isinstance(at, str)
        if not texts or not isinstance(args, dict):
            raise UnreadableApproval("an approval lacks callId, name, arguments or requestedAt")
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise UnreadableApproval("an approval's step is not a non-negative integer")
        raw = data.get("decision")
        decision = None
        if raw is not None:
            ok = isinstance(raw, dict) and isinstance(raw.get("approved"), bool)
            ok = ok and isinstance(raw.get("decidedAt"), str) and isinstance(raw.get("reason", ""), str)
            if not ok:
                raise UnreadableApproval("an approval's decision is not what this host writes")
            expired = raw.get("expired") is True
            decision = Decision(raw["approved"], raw["decidedAt"], raw.get("reason"), expired)
        return cls(str(cid), str(name), dict(args), str(at), step, decision)


def with_requested(
    approvals: Sequence[Approval], calls: Sequence[PendingCall], step: int, now: str
) -> list[Approval]:
    """`approvals` with an entry for each of `calls` it lacks (a step run again keeps the entries,
    and their times, it asked for before)."""
    known = {a.call_id for a in approvals}
    added = [Approval(c.call_id, c.name, c.arguments, now, step) for c in calls if c.call_id not in known]
    return [*approvals, *added]


def pending(approvals: Sequence[Approval], step: int) -> list[Approval]:
    """The calls of step `step` still waiting for a decision."""
    return [a for a in approvals if a.step == step and a.decision is None]


def decisions(approvals: Sequence[Approval], step: int) -> dict[str, ToolDecision]:
    """The decisions made on the calls of step `step`, by call id, as the turn's step takes them."""
    return {
        a.call_id: ToolDecision(a.decision.approved, a.decision.reason)
        for a in approvals
        if a.step == step and a.decision is not None
    }


def with_decision(approvals: Sequence[Approval], call_id: str, decision: Decision) -> list[Approval]:
    """`approvals` with `decision` on call `call_id`."""
    return [replace(a, decision=decision) if a.call_id == call_id else a for a in approvals]


def find_approval(approvals: Sequence[Approval], call_id: str) -> Approval | None:
    return next((a for a in approvals if a.call_id == call_id), None)


def read_approvals(raw: Any) -> list[Approval]:
    """The stored list (absent: none); `UnreadableApproval` for anything else."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise UnreadableApproval("data.activeTurn.approvals is not a list")
    return [Approval.from_json(item) for item in raw]


def recorded_approvals(response: Mapping[str, Any]) -> list[Approval]:
    """(1.8.0) The approvals a finished run's response entry keeps; none when it has none, or
    when they cannot be read: the run's outcome is still its answer, only the record is missing."""
    try:
        return read_approvals(response.get("approvals"))
    except UnreadableApproval:
        return []


DECIDED_EVENT_PREFIX = "dafx_approval_decided_"


def decided_event(correlation_id: str, call_id: str) -> str:
    """The external event a decision of call `call_id` raises to the orchestration whose run it
    decides: it wakes the orchestration's wait (hosting._orchestration) instead of leaving it to
    its next poll. One name per call, never reused: the Python SDK keeps an event that arrives
    while no wait for its name is open and hands it to every later wait of that name
    (azure-functions-durable `TaskOrchestrationExecutor.set_task_value` files it under
    `deferred_tasks`, which `DurableOrchestrationContext._add_to_open_tasks` replays and never
    clears), so a name shared by the calls of a run would wake each later wait at once. A
    digest keeps the name URL-safe whatever the model named its call."""
    digest = hashlib.sha256(f"{correlation_id}\n{call_id}".encode()).hexdigest()[:32]
    return DECIDED_EVENT_PREFIX + digest


@dataclass(frozen=True)
class RunApprovals:
    """The approvals of a turn in progress, and the step it stands at."""

    approvals: list[Approval]
    step: int
    orchestration_id: str | None = None
    """The orchestration that started the turn and waits for its end (hosting._orchestration)."""

    @property
    def waiting(self) -> list[Approval]:
        """The calls its next step waits on (none: it is not awaiting approval)."""
        return pending(self.approvals, self.step)


def approvals_of(document: Mapping[str, Any], correlation_id: str) -> RunApprovals | None:
    """The approvals of run `correlation_id` when it is the turn in progress of a stored
    document (parsed JSON); None when it is not, or they cannot be read."""
    if not isinstance(document, Mapping):
        return None
    data = document.get("data")
    active = data.get("activeTurn") if isinstance(data, dict) else None
    if not isinstance(active, dict):
        return None
    request, progress = active.get("request"), active.get("progress")
    if not isinstance(request, dict) or request.get("correlationId") != correlation_id:
        return None
    step = progress.get("steps") if isinstance(progress, dict) else None
    if not isinstance(step, int):
        return None
    try:
        waiter = request.get("orchestrationId")
        orchestration = waiter if isinstance(waiter, str) else None
        return RunApprovals(read_approvals(active.get("approvals")), step, orchestration)
    except UnreadableApproval:
        return None
