"""Idle expiry of sessions: how long each agent's sessions live without a turn.

`DURABLE_AGENTS_SESSION_TTL` (app-wide) and `DURABLE_AGENTS_SESSION_TTL__<agent>` (one agent) are
seconds of idleness after which a session (its entity and its archived chunks) is deleted;
default 30 days, `0` never, at most a century. Idle time counts from the state's
`lastActivityAt` (the last turn or reset).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from .._numbers import number_setting
from ..stored import StoredDocument

TTL_ENV = "DURABLE_AGENTS_SESSION_TTL"
DEFAULT_TTL = timedelta(days=30)
MAX_TTL_SECONDS = 100 * 365 * 86_400
"""A century: an expiry time stays a date (a TTL past year 9999 broke every read of the session)."""


def ttl_for(agent: str, environ: Mapping[str, str] | None = None) -> timedelta | None:
    """How long `agent`'s sessions may stay idle (None: forever); `HostingConfigurationError` for
    a setting out of range (`build_app` asks for every agent, so that happens at startup)."""
    env = os.environ if environ is None else environ
    for name in (f"{TTL_ENV}__{agent}", TTL_ENV):
        seconds = number_setting(env, name, low=0, high=MAX_TTL_SECONDS, unit="seconds (0: never expire)")
        if seconds is not None:
            return None if seconds == 0 else timedelta(seconds=seconds)
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
