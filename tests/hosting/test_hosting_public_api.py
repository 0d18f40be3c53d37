"""The public surface of `hosting`, and what `build_app` refuses at startup."""

from __future__ import annotations

import azure.durable_functions as df
import pytest
from hosting_support import all_functions, make_agents

import hosting
from agents import Agent, AgentConfigurationError, ModelSettings
from agents.testing import ModelServer
from hosting import ReviewWorkflow, build_app


def test_all_is_pinned() -> None:
    assert sorted(hosting.__all__) == [
        "APPROVAL_EVENT",
        "AgentEntity",
        "AgentHandle",
        "AgentRunFailed",
        "ApiSettings",
        "ENTITY_PREFIX",
        "HostingError",
        "InvalidOperation",
        "MAX_BODY_BYTES",
        "OPERATIONS",
        "Problem",
        "ProblemError",
        "REVIEW_SCHEMA",
        "ReviewWorkflow",
        "RunConflict",
        "RunRequestBody",
        "RunResultBody",
        "WORKFLOW_NAME",
        "build_app",
        "entity_name",
        "get_agent",
        "openapi_document",
    ]
    for name in hosting.__all__:
        assert getattr(hosting, name) is not None


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


def test_workflow_is_registered_only_with_a_writer_and_a_reviewer(model_server: ModelServer) -> None:
    agents = make_agents(model_server)
    assert "review_workflow" in _names(build_app(agents))
    only_assistant = build_app(agents[:1])
    assert "review_workflow" not in _names(only_assistant)
    assert not any(n.startswith("workflow_") for n in _names(only_assistant))
    assert "review_workflow" not in _names(build_app(agents, review_workflow=False))
    with pytest.raises(AgentConfigurationError, match="writer"):
        build_app(agents[:1], review_workflow=True)
    with pytest.raises(AgentConfigurationError, match="critic"):
        build_app(agents, review_workflow=ReviewWorkflow(writer="writer", reviewer="critic"))


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
        "BlobConnection",
        "CRASH_ENV",
        "CURSOR_PATTERN",
        "ChunkStore",
        "Cursor",
        "FileChunkStore",
        "HistoryArchive",
        "Page",
        "SessionHistory",
        "archived_run",
        "chunk_path",
        "counts",
        "default_archive",
        "epoch_prefix",
        "history_page",
        "policy_from_env",
        "session_prefix",
        "state_archive",
        "store_from_env",
    ]
