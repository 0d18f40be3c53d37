"""Tools that need approval: declared on the tool, a step that waits, decisions applied."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents import (
    Agent,
    AgentConfigurationError,
    AwaitingApproval,
    FunctionTool,
    InputMessage,
    ModelSettings,
    PendingCall,
    ToolDecision,
    TurnProgress,
    TurnRequest,
    TurnResult,
    tool,
)
from agents.testing import ModelServer, Reply
from state import AgentState

RAN: list[str] = []


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    RAN.append(f"delete {path}")
    return f"deleted {path}"


@tool(requires_approval=lambda args: args.get("amount", 0) > 100)
def pay(amount: int) -> str:
    """Pay an amount."""
    RAN.append(f"pay {amount}")
    return f"paid {amount}"


@tool
def look(path: str) -> str:
    """Look at a file."""
    RAN.append(f"look {path}")
    return f"saw {path}"


def ask(cid: str) -> TurnRequest:
    return TurnRequest(correlation_id=cid, messages=[InputMessage("user", "do it")])


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def test_the_rule_is_declared_on_the_tool() -> None:
    assert delete_file.needs_approval({"path": "a"}) is True
    assert look.needs_approval({"path": "a"}) is False
    assert pay.needs_approval({"amount": 5}) is False
    assert pay.needs_approval({"amount": 500}) is True

    def broken(args: dict[str, Any]) -> bool:
        raise KeyError("x")

    strict = FunctionTool.from_function(look.func, name="strict", requires_approval=broken)
    assert strict.needs_approval({}) is True  # a predicate that fails: a person decides
    with pytest.raises(AgentConfigurationError):
        FunctionTool.from_function(look.func, name="bad", requires_approval="yes")  # type: ignore[arg-type]


async def _step(agent: Agent, state: AgentState, progress: TurnProgress | None, **kw: Any) -> Any:
    return await agent.run_step(state, ask("c1"), progress, session_id="s1", **kw)


def _stored(progress: TurnProgress) -> TurnProgress:
    return TurnProgress.from_json(json.loads(json.dumps(progress.to_json())))


async def test_a_step_waits_for_its_decisions_then_runs(model: ModelServer, settings: ModelSettings) -> None:
    agent = Agent(name="files", model=settings, tools=[delete_file, look, pay])
    model.script(
        Reply.tool_calls(
            [
                ("delete_file", {"path": "a"}, "call_a"),
                ("look", {"path": "b"}, "call_b"),
                ("pay", {"amount": 500}, "call_c"),
                ("pay", {"amount": 5}, "call_d"),
            ]
        ),
        Reply.text("done"),
    )
    state = AgentState.new()
    first = await _step(agent, state, None)
    assert isinstance(first, TurnProgress)
    waiting = await _step(agent, state, _stored(first))
    assert isinstance(waiting, AwaitingApproval)
    assert waiting.calls == [
        PendingCall("call_a", "delete_file", {"path": "a"}),
        PendingCall("call_c", "pay", {"amount": 500}),
    ]
    assert waiting.progress.steps == 1 and RAN == [] and len(state) == 0  # nothing ran, nothing stored
    decisions = {"call_a": ToolDecision(False, "not that file"), "call_c": ToolDecision(True)}
    ran = await _step(agent, state, _stored(first), decisions=decisions)
    assert isinstance(ran, TurnProgress) and ran.steps == 2
    assert sorted(RAN) == ["look b", "pay 5", "pay 500"]
    results = {c["callId"]: c for c in ran.messages[-1]["contents"]}
    assert "not that file" in results["call_a"]["result"] and results["call_a"]["isError"] is True
    assert results["call_c"]["result"] == "paid 500"
    done = await _step(agent, state, _stored(ran), decisions=decisions)
    assert isinstance(done, TurnResult) and done.text == "done"
    sent = model.requests[1].body["messages"]
    assert any("Rejected" in str(m.get("content")) and "not that file" in str(m.get("content")) for m in sent)


async def test_a_turn_run_in_one_piece_rejects_what_needs_approval(
    model: ModelServer, settings: ModelSettings
) -> None:
    agent = Agent(name="files", model=settings, tools=[delete_file])
    model.script(Reply.tool_call("delete_file", {"path": "a"}, call_id="call_a"), Reply.text("ok"))
    result = await agent.run(AgentState.new(), ask("c1"))
    assert result.text == "ok" and RAN == []
    assert "cannot wait" in str(model.requests[1].body["messages"][-1]["content"])
