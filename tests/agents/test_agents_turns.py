"""Full turns over HTTP: the real openai client against the local model server."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from agents import (
    Agent,
    ContextProvider,
    InputMessage,
    ModelSettings,
    ProviderContext,
    TurnProgress,
    TurnRequest,
    current_tool_call,
    tool,
)
from agents.testing import ModelServer, Reply
from state import (
    AgentRequest,
    AgentResponse,
    AgentState,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    dump_state,
    load_state,
)


def ask(cid: str, text: str, **kwargs: Any) -> TurnRequest:
    return TurnRequest(correlation_id=cid, messages=[InputMessage("user", text)], **kwargs)


@tool
def get_weather(city: str) -> dict[str, Any]:
    """Weather for a city.

    Args:
        city: The city.
    """
    if city == "Atlantis":
        raise LookupError("no such city")
    return {"city": city, "temp": 18}


class Verdict(BaseModel):
    approved: bool
    feedback: str


async def test_plain_turn_is_recorded(model: ModelServer, settings: ModelSettings) -> None:
    agent = Agent(name="helper", instructions="Be brief.", model=settings)
    model.script(Reply.text("Hello!").with_usage(input_tokens=7, output_tokens=2))
    state = AgentState.new()
    result = await agent.run(state, ask("c1", "Hi"))
    assert result.status == "succeeded" and result.text == "Hello!" and result.error is None
    assert result.usage == {"inputTokenCount": 7, "outputTokenCount": 2, "totalTokenCount": 9}
    assert result.messages[0]["authorName"] == "helper"
    sent = model.requests[0].body
    assert sent["model"] == "test-model"
    assert sent["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    request_entry, response_entry = state.entries
    assert isinstance(request_entry, AgentRequest) and isinstance(response_entry, AgentResponse)
    assert request_entry.correlation_id == response_entry.correlation_id == "c1"
    assert request_entry.response_type == "text"
    assert response_entry.usage is not None and response_entry.usage.total_token_count == 9
    run = state.find_run("c1")
    assert run is not None and run.status == "succeeded"


async def test_local_history_is_replayed_each_turn(model: ModelServer, settings: ModelSettings) -> None:
    agent = Agent(name="helper", model=settings)
    model.script(Reply.text("one"), Reply.text("two"))
    state = AgentState.new()
    await agent.run(state, ask("c1", "first"))
    state = load_state(dump_state(state))
    await agent.run(state, ask("c2", "second"))
    assert model.requests[1].body["messages"] == [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "one", "name": "helper"},
        {"role": "user", "content": "second"},
    ]


async def test_tool_round_trip(model: ModelServer, settings: ModelSettings) -> None:
    agent = Agent(name="weather", model=settings, tools=[get_weather])
    model.script(
        Reply.tool_call("get_weather", {"city": "Paris"}, call_id="call_1").with_usage(10, 1),
        Reply.text("18C in Paris.").with_usage(20, 3),
    )
    state = AgentState.new()
    result = await agent.run(state, ask("c1", "Weather in Paris?"))
    assert result.text == "18C in Paris."
    assert result.usage == {"inputTokenCount": 30, "outputTokenCount": 4, "totalTokenCount": 34}
    offered = model.requests[0].body["tools"]
    assert offered[0]["function"]["name"] == "get_weather"
    assert offered[0]["function"]["parameters"]["properties"]["city"]["description"] == "The city."
    assert model.requests[1].body["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"city": "Paris", "temp": 18}',
    }
    call_message, tool_message, answer = state.entries[1].messages
    assert call_message.contents == [
        FunctionCallContent(call_id="call_1", name="get_weather", arguments={"city": "Paris"})
    ]
    assert tool_message.role == "tool"
    assert tool_message.contents == [
        FunctionResultContent(call_id="call_1", result={"city": "Paris", "temp": 18})
    ]
    assert answer.text == "18C in Paris."
    # The next turn replays the whole exchange, tool call and result included.
    model.script(Reply.text("ok"))
    await agent.run(state, ask("c2", "thanks"))
    roles = [m["role"] for m in model.requests[2].body["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]


async def test_parallel_tool_calls_run_concurrently(model: ModelServer, settings: ModelSettings) -> None:
    barrier = threading.Barrier(2, timeout=5)
    both_started = asyncio.Event()
    started: list[str] = []

    @tool
    def sync_wait(name: str) -> str:
        """Waits for its sibling (proves two sync tools run at the same time)."""
        barrier.wait()
        return f"sync {name}"

    @tool
    async def async_wait(name: str) -> str:
        """Waits for its sibling (proves two async tools run at the same time)."""
        started.append(name)
        if len(started) == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), 5)
        return f"async {name}"

    agent = Agent(name="par", model=settings, tools=[sync_wait, async_wait])
    model.script(
        Reply.tool_calls(
            [
                ("sync_wait", {"name": "a"}, "c_a"),
                ("sync_wait", {"name": "b"}, "c_b"),
                ("async_wait", {"name": "c"}, "c_c"),
                ("async_wait", {"name": "d"}, "c_d"),
            ]
        ),
        Reply.text("done"),
    )
    state = AgentState.new()
    result = await agent.run(state, ask("c1", "go"))
    assert result.text == "done"
    contents = state.entries[1].messages[1].contents
    assert all(isinstance(c, FunctionResultContent) for c in contents)
    results = {c.call_id: c.result for c in contents if isinstance(c, FunctionResultContent)}
    assert results == {"c_a": "sync a", "c_b": "sync b", "c_c": "async c", "c_d": "async d"}


async def test_a_tool_knows_the_run_and_call_it_serves(model: ModelServer, settings: ModelSettings) -> None:
    seen: dict[str, str | None] = {}

    @tool
    def pay(order: str) -> str:
        """Pays an order (a sync tool, in a worker thread)."""
        call = current_tool_call()
        seen[order] = None if call is None else call.idempotency_key
        return "paid"

    @tool
    async def send(order: str) -> str:
        """Sends an order (an async tool, on the loop)."""
        await asyncio.sleep(0.01)
        call = current_tool_call()
        seen[order] = None if call is None else f"{call.run_id}|{call.call_id}"
        return "sent"

    agent = Agent(name="shop", model=settings, tools=[pay, send])
    model.script(
        Reply.tool_calls([("pay", {"order": "o1"}, "call_1"), ("send", {"order": "o2"}, "call_2")]),
        Reply.tool_calls([("pay", {"order": "o3"}, "call_3")]),
        Reply.text("done"),
    )
    result = await agent.run(AgentState.new(), ask("run-7", "go"))
    assert result.text == "done"
    # Each call its own, side by side, in a thread or on the loop; the same key on any retry.
    assert seen == {"o1": "run-7:call_1", "o2": "run-7|call_2", "o3": "run-7:call_3"}
    assert current_tool_call() is None


async def test_tool_errors_become_results_the_model_sees(model: ModelServer, settings: ModelSettings) -> None:
    agent = Agent(name="weather", model=settings, tools=[get_weather])
    model.script(
        Reply.tool_calls(
            [
                ("get_weather", {"city": "Atlantis"}, "raises"),
                ("get_weather", {"town": "Paris"}, "wrong_args"),
                ("get_forecast", {}, "unknown"),
            ]
        ),
        Reply.malformed_tool_call("get_weather", '{"city": "Par', call_id="malformed"),
        Reply.text("Sorry."),
    )
    state = AgentState.new()
    result = await agent.run(state, ask("c1", "Weather?"))
    assert result.status == "succeeded" and result.text == "Sorry."
    tool_results = {
        m["tool_call_id"]: m["content"] for m in model.requests[2].body["messages"] if m["role"] == "tool"
    }
    assert tool_results["raises"] == "Error: tool 'get_weather' raised LookupError: no such city"
    assert tool_results["wrong_args"].startswith("Error: invalid arguments for tool 'get_weather'")
    assert (
        "city: Field required" in tool_results["wrong_args"]
        and "town: Extra inputs" in tool_results["wrong_args"]
    )
    assert tool_results["unknown"] == "Error: unknown tool 'get_forecast'; available: get_weather"
    assert tool_results["malformed"].startswith(
        "Error: cannot call 'get_weather': arguments are not valid JSON"
    )
    # The malformed call is stored losslessly and replayed verbatim.
    malformed_call = state.entries[1].messages[2].contents[0]
    assert isinstance(malformed_call, FunctionCallContent)
    assert malformed_call.arguments == {} and malformed_call.model_extra == {"rawArguments": '{"city": "Par'}
    stored = load_state(dump_state(state))
    assert "rawArguments" in dump_state(stored)
    replayed = [m for m in model.requests[2].body["messages"] if m.get("tool_calls")]
    assert replayed[-1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Par'
    error_result = state.entries[1].messages[1].contents[0]
    assert error_result.model_extra == {"isError": True}


async def test_tool_round_limit_fails_the_turn(model: ModelServer, settings: ModelSettings) -> None:
    agent = Agent(name="loop", model=settings, tools=[get_weather], max_tool_rounds=2)
    model.script(*[Reply.tool_call("get_weather", {"city": "Paris"}) for _ in range(3)])
    state = AgentState.new()
    result = await agent.run(state, ask("c1", "loop"))
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "max_tool_rounds_exceeded" and not result.error.retryable
    assert len(model.requests) == 3
    # Per request, the limit can be lowered.
    model.script(
        Reply.tool_call("get_weather", {"city": "Paris"}), Reply.tool_call("get_weather", {"city": "Oslo"})
    )
    result = await agent.run(state, ask("c2", "loop", options={"max_tool_rounds": 1}))
    assert result.error is not None and result.error.code == "max_tool_rounds_exceeded"


async def test_slow_tool_times_out_into_an_error_result(model: ModelServer, settings: ModelSettings) -> None:
    @tool
    async def slow() -> str:
        """Never finishes in time."""
        await asyncio.sleep(10)
        return "late"

    agent = Agent(name="slowpoke", model=settings, tools=[slow], tool_timeout=0.1)
    model.script(Reply.tool_call("slow", {}, call_id="s"), Reply.text("gave up"))
    result = await agent.run(AgentState.new(), ask("c1", "go"))
    assert result.text == "gave up"
    assert (
        model.requests[1].body["messages"][-1]["content"]
        == "Error: tool 'slow' did not finish within 0.1 seconds"
    )


async def test_structured_output_valid(model: ModelServer, settings: ModelSettings) -> None:
    agent = Agent(name="reviewer", model=settings, response_format=Verdict)
    model.script(Reply.json({"approved": True, "feedback": "Ship it."}))
    state = AgentState.new()
    result = await agent.run(state, ask("c1", "Review: hello world"))
    assert result.status == "succeeded"
    assert result.structured == {"approved": True, "feedback": "Ship it."}
    fmt = model.requests[0].response_format
    assert fmt is not None and fmt["type"] == "json_schema" and fmt["name"] == "Verdict"
    request_entry = state.entries[0]
    assert isinstance(request_entry, AgentRequest)
    assert request_entry.response_type == "json"
    assert request_entry.response_schema == Verdict.model_json_schema()


async def test_structured_output_invalid_fails_the_turn(model: ModelServer, settings: ModelSettings) -> None:
    agent = Agent(name="reviewer", model=settings, response_format=Verdict)
    model.script(Reply.text("Looks good to me!"), Reply.json({"approved": "maybe"}))
    state = AgentState.new()
    result = await agent.run(state, ask("c1", "Review"))
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "invalid_structured_output" and "not JSON" in result.error.message
    result = await agent.run(state, ask("c2", "Review"))
    assert result.error is not None and result.error.code == "invalid_structured_output"
    assert "feedback" in result.error.message
    assert [r.status for r in (state.find_run("c1"), state.find_run("c2")) if r] == ["failed", "failed"]
    response_entry = state.entries[1]
    assert isinstance(response_entry, AgentResponse)
    failure = response_entry.failure
    assert failure is not None and failure.code == "invalid_structured_output"


async def test_per_request_response_format_and_options(model: ModelServer, settings: ModelSettings) -> None:
    agent = Agent(name="helper", model=settings)
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    model.script(Reply.json({"n": 3}))
    result = await agent.run(
        AgentState.new(),
        ask("c1", "count", response_format=schema, options={"temperature": 0.1, "max_output_tokens": 50}),
    )
    assert result.structured == {"n": 3}
    body = model.requests[0].body
    assert body["response_format"]["json_schema"]["schema"] == schema
    assert body["temperature"] == 0.1 and body["max_completion_tokens"] == 50


async def test_reasoning_is_stored_but_not_replayed(model: ModelServer, settings: ModelSettings) -> None:
    agent = Agent(name="thinker", model=settings)
    model.script(Reply.reasoning("Let me think.", Reply.text("42")), Reply.text("ok"))
    state = AgentState.new()
    result = await agent.run(state, ask("c1", "Answer?"))
    assert result.text == "42"
    contents = state.entries[1].messages[0].contents
    assert any(isinstance(c, ReasoningContent) and c.text == "Let me think." for c in contents)
    await agent.run(state, ask("c2", "again"))
    assert "Let me think." not in json.dumps(model.requests[1].body)


async def test_failed_turns_are_recorded_but_never_replayed(
    model: ModelServer, settings: ModelSettings
) -> None:
    agent = Agent(name="helper", model=settings)
    model.script(Reply.error(400, "bad input", code="invalid_value"), Reply.text("fine"))
    state = AgentState.new()
    failed = await agent.run(state, ask("c1", "poison"))
    assert failed.status == "failed" and failed.text == ""
    assert failed.messages[-1]["contents"][0] == {
        "$type": "error",
        "message": "bad input",
        "errorCode": "invalid_value",
        "details": {"retryable": False, "status": 400},
    }
    await agent.run(state, ask("c2", "hello"))
    assert "poison" not in json.dumps(model.requests[1].body)


async def test_redelivered_request_returns_the_recorded_answer(
    model: ModelServer, settings: ModelSettings
) -> None:
    agent = Agent(name="helper", model=settings)
    model.script(Reply.text("once"))
    state = AgentState.new()
    first = await agent.run(state, ask("c1", "hi"))
    before = dump_state(state)
    again = await agent.run(load_state(before), ask("c1", "hi"))
    assert again == first
    assert len(model.requests) == 1 and dump_state(state) == before


async def test_failing_provider_fails_the_turn_and_keeps_state(
    model: ModelServer, settings: ModelSettings
) -> None:
    class Broken(ContextProvider):
        source_id = "broken"

        async def before_model(self, context: ProviderContext) -> None:
            context.state = {"touched": True}
            raise RuntimeError("provider bug")

    agent = Agent(name="helper", model=settings, context_providers=[Broken()])
    state = AgentState.new()
    state.state_bag["broken"] = {"kept": 1}
    result = await agent.run(state, ask("c1", "hi"))
    assert (
        result.error is not None
        and result.error.code == "provider_error"
        and "provider bug" in result.error.message
    )
    assert state.state_bag == {"broken": {"kept": 1}}
    assert model.requests == []


async def test_responses_api_local_mode(model: ModelServer, responses_settings: ModelSettings) -> None:
    agent = Agent(name="weather", instructions="Be brief.", model=responses_settings, tools=[get_weather])
    model.script(
        Reply.tool_call("get_weather", {"city": "Oslo"}, call_id="call_9"),
        Reply.text("Cold."),
        Reply.text("Bye."),
    )
    state = AgentState.new()
    result = await agent.run(state, ask("c1", "Oslo?"))
    assert result.text == "Cold." and result.usage is not None
    first, second = model.requests[0].body, model.requests[1].body
    assert model.requests[0].api == "responses"
    assert first["instructions"] == "Be brief." and first["store"] is False
    assert first["tools"][0]["name"] == "get_weather"
    assert second["input"][-2:] == [
        {
            "type": "function_call",
            "call_id": "call_9",
            "name": "get_weather",
            "arguments": '{"city": "Oslo"}',
        },
        {"type": "function_call_output", "call_id": "call_9", "output": '{"city": "Oslo", "temp": 18}'},
    ]
    assert state.service_thread_id is None
    await agent.run(state, ask("c2", "bye"))
    third = model.requests[2].body
    assert "previous_response_id" not in third and len(third["input"]) == 5


async def test_service_history_mode_chains_response_ids(
    model: ModelServer, responses_settings: ModelSettings
) -> None:
    agent = Agent(name="svc", model=responses_settings, tools=[get_weather], history_mode="service")
    model.script(
        Reply.text("Hi there."),
        Reply.tool_call("get_weather", {"city": "Rome"}, call_id="call_r"),
        Reply.text("Warm."),
    )
    state = AgentState.new()
    await agent.run(state, ask("c1", "hello"))
    first_id = state.service_thread_id
    assert first_id and model.requests[0].body["store"] is True
    assert "previous_response_id" not in model.requests[0].body
    state = load_state(dump_state(state))
    assert state.service_thread_id == first_id
    result = await agent.run(state, ask("c2", "Rome?"))
    assert result.text == "Warm."
    second, third = model.requests[1].body, model.requests[2].body
    assert second["previous_response_id"] == first_id
    assert second["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Rome?"}]}
    ]
    assert third["previous_response_id"] != first_id
    assert third["input"] == [
        {"type": "function_call_output", "call_id": "call_r", "output": '{"city": "Rome", "temp": 18}'}
    ]
    # The service saw the whole conversation through the chain.
    assert [m.role for m in model.requests[2].messages if m.role in ("user", "assistant")][:3] == [
        "user",
        "assistant",
        "user",
    ]
    assert state.service_thread_id not in (None, first_id)


async def test_service_mode_sends_what_a_host_added_after_the_tool_results(
    model: ModelServer, responses_settings: ModelSettings
) -> None:
    # A host may add messages to a turn between its steps (hosting's `steer`): with service-side
    # history, the next model call sends them with the tool results, after them.
    agent = Agent(name="svc", model=responses_settings, tools=[get_weather], history_mode="service")
    model.script(Reply.tool_call("get_weather", {"city": "Rome"}, call_id="call_r"), Reply.text("Warm."))
    state = AgentState.new()
    request = ask("c1", "Rome?")
    progress = await agent.run_step(state, request, None)
    assert isinstance(progress, TurnProgress)
    progress = await agent.run_step(state, request, progress)  # the tool step
    assert isinstance(progress, TurnProgress) and progress.messages[-1]["role"] == "tool"
    added = {"role": "user", "contents": [{"$type": "text", "text": "and Milan?"}]}
    progress.messages.append(added)
    result = await agent.run_step(state, request, progress)
    assert getattr(result, "text", None) == "Warm."
    assert model.requests[-1].body["input"] == [
        {"type": "function_call_output", "call_id": "call_r", "output": '{"city": "Rome", "temp": 18}'},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "and Milan?"}]},
    ]


async def test_service_mode_failed_turn_keeps_the_thread_id(
    model: ModelServer, responses_settings: ModelSettings
) -> None:
    agent = Agent(name="svc", model=responses_settings, history_mode="service")
    model.script(Reply.text("one"), Reply.error(400, "nope"))
    state = AgentState.new()
    await agent.run(state, ask("c1", "hi"))
    thread_id = state.service_thread_id
    result = await agent.run(state, ask("c2", "bad"))
    assert result.status == "failed" and state.service_thread_id == thread_id


@pytest.mark.parametrize("wire_api", ["chat", "responses"])
async def test_offline_server_drives_tools_deterministically(wire_api: Literal["chat", "responses"]) -> None:
    async with ModelServer(mode="offline") as offline:
        settings = ModelSettings(model="offline", base_url=offline.base_url, wire_api=wire_api)
        agent = Agent(name="weather", model=settings, tools=[get_weather])
        state = AgentState.new()
        result = await agent.run(state, ask("c1", 'call:get_weather {"city": "Lima"}'))
        assert result.status == "succeeded"
        assert "Lima" in result.text
        echo = await agent.run(state, ask("c2", "hello"))
        assert echo.text == "echo: hello"


async def test_structured_output_on_the_responses_api(
    model: ModelServer, responses_settings: ModelSettings
) -> None:
    agent = Agent(name="reviewer", model=responses_settings, response_format=Verdict)
    model.script(Reply.json({"approved": False, "feedback": "Shorter."}))
    result = await agent.run(AgentState.new(), ask("c1", "Review"))
    assert result.structured == {"approved": False, "feedback": "Shorter."}
    fmt = model.requests[0].body["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["name"] == "Verdict" and "schema" in fmt


def test_turns_on_many_event_loops_in_worker_threads(model: ModelServer, settings: ModelSettings) -> None:
    """Hosting runs one event loop per worker thread; clients must never cross loops."""
    agent = Agent(name="helper", model=settings, tools=[get_weather])
    model.handler = lambda request: (
        Reply.text("done")
        if request.messages[-1].role == "tool"
        else Reply.tool_call("get_weather", {"city": "Oslo"})
    )
    results: dict[int, list[str]] = {}
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        async def turns() -> list[str]:
            state = AgentState.new()
            out: list[str] = []
            for i in range(3):
                result = await agent.run(state, ask(f"t{n}-{i}", "weather?"))
                out.append(result.status)
            return out

        try:
            results[n] = asyncio.run(turns())
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == {n: ["succeeded"] * 3 for n in range(4)}
