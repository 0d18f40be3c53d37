"""Errors of the agents package: misuse at definition time versus failures while running."""

from __future__ import annotations

from enum import StrEnum

from state import TurnFailure


class AgentsError(Exception):
    """Base class of every error raised by the agents package."""


class AgentConfigurationError(AgentsError):
    """An agent, tool, provider or model setting is misconfigured (raised at definition time)."""


class InvalidTurnRequest(AgentsError):
    """A turn request is malformed; ``field`` names the offending field (a caller error, 4xx)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class FailureCode(StrEnum):
    """The failure codes this package records on a failed turn (``TurnFailure.code``).

    A model service's own error code (``rate_limit_exceeded``, ``context_length_exceeded``...)
    is recorded as the service sent it; these are the ones we name ourselves.
    """

    MODEL_ERROR = "model_error"
    MODEL_SERVER_ERROR = "model_server_error"
    MODEL_CLIENT_ERROR = "model_client_error"
    MODEL_NOT_CONFIGURED = "model_not_configured"
    MODEL_REQUESTS_DISABLED = "model_requests_disabled"
    BAD_REQUEST = "bad_request"
    AUTHENTICATION_FAILED = "authentication_failed"
    PERMISSION_DENIED = "permission_denied"
    MODEL_NOT_FOUND = "model_not_found"
    TIMEOUT = "timeout"
    CONFLICT = "conflict"
    REQUEST_TOO_LARGE = "request_too_large"
    UNPROCESSABLE_REQUEST = "unprocessable_request"
    RATE_LIMITED = "rate_limited"
    CONNECTION_ERROR = "connection_error"
    INVALID_MODEL_RESPONSE = "invalid_model_response"
    CONTENT_FILTER = "content_filter"
    MAX_TOOL_ROUNDS_EXCEEDED = "max_tool_rounds_exceeded"
    INVALID_STRUCTURED_OUTPUT = "invalid_structured_output"
    PROVIDER_ERROR = "provider_error"
    TOOL_NAME_CONFLICT = "tool_name_conflict"
    INTERNAL_ERROR = "internal_error"
    CANCELLED = "run_cancelled"
    """The run was cancelled (by its caller, or by a newer run that interrupted it)."""


def failure(code: str, message: str, *, retryable: bool = False, status: int | None = None) -> TurnFailure:
    """What went wrong, as the one value every layer passes on (``state.TurnFailure``)."""
    return TurnFailure(code=str(code), message=message, retryable=retryable, status=status)


class FailureCarrier:
    """What an exception that carries a failed turn's `failure` (a `state.TurnFailure`) shares:
    the failure's fields, readable on the exception itself."""

    failure: TurnFailure

    @property
    def code(self) -> str:
        """The failure's code."""
        return self.failure.code

    @property
    def message(self) -> str:
        """The failure's message."""
        return self.failure.message

    @property
    def retryable(self) -> bool:
        """Whether the same request may succeed later."""
        return self.failure.retryable

    @property
    def status(self) -> int | None:
        """The model service's HTTP status, or None."""
        return self.failure.status


class ModelCallError(AgentsError, FailureCarrier):
    """A model call failed for good (after retries); recorded as a failed turn, never raised by run.

    Carries the failure (`failure`: code, message, retryable and the model service's HTTP status,
    None when there was no HTTP answer, e.g. a timeout); its fields are readable here too.
    """

    def __init__(self, code: str, message: str, *, retryable: bool, status: int | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.failure = failure(code, message, retryable=retryable, status=status)


def streamed_failure(code: object, kind: object, message: str) -> ModelCallError:
    """A failure the model service reported inside a streamed answer, after its HTTP 200 (a Chat
    Completions `error` chunk, a Responses `error` event): its own `server_error` (as `code` or
    `kind`) is the service's fault and worth another attempt; another keeps the service's code."""
    server = "server_error" in (code, kind)
    chosen = FailureCode.MODEL_SERVER_ERROR if server else str(code or FailureCode.MODEL_ERROR)
    return ModelCallError(chosen, message, retryable=server)


class ToolExecutionError(AgentsError):
    """Internal: a tool call could not run (bad arguments, unknown tool, tool raised).

    Never escapes a turn; its text becomes the function result the model sees.
    """
