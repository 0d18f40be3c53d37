"""The MCP example: `make run`'s startup hook starts the example MCP server and names it in the
app setting, and `timekeeper` calls its tools through the scripted model."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from agents import Agent, InputMessage, ModelSettings, TurnRequest
from agents.mcp import forget_listings
from agents.testing import ModelServer, Reply
from examples.local_services import URL_SETTING, start_local_services
from examples.mcp_tools import mcp_example_agents, timekeeper
from state import AgentState


@pytest.fixture
def local_server(monkeypatch: pytest.MonkeyPatch, model: ModelServer) -> Iterator[str]:
    monkeypatch.delenv(URL_SETTING, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)  # a model is configured: no offline one
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    services = start_local_services()
    forget_listings()
    try:
        yield os.environ[URL_SETTING]
    finally:
        services.stop()
        monkeypatch.delenv(URL_SETTING, raising=False)
        forget_listings()


def test_timekeeper_is_hosted_only_once_its_server_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(URL_SETTING, raising=False)
    assert mcp_example_agents() == []
    monkeypatch.setenv(URL_SETTING, "http://127.0.0.1:1/mcp")
    assert mcp_example_agents() == [timekeeper]


async def test_timekeeper_calls_the_example_servers_clock(local_server: str, model: ModelServer) -> None:
    # The example's agent and server, on the scripted model.
    settings = ModelSettings(model="test-model", base_url=model.base_url, timeout=5.0)
    agent = Agent(
        name="timekeeper",
        instructions=timekeeper.instructions,
        model=settings,
        tools=list(timekeeper.mcp_servers),
    )
    model.script(Reply.tool_call("current_time", {"timezone": "Asia/Tokyo"}), Reply.text("It is morning."))
    request = TurnRequest(correlation_id="tk-1", messages=[InputMessage("user", "what time is it in Tokyo?")])
    result = await agent.run(AgentState(), request)
    assert result.status == "succeeded" and result.text == "It is morning."
    assert set(model.requests[0].tool_names) == {"current_time", "set_reminder"}
    [answer] = [m.text for m in model.requests[1].messages if m.role == "tool"]
    assert json.loads(answer)["result"].endswith("+09:00")
