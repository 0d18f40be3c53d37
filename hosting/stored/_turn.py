"""The turn in progress and the runs queued behind it, as the session document keeps them (1.6.0
`data.activeTurn`, `data.queuedRuns`; docs/state.md). Pure: values in, values out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents import InvalidTurnRequest, ToolDecision, TurnProgress, TurnRequest
from state import AgentState

from ._approvals import Approval, UnreadableApproval, decisions, pending, read_approvals


class UnreadableTurn(ValueError):
    """The stored turn in progress (or a queued run) is not one this host wrote."""


@dataclass
class ActiveTurn:
    """One turn between its steps: its request, its finished steps, and where its event stream
    stood when the last step ended (a later event means an attempt of the next step published
    before it was interrupted: the step is redone and `run.restarted` says so)."""

    request: TurnRequest
    progress: TurnProgress
    started_at: str
    stream_seq: int = 0
    approvals: list[Approval] = field(default_factory=list)
    """The calls that needed a decision, since the turn's first pause (1.7.0; hosting.stored._approvals)."""

    @property
    def correlation_id(self) -> str:
        return self.request.correlation_id

    @property
    def waiting(self) -> list[Approval]:
        """The calls its next step waits on; none: it is not awaiting approval."""
        return pending(self.approvals, self.progress.steps)

    @property
    def decisions(self) -> dict[str, ToolDecision]:
        """The decisions its next step runs with."""
        return decisions(self.approvals, self.progress.steps)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "request": self.request.to_json(),
            "progress": self.progress.to_json(),
            "startedAt": self.started_at,
            "streamSeq": self.stream_seq,
        }
        if self.approvals:  # a turn that never paused is stored as before 1.7.0
            out["approvals"] = [a.to_json() for a in self.approvals]
        return out

    @classmethod
    def from_json(cls, data: Any) -> ActiveTurn:
        if not isinstance(data, dict):
            raise UnreadableTurn("data.activeTurn is not an object")
        seq, started = data.get("streamSeq", 0), data.get("startedAt")
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0 or not isinstance(started, str):
            raise UnreadableTurn("data.activeTurn: streamSeq or startedAt is not what this host writes")
        try:
            request = TurnRequest.from_json(data.get("request"))  # type: ignore[arg-type]
            progress = TurnProgress.from_json(data.get("progress") or {})
            approvals = read_approvals(data.get("approvals"))
        except (InvalidTurnRequest, UnreadableApproval, ValueError) as error:
            raise UnreadableTurn(f"data.activeTurn: {error}") from None
        return cls(request, progress, started, seq, approvals)


def active_turn(state: AgentState) -> ActiveTurn | None:
    """The session's turn in progress, None when there is none; `UnreadableTurn` for one this
    host did not write."""
    raw = state.active_turn
    return None if raw is None else ActiveTurn.from_json(raw)


def queued_requests(state: AgentState) -> list[TurnRequest]:
    """The runs waiting for the turn in progress, oldest first (`UnreadableTurn` for a bad one)."""
    out = []
    for raw in state.queued_runs:
        try:
            out.append(TurnRequest.from_json(raw))
        except (InvalidTurnRequest, ValueError) as error:
            raise UnreadableTurn(f"data.queuedRuns: {error}") from None
    return out


def forget_waiting(state: AgentState, correlation_id: str) -> None:
    """Take the run off the turn in progress and the queue (it is being recorded)."""
    raw = state.active_turn
    request = raw.get("request") if raw is not None else None
    if isinstance(request, dict) and request.get("correlationId") == correlation_id:
        state.active_turn = None
    queued = state.queued_runs
    kept = [q for q in queued if not (isinstance(q, dict) and q.get("correlationId") == correlation_id)]
    if len(kept) != len(queued):
        state.queued_runs = kept
