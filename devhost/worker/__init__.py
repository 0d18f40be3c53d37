"""The Python worker side of the Functions host: processes that load the app with the real runtime."""

from . import _invoke as invocation
from ._invoke import FunctionFailed
from ._messages import InvocationRequest, InvocationResponse, RpcFunctionMetadata, TypedData
from ._pool import (
    PROCESS_COUNT_ENV,
    FunctionTimedOut,
    InProcessWorker,
    ProcessWorker,
    WorkerDied,
    WorkerGroup,
    WorkerSpec,
    process_count,
    script_spec,
)
from ._runtime import list_functions
from ._topology import TOPOLOGY_ENV, Group, Topology, group_for, groups_of, topology_from
from ._workers import INIT_INDEXING_ENV, Workers

__all__ = [
    "INIT_INDEXING_ENV",
    "PROCESS_COUNT_ENV",
    "TOPOLOGY_ENV",
    "FunctionFailed",
    "FunctionTimedOut",
    "Group",
    "InProcessWorker",
    "InvocationRequest",
    "InvocationResponse",
    "ProcessWorker",
    "RpcFunctionMetadata",
    "Topology",
    "TypedData",
    "WorkerDied",
    "WorkerGroup",
    "WorkerSpec",
    "Workers",
    "group_for",
    "groups_of",
    "invocation",
    "list_functions",
    "process_count",
    "script_spec",
    "topology_from",
]
