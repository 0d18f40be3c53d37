"""What submitting a run came to (`Api.submit_run`), as a value every caller renders its own way:
the run route as HTTP, the protocol edges in their wire formats. A refusal is not among them: it
is raised as its ProblemError, before anything was sent."""

from __future__ import annotations

from dataclasses import dataclass

from ..client import Snapshot
from ..stored import RunApprovals, StoredRun
from ..streams import StreamKey
from ._sse import Job


@dataclass(frozen=True)
class RunFinished:
    """The run has finished (a retry of a finished run, or a wait that saw its end); `run.result()`
    is its answer, a failed turn's included."""

    agent: str
    session_id: str
    run: StoredRun

    @property
    def correlation_id(self) -> str:
        return self.run.correlation_id


@dataclass(frozen=True)
class RunAccepted:
    """The run is queued or running (or the caller did not wait, or the wait ran out, or
    something failed once the turn was sent): follow it by its ids. `approvals`: the calls it
    waits on when it paused for decisions. `correlation_id` is the run the caller's joined when
    it was sent with `steer`."""

    agent: str
    session_id: str
    correlation_id: str
    approvals: RunApprovals | None = None


@dataclass(frozen=True)
class RunStreamed:
    """The caller asked for the run's events: follow `key` after `after`. `then`: the work to
    start once the stream's first answer event is out (a new session's sweepers); `snapshot`: a
    retry of a finished run, whose stream is opened from the session as just read
    (`RunStreams.opened`), rather than attached to."""

    key: StreamKey
    after: int = 0
    then: Job | None = None
    snapshot: Snapshot | None = None

    @property
    def session_id(self) -> str:
        return self.key.session_id

    @property
    def correlation_id(self) -> str:
        return self.key.correlation_id


RunSubmitted = RunFinished | RunAccepted | RunStreamed
