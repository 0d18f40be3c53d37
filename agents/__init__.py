"""Agents on the openai SDK: definitions, tools, context providers and one-turn execution.

See docs/agents.md. ``agents.testing`` holds the local OpenAI-compatible model server.
"""

from ._agent import Agent
from ._client import close_model_clients
from ._context import ContextAdditions, ContextProvider, ProviderContext
from ._errors import AgentConfigurationError, AgentsError, InvalidTurnRequest, ModelCallError
from ._memory import MemoryProvider
from ._reducer import HistoryReducer
from ._settings import HistoryMode, ModelSettings, RetryPolicy
from ._tools import FunctionTool, tool
from ._turns import InputMessage, TurnError, TurnRequest, TurnResult

__all__ = [
    "Agent",
    "AgentConfigurationError",
    "AgentsError",
    "ContextAdditions",
    "ContextProvider",
    "FunctionTool",
    "HistoryMode",
    "HistoryReducer",
    "InputMessage",
    "InvalidTurnRequest",
    "MemoryProvider",
    "ModelCallError",
    "ModelSettings",
    "ProviderContext",
    "RetryPolicy",
    "TurnError",
    "TurnRequest",
    "TurnResult",
    "close_model_clients",
    "tool",
]
