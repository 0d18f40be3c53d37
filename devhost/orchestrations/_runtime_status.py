"""The one enumeration of orchestration runtime statuses the host stores, compares and reports."""

from __future__ import annotations

from enum import StrEnum


class RuntimeStatus(StrEnum):
    """An instance's ``runtimeStatus``: the values of the SDK's ``OrchestrationRuntimeStatus``.

    A ``StrEnum`` rather than the SDK's plain ``Enum`` because the values go as they are into
    SQLite, history events and JSON answers, and come back from them as strings.
    """

    PENDING = "Pending"
    RUNNING = "Running"
    CONTINUED_AS_NEW = "ContinuedAsNew"
    SUSPENDED = "Suspended"
    COMPLETED = "Completed"
    FAILED = "Failed"
    TERMINATED = "Terminated"
    CANCELED = "Canceled"
