"""Typed provider state: each provider's `state_model` validates what it loads from the state bag;
stored state that does not fit fails the turn as `provider_error` naming the provider, is never
replaced, and a turn that fails changes no provider state."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from agents import (
    Agent,
    ContextAdditions,
    ContextProvider,
    HistoryReducer,
    InputMessage,
    MemoryProvider,
    ModelSettings,
    ProviderContext,
    TurnRequest,
)
from agents._memory import MemoryState
from agents._reducer import ReducerState
from agents.testing import ModelServer, Reply
from state import AgentState, dump_state, load_state


def ask(cid: str, text: str = "hi") -> TurnRequest:
    return TurnRequest(correlation_id=cid, messages=[InputMessage("user", text)])


class Visits(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    count: int = Field(default=0, ge=0)
    last_seen: str | None = Field(default=None, alias="lastSeen")


class VisitCounter(ContextProvider):
    source_id = "visits"
    state_model = Visits

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Any] = []

    async def before_model(self, context: ProviderContext) -> ContextAdditions | None:
        self.seen.append(context.state)
        return None

    async def after_turn(self, context: ProviderContext) -> None:
        visits: Visits = context.state or Visits()
        context.state = Visits(count=visits.count + 1, last_seen=context.correlation_id)


async def test_a_provider_gets_its_model_and_stores_it_by_alias(
    model: ModelServer, settings: ModelSettings
) -> None:
    counter = VisitCounter()
    agent = Agent(name="v", model=settings, context_providers=[counter])
    model.script(Reply.text("one"), Reply.text("two"))
    state = AgentState.new()
    await agent.run(state, ask("c1"))
    state = load_state(dump_state(state))
    await agent.run(state, ask("c2"))
    assert counter.seen[0] is None
    assert counter.seen[1] == Visits(count=1, last_seen="c1")
    assert state.state_bag["visits"] == {"count": 2, "lastSeen": "c2"}


@pytest.mark.parametrize(
    ("provider", "stored", "names"),
    [
        (
            MemoryProvider(),
            {"facts": [{"id": "m1"}], "nextId": 2},
            ["'memory'", "MemoryState", "facts.0.text"],
        ),
        (MemoryProvider(), {"facts": [], "nextId": 0}, ["'memory'", "nextId"]),
        (
            HistoryReducer(),
            {"summary": 7, "summarizedCount": 1},
            ["'history-reducer'", "HistoryReducer", "ReducerState", "summary"],
        ),
        (HistoryReducer(), {"summarizedCount": -1}, ["'history-reducer'", "summarizedCount"]),
        (VisitCounter(), "three", ["'visits'", "VisitCounter", "Visits"]),
    ],
    ids=["memory-fact", "memory-next-id", "reducer-summary", "reducer-count", "custom"],
)
async def test_stored_state_that_does_not_fit_fails_the_turn_and_is_kept(
    model: ModelServer, settings: ModelSettings, provider: ContextProvider, stored: Any, names: list[str]
) -> None:
    agent = Agent(name="p", model=settings, context_providers=[provider])
    state = AgentState.new()
    state.state_bag[provider.source_id] = stored
    before = dump_state(state)
    for cid in ("c1", "c2"):  # never replaced, so every later turn fails the same way
        result = await agent.run(state, ask(cid))
        assert result.status == "failed" and result.error is not None
        assert result.error.code == "provider_error"
        for name in names:
            assert name in result.error.message, (name, result.error.message)
    assert state.state_bag[provider.source_id] == stored
    assert load_state(before).state_bag == load_state(dump_state(state)).state_bag
    assert model.requests == []  # refused before any model call


async def test_shipped_providers_keep_their_stored_json_form(
    model: ModelServer, settings: ModelSettings
) -> None:
    # Extra properties a newer build may have written survive a load and dump.
    memory = MemoryProvider()
    stored = {"facts": [{"id": "m1", "text": "likes tea", "pinned": True}], "nextId": 2, "v": 2}
    loaded = memory.load_state(stored)
    assert isinstance(loaded, MemoryState) and loaded.facts[0].text == "likes tea"
    assert memory.dump_state(loaded) == stored
    reducer = HistoryReducer()
    summary = {"summary": "so far", "summarizedCount": 4}
    assert isinstance(reducer.load_state(summary), ReducerState)
    assert reducer.dump_state(reducer.load_state(summary)) == summary
    assert memory.load_state(None) is None


async def test_a_provider_without_a_model_keeps_plain_json(
    model: ModelServer, settings: ModelSettings
) -> None:
    class Plain(ContextProvider):
        source_id = "plain"

    provider = Plain()
    stored = {"any": ["json", 1]}
    loaded = provider.load_state(stored)
    assert loaded == stored and loaded is not stored  # a copy: a failed turn changes nothing
    assert provider.dump_state(loaded) == stored
