"""The turn in progress and the runs queued behind it, as the session document keeps them (1.6.0
`data.activeTurn`, `data.queuedRuns`; docs/state.md). Pure: values in, values out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agents import InvalidTurnRequest, ToolDecision, TurnProgress, TurnRequest
from state import JSON, AgentState, ChatMessage, TextContent

from ._approvals import Approval, UnreadableApproval, decisions, pending, read_approvals
from ._document import STEERED_BY


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
    steered: list[Steer] = field(default_factory=list)
    """Runs sent with `steer` while this turn runs, waiting for its next model step (1.7.0)."""

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
        if self.steered:  # likewise a turn nothing was steered into
            out["steered"] = [s.to_json() for s in self.steered]
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
            steered = _read_steered(data.get("steered", []))
        except (InvalidTurnRequest, UnreadableApproval, ValueError) as error:
            raise UnreadableTurn(f"data.activeTurn: {error}") from None
        return cls(request, progress, started, seq, approvals, steered)

    def model_step_next(self) -> bool:
        """Whether its next step is a model call (its last step ran tools): the one place where
        steered messages may join, since a model's tool calls must be followed by their results."""
        messages = self.progress.chat_messages()
        return bool(messages) and messages[-1].role == "tool"

    def with_steered_applied(self) -> ActiveTurn:
        """The turn with its steered messages appended to its progress as the user's (they are
        then part of the turn's messages, as the model sees them), when its next step is a model
        call; itself otherwise."""
        if not self.steered or not self.model_step_next():
            return self
        added = [m for s in self.steered for m in s.messages]
        progress = replace(self.progress, messages=[*self.progress.messages, *added])
        return replace(self, progress=progress, steered=[])


@dataclass(frozen=True)
class Steer:
    """The messages of a run sent with `steer` that joined the turn in progress: they are given to
    the model at the turn's next model step (docs/hosting.md "Runs sent to a busy session")."""

    correlation_id: str
    messages: list[dict[str, Any]]
    """User messages in the state's wire form (camelCase, `$type`), as the turn will store them."""
    received_at: str

    @classmethod
    def of(cls, request: TurnRequest, received_at: str) -> Steer:
        # Each message names the run it came from (an extra property the reference schema allows
        # on a message), so that run's id still leads to the run it joined once the turn ends.
        messages = [
            ChatMessage(
                role=m.role,
                contents=[TextContent(text=m.text)],
                author_name=m.author_name,
                created_at=received_at,
                **{STEERED_BY: request.correlation_id},
            ).model_dump(mode="json", by_alias=True, exclude_none=True)
            for m in request.messages
        ]
        return cls(request.correlation_id, messages, received_at)

    def to_json(self) -> dict[str, Any]:
        return {
            "correlationId": self.correlation_id,
            "messages": self.messages,
            "receivedAt": self.received_at,
        }


def _read_steered(raw: Any) -> list[Steer]:
    if not isinstance(raw, list):
        raise ValueError("steered must be a list")
    out = []
    for item in raw:
        if not isinstance(item, dict):
            raise ValueError("steered: an entry is not an object")
        cid, messages, received = item.get("correlationId"), item.get("messages"), item.get("receivedAt")
        if not isinstance(cid, str) or not isinstance(received, str) or not isinstance(messages, list):
            raise ValueError("steered: correlationId, messages or receivedAt is not what this host writes")
        if not messages or not all(isinstance(m, dict) for m in messages):
            raise ValueError("steered: messages must be a non-empty list of messages")
        TurnProgress(messages=list(messages)).chat_messages()  # each must be a message
        out.append(Steer(cid, list(messages), received))
    return out


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


def forget_waiting(state: AgentState, correlation_id: str) -> list[JSON]:
    """Take the run off the turn in progress and the queue (it is being recorded); the approvals
    it kept while in progress (stored form), which its response entry keeps (`keep_approvals`)."""
    raw = state.active_turn
    request = raw.get("request") if raw is not None else None
    approvals: list[JSON] = []
    if raw is not None and isinstance(request, dict) and request.get("correlationId") == correlation_id:
        stored = raw.get("approvals")
        approvals = list(stored) if isinstance(stored, list) else []
        state.active_turn = None
    queued = state.queued_runs
    kept = [q for q in queued if not (isinstance(q, dict) and q.get("correlationId") == correlation_id)]
    if len(kept) != len(queued):
        state.queued_runs = kept
    return approvals


def keep_approvals(state: AgentState, correlation_id: str, approvals: Sequence[JSON]) -> None:
    """(1.8.0) Keep the approvals of run `correlation_id`, just recorded, on its response entry:
    the decisions and their reasons stay with the finished run (a turn that never paused: none)."""
    if approvals and state.find_run(correlation_id) is not None:
        state.set_response_approvals(correlation_id, list(approvals))
