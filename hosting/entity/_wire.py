"""The JSON the agent entity's operations take and answer, as types.

Each answer is a TypedDict, so that what goes on the wire is a plain dict in the order it is
built: the bytes the SDK writes are the ones other code (the HTTP side, orchestrations, devhost)
and stored results have always read. The inputs the entity checks are read here into the same
kind of types, with the errors their callers already see. Objects whose shape another package
owns (a turn result's messages, an approval as hosting.stored writes it) stay `ForeignJson`.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict, cast

from agents import TurnResult

from .._errors import InvalidOperation

ForeignJson = dict[str, Any]
"""A JSON object whose shape is another package's (agents, state, hosting.stored)."""


class TurnResultJson(TypedDict):
    """A finished run's result, as `agents.TurnResult.to_json` writes it."""

    correlationId: str
    status: Literal["succeeded", "failed"]
    text: str
    messages: list[ForeignJson]
    usage: ForeignJson | None
    structured: object
    error: ForeignJson | None


def turn_json(result: TurnResult) -> TurnResultJson:
    """`result` on the wire (agents writes it; its keys are the ones `TurnResultJson` names)."""
    return cast(TurnResultJson, result.to_json())


class Pending(TypedDict):
    """A run that waits: queued behind the turn in progress, or already waiting (a redelivery)."""

    correlationId: str
    status: Literal["pending"]


class Steered(TypedDict):
    """A run whose messages joined the running run `steeredInto` (its answer is that run's)."""

    correlationId: str
    status: Literal["steered"]
    steeredInto: str


class Running(TypedDict):
    """A turn of steps going on: step `step` is the next one (signalled, or moved to a later batch)."""

    correlationId: str
    status: Literal["running"]
    step: int


class Paused(TypedDict):
    """A turn whose next step waits for decisions on the calls in `approvals`."""

    correlationId: str
    status: Literal["awaiting_approval"]
    approvals: list[ForeignJson]


RunAnswer = TurnResultJson | Pending | Steered | Running | Paused
"""What the `run` and `step` operations answer."""


def pending(correlation_id: str) -> Pending:
    return {"correlationId": correlation_id, "status": "pending"}


def steered(correlation_id: str, running: str) -> Steered:
    """The answer of a run that joined the running run `running` (its answer is that run's)."""
    return {"correlationId": correlation_id, "status": "steered", "steeredInto": running}


def running(correlation_id: str, step: int) -> Running:
    return {"correlationId": correlation_id, "status": "running", "step": step}


class RunningStatus(TypedDict):
    """`run_status` of a run whose step `step` is running or next (keys in this order)."""

    correlationId: str
    step: int
    status: Literal["running"]


class WaitingStatus(TypedDict):
    """`run_status` of a run paused for decisions: the calls waiting, and when they are due."""

    correlationId: str
    step: int
    status: Literal["awaiting_approval"]
    approvals: list[ForeignJson]
    dueAt: str
    seconds: float


RunStatus = TurnResultJson | RunningStatus | WaitingStatus | Pending
"""What the `run_status` operation answers for a run the session holds."""


class DecideAnswer(TypedDict):
    """What a `decide` operation did (`outcome`); `resumed` only for a decision it recorded."""

    correlationId: str
    callId: str
    outcome: Literal["decided", "unchanged", "conflict", "unknown_call", "not_awaiting"]
    resumed: NotRequired[bool]


class ExpiredApprovals(TypedDict):
    """The calls an `expire_approvals` operation rejected as expired."""

    correlationId: str
    expired: list[str]


class Epoch(TypedDict):
    """The archive a reset or delete left behind (None: nothing archived)."""

    epoch: str | None


class ArchiveEpoch(TypedDict):
    """The `archive_epoch` operation's answer; `readable` false for a state this build cannot read."""

    readable: bool
    epoch: str | None


class ApprovalExpiry(TypedDict):
    """When the paused step of a run is due to have its approvals expired: the input of
    `expire_approvals` too (hosting.lifecycle._approval_expiry)."""

    correlationId: str
    step: int
    seconds: float
    dueAt: str


class NotExpired(TypedDict):
    """An `expire` check that kept the session: when it is due (None: never, or not now), and,
    when a step waits for decisions, its approvals' expiry."""

    expired: Literal[False]
    dueAt: str | None
    approvals: NotRequired[ApprovalExpiry]


class Expired(TypedDict):
    """An `expire` check that deleted the session; `ended`, for an agent with session-end hooks,
    the session as they get it (`agents.ended_session`)."""

    expired: Literal[True]
    epoch: str | None
    ended: NotRequired[ForeignJson | None]


class StepSignal(TypedDict):
    """The input of the `step` operation a turn signals for its next step."""

    correlationId: str
    step: int


class AnnounceSignal(TypedDict):
    """The input of `announce_approvals`: the paused step, and its event's number in the stream."""

    correlationId: str
    step: int
    seq: int


def _object(value: object) -> dict[str, object] | None:
    return cast(dict[str, object], value) if isinstance(value, dict) else None


def _number(value: object) -> float | None:
    # JSON numbers (a bool too, which compares as 0 or 1): anything else equals no step number.
    return value if isinstance(value, (int, float)) else None


class StepInput(TypedDict):
    """The `step` operation's input as read: fields of another type are None (they name no step)."""

    correlationId: str | None
    step: float | None


def step_input(value: object, strict: bool, entity: str) -> StepInput:
    """The input of a `step` operation; `strict`: one that is not an object is refused."""
    fields = _object(value)
    if fields is None and strict:
        raise InvalidOperation(f"invalid input for {entity} step: expected an object")
    fields = fields or {}
    cid = fields.get("correlationId")
    return {"correlationId": cid if isinstance(cid, str) else None, "step": _number(fields.get("step"))}


def correlation_input(value: object) -> str | None:
    """The `correlationId` of a `{correlationId}` input (`cancel`, `run_status`), None without one."""
    fields = _object(value)
    cid = fields.get("correlationId") if fields is not None else None
    return cid if isinstance(cid, str) else None


class DecideInput(TypedDict):
    correlationId: str
    callId: str
    approved: bool
    reason: str | None


def decide_input(value: object, entity: str) -> DecideInput:
    """The input of `decide`: `{correlationId, callId, approved, reason?}`."""
    fields = _object(value) or {}
    cid, call_id, approved = fields.get("correlationId"), fields.get("callId"), fields.get("approved")
    reason = fields.get("reason")
    ok = isinstance(cid, str) and isinstance(call_id, str) and isinstance(approved, bool)
    if not ok or not (reason is None or isinstance(reason, str)):
        raise InvalidOperation(
            f"invalid input for {entity} decide: expected "
            "{'correlationId': str, 'callId': str, 'approved': bool, 'reason'?: str}"
        )
    return {
        "correlationId": cast(str, cid), "callId": cast(str, call_id),
        "approved": cast(bool, approved), "reason": reason,
    }


class ExpireInput(TypedDict):
    """The input of `expire_approvals` as read: a `step` or `seconds` of another type is None."""

    correlationId: str
    step: float | None
    seconds: float | None


def expire_input(value: object, entity: str) -> ExpireInput:
    """The input of `expire_approvals`: `{correlationId, step, seconds}` (`ApprovalExpiry`)."""
    fields = _object(value)
    cid = fields.get("correlationId") if fields is not None else None
    if fields is None or not isinstance(cid, str):
        raise InvalidOperation(f"invalid input for {entity} expire_approvals")
    step, seconds = _number(fields.get("step")), _number(fields.get("seconds"))
    return {"correlationId": cid, "step": step, "seconds": seconds}


def announce_input(value: object, entity: str) -> AnnounceSignal:
    """The input of `announce_approvals`: `{correlationId, step, seq}`, both numbers integers."""
    fields = _object(value)
    cid = fields.get("correlationId") if fields is not None else None
    numbers = [fields.get(k) for k in ("step", "seq")] if fields is not None else []
    ok = isinstance(cid, str) and all(isinstance(n, int) and not isinstance(n, bool) for n in numbers)
    if not ok:
        raise InvalidOperation(f"invalid input for {entity} announce_approvals")
    return {"correlationId": cast(str, cid), "step": cast(int, numbers[0]), "seq": cast(int, numbers[1])}
