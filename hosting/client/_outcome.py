"""What a caller learns of a run through the durable client, as one value: finished (stored,
archived, or refused by id), discarded, or refused before sending (an unreadable state, another
request under the same id, a history chunk that cannot be read, a full session, another user's
session, a busy session a run asked to `reject`); or pending.
The edges (hosting.http, hosting.mcp) decide what each means to their callers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from state import HistoryUnavailable

from ..stored import RunApprovals, StoredRun, Unrecorded

SameRequest = Callable[[str | None, Mapping[str, Any] | None], bool]
"""Whether a stored run (its request hash, its request entry) asked what the new request asks."""


@dataclass(frozen=True)
class RunOutcome:
    """One run's outcome; every field None (or False) means it is still pending."""

    run: StoredRun | None = None
    """Finished: its entries (stored, archived, or the answer of a refusal kept by id)."""
    discarded: Unrecorded | None = None
    """A reset or delete discarded it: its outcome is gone."""
    unreadable: str | None = None
    """Why the session's stored state cannot be read (it is left as it is)."""
    conflict: bool = False
    """The run id answered (or is running) a different request."""
    history: HistoryUnavailable | None = None
    """The run's entries were archived and their chunk cannot be read."""
    full: tuple[int, int] | None = None
    """(stored, asked) bytes: the session is too full for the request; nothing was sent."""
    hidden: bool = False
    """The session belongs to another user than the caller's: to them there is no such session."""
    busy: int | None = None
    """A `reject` run found this many other runs of the session running or queued: nothing was sent."""
    awaiting: RunApprovals | None = None
    """Still pending, and paused: its next step waits for decisions on tool calls."""
    steered_into: str | None = None
    """The run was sent with `steer` and joined this running run: the other fields are that run's."""

    @property
    def pending(self) -> bool:
        """No outcome yet (a run awaiting approval is pending too)."""
        return replace(self, awaiting=None, steered_into=None) == PENDING


PENDING = RunOutcome()


def finished(run: StoredRun, asked: SameRequest | None) -> RunOutcome:
    """The outcome of a finished run, or a conflict when it answered a different request (`asked`
    compares a stored run's `requestHash`, or its request entry, with the new request)."""
    if asked is not None and not asked(run.request_hash, run.request):
        return RunOutcome(conflict=True)
    return RunOutcome(run=run)
