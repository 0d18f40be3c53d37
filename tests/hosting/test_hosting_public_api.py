"""The public surface of `hosting`, and what `build_app` refuses at startup."""

from __future__ import annotations

import azure.durable_functions as df
import pytest
from hosting_support import all_functions

import hosting
from agents import Agent, AgentConfigurationError, ModelSettings
from agents.testing import ModelServer
from hosting import build_app


def test_all_is_pinned() -> None:
    assert sorted(hosting.__all__) == [
        "AgentEntity",
        "AgentHandle",
        "AgentRunFailed",
        "ApiSettings",
        "BAD_REQUEST",
        "ENTITY_PREFIX",
        "Extension",
        "Handler",
        "HostingError",
        "InvalidOperation",
        "MAX_BODY_BYTES",
        "OPERATIONS",
        "Operation",
        "PROBLEMS",
        "Param",
        "Problem",
        "ProblemCode",
        "ProblemError",
        "RouteResponse",
        "RouteSpec",
        "RunConflict",
        "RunRequestBody",
        "RunResultBody",
        "UNAVAILABLE",
        "WholeNumber",
        "build_app",
        "check_id",
        "configure_telemetry",
        "entity_name",
        "get_agent",
        "json_response",
        "openapi_document",
        "parse_body",
        "with_trace_context",
    ]
    for name in hosting.__all__:
        assert getattr(hosting, name) is not None


def test_mcp_subpackage_is_pinned() -> None:
    import hosting.mcp

    assert sorted(hosting.mcp.__all__) == [
        "AgentTool",
        "MCP_TOOLS_ENV",
        "MCP_WAIT_ENV",
        "McpTools",
        "TRIGGER_TYPE",
        "ToolCall",
        "ToolSpec",
        "chosen_agents",
        "parse_call",
        "register_mcp_tools",
        "tool_spec",
    ]
    for name in hosting.mcp.__all__:
        assert getattr(hosting.mcp, name) is not None


def test_errors_share_one_base() -> None:
    for error in (
        hosting.AgentRunFailed,
        hosting.InvalidOperation,
        hosting.ProblemError,
        hosting.RunConflict,
    ):
        assert issubclass(error, hosting.HostingError)


def _names(app: df.DFApp) -> set[str]:
    return {f.get_function_name() for f in all_functions(app)}


def test_bad_agent_sets_fail_at_build_time(model_server: ModelServer) -> None:
    settings = ModelSettings(model="m", base_url=model_server.base_url)
    with pytest.raises(AgentConfigurationError, match="at least one"):
        build_app([])
    with pytest.raises(AgentConfigurationError, match="case-insensitive"):
        build_app([Agent(name="echo", model=settings), Agent(name="Echo", model=settings)])
    with pytest.raises(AgentConfigurationError, match="cannot be hosted"):
        build_app([Agent(name="9lives", model=settings)])


def test_an_agent_without_a_model_fails_at_startup(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OPENAI_CHAT_MODEL_ID",
        "AZURE_OPENAI_CHAT_DEPLOYMENT_NAME",
        "OPENAI_BASE_URL",
        "AZURE_OPENAI_ENDPOINT",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(AgentConfigurationError):
        build_app([Agent(name="lost")])


def test_function_app_module_builds_the_catalogue(
    monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    import importlib
    import sys

    monkeypatch.setenv("OPENAI_BASE_URL", model_server.base_url)
    monkeypatch.setenv("OPENAI_CHAT_MODEL_ID", "test-model")
    sys.modules.pop("function_app", None)
    module = importlib.import_module("function_app")
    try:
        names = _names(module.app)
        assert {"dafx-assistant", "dafx-writer", "dafx-reviewer", "agent_run", "review_workflow"} <= names
    finally:
        sys.modules.pop("function_app", None)


def test_archive_subpackage_all_is_pinned() -> None:
    import hosting.archive

    assert sorted(hosting.archive.__all__) == [
        "AzureBlobChunkStore",
        "CURSOR_PATTERN",
        "ChunkStore",
        "Cursor",
        "FileChunkStore",
        "HistoryArchive",
        "Page",
        "SessionHistory",
        "archived_chunks",
        "archived_run",
        "chunk_path",
        "default_archive",
        "epoch_prefix",
        "history_page",
        "policy_from_env",
        "session_prefix",
        "store_from_env",
    ]
