"""The example agents work against the offline model server (what `make run` uses with no key)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agents import InputMessage, TurnRequest
from agents.testing import ModelServer
from examples.catalog import AGENTS, assistant, concierge, get_time, get_weather, reviewer, writer
from examples.review import Review
from state import AgentState, dump_state, load_state


@pytest.fixture(scope="module")
def offline() -> Iterator[ModelServer]:
    with ModelServer(mode="offline") as server:
        yield server


@pytest.fixture
def offline_env(offline: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", offline.base_url)
    monkeypatch.setenv("OPENAI_CHAT_MODEL_ID", "offline")


def ask(cid: str, text: str) -> TurnRequest:
    return TurnRequest(correlation_id=cid, messages=[InputMessage("user", text)])


@pytest.mark.usefixtures("offline_env")
async def test_every_catalog_agent_answers_offline() -> None:
    for agent in AGENTS:
        agent.validate()
        result = await agent.run(AgentState.new(), ask("c1", "Hello there"))
        assert result.status == "succeeded", (agent.name, result.error)
        assert result.text


@pytest.mark.usefixtures("offline_env")
async def test_concierge_tools_and_memory_offline() -> None:
    state = AgentState.new()
    weather = await concierge.run(state, ask("c1", 'call:get_weather {"city": "Lisbon"}'))
    assert "Lisbon" in weather.text
    await concierge.run(state, ask("c2", 'call:remember {"fact": "prefers window seats"}'))
    state = load_state(dump_state(state))
    assert state.state_bag["memory"]["facts"] == [{"id": "m1", "text": "prefers window seats"}]
    recalled = await concierge.run(state, ask("c3", 'call:recall {"query": "seats"}'))
    assert "prefers window seats" in recalled.text


@pytest.mark.usefixtures("offline_env")
async def test_writer_and_reviewer_offline() -> None:
    draft = await writer.run(AgentState.new(), ask("c1", "Write a slogan for lamps"))
    assert draft.status == "succeeded"
    verdict = await reviewer.run(AgentState.new(), ask("c1", f"Review this draft: {draft.text}"))
    assert verdict.status == "succeeded"
    assert Review.model_validate(verdict.structured)
    assert assistant.format is None


def test_demo_tools() -> None:
    paris = get_weather("Paris")
    assert paris == get_weather(" paris ") | {"city": "Paris"}  # deterministic per city
    assert get_weather("Paris", unit="fahrenheit")["unit"] == "fahrenheit"
    assert get_time("UTC").endswith("+00:00")
    with pytest.raises(ValueError, match="unknown time zone"):
        get_time("Mars/Olympus")
