"""Live, resumable event streams of durable turns (SSE), on a stream store (Redis or SQLite).

See docs/streaming.md. The entity publishes a run's events (`RunEvents`); HTTP readers replay and
follow them (`hosting.http.RunStreams`); `stream_store_from_env()` picks the backend from the
settings.
"""

from typing import TYPE_CHECKING, Any

from ._admission import Admission, Dispatch, claim_identity, claimed_user, latest_run, start_run
from ._events_doc import EVENT_STREAM, event_stream_content
from ._publisher import RunCancelled, RunEvents
from ._settings import (
    PATH_ENV,
    REDIS_CLUSTER_ENV,
    REDIS_ENTRA_ENV,
    REDIS_ENV,
    default_stream_path,
    stream_store,
    stream_store_from_env,
)
from ._sqlite import SqliteStreamStore
from ._store import (
    APPROVAL_REQUIRED,
    DEFAULT_RETENTION_SECONDS,
    RETENTION_ENV,
    RUN_CANCELLED,
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_RESTARTED,
    RUN_STARTED,
    STEP_STARTED,
    TERMINAL_TYPES,
    RunClaim,
    StreamConflict,
    StreamEvent,
    StreamKey,
    StreamStore,
    StreamStoreUnavailable,
    retention_from_env,
)
from ._watch import terminal_watch

if TYPE_CHECKING:
    from ._entra import EntraIdCredentials

__all__ = [
    "APPROVAL_REQUIRED",
    "DEFAULT_RETENTION_SECONDS",
    "EVENT_STREAM",
    "PATH_ENV",
    "REDIS_CLUSTER_ENV",
    "REDIS_ENTRA_ENV",
    "REDIS_ENV",
    "RETENTION_ENV",
    "RUN_CANCELLED",
    "RUN_COMPLETED",
    "RUN_FAILED",
    "RUN_RESTARTED",
    "RUN_STARTED",
    "STEP_STARTED",
    "TERMINAL_TYPES",
    "Admission",
    "Dispatch",
    "EntraIdCredentials",
    "RunCancelled",
    "RunClaim",
    "RunEvents",
    "SqliteStreamStore",
    "StreamConflict",
    "StreamEvent",
    "StreamKey",
    "StreamStore",
    "StreamStoreUnavailable",
    "claim_identity",
    "claimed_user",
    "default_stream_path",
    "event_stream_content",
    "latest_run",
    "retention_from_env",
    "start_run",
    "stream_store",
    "stream_store_from_env",
    "terminal_watch",
]


def __getattr__(name: str) -> Any:
    # Loaded on first use: it imports redis-py, which an app without Redis never needs.
    if name == "EntraIdCredentials":
        from ._entra import EntraIdCredentials

        return EntraIdCredentials
    raise AttributeError(f"module 'hosting.streams' has no attribute {name!r}")
