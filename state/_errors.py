"""Typed errors raised while reading a stored state."""

from __future__ import annotations


class StateError(Exception):
    """Base of every error the `state` package raises."""


class InvalidState(StateError):
    """The stored text is not a durable agent state (bad JSON, wrong shape or wrong types).

    `path` names where the problem was found (e.g. ``data.conversationHistory[3].$type``), or is
    empty when the whole document is at fault.
    """

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.reason = message


class IncompatibleStateVersion(StateError):
    """The state's `schemaVersion` is missing, garbled or of a major version this build cannot read."""

    def __init__(self, message: str, *, found: object, supported: str) -> None:
        super().__init__(message)
        self.found = found
        self.supported = supported
