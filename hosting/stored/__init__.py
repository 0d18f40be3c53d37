"""The stored session document, pure (no IO): one reader (`StoredDocument`) of its wire keys
and of hosting's marks in `data`, the marks' writers, and the runs they answer without entries."""

from ._approvals import Approval, Decision, RunApprovals, approvals_of, decided_event, recorded_approvals
from ._document import (
    INTERNAL,
    Internal,
    StoredDocument,
    StoredRun,
    TurnEntry,
    Viewer,
    WaitingRun,
    first_text,
)
from ._marks import (
    MAX_DISCARDED_RUNS,
    MAX_REFUSED_BYTES,
    REFUSED_MESSAGE,
    Unrecorded,
    refused_result,
    reset_text,
    revived_text,
    tombstone_text,
    unrecorded_run,
    with_refused,
)
from ._turn import (
    ActiveTurn,
    Steer,
    UnreadableTurn,
    active_turn,
    forget_waiting,
    keep_approvals,
    queued_requests,
)

__all__ = [
    "INTERNAL",
    "MAX_DISCARDED_RUNS",
    "MAX_REFUSED_BYTES",
    "REFUSED_MESSAGE",
    "ActiveTurn",
    "Approval",
    "Decision",
    "Internal",
    "RunApprovals",
    "Steer",
    "StoredDocument",
    "StoredRun",
    "TurnEntry",
    "UnreadableTurn",
    "Unrecorded",
    "Viewer",
    "WaitingRun",
    "active_turn",
    "approvals_of",
    "decided_event",
    "first_text",
    "forget_waiting",
    "keep_approvals",
    "queued_requests",
    "recorded_approvals",
    "refused_result",
    "reset_text",
    "revived_text",
    "tombstone_text",
    "unrecorded_run",
    "with_refused",
]
