"""Idle expiry of sessions: how long each agent's sessions live without a turn.

`DURABLE_AGENTS_SESSION_TTL` (app-wide) and `DURABLE_AGENTS_SESSION_TTL__<agent>` (one agent) are
seconds of idleness after which a session (its entity and its archived chunks) is deleted;
default 30 days, `0` never, at most a century. Idle time counts from the state's
`lastActivityAt` (the last turn or reset).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from .._settings import DEFAULT_TTL, MAX_TTL_SECONDS, TTL_ENV, LifecycleSettings, current
from ..stored import StoredDocument

__all__ = ["DEFAULT_TTL", "MAX_TTL_SECONDS", "TTL_ENV"]


def ttl_for(agent: str, settings: LifecycleSettings | None = None) -> timedelta | None:
    """How long `agent`'s sessions may stay idle (None: forever), by `settings` (default: the
    app's, which `build_app` read and range-checked at startup)."""
    return (current().lifecycle if settings is None else settings).ttl_for(agent)


def last_activity(document: Any) -> datetime | None:
    """When the session last ran a turn or was reset (`data.lastActivityAt`, else its newest entry)."""
    return StoredDocument(document).last_activity()


def due_at(document: Any, ttl: timedelta | None) -> datetime | None:
    """When an idle session expires (None: never, or no activity recorded)."""
    if ttl is None:
        return None
    moment = last_activity(document)
    return None if moment is None else moment + ttl


def expires_at(document: Any, ttl: timedelta | None) -> str | None:
    """`due_at` as RFC 3339 text."""
    moment = due_at(document, ttl)
    return None if moment is None else moment.astimezone(UTC).isoformat()
