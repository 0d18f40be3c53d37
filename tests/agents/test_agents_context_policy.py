"""The context policy: what the model sees of a long history (token budget of whole turns, or the
full history including archived entries), over HTTP to the local model server."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from agents import (
    Agent,
    AgentConfigurationError,
    FullHistory,
    InputMessage,
    ModelSettings,
    TokenBudget,
    TurnRequest,
    tool,
)
from agents.testing import ModelServer, Reply
from state import AgentState, ArchivePolicy, apply_archive, plan_archive, read_chunk


def ask(cid: str, text: str) -> TurnRequest:
    return TurnRequest(correlation_id=cid, messages=[InputMessage(role="user", text=text)])


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"facts about {topic}: " + "z" * 3000


def user_texts(body: Mapping[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


async def test_a_token_budget_keeps_the_newest_whole_turns(
    model: ModelServer, settings: ModelSettings
) -> None:
    agent = Agent(name="budget", model=settings, tools=[lookup], context=TokenBudget(max_tokens=1500))
    state = AgentState.new()
    for i in range(6):
        # Every other turn calls the tool: its 3 KB result must never be split from its call.
        if i % 2:
            model.script(Reply.tool_call("lookup", {"topic": f"t{i}"}), Reply.text(f"done {i}"))
        else:
            model.script(Reply.text(f"answer {i} " + "y" * 1000))
        assert (await agent.run(state, ask(f"c{i}", f"question {i}"))).status == "succeeded"
    model.script(Reply.text("last"))
    await agent.run(state, ask("c6", "question 6"))
    sent = model.requests[-1].body["messages"]
    texts = user_texts(model.requests[-1].body)
    assert texts[-1] == "question 6"
    assert "question 0" not in texts and texts[:-1] == sorted(texts[:-1])  # newest turns, in order
    calls = {c["id"] for m in sent if m.get("tool_calls") for c in m["tool_calls"]}
    results = {m["tool_call_id"] for m in sent if m["role"] == "tool"}
    assert calls == results  # never a call without its result, nor a result without its call
    assert sum(len(str(m)) for m in sent) < 1500 * 4 + 500


class Archive:
    """What the host hands an agent asking for its full history: the archived entries."""

    def __init__(self, entries: Sequence[Mapping[str, Any]]) -> None:
        self._entries = list(entries)
        self.reads = 0

    async def entries(self) -> list[Mapping[str, Any]]:
        self.reads += 1
        return self._entries


async def test_full_history_reads_the_archived_turns(model: ModelServer, settings: ModelSettings) -> None:
    agent = Agent(name="full", model=settings, context=FullHistory())
    state = AgentState.new()
    for i in range(8):
        model.script(Reply.text(f"answer {i} " + "y" * 300))
        await agent.run(state, ask(f"c{i}", f"question {i}"))
    policy = ArchivePolicy(max_state_bytes=1024, keep_bytes=512)
    plan = plan_archive(state, policy)
    assert plan is not None
    apply_archive(state, plan, policy)
    archived = [e for c in plan.chunks for e in read_chunk(c.ref, c.data).entries]
    archive = Archive(archived)
    model.script(Reply.text("all of it"))
    await agent.run(state, ask("c8", "question 8"), archive)
    assert archive.reads == 1
    assert user_texts(model.requests[-1].body) == [f"question {i}" for i in range(9)]
    # The default budget only sends what the state holds.
    default = Agent(name="full", model=settings)
    model.script(Reply.text("recent"))
    await default.run(state, ask("c9", "question 9"))
    assert "question 0" not in user_texts(model.requests[-1].body)


def test_a_context_policy_is_checked_at_definition() -> None:
    with pytest.raises(AgentConfigurationError, match="context"):
        Agent(name="bad", context="everything")  # type: ignore[arg-type]
    with pytest.raises(AgentConfigurationError, match="max_tokens"):
        TokenBudget(max_tokens=0)


async def test_the_history_reducer_keeps_its_place_across_archiving(
    model: ModelServer, settings: ModelSettings
) -> None:
    from agents import HistoryReducer

    reducer = HistoryReducer(max_messages=4, keep_messages=2, summarize=False)
    agent = Agent(name="reduced", model=settings, context_providers=[reducer])
    state = AgentState.new()
    for i in range(6):
        model.script(Reply.text(f"answer {i} " + "y" * 300))
        await agent.run(state, ask(f"c{i}", f"question {i}"))
    counted = state.state_bag["history-reducer"]
    assert isinstance(counted, dict) and counted["summarizedCount"] > 0
    policy = ArchivePolicy(max_state_bytes=1024, keep_bytes=512)
    plan = plan_archive(state, policy)
    assert plan is not None
    apply_archive(state, plan, policy)
    assert state.archived_messages > 0
    model.script(Reply.text("after archiving"))
    await agent.run(state, ask("c6", "question 6"))
    # Still a window of recent turns (not nothing, not everything), ending with the new question.
    texts = user_texts(model.requests[-1].body)
    assert texts[-1] == "question 6" and texts[:-1] == ["question 5"]
    after = state.state_bag["history-reducer"]
    assert isinstance(after, dict) and after["summarizedCount"] >= counted["summarizedCount"]
