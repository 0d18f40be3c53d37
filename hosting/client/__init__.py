"""The durable-client side: the binding (with its `rpcBaseUrl`), reading a session, the entity
query, the one submit service every front door uses, waiting for a run and its pacing, and a
run's outcome as one value."""

from ._archived import find_archived_run
from ._binding import BoundClient, DurableClient, durable_client_input, rpc_base_url
from ._outcome import PENDING, RunOutcome, SameRequest
from ._query import (
    ContinuationRefused,
    NoQueryEndpoint,
    entity_key,
    query_entities,
    query_instances,
)
from ._read import Snapshot, read_session, state_problem
from ._submit import (
    RUN_OPERATION,
    Accepted,
    Answered,
    Prepared,
    Refused,
    Submission,
    Submitted,
    Submitter,
    session_entity,
)
from ._waiting import wait_for_run

__all__ = [
    "PENDING",
    "RUN_OPERATION",
    "Accepted",
    "Answered",
    "BoundClient",
    "ContinuationRefused",
    "DurableClient",
    "NoQueryEndpoint",
    "Prepared",
    "Refused",
    "RunOutcome",
    "SameRequest",
    "Snapshot",
    "Submission",
    "Submitted",
    "Submitter",
    "durable_client_input",
    "entity_key",
    "find_archived_run",
    "query_entities",
    "query_instances",
    "read_session",
    "rpc_base_url",
    "session_entity",
    "state_problem",
    "wait_for_run",
]
