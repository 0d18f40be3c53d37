"""The agents package's public names: the contract of docs/architecture.md, pinned."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import agents

EXPECTED = {
    "DEFAULT_CONTEXT_TOKENS",
    "ArchivedHistory",
    "ContextPolicy",
    "FullHistory",
    "TokenBudget",
    "ToolCall",
    "Agent",
    "AgentConfigurationError",
    "AgentsError",
    "ContextAdditions",
    "ContextProvider",
    "Embedder",
    "EmbeddingError",
    "FailureCarrier",
    "FailureCode",
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
    "ProviderContext",
    "RetryPolicy",
    "SamplingSettings",
    "TurnRequest",
    "TurnEvent",
    "TurnEventSink",
    "TurnEventType",
    "TurnResult",
    "close_model_clients",
    "preload_model_sdk",
    "context_from",
    "current_tool_call",
    "current_trace_context",
    "embedder_from_env",
    "failure",
    "mark_failed",
    "mark_raised",
    "retry_while_locked",
    "tool",
    "now_iso",
    "tracing_enabled",
    "turn_result",
    "TurnProgress",
    "AwaitingApproval",
    "PendingCall",
    "PerLoop",
    "ToolDecision",
    "EndReason",
    "SessionEnd",
    "StorageConnection",
    "ended_session",
    "run_session_ended",
    "wants_session_end",
    "MCPServer",
    "EntraToken",
    "ToolSource",
}


def test_all_is_pinned() -> None:
    assert set(agents.__all__) == EXPECTED
    assert len(agents.__all__) == len(EXPECTED)


def test_every_public_name_resolves_and_is_documented() -> None:
    for name in agents.__all__:
        value = getattr(agents, name)
        if name not in ("HistoryMode", "EndReason"):  # typing aliases
            assert value.__doc__, name


def test_error_hierarchy() -> None:
    for error in (agents.AgentConfigurationError, agents.ModelCallError, agents.InvalidTurnRequest):
        assert issubclass(error, agents.AgentsError)
    err = agents.ModelCallError("rate_limited", "slow down", retryable=True, status=429)
    assert (err.code, err.message, err.retryable, err.status) == ("rate_limited", "slow down", True, 429)


def test_the_model_server_loads_without_the_agent_runtime() -> None:
    """`make run`'s startup hook runs in the host before any worker starts: importing it brings
    neither the agent runtime nor the model server's own libraries, and the app's `agents` loads
    the openai SDK only when asked (`preload_model_sdk`, or a model call)."""
    code = (
        "import sys\n"
        "from agents.testing import start_offline_model_if_unconfigured\n"
        "heavy = ('openai', 'aiohttp', 'pydantic', 'jsonschema', 'agents._agent')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "import agents\n"
        "agents.Agent\n"
        "print('openai' in sys.modules, agents.Agent.__module__)\n"
        "agents.preload_model_sdk().join()\n"
        "print('openai' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=pathlib.Path(__file__).resolve().parents[2]).stdout.split("\n")
    assert out[:3] == ["[]", "False agents._agent", "True"]
