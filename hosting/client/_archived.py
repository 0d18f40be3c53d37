"""Runs whose entries were archived, as the HTTP side finds them, and the 409 of a history that
cannot be read."""

from __future__ import annotations

from typing import Any

from state import HistoryUnavailable

from .._errors import ProblemCode, ProblemError
from .._ids import entity_name
from ..archive import HistoryArchive, archived_run, default_archive, state_archive
from ..stored._runs import StoredRun


def history_unavailable(error: HistoryUnavailable, agent: str, session_id: str) -> ProblemError:
    """The 409 of a session whose archived history cannot be read (nothing was changed)."""
    return ProblemError(
        ProblemCode.HISTORY_UNAVAILABLE,
        f"session {session_id!r} of agent {agent!r}: {error}. The session's state is unchanged.",
        agent=agent,
        session_id=session_id,
        chunk=error.chunk,
    )


async def find_archived_run(
    agent: str, session_id: str, document: Any, correlation_id: str, archive: HistoryArchive | None = None
) -> StoredRun | None:
    """A finished run of the session whose entries were archived, or None (409 when its chunk
    cannot be read)."""
    found = state_archive(document)
    if found is None or correlation_id not in found.get("runs", {}):
        return None
    try:
        return await archived_run(
            archive or default_archive(), entity_name(agent), session_id, found, correlation_id
        )
    except HistoryUnavailable as error:
        raise history_unavailable(error, agent, session_id) from None
