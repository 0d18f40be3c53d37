"""Errors of the agents package: misuse at definition time versus failures while running."""

from __future__ import annotations


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


class ModelCallError(AgentsError):
    """A model call failed for good (after retries); recorded as a failed turn, never raised by run.

    ``status`` is the HTTP status of the model service (None when there was no HTTP answer, e.g. a
    timeout); ``retryable`` says whether the same request may succeed later.
    """

    def __init__(self, code: str, message: str, *, retryable: bool, status: int | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable
        self.status = status


class ToolExecutionError(AgentsError):
    """Internal: a tool call could not run (bad arguments, unknown tool, tool raised).

    Never escapes a turn; its text becomes the function result the model sees.
    """
