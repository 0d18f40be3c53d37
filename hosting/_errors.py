"""Errors of the hosting package: HTTP problems, idempotency conflicts and failed agent runs."""

from __future__ import annotations

from typing import Any


class HostingError(Exception):
    """Base class of every error raised by the hosting package."""


class HostingConfigurationError(HostingError, ValueError):
    """A hosting setting is unusable (raised when the settings are made, before any request)."""


class ProblemError(HostingError):
    """A request cannot be served; rendered as an `application/problem+json` response.

    `code` is the stable machine-readable name clients match on; `field` names the offending
    request field (body property, query parameter or header) when there is one.
    """

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        title: str | None = None,
        field: str | None = None,
        headers: dict[str, str] | None = None,
        **extensions: Any,
    ) -> None:
        super().__init__(f"{code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.title = title
        self.field = field
        self.headers = headers or {}
        self.extensions = extensions


class RunConflict(HostingError):
    """A correlation id that was already answered arrived again with a different request body.

    Raised inside the entity, so the operation fails and the stored state is left untouched.
    """

    def __init__(self, correlation_id: str) -> None:
        super().__init__(
            f"correlation id {correlation_id!r} was already used for a different request; "
            "send a new correlation id (or Idempotency-Key) for a new request"
        )
        self.correlation_id = correlation_id


class InvalidOperation(HostingError):
    """An entity operation arrived with a name or input the entity does not understand."""


class AgentRunFailed(HostingError):
    """An agent turn run from an orchestration failed; the failure is also stored in the history.

    `code`, `retryable` and `status` come from the model service's error (see `agents.TurnError`).
    """

    def __init__(
        self,
        agent: str,
        session_id: str,
        correlation_id: str,
        *,
        code: str,
        message: str,
        retryable: bool,
        status: int | None,
    ) -> None:
        super().__init__(f"agent {agent!r} turn {correlation_id} failed: {code}: {message}")
        self.agent = agent
        self.session_id = session_id
        self.correlation_id = correlation_id
        self.code = code
        self.message = message
        self.retryable = retryable
        self.status = status
