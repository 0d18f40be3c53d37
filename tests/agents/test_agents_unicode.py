"""Lone UTF-16 surrogates from a model or a tool are recorded as U+FFFD, never as unwritable text."""

from __future__ import annotations

import orjson

from agents import Agent, InputMessage, ModelSettings, TurnRequest, tool
from agents._unicode import without_lone_surrogates
from agents.testing import ModelServer, Reply
from state import AgentState, FunctionCallContent, FunctionResultContent, dump_state, load_state


@tool
def echo_back(text: str) -> str:
    """Answer with a broken suffix."""
    return text + " \udc00"


def _contents(state: AgentState) -> list[object]:
    return [c for entry in state.entries for m in entry.messages for c in m.contents]


async def test_surrogates_in_tool_arguments_results_and_text_become_replacement_characters(
    model: ModelServer, settings: ModelSettings
) -> None:
    agent = Agent(name="u", model=settings, tools=[echo_back])
    model.script(Reply.tool_call("echo_back", {"text": "in \ud800"}), Reply.text("done \udfff"))
    state = AgentState.new()
    result = await agent.run(state, TurnRequest("c1", [InputMessage("user", "go")]))
    assert result.status == "succeeded", result.error
    assert result.text == "done \ufffd"
    text = dump_state(state)
    orjson.loads(text)  # strict UTF-8 JSON: no surrogate escapes left
    contents = _contents(load_state(text))
    call = next(c for c in contents if isinstance(c, FunctionCallContent))
    output = next(c for c in contents if isinstance(c, FunctionResultContent))
    assert call.arguments == {"text": "in \ufffd"}
    assert output.result == "in \ufffd \ufffd"
    # The next turn replays the repaired text to the model.
    model.script(Reply.text("ok"))
    await agent.run(state, TurnRequest("c2", [InputMessage("user", "more")]))
    assert "done \ufffd" in orjson.dumps(model.requests[-1].body).decode()


def test_valid_pairs_are_kept_and_clean_values_are_returned_as_they_are() -> None:
    clean = {"a": ["x", 1, None, {"b": "😀"}]}
    assert without_lone_surrogates(clean, "test") is clean
    assert without_lone_surrogates(["\ud83d\ude00", "\ud83d"], "test") == ["😀", "\ufffd"]
