"""The app's settings from the environment that more than one part of hosting reads: the HTTP
API's limits and public origin (`ApiSettings`) and a session's size limit (the entity enforces
it, the HTTP side checks it before sending a turn). Settings of one part stay with it:
`hosting.streams` (stream store), `hosting.archive` (history archive), `hosting.mcp` (tools),
`hosting.lifecycle` (idle expiry)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ._errors import HostingConfigurationError
from ._numbers import number_setting

MAX_BODY_BYTES = 256 * 1024
"""Largest accepted request body (256 KiB); larger bodies get 413 `body_too_large`."""

DEFAULT_MAX_SESSION_BYTES = 960 * 1024
"""Default session size limit: under the local host's (and the Durable Task Scheduler's) 1 MiB,
so this check, which records a failed turn, fires before the host refuses to store the state."""

MIN_SESSION_BYTES = 1024
"""Smallest accepted `max_session_bytes` (an empty state alone is ~100 bytes)."""

RECORD_HEADROOM_BYTES = 64 * 1024
"""How far past `max_session_bytes` a session may grow by refusals (default limit + headroom =
1 MiB): compact records of refused turns up to 48 KiB, then only their ids (`data.refusedRuns`,
at most 16 KiB, hosting.stored), so every refused run keeps an answer."""

SESSION_LIMIT_ENV = "DURABLE_AGENTS_MAX_SESSION_BYTES"


MAX_SESSION_LIMIT_BYTES = 64 * 1024 * 1024
"""The largest `max_session_bytes` the setting takes (64 MiB: every turn loads the whole state)."""


def max_session_bytes_from_env() -> int:
    """`DURABLE_AGENTS_MAX_SESSION_BYTES` when set (1 KiB to 64 MiB), else the default (960 KiB)."""
    value = number_setting(
        os.environ,
        SESSION_LIMIT_ENV,
        low=MIN_SESSION_BYTES,
        high=MAX_SESSION_LIMIT_BYTES,
        unit="bytes",
        whole=True,
    )
    return DEFAULT_MAX_SESSION_BYTES if value is None else int(value)


PUBLIC_BASE_URL_ENV = "DURABLE_AGENTS_PUBLIC_BASE_URL"


def public_base_url_from_env() -> str | None:
    """The app's public origin from the environment (see `ApiSettings.public_base_url`)."""
    explicit = os.environ.get(PUBLIC_BASE_URL_ENV, "").strip().rstrip("/")
    if explicit:
        return explicit
    hostname = os.environ.get("WEBSITE_HOSTNAME", "").strip()
    if not hostname:
        return None
    local = hostname.split(":", 1)[0] in ("localhost", "127.0.0.1", "[::1]", "0.0.0.0")
    return f"{'http' if local else 'https'}://{hostname}"


@dataclass(frozen=True)
class ApiSettings:
    """Limits of the HTTP API and of a session's stored state (all documented in docs/hosting.md)."""

    route_prefix: str = "api"
    max_body_bytes: int = MAX_BODY_BYTES
    response_wait_seconds: float = 30.0
    """How long `POST .../run` waits for the turn before answering 202."""
    max_poll_wait_seconds: float = 60.0
    """Upper bound of `?wait=` on the run resource."""
    health_timeout_seconds: float = 5.0
    public_base_url: str | None = field(default_factory=public_base_url_from_env)
    """Origin of the URLs the API hands out (`Location`, run links): `DURABLE_AGENTS_PUBLIC_BASE_URL`,
    else from `WEBSITE_HOSTNAME` (set by Azure, func start and the local host); None gives
    relative URLs. Never taken from a request's Host header."""
    max_session_bytes: int = field(default_factory=max_session_bytes_from_env)
    """Largest stored session state (UTF-8 bytes) a turn may leave; a turn that would exceed it is
    recorded as failed (`session_too_large`). Default 960 KiB or `DURABLE_AGENTS_MAX_SESSION_BYTES`."""

    def url(self, path: str) -> str:
        """The public URL of an API path (``agents/a/sessions/s``), for Location headers and links.

        Never built from a request's Host header: a caller must not choose where it points.
        """
        prefix = f"/{self.route_prefix}" if self.route_prefix else ""
        return f"{self.public_base_url or ''}{prefix}/{path}"

    def __post_init__(self) -> None:
        if isinstance(self.max_session_bytes, bool) or not isinstance(self.max_session_bytes, int):
            raise HostingConfigurationError("ApiSettings.max_session_bytes must be an int")
        if self.max_session_bytes < MIN_SESSION_BYTES:
            raise HostingConfigurationError(
                f"ApiSettings.max_session_bytes must be at least {MIN_SESSION_BYTES}, "
                f"not {self.max_session_bytes}"
            )
