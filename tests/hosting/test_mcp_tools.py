"""Agents as MCP tools: which agents are exposed, the trigger bindings, and the tool function run
against the local host's durable backend (entities through the JSON batch protocol)."""

from __future__ import annotations

import json
from typing import Any

import azure.durable_functions as df
import pytest
from hosting_support import functions, make_agents, stored_state
from test_http_run import BROKEN, drained, plant_state

from agents import AgentConfigurationError, InputMessage, TurnRequest
from agents.testing import ModelServer, Reply
from hosting import ApiSettings, ProblemError, build_app
from hosting._errors import HostingConfigurationError
from hosting.lifecycle._names import sweeper_instance
from hosting.mcp import (
    MCP_TOOLS_ENV,
    MCP_WAIT_ENV,
    TRIGGER_TYPE,
    AgentTool,
    chosen_agents,
    parse_call,
    tool_spec,
)
from hosting.mcp._config import wait_seconds_from_env

OFFLINE_BINDING = json.dumps(
    {"taskHubName": "none", "creationUrls": {}, "managementUrls": {},
     "rpcBaseUrl": "http://127.0.0.1:9/runtime/webhooks/durabletask/"}
)


@pytest.fixture(autouse=True)
def no_app_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MCP_TOOLS_ENV, raising=False)
    monkeypatch.delenv(MCP_WAIT_ENV, raising=False)


@pytest.fixture(scope="module")
def mcp_app(model_server: ModelServer) -> df.DFApp:
    return build_app(make_agents(model_server), mcp_tools=True,
                     settings=ApiSettings(public_base_url="http://localhost:7071"))


@pytest.fixture
def app(mcp_app: df.DFApp, model: ModelServer) -> df.DFApp:
    """conftest's `host` serves this module's app: the test agents with their MCP tools."""
    return mcp_app


async def call(app: df.DFApp, agent: str, arguments: Any, binding: str) -> dict[str, Any]:
    """Invoke the tool function as the worker does; returns the MCP CallToolResult it produced."""
    tool = functions(app)[f"mcptool_{agent}"].get_user_function()
    context = json.dumps({"name": agent, "arguments": arguments, "sessionid": None})
    answer = json.loads(await tool(context=context, client=binding))
    assert answer["type"] == "call_tool_result"
    result: dict[str, Any] = json.loads(answer["content"])
    if answer["structuredContent"] is not None:
        assert json.loads(answer["structuredContent"]) == result["structuredContent"]
    return result


def test_agents_are_chosen_by_argument_or_app_setting(
    model_server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    agents = make_agents(model_server)
    names = lambda choice: [a.name for a in chosen_agents(agents, choice)]  # noqa: E731
    assert names(None) == [] and names(False) == []
    assert names(True) == ["assistant", "writer", "reviewer"]
    assert names(["Reviewer", "assistant"]) == ["assistant", "reviewer"]  # case-insensitive, app order
    with pytest.raises(AgentConfigurationError, match="mcp_tools names agents that are not hosted: nobody"):
        chosen_agents(agents, ["nobody"])
    settings: tuple[tuple[str, list[str]], ...] = (
        ("none", []), ("all", ["assistant", "writer", "reviewer"]), ("writer", ["writer"]),
        (" writer , reviewer ", ["writer", "reviewer"]), ("false", []),
    )
    for setting, expected in settings:
        monkeypatch.setenv(MCP_TOOLS_ENV, setting)
        assert names(True) == expected, setting  # the app setting wins over the argument
    monkeypatch.setenv(MCP_TOOLS_ENV, "assistant,ghost")
    with pytest.raises(AgentConfigurationError, match=MCP_TOOLS_ENV):
        build_app(agents)


def test_the_wait_setting_is_checked_at_startup(
    model_server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    agents = make_agents(model_server)
    for bad in ("soon", "0", "-5", "inf", "nan"):
        monkeypatch.setenv(MCP_WAIT_ENV, bad)
        with pytest.raises(HostingConfigurationError, match=MCP_WAIT_ENV):
            build_app(agents, mcp_tools=True)
    monkeypatch.setenv(MCP_WAIT_ENV, "12.5")
    assert "mcptool_writer" in functions(build_app(agents, mcp_tools=["writer"]))


def test_the_default_wait_ends_before_azures_front_end_gives_up(monkeypatch: pytest.MonkeyPatch) -> None:
    # Azure's front end ends an HTTP request unanswered after 230 s; the tool call (an HTTP request
    # to the MCP extension's webhook) needs room after its wait for the answer itself.
    assert wait_seconds_from_env() <= 230 - 20
    monkeypatch.setenv(MCP_WAIT_ENV, "220")
    assert wait_seconds_from_env() == 220


def test_a_wait_past_the_front_end_limit_is_refused_naming_it(
    model_server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for longer in ("230", "300", "3600"):
        monkeypatch.setenv(MCP_WAIT_ENV, longer)
        with pytest.raises(HostingConfigurationError) as refused:
            build_app(make_agents(model_server), mcp_tools=True)
        message = str(refused.value)
        assert MCP_WAIT_ENV in message and "220" in message and "230 s" in message, message


def test_each_chosen_agent_gets_a_tool_trigger(mcp_app: df.DFApp, model_server: ModelServer) -> None:
    bindings = [json.loads(b) for b in functions(mcp_app)["mcptool_reviewer"].get_raw_bindings()]
    trigger = next(b for b in bindings if b["type"] == TRIGGER_TYPE)
    assert trigger["toolName"] == "reviewer" and trigger["name"] == "context"
    assert trigger["useResultSchema"] is True and trigger["dataType"] == "STRING"
    properties = json.loads(trigger["toolProperties"])
    assert [(p["propertyName"], p["propertyType"], p["isRequired"]) for p in properties] == [
        ("query", "string", True), ("session_id", "string", False), ("user_id", "string", False)
    ]
    assert any(b["type"] == "durableClient" for b in bindings)
    without = build_app(make_agents(model_server))
    assert not [n for n in functions(without) if n.startswith("mcptool_")]


def test_arguments_are_validated_before_anything_runs() -> None:
    fresh = parse_call(json.dumps({"arguments": {"query": "hi", "session_id": ""}}))
    assert fresh.new_session and len(fresh.session_id) == 32
    assert fresh.request.messages[0].text == "hi"
    kept = parse_call({"arguments": {"query": "hi", "session_id": "s-1"}})
    assert kept.session_id == "s-1" and not kept.new_session
    assert parse_call({"arguments": {"query": "a"}}).request.correlation_id != kept.request.correlation_id
    for context, code in (
        ("not json", "invalid_json"),
        ([], "invalid_type"),
        ({"arguments": []}, "invalid_type"),
        ({"arguments": {}}, "missing_field"),
        ({"arguments": {"query": 7}}, "invalid_type"),
        ({"arguments": {"query": " \n"}}, "empty_message"),
        ({"arguments": {"query": "x" * 70_000}}, "invalid_field"),
        ({"arguments": {"query": "a\ud800b"}}, "invalid_encoding"),
        ({"arguments": {"query": "hi", "session_id": ".."}}, "invalid_session_id"),
        ({"arguments": {"query": "hi", "session_id": 5}}, "invalid_type"),
    ):
        with pytest.raises(ProblemError) as refused:
            parse_call(context)
        assert refused.value.code == code, context


async def test_a_call_is_an_ordinary_run_of_the_session(
    mcp_app: df.DFApp, host: Any, model: ModelServer
) -> None:
    model.script(Reply.text("First."), Reply.text("Second."))
    binding = host.client_binding()
    first = await call(mcp_app, "assistant", {"query": "one"}, binding)
    assert first["isError"] is False
    assert first["content"][0]["text"] == "First."
    session_id = first["structuredContent"]["session_id"]
    second = await call(mcp_app, "assistant", {"query": "two", "session_id": session_id}, binding)
    assert second["structuredContent"]["text"] == "Second."
    stored = json.loads(await stored_state(host, "assistant", session_id))
    runs = stored["data"]["runs"]
    ids = {first["structuredContent"]["correlation_id"], second["structuredContent"]["correlation_id"]}
    assert set(runs) == ids
    assert len(stored["data"]["conversationHistory"]) == 4
    # The first turn's operation delivered again (as Durable may redeliver a signal): answered from
    # the history, nothing runs twice.
    again = TurnRequest(
        correlation_id=first["structuredContent"]["correlation_id"], messages=[InputMessage("user", "one")]
    )
    client = df.DurableOrchestrationClient(binding)
    await client.signal_entity(df.EntityId("dafx-assistant", session_id), "run", again.to_json())
    await drained(host, "assistant", session_id)
    after = json.loads(await stored_state(host, "assistant", session_id))
    assert after == stored  # byte for byte the same document: the redelivery changed nothing
    assert len(model.requests) == 2


async def test_failures_are_error_results(mcp_app: df.DFApp, host: Any, model: ModelServer) -> None:
    model.script(Reply.error(429, "slow down"))
    failed = await call(mcp_app, "assistant", {"query": "hi"}, host.client_binding())
    assert failed["isError"] is True and failed["structuredContent"]["status"] == "failed"
    assert "slow down" in failed["content"][0]["text"]
    await plant_state(host, "assistant", "future", BROKEN)
    arguments = {"query": "hi", "session_id": "future"}
    unreadable = await call(mcp_app, "assistant", arguments, host.client_binding())
    assert unreadable["isError"] and unreadable["structuredContent"]["code"] == "state_unreadable"
    assert await stored_state(host, "assistant", "future") == BROKEN
    assert len(model.requests) == 1


async def test_an_unreachable_backend_is_an_error_result(mcp_app: df.DFApp, model: ModelServer) -> None:
    result = await call(mcp_app, "writer", {"query": "hi"}, OFFLINE_BINDING)
    assert result["isError"] and result["structuredContent"]["code"] == "storage_unavailable"
    assert model.requests == []


async def test_a_turn_longer_than_the_wait_answers_pending(
    host: Any, model: ModelServer, model_server: ModelServer
) -> None:
    model.script(Reply.delay(1.5, Reply.text("Late answer.")))
    agent = make_agents(model_server)[0]
    tool = AgentTool(agent, tool_spec(agent), wait_seconds=0.2)
    client = df.DurableOrchestrationClient(host.client_binding())
    answer = json.loads(await tool(json.dumps({"arguments": {"query": "slow"}}), client))
    result = json.loads(answer["content"])
    structured = result["structuredContent"]
    assert result["isError"] and structured["status"] == "pending"
    assert structured["session_id"] in result["content"][0]["text"]
    # The turn goes on and is stored under the ids the answer gave.
    await drained(host, "assistant", structured["session_id"])
    stored = json.loads(await stored_state(host, "assistant", structured["session_id"]))
    assert stored["data"]["runs"][structured["correlation_id"]]["status"] == "succeeded"


async def test_a_call_that_creates_a_session_starts_the_expiry_sweepers(
    mcp_app: df.DFApp, host: Any, model: ModelServer
) -> None:
    # An app reached only through MCP must expire its sessions too: the tool's first call on a new
    # session makes sure the agents' sweepers run, as `POST .../run` does.
    model.script(Reply.text("Hi."))
    binding = host.client_binding()
    client = df.DurableOrchestrationClient(binding)
    before = await client.get_status(sweeper_instance("assistant"))
    assert before.runtime_status is None  # a fresh host: no sweeper yet
    answer = await call(mcp_app, "assistant", {"query": "hi"}, binding)
    assert answer["isError"] is False
    status = await client.get_status(sweeper_instance("assistant"))
    started = (df.OrchestrationRuntimeStatus.Running, df.OrchestrationRuntimeStatus.Pending)
    assert status.runtime_status in started
