"""The problems of a run's outcome: what the API (and the MCP tools, which show the same text)
answers for a run that cannot be answered with its result. One place builds them all."""

from __future__ import annotations

from state import HistoryUnavailable

from .._errors import ProblemCode, ProblemError, session_busy_message
from ..client import (
    Busy,
    Conflict,
    Discarded,
    Full,
    Hidden,
    HistoryMissing,
    Refusal,
    RunOutcome,
    Unreadable,
)


def no_session(agent: str, session_id: str) -> ProblemError:
    """404: no such session, or (the same answer, so that nothing tells them apart) one that
    belongs to another user than the caller's."""
    return ProblemError(
        ProblemCode.SESSION_NOT_FOUND,
        f"agent {agent!r} has no session {session_id!r}",
        field="session_id",
    )


def unreadable(agent: str, session_id: str, reason: str) -> ProblemError:
    """409: the session's stored state cannot be read by this build (it is left as it is)."""
    return ProblemError(
        ProblemCode.STATE_UNREADABLE,
        f"session {session_id!r} of agent {agent!r} has a stored state this build cannot read: "
        f"{reason}. It is kept unchanged; nothing was run.",
        agent=agent,
        session_id=session_id,
    )


def idempotency_conflict(agent: str, session_id: str, correlation_id: str) -> ProblemError:
    """409: the run with this correlation id (stored or pending) asked a different request."""
    return ProblemError(
        ProblemCode.IDEMPOTENCY_CONFLICT,
        f"run {correlation_id!r} already exists with a different request "
        "(messages, response_format or options); use a new Idempotency-Key or correlation_id "
        "for a new request",
        agent=agent,
        session_id=session_id,
        correlation_id=correlation_id,
    )


def discarded_problem(
    agent: str, session_id: str, correlation_id: str, *, deleted: bool = False
) -> ProblemError:
    """410: the run belonged to a history a reset or delete cleared (`deleted`: the session is
    deleted now); its outcome is gone."""
    cleared = "the session was deleted" if deleted else "a reset (or delete) cleared its history"
    return ProblemError(
        ProblemCode.RUN_DISCARDED,
        f"run {correlation_id!r} of session {session_id!r} (agent {agent!r}) is gone: {cleared}. "
        "Its outcome is not kept and it is not run again; send a new Idempotency-Key "
        "(or correlation_id) to run the request in a new history",
        agent=agent,
        session_id=session_id,
        correlation_id=correlation_id,
    )


def history_unavailable(error: HistoryUnavailable, agent: str, session_id: str) -> ProblemError:
    """409: the session's archived history cannot be read (nothing was changed)."""
    return ProblemError(
        ProblemCode.HISTORY_UNAVAILABLE,
        f"session {session_id!r} of agent {agent!r}: {error}. The session's state is unchanged.",
        agent=agent,
        session_id=session_id,
        chunk=error.chunk,
    )


def session_full(
    agent: str, session_id: str, stored: int, asked: int, max_session_bytes: int
) -> ProblemError:
    """409: the session is too full for the request; nothing was run or recorded."""
    return ProblemError(
        ProblemCode.SESSION_TOO_LARGE,
        f"session {session_id!r} of agent {agent!r} holds {stored} bytes; with this "
        f"request's {asked} it would pass its limit of {max_session_bytes} bytes "
        "(max_session_bytes). Nothing was run or recorded; start a new session (or reset this one)",
        retryable=False,
        max_session_bytes=max_session_bytes,
        agent=agent,
        session_id=session_id,
    )


def refusal(
    outcome: RunOutcome, agent: str, session_id: str, correlation_id: str, max_session_bytes: int = 0
) -> ProblemError | None:
    """The problem an outcome answers with, or None when it is finished, pending or paused."""
    match outcome:
        case Hidden():
            return no_session(agent, session_id)
        case Unreadable(reason=reason):
            return unreadable(agent, session_id, reason)
        case HistoryMissing(error=error):
            return history_unavailable(error, agent, session_id)
        case Conflict():
            return idempotency_conflict(agent, session_id, correlation_id)
        case Discarded(unrecorded=unrecorded):
            return discarded_problem(agent, session_id, correlation_id, deleted=unrecorded.deleted)
        case Full(stored=stored, asked=asked):
            return session_full(agent, session_id, stored, asked, max_session_bytes)
        case Busy(others=others):
            message = session_busy_message(others, session_id)
            return ProblemError(ProblemCode.SESSION_BUSY, message, field="multitask_strategy")
        case _:
            return None


def refused(
    outcome: Refusal | Discarded, agent: str, session_id: str, correlation_id: str, max_session_bytes: int = 0
) -> ProblemError:
    """The problem of a turn the submit path refused (hosting.client `Refused`): every refusal
    it makes has one above."""
    problem = refusal(outcome, agent, session_id, correlation_id, max_session_bytes)
    if problem is None:  # a refusal this module does not know yet: a bug, never a silent accept
        return ProblemError(ProblemCode.INTERNAL_ERROR, f"the run was refused without a reason: {outcome!r}")
    return problem
