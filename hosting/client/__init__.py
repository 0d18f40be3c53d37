"""The durable-client side: the binding (with its `rpcBaseUrl`), reading a session, the entity
query, the one submit service every front door uses, waiting for a run and its pacing, and a
run's outcome as one value."""

from ._archived import find_archived_run
from ._binding import BoundClient, DurableClient, durable_client_input, rpc_base_url
from ._outcome import (
    PENDING,
    Answerable,
    Awaiting,
    Busy,
    Conflict,
    Discarded,
    Finished,
    Full,
    Hidden,
    HistoryMissing,
    Pending,
    Refusal,
    RunOutcome,
    SameRequest,
    Unreadable,
    answered_id,
)
from ._owned import owned_sessions
from ._pacing import ReadPacer, read_pacer
from ._query import (
    ContinuationRefused,
    NoQueryEndpoint,
    entity_key,
    query_entities,
    query_instances,
)
from ._read import Snapshot, checked_state, read_session, state_problem
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
from ._waiting import snapshot_outcome, wait_for_run

__all__ = [
    "PENDING",
    "RUN_OPERATION",
    "Accepted",
    "Answerable",
    "Answered",
    "Awaiting",
    "BoundClient",
    "Busy",
    "Conflict",
    "ContinuationRefused",
    "Discarded",
    "DurableClient",
    "Finished",
    "Full",
    "Hidden",
    "HistoryMissing",
    "NoQueryEndpoint",
    "Pending",
    "Prepared",
    "ReadPacer",
    "Refusal",
    "Refused",
    "RunOutcome",
    "SameRequest",
    "Snapshot",
    "Submission",
    "Submitted",
    "Submitter",
    "Unreadable",
    "answered_id",
    "checked_state",
    "durable_client_input",
    "entity_key",
    "find_archived_run",
    "owned_sessions",
    "query_entities",
    "query_instances",
    "read_pacer",
    "read_session",
    "rpc_base_url",
    "session_entity",
    "snapshot_outcome",
    "state_problem",
    "wait_for_run",
]
