"""Context providers: per-session state in the state bag, shared provider objects, both shipped providers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

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
from agents._reducer import SUMMARY_INSTRUCTIONS, safe_cuts, transcript
from agents.testing import ModelRequest, ModelServer, Reply
from state import (
    AgentState,
    ChatMessage,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    dump_state,
    load_state,
)


def ask(cid: str, text: str) -> TurnRequest:
    return TurnRequest(correlation_id=cid, messages=[InputMessage("user", text)])


def ctx(state: Any = None) -> ProviderContext:
    return ProviderContext(agent_name="a", correlation_id="c", state=state, request_messages=(), history=())


def system_text(request: ModelRequest) -> str:
    return "\n".join(m.text for m in request.messages if m.role == "system")


# --- MemoryProvider ---------------------------------------------------------------------------


async def test_memory_tools_on_a_context() -> None:
    memory = MemoryProvider(max_facts=2)
    context = ctx()
    assert await memory.remember("  likes   tea ", context) == "Remembered as m1."
    assert await memory.remember("Likes tea", context) == "Already remembered as m1."
    assert await memory.remember("lives in Oslo", context) == "Remembered as m2."
    assert await memory.recall(context, "where does she live? oslo") == [
        {"id": "m2", "text": "lives in Oslo"}
    ]
    assert len(await memory.recall(context)) == 2
    assert await memory.remember("has a cat", context) == "Remembered as m3."
    assert [f["id"] for f in memory.dump_state(context.state)["facts"]] == ["m2", "m3"]  # oldest dropped
    assert await memory.forget("m2", context) == "Forgot m2."
    assert await memory.forget("m2", context) == "No fact with id 'm2'."
    assert await memory.remember("   ", context) == "Nothing to remember: the fact is empty."
    additions = await memory.before_model(context)
    assert "- [m3] has a cat" in additions.instructions[0]
    assert memory.dump_state(context.state) == {"facts": [{"id": "m3", "text": "has a cat"}], "nextId": 4}


async def test_memory_survives_save_and_load_between_turns(
    model: ModelServer, settings: ModelSettings
) -> None:
    agent = Agent(name="memo", model=settings, context_providers=[MemoryProvider()])
    model.script(
        Reply.tool_call("remember", {"fact": "The user's name is Ada."}),
        Reply.text("Nice to meet you, Ada."),
    )
    state = AgentState.new()
    await agent.run(state, ask("c1", "I am Ada"))
    stored = dump_state(state)
    assert '"stateBag"' in stored
    state = load_state(stored)
    assert state.state_bag["memory"] == {
        "facts": [{"id": "m1", "text": "The user's name is Ada."}],
        "nextId": 2,
    }
    model.script(Reply.tool_call("forget", {"fact_id": "m1"}), Reply.text("Forgotten."))
    await agent.run(state, ask("c2", "forget my name"))
    assert "- [m1] The user's name is Ada." in system_text(model.requests[2])
    assert [t for t in model.requests[2].tool_names] == ["remember", "recall", "forget"]
    state = load_state(dump_state(state))
    assert state.state_bag["memory"]["facts"] == []


async def test_failed_turn_does_not_commit_provider_state(
    model: ModelServer, settings: ModelSettings
) -> None:
    agent = Agent(name="memo", model=settings, context_providers=[MemoryProvider()])
    model.script(Reply.tool_call("remember", {"fact": "secret"}), Reply.error(400, "nope"))
    state = AgentState.new()
    result = await agent.run(state, ask("c1", "remember this"))
    assert result.status == "failed"
    assert state.state_bag == {}


async def test_one_provider_many_concurrent_sessions_no_leakage(
    model: ModelServer, settings: ModelSettings
) -> None:
    memory = MemoryProvider()
    agent = Agent(name="memo", model=settings, context_providers=[memory])
    provider_before = dict(vars(memory))

    def handler(request: ModelRequest) -> Reply:
        last = request.messages[-1]
        if last.role == "tool":
            return Reply.delay(0.02, Reply.text("noted"))
        text = last.text
        if text.startswith("remember "):
            # Delay so that the sessions' turns interleave inside the shared provider.
            return Reply.delay(0.05, Reply.tool_call("remember", {"fact": text.removeprefix("remember ")}))
        return Reply.text(system_text(request))

    model.handler = handler
    sessions = {f"user{i}": AgentState.new() for i in range(6)}

    async def converse(name: str) -> str:
        state = sessions[name]
        await agent.run(state, ask(f"{name}-1", f"remember {name} likes {name}-things"))
        state = load_state(dump_state(state))
        sessions[name] = state
        result = await agent.run(state, ask(f"{name}-2", "what do you know?"))
        return result.text

    answers = await asyncio.gather(*(converse(name) for name in sessions))
    for name, answer in zip(sessions, answers, strict=True):
        facts = sessions[name].state_bag["memory"]["facts"]
        assert facts == [{"id": "m1", "text": f"{name} likes {name}-things"}]
        assert f"{name} likes" in answer
        others = [other for other in sessions if other != name]
        assert not any(f"{other} likes" in answer for other in others)
    assert vars(memory) == provider_before  # the shared provider object holds nothing per session


async def test_custom_provider_hooks_and_state(model: ModelServer, settings: ModelSettings) -> None:
    class Counter(ContextProvider):
        """Counts turns per session and tells the model; sees request and response in after_turn."""

        source_id = "counter"

        async def before_model(self, context: ProviderContext) -> ContextAdditions:
            turns = (context.state or {}).get("turns", 0)
            note = ChatMessage(role="user", contents=[TextContent(text=f"(context: turn {turns + 1})")])
            return ContextAdditions(instructions=[f"This is turn {turns + 1}."], messages=[note])

        async def after_turn(self, context: ProviderContext) -> None:
            seen = [m.text for m in context.request_messages] + [m.text for m in context.response_messages]
            context.state = {"turns": (context.state or {}).get("turns", 0) + 1, "last": seen}

    agent = Agent(name="count", instructions="Base.", model=settings, context_providers=[Counter()])
    model.script(Reply.text("a"), Reply.text("b"))
    state = AgentState.new()
    await agent.run(state, ask("c1", "one"))
    state = load_state(dump_state(state))
    await agent.run(state, ask("c2", "two"))
    assert state.state_bag["counter"] == {"turns": 2, "last": ["two", "b"]}
    body = model.requests[1].body["messages"]
    assert body[0] == {"role": "system", "content": "Base.\n\nThis is turn 2."}
    assert body[-2:] == [{"role": "user", "content": "(context: turn 2)"}, {"role": "user", "content": "two"}]
    # Provider-added messages are context only: never stored.
    assert "(context:" not in dump_state(state)


# --- HistoryReducer ---------------------------------------------------------------------------


def _msg(role: str, text: str = "", call: str | None = None, result: str | None = None) -> ChatMessage:
    contents: list[Any] = [TextContent(text=text)] if text else []
    if call:
        contents.append(FunctionCallContent(call_id=call, name="f", arguments={}))
    if result:
        contents.append(FunctionResultContent(call_id=result, result="r"))
    return ChatMessage(role=role, contents=contents)


def test_safe_cuts_never_split_a_call_from_its_result() -> None:
    history = [
        _msg("user", "q"),
        _msg("assistant", call="a"),
        _msg("tool", result="a"),
        _msg("assistant", "answer"),
        _msg("user", "q2"),
        _msg("assistant", call="b"),
        _msg("assistant", call="c"),
        _msg("tool", result="b"),
        _msg("tool", result="c"),
    ]
    assert safe_cuts(history) == [True, True, False, True, True, True, False, False, False, True]
    assert "assistant called f({})" in transcript(history) and "tool result: r" in transcript(history)


async def test_reducer_window_starts_at_a_safe_boundary() -> None:
    reducer = HistoryReducer(max_messages=3, keep_messages=2, summarize=False)
    history = [
        _msg("user", "q"),
        _msg("assistant", "a"),
        _msg("user", "q2"),
        _msg("assistant", call="x"),
        _msg("tool", result="x"),
        _msg("assistant", "done"),
    ]
    context = ProviderContext(
        agent_name="a", correlation_id="c", state=None, request_messages=(), history=history
    )
    additions = await reducer.before_model(context)
    assert additions.history is not None
    # Keeping 2 would start at the tool result (index 4), which would orphan it from its call: the
    # window starts at the first safe boundary after it, leaving at most 2 messages.
    window = list(additions.history)
    assert window == history[5:]
    assert safe_cuts(history)[len(history) - len(window)]
    assert reducer.dump_state(context.state) == {
        "summary": None,
        "summarizedCount": len(history) - len(window),
    }


def test_reducer_configuration() -> None:
    from agents import AgentConfigurationError

    with pytest.raises(AgentConfigurationError):
        HistoryReducer(max_messages=2, keep_messages=3)
    with pytest.raises(AgentConfigurationError):
        HistoryReducer(keep_messages=0)


async def test_reducer_bounds_the_window_with_a_model_written_summary(
    model: ModelServer, settings: ModelSettings
) -> None:
    summaries: list[str] = []

    def handler(request: ModelRequest) -> Reply:
        if SUMMARY_INSTRUCTIONS in system_text(request):
            summaries.append(request.messages[-1].text)
            return Reply.text(f"SUMMARY{len(summaries)}").with_usage(100, 10)
        return Reply.text(f"answer to {request.last_user_text}").with_usage(1, 1)

    model.handler = handler
    reducer = HistoryReducer(max_messages=6, keep_messages=2)
    agent = Agent(name="long", instructions="Base.", model=settings, context_providers=[reducer])
    state = AgentState.new()
    seen_sizes: list[int] = []
    for turn in range(8):
        state = load_state(dump_state(state))  # provider state must survive storage every turn
        result = await agent.run(state, ask(f"c{turn}", f"message {turn}"))
        assert result.status == "succeeded"
        main_call = [r for r in model.requests if SUMMARY_INSTRUCTIONS not in system_text(r)][-1]
        seen_sizes.append(len([m for m in main_call.messages if m.role != "system"]))
        if summaries and f"SUMMARY{len(summaries)}" not in system_text(main_call):
            pytest.fail(f"turn {turn}: the model did not see the latest summary")
    # Stored history is complete; the model never saw more than max_messages earlier messages (+ the new one).
    assert len(list(state.replay_messages())) == 16
    assert max(seen_sizes) <= 6 + 1
    assert seen_sizes == [1, 3, 5, 7, 3, 5, 7, 3]  # overflow at 8 earlier messages -> keep 2 + summary
    assert len(summaries) >= 2
    # The second summary request carries the first summary forward.
    assert "SUMMARY1" in summaries[1] and "user: message 0" in summaries[0]
    bag = state.state_bag["history-reducer"]
    assert bag["summary"] == f"SUMMARY{len(summaries)}" and bag["summarizedCount"] > 0
    # Summarisation usage counts towards the turn that needed it.
    usages = [e.usage.input_token_count for e in state.entries if e.type == "response" and e.usage]
    assert usages and all(u is not None for u in usages)
    assert max(u for u in usages if u is not None) >= 101


async def test_reducer_summary_failure_keeps_state_and_the_turn(
    model: ModelServer, settings: ModelSettings
) -> None:
    def handler(request: ModelRequest) -> Reply:
        if SUMMARY_INSTRUCTIONS in system_text(request):
            return Reply.error(400, "summaries are down")
        return Reply.text("fine")

    model.handler = handler
    agent = Agent(
        name="long", model=settings, context_providers=[HistoryReducer(max_messages=2, keep_messages=1)]
    )
    state = AgentState.new()
    for turn in range(3):
        result = await agent.run(state, ask(f"c{turn}", f"m{turn}"))
        assert result.status == "succeeded"
    assert "history-reducer" not in state.state_bag
    last_main = model.requests[-1]
    assert len([m for m in last_main.messages if m.role != "system"]) <= 2 + 1


async def test_unreadable_memory_state_fails_the_turn_and_is_kept(
    model: ModelServer, settings: ModelSettings
) -> None:
    agent = Agent(name="memo", model=settings, context_providers=[MemoryProvider()])
    state = AgentState.new()
    state.state_bag["memory"] = ["not", "facts"]
    result = await agent.run(state, ask("c1", "hi"))
    assert result.error is not None and result.error.code == "provider_error"
    assert "unexpected shape" in result.error.message
    assert state.state_bag["memory"] == ["not", "facts"] and model.requests == []
