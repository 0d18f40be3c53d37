"""What a caller learns of a run through the durable client, as one value of a tagged union:
finished (stored, archived, or refused by id: `Finished`), discarded (`Discarded`), refused
before sending (`Refusal`: an unreadable state, another request under the same id, a history
chunk that cannot be read, a full session, another user's session, a busy session a run asked
to `reject`), still pending (`Pending`), or paused for approvals (`Awaiting`).
The edges (hosting.http, hosting.mcp, the protocol edges) `match` on it and decide what each
means to their callers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from state import HistoryUnavailable

from ..stored import RunApprovals, StoredRun, Unrecorded

SameRequest = Callable[[str | None, Mapping[str, Any] | None], bool]
"""Whether a stored run (its request hash, its request entry) asked what the new request asks."""


@dataclass(frozen=True)
class Finished:
    """The run finished: its entries (stored, archived, or the answer of a refusal kept by id);
    whether it failed or was cancelled is the run's own (`run.result().error`)."""

    run: StoredRun
    steered_into: str | None = None
    """Sent with `steer`, the run joined this running run: `run` is that run's."""


@dataclass(frozen=True)
class Discarded:
    """A reset or delete discarded the run: its outcome is gone."""

    unrecorded: Unrecorded
    steered_into: str | None = None


@dataclass(frozen=True)
class Pending:
    """No outcome yet: queued or running."""

    steered_into: str | None = None


@dataclass(frozen=True)
class Awaiting:
    """Still pending, and paused: its next step waits for decisions on tool calls."""

    approvals: RunApprovals
    steered_into: str | None = None


@dataclass(frozen=True)
class Unreadable:
    """The session's stored state cannot be read by this build (it is left as it is)."""

    reason: str


@dataclass(frozen=True)
class Conflict:
    """The run id answered (or is running) a different request."""


@dataclass(frozen=True)
class HistoryMissing:
    """The run's entries were archived and their chunk cannot be read."""

    error: HistoryUnavailable


@dataclass(frozen=True)
class Full:
    """The session is too full for the request (bytes stored, bytes asked); nothing was sent."""

    stored: int
    asked: int


@dataclass(frozen=True)
class Hidden:
    """The session belongs to another user than the caller's: to them there is no such session."""


@dataclass(frozen=True)
class Busy:
    """A `reject` run found this many other runs of the session running or queued: nothing was sent."""

    others: int


Refusal = Unreadable | Conflict | HistoryMissing | Full | Hidden | Busy
"""Why a run cannot be answered with its result (nothing was sent, or nothing can be read)."""

RunOutcome = Finished | Discarded | Refusal | Pending | Awaiting
"""One run's outcome."""

Answerable = Finished | Pending | Awaiting
"""An outcome a route answers with the run itself (any other is its refusal's problem)."""

PENDING = Pending()


def finished(run: StoredRun, asked: SameRequest | None) -> Finished | Conflict:
    """The outcome of a finished run, or a conflict when it answered a different request (`asked`
    compares a stored run's `requestHash`, or its request entry, with the new request)."""
    if asked is not None and not asked(run.request_hash, run.request):
        return Conflict()
    return Finished(run)


def answered_id(outcome: RunOutcome, correlation_id: str) -> str:
    """The run the outcome is of: the running run a `steer` run joined, else `correlation_id`."""
    match outcome:
        case Finished(steered_into=into) | Discarded(steered_into=into) | Pending(steered_into=into):
            return into or correlation_id
        case Awaiting(steered_into=into):
            return into or correlation_id
        case _:
            return correlation_id
