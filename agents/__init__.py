"""Agents on the openai SDK: definitions, tools, context providers and one-turn execution.

See docs/agents.md. ``agents.testing`` holds the local OpenAI-compatible model server.

The names below load on first use (PEP 562): ``agents.testing`` (the local model server, which
``make run``'s startup hook imports in the host process before any worker starts) needs none of
the agent runtime, and importing it (the openai SDK's types the most) would put well over a
second on every start's critical path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_names

if TYPE_CHECKING:
    from ._agent import Agent
    from ._approvals import AwaitingApproval, PendingCall, ToolDecision
    from ._client import close_model_clients, preload_model_sdk
    from ._clock import now_iso
    from ._context import ContextAdditions, ContextProvider, EndReason, ProviderContext, SessionEnd
    from ._context_policy import (
        DEFAULT_CONTEXT_TOKENS,
        ArchivedHistory,
        ContextPolicy,
        FullHistory,
        TokenBudget,
    )
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
    from ._per_loop import PerLoop
    from ._reducer import HistoryReducer
    from ._session_end import ended_session, run_session_ended, wants_session_end
    from ._settings import (
        HistoryMode,
        ModelConnection,
        ModelEnv,
        ModelSettings,
        RetryPolicy,
        SamplingSettings,
    )
    from ._sqlite import retry_while_locked
    from ._steps import TurnProgress
    from ._storage import StorageConnection
    from ._telemetry import mark_failed, mark_raised, tracing_enabled
    from ._tool_call import ToolCall, current_tool_call
    from ._tools import FunctionTool, ToolSource, tool
    from ._trace_context import context_from, current_trace_context
    from ._turns import InputMessage, TurnRequest, TurnResult, turn_result
    from .mcp import EntraToken, MCPServer

_WHERE = {
    "Agent": "._agent",
    "AgentConfigurationError": "._errors",
    "AgentsError": "._errors",
    "ArchivedHistory": "._context_policy",
    "AwaitingApproval": "._approvals",
    "ContextAdditions": "._context",
    "ContextPolicy": "._context_policy",
    "ContextProvider": "._context",
    "DEFAULT_CONTEXT_TOKENS": "._context_policy",
    "Embedder": "._embeddings",
    "EmbeddingError": "._embeddings",
    "EndReason": "._context",
    "EntraToken": ".mcp",
    "FailureCarrier": "._errors",
    "FailureCode": "._errors",
    "FullHistory": "._context_policy",
    "FunctionTool": "._tools",
    "HistoryMode": "._settings",
    "HistoryReducer": "._reducer",
    "InputMessage": "._turns",
    "InvalidTurnRequest": "._errors",
    "MCPServer": ".mcp",
    "MemoryProvider": "._memory",
    "ModelCallError": "._errors",
    "ModelConnection": "._settings",
    "ModelEnv": "._settings",
    "ModelSettings": "._settings",
    "OpenAIEmbedder": "._embeddings",
    "PendingCall": "._approvals",
    "PerLoop": "._per_loop",
    "ProviderContext": "._context",
    "RetryPolicy": "._settings",
    "SamplingSettings": "._settings",
    "SessionEnd": "._context",
    "StorageConnection": "._storage",
    "TokenBudget": "._context_policy",
    "ToolCall": "._tool_call",
    "ToolDecision": "._approvals",
    "ToolSource": "._tools",
    "TurnEvent": "._events",
    "TurnEventSink": "._events",
    "TurnEventType": "._events",
    "TurnProgress": "._steps",
    "TurnRequest": "._turns",
    "TurnResult": "._turns",
    "close_model_clients": "._client",
    "preload_model_sdk": "._client",
    "context_from": "._trace_context",
    "current_tool_call": "._tool_call",
    "current_trace_context": "._trace_context",
    "embedder_from_env": "._embeddings",
    "ended_session": "._session_end",
    "failure": "._errors",
    "mark_failed": "._telemetry",
    "mark_raised": "._telemetry",
    "now_iso": "._clock",
    "retry_while_locked": "._sqlite",
    "run_session_ended": "._session_end",
    "tool": "._tools",
    "tracing_enabled": "._telemetry",
    "turn_result": "._turns",
    "wants_session_end": "._session_end",
}

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
    "EntraToken",
    "FailureCarrier",
    "FailureCode",
    "FullHistory",
    "FunctionTool",
    "HistoryMode",
    "HistoryReducer",
    "InputMessage",
    "InvalidTurnRequest",
    "MCPServer",
    "MemoryProvider",
    "ModelCallError",
    "ModelConnection",
    "ModelEnv",
    "ModelSettings",
    "OpenAIEmbedder",
    "PendingCall",
    "PerLoop",
    "ProviderContext",
    "RetryPolicy",
    "SamplingSettings",
    "SessionEnd",
    "StorageConnection",
    "TokenBudget",
    "ToolCall",
    "ToolDecision",
    "ToolSource",
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
    "now_iso",
    "preload_model_sdk",
    "retry_while_locked",
    "run_session_ended",
    "tool",
    "tracing_enabled",
    "turn_result",
    "wants_session_end",
]


__getattr__ = lazy_names(__name__, _WHERE, globals())
