"""Durable agent state: the versioned JSON each agent session is stored as.

See docs/state.md for the format, our 1.2.0 additions and the version policy.
"""

from ._errors import IncompatibleStateVersion, InvalidState, StateError
from ._models import (
    JSON,
    AgentRequest,
    AgentResponse,
    ChatMessage,
    Content,
    DataContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    HostedVectorStoreContent,
    OpaqueContent,
    ReasoningContent,
    TextContent,
    TurnFailure,
    UnknownContent,
    UriContent,
    Usage,
    UsageContent,
)
from ._state import (
    AgentState,
    RunRecord,
    check_root,
    check_state,
    dump_state,
    load_state,
    request_hash,
    response_failed,
)
from ._versions import CHANGELOG, CURRENT_SCHEMA_VERSION

__all__ = [
    "CHANGELOG",
    "CURRENT_SCHEMA_VERSION",
    "JSON",
    "AgentRequest",
    "AgentResponse",
    "AgentState",
    "ChatMessage",
    "Content",
    "DataContent",
    "ErrorContent",
    "FunctionCallContent",
    "FunctionResultContent",
    "HostedFileContent",
    "HostedVectorStoreContent",
    "IncompatibleStateVersion",
    "InvalidState",
    "OpaqueContent",
    "ReasoningContent",
    "RunRecord",
    "StateError",
    "TextContent",
    "TurnFailure",
    "UnknownContent",
    "UriContent",
    "Usage",
    "UsageContent",
    "check_root",
    "check_state",
    "dump_state",
    "load_state",
    "request_hash",
    "response_failed",
]
