"""The agent entity `dafx-{name}`: the operations (run, reset, delete, get, expire), the guarded
batch the worker calls, and the one adapter over the Durable SDK's entity context."""

from ._batch import guarded_batch
from ._context import EntityContext, Loaded
from ._deadline import TimeLimits
from ._entity import OPERATIONS, AgentEntity, RunDiscarded

__all__ = [
    "OPERATIONS",
    "AgentEntity",
    "EntityContext",
    "Loaded",
    "RunDiscarded",
    "TimeLimits",
    "guarded_batch",
]
