"""Orchestrations: the instance store, SDK replay, episodes, transitions and the work runner."""

from ._engine import TERMINAL_STATUSES, EntityRuntime, OrchestrationEngine
from ._runtime_status import RuntimeStatus

__all__ = ["TERMINAL_STATUSES", "EntityRuntime", "OrchestrationEngine", "RuntimeStatus"]
