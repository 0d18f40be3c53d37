"""Errors of the hosting package: HTTP problems, idempotency conflicts and failed agent runs."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from agents import FailureCarrier
from state import TurnFailure


class HostingError(Exception):
    """Base class of every error raised by the hosting package."""


class HostingConfigurationError(HostingError, ValueError):
    """A hosting setting is unusable (raised when the settings are made, before any request)."""


class ProblemCode(StrEnum):
    """Every `code` an API problem of ours carries (a failed model call carries the model's own)."""

    INVALID_JSON = "invalid_json"
    INVALID_ENCODING = "invalid_encoding"
    INVALID_TYPE = "invalid_type"
    INVALID_FIELD = "invalid_field"
    MISSING_FIELD = "missing_field"
    UNKNOWN_FIELD = "unknown_field"
    EMPTY_MESSAGE = "empty_message"
    INVALID_SESSION_ID = "invalid_session_id"
    INVALID_CORRELATION_ID = "invalid_correlation_id"
    INVALID_INSTANCE_ID = "invalid_instance_id"
    INVALID_IDEMPOTENCY_KEY = "invalid_idempotency_key"
    CONFLICTING_FIELDS = "conflicting_fields"
    INVALID_USER_ID = "invalid_user_id"
    NOT_SIGNED_IN = "not_signed_in"
    USER_MISMATCH = "user_mismatch"
    UNKNOWN_AGENT = "unknown_agent"
    SESSION_NOT_FOUND = "session_not_found"
    RUN_NOT_FOUND = "run_not_found"
    MEMORY_NOT_FOUND = "memory_not_found"
    ERASURE_NOT_FOUND = "erasure_not_found"
    WORKFLOW_NOT_FOUND = "workflow_not_found"
    CONSOLE_ASSET_NOT_FOUND = "console_asset_not_found"
    IDEMPOTENCY_CONFLICT = "idempotency_conflict"
    STATE_UNREADABLE = "state_unreadable"
    SESSION_TOO_LARGE = "session_too_large"
    SESSION_BUSY = "session_busy"
    HISTORY_UNAVAILABLE = "history_unavailable"
    WORKFLOW_FINISHED = "workflow_finished"
    RUN_DISCARDED = "run_discarded"
    RUN_CANCELLED = "run_cancelled"
    RUN_FINISHED = "run_finished"
    APPROVAL_NOT_FOUND = "approval_not_found"
    RUN_NOT_AWAITING_APPROVAL = "run_not_awaiting_approval"
    APPROVAL_CONFLICT = "approval_conflict"
    BODY_TOO_LARGE = "body_too_large"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    INTERNAL_ERROR = "internal_error"
    STORAGE_UNAVAILABLE = "storage_unavailable"


PROBLEMS: dict[ProblemCode, tuple[int, str]] = {
    ProblemCode.INVALID_JSON: (400, "Bad request"),
    ProblemCode.INVALID_ENCODING: (400, "Bad request"),
    ProblemCode.INVALID_TYPE: (400, "Bad request"),
    ProblemCode.INVALID_FIELD: (400, "Bad request"),
    ProblemCode.MISSING_FIELD: (400, "Bad request"),
    ProblemCode.UNKNOWN_FIELD: (400, "Bad request"),
    ProblemCode.EMPTY_MESSAGE: (400, "Bad request"),
    ProblemCode.INVALID_SESSION_ID: (400, "Bad request"),
    ProblemCode.INVALID_CORRELATION_ID: (400, "Bad request"),
    ProblemCode.INVALID_INSTANCE_ID: (400, "Bad request"),
    ProblemCode.INVALID_IDEMPOTENCY_KEY: (400, "Bad request"),
    ProblemCode.CONFLICTING_FIELDS: (400, "Bad request"),
    ProblemCode.INVALID_USER_ID: (400, "Bad request"),
    ProblemCode.NOT_SIGNED_IN: (401, "Unauthorized"),
    ProblemCode.USER_MISMATCH: (403, "Forbidden"),
    ProblemCode.UNKNOWN_AGENT: (404, "Not found"),
    ProblemCode.SESSION_NOT_FOUND: (404, "Not found"),
    ProblemCode.RUN_NOT_FOUND: (404, "Not found"),
    ProblemCode.MEMORY_NOT_FOUND: (404, "Not found"),
    ProblemCode.ERASURE_NOT_FOUND: (404, "Not found"),
    ProblemCode.WORKFLOW_NOT_FOUND: (404, "Not found"),
    ProblemCode.CONSOLE_ASSET_NOT_FOUND: (404, "Not found"),
    ProblemCode.IDEMPOTENCY_CONFLICT: (409, "Conflict"),
    ProblemCode.STATE_UNREADABLE: (409, "Conflict"),
    ProblemCode.SESSION_TOO_LARGE: (409, "The session is too large"),
    ProblemCode.SESSION_BUSY: (409, "The session is busy"),
    ProblemCode.HISTORY_UNAVAILABLE: (409, "Archived history unavailable"),
    ProblemCode.WORKFLOW_FINISHED: (409, "Conflict"),
    ProblemCode.RUN_DISCARDED: (410, "Gone"),
    ProblemCode.RUN_CANCELLED: (409, "The run was cancelled"),
    ProblemCode.RUN_FINISHED: (409, "The run has finished"),
    ProblemCode.APPROVAL_NOT_FOUND: (404, "Not found"),
    ProblemCode.RUN_NOT_AWAITING_APPROVAL: (409, "The run is not awaiting approval"),
    ProblemCode.APPROVAL_CONFLICT: (409, "The call was decided otherwise"),
    ProblemCode.BODY_TOO_LARGE: (413, "Request body too large"),
    ProblemCode.UNSUPPORTED_MEDIA_TYPE: (415, "Unsupported media type"),
    ProblemCode.INTERNAL_ERROR: (500, "Internal error"),
    ProblemCode.STORAGE_UNAVAILABLE: (503, "Service unavailable"),
}
"""The one table of problem codes: each code's HTTP status and title (the OpenAPI document and
docs/hosting.md list them from here)."""

MODEL_FAILURE_STATUS = 502
"""The status of a failed model call, whose problem carries the model's own code."""


def session_busy_message(waiting: int, session_id: str | None = None) -> str:
    """What a run that asked `reject` of a busy session is told: by the run route before sending,
    and by the entity that refuses it after (the session turned busy in between)."""
    session = "the session" if session_id is None else f"session {session_id!r}"
    return (
        f"{session} has {waiting} run(s) running or queued and this run asked multitask_strategy "
        "'reject'; send it again once they finish, or with 'enqueue', 'interrupt' or 'steer'"
    )


class ProblemError(HostingError):
    """A request cannot be served; rendered as an `application/problem+json` response.

    `code` is the stable machine-readable name clients match on; its status and title come from
    `PROBLEMS`. A failed model call is the one problem whose code is not ours: it takes
    `MODEL_FAILURE_STATUS` and the model's code (`ProblemError.model_failure`). `field` names
    the offending request field (body property, query parameter or header) when there is one.
    """

    def __init__(
        self,
        code: ProblemCode,
        detail: str,
        *,
        title: str | None = None,
        field: str | None = None,
        headers: dict[str, str] | None = None,
        **extensions: Any,
    ) -> None:
        status, default_title = PROBLEMS[ProblemCode(code)]
        self._init(status, str(code), detail, title or default_title, field, headers, extensions)

    def _init(
        self,
        status: int,
        code: str,
        detail: str,
        title: str,
        field: str | None,
        headers: dict[str, str] | None,
        extensions: dict[str, Any],
    ) -> None:
        HostingError.__init__(self, f"{code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.title = title
        self.field = field
        self.headers = headers or {}
        self.extensions = extensions

    @classmethod
    def model_failure(
        cls, failure: TurnFailure, *, headers: dict[str, str] | None = None, **extensions: Any
    ) -> ProblemError:
        """The 502 of a failed model call: the model's own code, message and retryability."""
        problem = cls.__new__(cls)
        problem._init(
            MODEL_FAILURE_STATUS,
            failure.code,
            failure.message or "the model call failed",
            "The model call failed",
            None,
            headers,
            {"retryable": failure.retryable, "model_status": failure.status, **extensions},
        )
        return problem


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


class AgentRunFailed(HostingError, FailureCarrier):
    """An agent turn run from an orchestration failed; the failure is also stored in the history.

    `failure` is what went wrong (code, message, retryable, status; see `state.TurnFailure`).
    """

    def __init__(self, agent: str, session_id: str, correlation_id: str, failure: TurnFailure) -> None:
        super().__init__(f"agent {agent!r} turn {correlation_id} failed: {failure.code}: {failure.message}")
        self.agent = agent
        self.session_id = session_id
        self.correlation_id = correlation_id
        self.failure = failure
