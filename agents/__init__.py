"""Agents on the openai SDK: definitions, tools, context providers and one-turn execution.

See docs/agents.md. ``agents.testing`` holds the local OpenAI-compatible model server.
"""

from ._agent import Agent
from ._approvals import AwaitingApproval, PendingCall, ToolDecision
from ._client import close_model_clients
from ._context import ContextAdditions, ContextProvider, EndReason, ProviderContext, SessionEnd
from ._context_policy import DEFAULT_CONTEXT_TOKENS, ArchivedHistory, ContextPolicy, FullHistory, TokenBudget
from ._embeddings import Embedder, EmbeddingError, OpenAIEmbedder, embedder_from_env
from ._errors import (
    AgentConfigurationError,
    AgentsError,
    FailureCarrier,
    FailureCode,
    InvalidTurnRequest,
    ModelCallError,
    failure,
)
from ._events import TurnEvent, TurnEventSink, TurnEventType
from ._memory import MemoryProvider
from ._reducer import HistoryReducer
from ._session_end import ended_session, run_session_ended, wants_session_end
from ._settings import HistoryMode, ModelConnection, ModelEnv, ModelSettings, RetryPolicy, SamplingSettings
from ._sqlite import retry_while_locked
from ._steps import TurnProgress
from ._telemetry import mark_failed, mark_raised, tracing_enabled
from ._tool_call import ToolCall, current_tool_call
from ._tools import FunctionTool, tool
from ._trace_context import context_from, current_trace_context
from ._turns import InputMessage, TurnRequest, TurnResult, turn_result

__all__ = [
    "DEFAULT_CONTEXT_TOKENS",
    "Agent",
    "AgentConfigurationError",
    "AgentsError",
    "ArchivedHistory",
    "AwaitingApproval",
    "ContextAdditions",
    "ContextPolicy",
    "ContextProvider",
    "Embedder",
    "EmbeddingError",
    "EndReason",
    "FailureCarrier",
    "FailureCode",
    "FullHistory",
    "FunctionTool",
    "HistoryMode",
    "HistoryReducer",
    "InputMessage",
    "InvalidTurnRequest",
    "MemoryProvider",
    "ModelCallError",
    "ModelConnection",
    "ModelEnv",
    "ModelSettings",
    "OpenAIEmbedder",
    "PendingCall",
    "ProviderContext",
    "RetryPolicy",
    "SamplingSettings",
    "SessionEnd",
    "TokenBudget",
    "ToolCall",
    "ToolDecision",
    "TurnEvent",
    "TurnEventSink",
    "TurnEventType",
    "TurnProgress",
    "TurnRequest",
    "TurnResult",
    "close_model_clients",
    "context_from",
    "current_tool_call",
    "current_trace_context",
    "embedder_from_env",
    "ended_session",
    "failure",
    "mark_failed",
    "mark_raised",
    "retry_while_locked",
    "run_session_ended",
    "tool",
    "tracing_enabled",
    "turn_result",
    "wants_session_end",
]
