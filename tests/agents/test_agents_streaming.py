"""Streamed turns: events arrive as the model sends them, and the stored turn is the same as without."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest

from agents import Agent, InputMessage, ModelSettings, TurnEvent, TurnEventType, TurnRequest, tool
from agents.testing import ModelServer, Reply
from state import AgentState, dump_state


@tool
def get_weather(city: str) -> dict[str, Any]:
    """Weather for a city.

    Args:
        city: The city.
    """
    return {"city": city, "temp": 18}


def ask(cid: str, text: str) -> TurnRequest:
    return TurnRequest(correlation_id=cid, messages=[InputMessage("user", text)])


class Recorder:
    """A sink that keeps every event with the time it arrived."""

    def __init__(self) -> None:
        self.events: list[tuple[float, TurnEvent]] = []

    async def __call__(self, event: TurnEvent) -> None:
        self.events.append((time.monotonic(), event))

    def of(self, kind: TurnEventType) -> list[dict[str, Any]]:
        return [e.data for _, e in self.events if e.type == kind]


def comparable(state: AgentState) -> Any:
    """The stored state without what differs between any two runs (times, generated ids)."""
    text = dump_state(state)
    text = re.sub(r'"createdAt":"[^"]*"', '"createdAt":"T"', text)
    text = re.sub(r'"(callId|call_id)":"[^"]*"', r'"\1":"ID"', text)
    return json.loads(text)


def script(model: ModelServer) -> None:
    model.script(
        Reply.tool_call("get_weather", {"city": "Paris"}).with_usage(input_tokens=5, output_tokens=3),
        Reply.reasoning("Thinking it over.", Reply.text("It is 18 degrees in Paris, mild and calm.")),
    )


@pytest.mark.parametrize("wire_api", ["chat", "responses"])
async def test_streamed_turn_stores_what_the_plain_turn_stores(
    model: ModelServer, settings: ModelSettings, wire_api: str
) -> None:
    agent = Agent(name="helper", model=settings.replace(wire_api=wire_api), tools=[get_weather])
    script(model)
    plain = AgentState.new()
    plain_result = await agent.run(plain, ask("c1", "Weather in Paris?"))
    script(model)
    streamed = AgentState.new()
    recorder = Recorder()
    streamed_result = await agent.run(streamed, ask("c1", "Weather in Paris?"), on_event=recorder)

    assert streamed_result.status == plain_result.status == "succeeded"
    assert comparable(streamed) == comparable(plain)
    assert all(r.body.get("stream") for r in model.requests[2:])
    assert not any(r.body.get("stream") for r in model.requests[:2])
    kinds = [e.type for _, e in recorder.events]
    assert kinds[0] == TurnEventType.USAGE
    calls = recorder.of(TurnEventType.TOOL_CALL)
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [("get_weather", {"city": "Paris"})]
    results = recorder.of(TurnEventType.TOOL_RESULT)
    assert results == [{"call_id": calls[0]["call_id"], "result": {"city": "Paris", "temp": 18}}]
    text = "".join(d["text"] for d in recorder.of(TurnEventType.TEXT_DELTA))
    assert text == streamed_result.text == "It is 18 degrees in Paris, mild and calm."
    assert len(recorder.of(TurnEventType.TEXT_DELTA)) > 5
    assert "".join(d["text"] for d in recorder.of(TurnEventType.REASONING_DELTA)) == "Thinking it over."
    usages = recorder.of(TurnEventType.USAGE)
    assert usages[0] == {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}
    assert len(usages) == 2
    assert kinds.index(TurnEventType.TOOL_CALL) < kinds.index(TurnEventType.TOOL_RESULT)


async def test_deltas_arrive_while_the_model_is_still_sending(
    model: ModelServer, settings: ModelSettings
) -> None:
    agent = Agent(name="helper", model=settings)
    model.stream_delay = 0.05
    model.script(Reply.text("one two three four five"))
    recorder = Recorder()
    await agent.run(AgentState.new(), ask("c1", "count"), on_event=recorder)
    times = [t for t, e in recorder.events if e.type == TurnEventType.TEXT_DELTA]
    assert len(times) == 5
    # Timed from the first delta, not from the call (on a loaded machine the client's set-up and
    # the request alone took half the turn): the model sends a word every 50 ms, so deltas handed
    # on as they come span at least three of those gaps; buffered ones would come together.
    assert times[-1] - times[0] >= 0.15, "the deltas came together, not as the model sent them"


async def test_a_failing_sink_never_fails_the_turn(model: ModelServer, settings: ModelSettings) -> None:
    agent = Agent(name="helper", model=settings)

    async def broken(event: TurnEvent) -> None:
        raise RuntimeError("listener gone")

    model.script(Reply.text("still answered"))
    state = AgentState.new()
    result = await agent.run(state, ask("c1", "hi"), on_event=broken)
    assert result.status == "succeeded" and result.text == "still answered"


@pytest.mark.parametrize("wire_api", ["chat", "responses"])
async def test_a_model_error_while_streaming_fails_the_turn_with_its_code(
    model: ModelServer, settings: ModelSettings, wire_api: str
) -> None:
    agent = Agent(name="helper", model=settings.replace(wire_api=wire_api))
    model.script(Reply.error(400, "bad input", code="invalid_prompt"))
    recorder = Recorder()
    state = AgentState.new()
    result = await agent.run(state, ask("c1", "hi"), on_event=recorder)
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "invalid_prompt"
    assert recorder.events == []


# Chunks (Chat Completions) / events (Responses) before the second text delta of a text reply.
TWO_DELTAS = {"chat": 3, "responses": 6}


@pytest.mark.parametrize("how", ["error", "disconnect"])
@pytest.mark.parametrize("wire_api", ["chat", "responses"])
async def test_a_stream_breaking_off_after_text_fails_the_turn_for_good(
    model: ModelServer, settings: ModelSettings, wire_api: str, how: str
) -> None:
    agent = Agent(name="helper", model=settings.replace(wire_api=wire_api))
    model.script(
        Reply.text("one two three four five").interrupted(TWO_DELTAS[wire_api], how),  # type: ignore[arg-type]
        Reply.text("a retry would show this"),
    )
    recorder = Recorder()
    state = AgentState.new()
    result = await agent.run(state, ask("c1", "hi"), on_event=recorder)
    assert result.status == "failed" and result.error is not None
    expected = "model_server_error" if how == "error" else "connection_error"
    assert result.error.code == expected
    assert result.error.retryable is False and "after part of the answer was streamed" in result.error.message
    assert "".join(d["text"] for d in recorder.of(TurnEventType.TEXT_DELTA)) == "one two "
    assert len(model.requests) == 1, "a turn whose text was shown must not be sent again"
    assert list(state.replay_messages()) == []  # the failed turn is stored, never replayed


@pytest.mark.parametrize("how", ["error", "disconnect"])
@pytest.mark.parametrize("wire_api", ["chat", "responses"])
async def test_a_stream_breaking_off_before_any_text_is_retried(
    model: ModelServer, settings: ModelSettings, wire_api: str, how: str
) -> None:
    agent = Agent(name="helper", model=settings.replace(wire_api=wire_api))
    model.script(Reply.text("lost").interrupted(1, how), Reply.text("second try"))  # type: ignore[arg-type]
    recorder = Recorder()
    result = await agent.run(AgentState.new(), ask("c1", "hi"), on_event=recorder)
    assert result.status == "succeeded" and result.text == "second try"
    assert "".join(d["text"] for d in recorder.of(TurnEventType.TEXT_DELTA)) == "second try"
    assert len(model.requests) == 2
