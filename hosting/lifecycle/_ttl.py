"""Idle expiry of sessions: how long each agent's sessions live without a turn.

`DURABLE_AGENTS_SESSION_TTL` (app-wide) and `DURABLE_AGENTS_SESSION_TTL__<agent>` (one agent) are
seconds of idleness after which a session (its entity and its archived chunks) is deleted;
default 30 days, `0` never. Idle time counts from the state's `lastActivityAt` (the last turn
or reset).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from .._errors import HostingConfigurationError
from ..stored import StoredDocument

TTL_ENV = "DURABLE_AGENTS_SESSION_TTL"
DEFAULT_TTL = timedelta(days=30)


def _seconds(name: str, raw: str) -> timedelta | None:
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise HostingConfigurationError(f"{name} must be a number of seconds (0: never expire), not {raw!r}")
    return None if value == 0 else timedelta(seconds=value)


def ttl_for(agent: str, environ: Mapping[str, str] | None = None) -> timedelta | None:
    """How long `agent`'s sessions may stay idle (None: forever)."""
    env = os.environ if environ is None else environ
    for name in (f"{TTL_ENV}__{agent}", TTL_ENV):
        raw = env.get(name, "").strip()
        if raw:
            return _seconds(name, raw)
    return DEFAULT_TTL


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


def now_iso() -> str:
    """The current time as RFC 3339 text (UTC)."""
    return datetime.now(UTC).isoformat()
