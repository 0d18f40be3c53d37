"""The stream store: one run's events in order, replayable from any sequence number, then live.

A run's events are appended by the one entity operation running it (a single writer per run), each
with a sequence number one higher than the last. Readers on any process replay what is stored and
follow new events until the final one. Events expire `retention` seconds after the last append.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._settings import DEFAULT_STREAM_RETENTION_SECONDS, STREAM_RETENTION_ENV, StreamSettings

RUN_STARTED = "run.started"
RUN_RESTARTED = "run.restarted"
STEP_STARTED = "step.started"
APPROVAL_REQUIRED = "approval.required"
RUN_COMPLETED = "run.completed"
RUN_FAILED = "run.failed"
RUN_CANCELLED = "run.cancelled"
TERMINAL_TYPES = frozenset({RUN_COMPLETED, RUN_FAILED, RUN_CANCELLED})
"""Types that close a stream: a reader stops after one of them."""

DEFAULT_RETENTION_SECONDS = DEFAULT_STREAM_RETENTION_SECONDS
"""How long a run's events stay readable after its last event (1 hour)."""
RETENTION_ENV = STREAM_RETENTION_ENV

READ_BATCH = 256
"""Most events one store read returns (a long stream is replayed in several reads)."""


@dataclass(frozen=True)
class StreamKey:
    """Which run a stream belongs to."""

    agent: str
    session_id: str
    correlation_id: str

    def text(self) -> str:
        """The key as one string (ids never contain ':'; see hosting._ids)."""
        return f"{self.agent}:{self.session_id}:{self.correlation_id}"

    @classmethod
    def interrupt(cls, agent: str, session_id: str) -> StreamKey:
        """The session's interrupt mark: a cancel request for every run of the session that
        runs before the interrupting run reaches it (no run has the empty id)."""
        return cls(agent, session_id, "")


@dataclass(frozen=True)
class StreamEvent:
    """One stored event: its sequence number (from 1), type and JSON object."""

    seq: int
    type: str
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def terminal(self) -> bool:
        """Whether the event closes its stream."""
        return self.type in TERMINAL_TYPES


@dataclass(frozen=True)
class RunClaim:
    """What the first request for a run left in the store before the run was stored: the
    request's identity (`Agent.request_identity`, the stored `requestHash`; None when unknown)
    and whether the run streams its model live (`text.delta` and the other turn events)."""

    request_hash: str | None
    live: bool = True


class StreamConflict(Exception):
    """An append named a sequence number that is already taken (two writers of one run)."""


class StreamStoreUnavailable(Exception):
    """The stream store cannot serve this call: its server is unreachable or out of connections
    (`retry_after`: seconds after which a retry may succeed), or the app has no store that every
    instance shares (`retry_after` None: only a setting changes that). The message names the
    dependency and, for a missing one, the setting."""

    def __init__(self, message: str, retry_after: int | None = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class StreamStore(Protocol):
    """Where runs' events live between the entity that writes them and the HTTP readers."""

    retention: float

    async def declare(self, key: StreamKey) -> None:
        """Make the stream known before its first event (a reader attaching early waits on it)."""

    async def claim(self, key: StreamKey, claim: RunClaim, *, replace: bool = False) -> RunClaim | None:
        """Declare the stream and record `claim` for its run, atomically, unless the run already
        has an unexpired claim: that one is returned and nothing changes (None: this call claimed
        the run). `replace` records `claim` whatever was there."""

    async def claimed(self, key: StreamKey) -> RunClaim | None:
        """The run's claim, if any (the entity reads whether to stream the model)."""

    async def opening(self, key: StreamKey) -> tuple[RunClaim | None, StreamEvent | None]:
        """The run's claim and the newest event, read together (one round trip): what the
        entity needs before the model request of a run."""

    async def release(self, key: StreamKey) -> None:
        """Drop the run's claim and declaration (its turn could not be sent)."""

    async def exists(self, key: StreamKey) -> bool:
        """Whether the stream is declared or has events that have not expired."""

    async def append(self, key: StreamKey, event: StreamEvent) -> None:
        """Store `event`; its `seq` must be the last one plus one (`StreamConflict` otherwise)."""

    async def append_many(self, key: StreamKey, events: Sequence[StreamEvent]) -> None:
        """Store consecutive events at once (one transaction / round trip)."""

    async def last(self, key: StreamKey) -> StreamEvent | None:
        """The newest stored event of the stream, if any."""

    async def discard(self, key: StreamKey) -> None:
        """Drop the stream's events (a closed stream whose run id is being run anew)."""

    def follow(self, key: StreamKey, after: int, idle: float) -> AsyncIterator[StreamEvent | None]:
        """The events after sequence number `after`, then new ones as they are appended, ending
        after a terminal event; yields None whenever `idle` seconds pass without an event."""

    async def request_cancel(self, key: StreamKey) -> bool:
        """Ask the run's running step to stop (`cancel_requested` says so until the retention
        ends); False when the store cannot carry it (no store every instance shares)."""

    async def cancel_requested(self, key: StreamKey) -> bool:
        """Whether the run was asked to stop (the step running it checks while it waits)."""

    async def withdraw_cancel(self, key: StreamKey) -> None:
        """Forget a cancel request (a session's interrupt mark, once the interrupting run has
        reached its session)."""

    async def ping(self) -> str:
        """Check the store for real: what answered and how (a health check's detail), or
        `StreamStoreUnavailable`."""

    async def aclose(self) -> None:
        """Release connections opened on the running event loop."""


def retention_from_env() -> float:
    """`DURABLE_AGENTS_STREAM_RETENTION_SECONDS` (1 s to 30 days), else one hour: read from the
    environment now (`build_app` reads it once, `StreamSettings.retention_seconds`)."""
    return StreamSettings.read_one("retention_seconds")
