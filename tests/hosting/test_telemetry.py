"""OpenTelemetry spans of a turn through the local host: the HTTP request, the entity operation (a
child across the durable hop), invoke_agent, each model call and each tool call, in one trace."""

from __future__ import annotations

import logging
import pathlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from hosting_support import ROOT, Api, make_agents
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agents import Agent, ModelSettings, RetryPolicy, tool
from agents.testing import ModelServer, Reply
from hosting import build_app

EXPORTER = InMemorySpanExporter()


class _WhileTesting(SimpleSpanProcessor):
    """Keeps spans only while a test of this module runs (the provider outlives the module)."""

    active = False

    def on_end(self, span: ReadableSpan) -> None:
        if self.active:
            super().on_end(span)


PROCESSOR = _WhileTesting(EXPORTER)


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.fixture(scope="module", autouse=True)
def provider() -> None:
    """One SDK provider for the process (OpenTelemetry allows setting it once), spans kept in memory."""
    current = trace.get_tracer_provider()
    if not isinstance(current, TracerProvider):
        current = TracerProvider()
        trace.set_tracer_provider(current)
    current.add_span_processor(PROCESSOR)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    EXPORTER.clear()
    PROCESSOR.active = True
    yield EXPORTER
    PROCESSOR.active = False
    EXPORTER.clear()


@pytest.fixture
async def weather_api(model: ModelServer, tmp_path: pathlib.Path) -> AsyncIterator[Api]:
    from devhost import LocalHost

    settings = ModelSettings(
        model="test-model", base_url=model.base_url, api_key="k", retry=RetryPolicy(max_attempts=1)
    )
    agent = Agent(name="weather", instructions="Use tools.", model=settings, tools=[get_weather])
    app = build_app([agent, *make_agents(model)])
    host = LocalHost(app, tmp_path / "devhost", project_dir=ROOT)
    await host.start()
    try:
        yield Api(app, host.client_binding())
    finally:
        await host.stop()


CARD = "4111-1111-1111-1111"


@tool
def charge(card: str) -> str:
    """Charge a card."""
    raise ValueError(f"card {card} was declined")


@pytest.fixture
async def card_api(model: ModelServer, tmp_path: pathlib.Path) -> AsyncIterator[Api]:
    from devhost import LocalHost

    settings = ModelSettings(
        model="test-model", base_url=model.base_url, api_key="k", retry=RetryPolicy(max_attempts=1)
    )
    app = build_app([Agent(name="shop", instructions="Charge cards.", model=settings, tools=[charge])])
    host = LocalHost(app, tmp_path / "devhost", project_dir=ROOT)
    await host.start()
    try:
        yield Api(app, host.client_binding())
    finally:
        await host.stop()


def _exported_text(span: ReadableSpan) -> str:
    """Everything of a span an exporter sends that could carry text."""
    events = [(e.name, dict(e.attributes or {})) for e in span.events]
    return repr((span.name, span.status.description, dict(span.attributes or {}), events))


def _one(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, f"{name}: {[s.name for s in spans]}"
    return found[0]


def _parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def test_a_turn_with_a_tool_call_is_one_trace(
    weather_api: Api, model: ModelServer, spans: InMemorySpanExporter
) -> None:
    model.script(Reply.tool_call("get_weather", {"city": "Paris"}, call_id="call-1"), Reply.text("Sunny."))
    caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    response = await weather_api.post(
        "/api/agents/weather/run",
        json_body={"message": "Weather in Paris?"},
        headers={"traceparent": f"00-{caller_trace}-00f067aa0ba902b7-01"},
    )
    assert response.status == 200, response.body
    finished = list(spans.get_finished_spans())
    http = _one(finished, "POST /api/agents/{agent}/run")
    entity = _one(finished, "dafx-weather run")
    tool_span = _one(finished, "execute_tool get_weather")
    chats = [s for s in finished if s.name == "chat test-model"]
    assert len(chats) == 2
    # Three steps (model call, tool call, model call): the `run` operation and two `step`s, each
    # with its entity span and its invoke_agent span.
    operations = [entity, *(s for s in finished if s.name == "dafx-weather step")]
    agents = sorted(
        (s for s in finished if s.name == "invoke_agent weather"), key=lambda s: s.start_time or 0
    )
    assert len(operations) == 3 and len(agents) == 3
    agent = agents[-1]  # the last step's: it carries the turn's usage

    # One trace, the caller's; parent links across the durable hop.
    tree = [http, *operations, *agents, tool_span, *chats]
    assert {format(s.context.trace_id, "032x") for s in tree} == {caller_trace}
    assert _parent_of(http) == 0x00F067AA0BA902B7
    assert {_parent_of(s) for s in operations} == {http.context.span_id}
    assert {_parent_of(a) for a in agents} == {s.context.span_id for s in operations}
    assert [_parent_of(s) for s in [chats[0], tool_span, chats[1]]] == [a.context.span_id for a in agents]
    assert [(a.attributes or {}).get("dafx.turn.step") for a in agents] == [0, 1, 2]
    assert (chats[0].start_time or 0) < (tool_span.start_time or 0) < (chats[1].start_time or 0)

    assert http.kind == SpanKind.SERVER and entity.kind == SpanKind.CONSUMER
    assert chats[0].kind == SpanKind.CLIENT
    assert http.attributes is not None and http.attributes["http.response.status_code"] == 200
    assert http.attributes["http.route"] == "/api/agents/{agent}/run"
    session = response.json()["session_id"]
    assert entity.attributes is not None and entity.attributes["gen_ai.conversation.id"] == session
    assert entity.attributes["dafx.correlation_id"] == response.json()["correlation_id"]
    assert agent.attributes is not None and agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.agent.name"] == "weather"
    usage = response.json()["response"]["usage"]
    assert agent.attributes["gen_ai.usage.input_tokens"] == usage["inputTokenCount"]

    first = chats[0].attributes
    assert first is not None
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.provider.name"] == "openai"
    assert first["gen_ai.request.model"] == "test-model"
    assert first["gen_ai.response.model"] == "test-model"
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert isinstance(first["gen_ai.usage.input_tokens"], int) and first["gen_ai.usage.input_tokens"] > 0
    assert isinstance(first["gen_ai.usage.output_tokens"], int)
    assert first["server.address"] == "127.0.0.1"
    assert chats[1].attributes is not None
    assert chats[1].attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert tool_span.attributes is not None
    assert tool_span.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool_span.attributes["gen_ai.tool.name"] == "get_weather"
    assert tool_span.attributes["gen_ai.tool.call.id"] == "call-1"
    # Content is off by default.
    recorded = [k for s in finished for k in (s.attributes or {})]
    assert not [k for k in recorded if k in ("gen_ai.input.messages", "gen_ai.output.messages")]
    assert "gen_ai.tool.call.arguments" not in recorded
    assert all(s.status.status_code != StatusCode.ERROR for s in finished)


async def test_message_content_is_recorded_only_when_enabled(
    weather_api: Api, model: ModelServer, spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    model.script(Reply.tool_call("get_weather", {"city": "Oslo"}, call_id="c9"), Reply.text("Cold."))
    response = await weather_api.post("/api/agents/weather/run", json_body={"message": "Oslo?"})
    assert response.status == 200, response.body
    finished = list(spans.get_finished_spans())
    first, second = [s.attributes or {} for s in finished if s.name == "chat test-model"]
    assert '"content": "Oslo?"' in str(first["gen_ai.input.messages"])
    assert '"name": "get_weather"' in str(first["gen_ai.output.messages"])
    assert "Use tools." in str(first["gen_ai.system_instructions"])
    assert '"tool_call_response"' in str(second["gen_ai.input.messages"])
    assert '"content": "Cold."' in str(second["gen_ai.output.messages"])
    tool_attributes = _one(finished, "execute_tool get_weather").attributes or {}
    assert tool_attributes["gen_ai.tool.call.arguments"] == '{"city": "Oslo"}'
    assert tool_attributes["gen_ai.tool.call.result"] == '"sunny in Oslo"'


async def test_a_failed_turn_sets_error_status_and_the_problem_code(
    weather_api: Api, model: ModelServer, spans: InMemorySpanExporter
) -> None:
    model.script(Reply.error(429, code="rate_limit_exceeded"))
    response = await weather_api.post("/api/agents/assistant/run", json_body={"message": "Hi"})
    assert response.status == 502, response.body
    code = response.json()["code"]
    finished = list(spans.get_finished_spans())
    http = _one(finished, "POST /api/agents/{agent}/run")
    entity = _one(finished, "dafx-assistant run")
    agent = _one(finished, "invoke_agent assistant")
    chat = _one(finished, "chat test-model")
    for span in (http, entity, agent, chat):
        assert span.status.status_code == StatusCode.ERROR, span.name
        assert span.attributes is not None and span.attributes["error.type"] == code, span.name
    assert entity.context.trace_id == http.context.trace_id


async def test_log_records_carry_the_trace_and_span_ids(
    weather_api: Api, model: ModelServer, spans: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    model.script(Reply.text("ok"))
    with caplog.at_level(logging.INFO):
        response = await weather_api.post("/api/agents/assistant/run", json_body={"message": "Hi"})
    assert response.status == 200
    finished = list(spans.get_finished_spans())
    entity = _one(finished, "dafx-assistant run")
    lines = [r for r in caplog.records if r.name == "hosting.entity" and "run" in r.getMessage()]
    assert len(lines) == 1  # still one line per entity operation
    record: Any = lines[0]
    assert record.otelTraceID == format(entity.context.trace_id, "032x")
    assert record.otelSpanID == format(entity.context.span_id, "016x")
    http_records = [r for r in caplog.records if r.name == "hosting.http"]
    signalled: Any = next(r for r in http_records if "signalled" in r.getMessage())
    http = _one(finished, "POST /api/agents/{agent}/run")
    assert signalled.otelSpanID == format(http.context.span_id, "016x")


async def test_an_orchestrations_turns_join_the_trace_of_the_request_that_started_it(
    api: Api, model: ModelServer, spans: InMemorySpanExporter
) -> None:
    import asyncio

    from agents.testing import ModelRequest

    def answer(request: ModelRequest) -> Reply:  # the writer drafts, the reviewer approves
        if request.response_format is not None:
            return Reply.json({"approved": True, "feedback": "Good."})
        return Reply.text("A draft about otters.")

    model.handler = answer
    started = await api.post("/api/workflows/review", json_body={"topic": "otters"})
    assert started.status == 202, started.body
    for _ in range(400):
        status = (await api.get(f"/api/workflows/review/{started.json()['instance_id']}")).json()
        if (status.get("custom_status") or {}).get("stage") == "awaiting_approval":
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError(status)
    finished = list(spans.get_finished_spans())
    start = _one(finished, "POST /api/workflows/review")
    turns = [_one(finished, "dafx-writer run"), _one(finished, "dafx-reviewer run")]
    assert {_parent_of(s) for s in turns} == {start.context.span_id}
    assert {s.context.trace_id for s in turns} == {start.context.trace_id}
    agents = [s for s in finished if s.name.startswith("invoke_agent ")]
    assert sorted(_parent_of(s) or 0 for s in agents) == sorted(s.context.span_id for s in turns)


def test_http_functions_declare_the_context_the_worker_passes(hosted_app: Any) -> None:
    import typing

    import azure.functions as func
    from hosting_support import all_functions

    http = [f for f in all_functions(hosted_app) if getattr(f.get_trigger(), "route", None) is not None]
    assert http
    for function in http:
        user = function.get_user_function()
        # The worker loads a function only if `context` is annotated exactly azure.functions.Context.
        assert typing.get_type_hints(user)["context"] is func.Context, function.get_function_name()


async def test_with_capture_off_no_message_reaches_a_span(
    card_api: Api, model: ModelServer, spans: InMemorySpanExporter
) -> None:
    # A tool error's message carries the model's argument; a model error's message may quote the
    # prompt. Only error types go out.
    model.script(Reply.tool_call("charge", {"card": CARD}, call_id="c1"),
                 Reply.error(400, f"the prompt mentions {CARD}", code="invalid_request_error"))
    response = await card_api.post("/api/agents/shop/run", json_body={"message": "Charge my card"})
    assert response.status >= 400, response.body
    finished = list(spans.get_finished_spans())
    tool_span = _one(finished, "execute_tool charge")
    assert tool_span.status.status_code == StatusCode.ERROR
    assert tool_span.attributes is not None and tool_span.attributes["error.type"] == "tool_error"
    assert tool_span.attributes["exception.type"] == "ValueError"
    chats = [s for s in finished if s.name == "chat test-model"]
    assert [s.status.status_code for s in chats] == [StatusCode.UNSET, StatusCode.ERROR]
    assert len(finished) >= 6
    for span in finished:
        assert CARD not in _exported_text(span), span.name
        assert span.status.description is None, (span.name, span.status.description)


async def test_with_capture_on_a_failure_keeps_its_message(
    card_api: Api, model: ModelServer, spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    model.script(Reply.tool_call("charge", {"card": CARD}, call_id="c1"), Reply.text("Declined."))
    response = await card_api.post("/api/agents/shop/run", json_body={"message": "Charge my card"})
    assert response.status == 200, response.body
    tool_span = _one(list(spans.get_finished_spans()), "execute_tool charge")
    assert CARD in (tool_span.status.description or ""), tool_span.status


async def test_an_mcp_tools_span_names_its_server(
    model: ModelServer, spans: InMemorySpanExporter, tmp_path: pathlib.Path
) -> None:
    from mcp_servers_support import McpProcess

    from agents import InputMessage, MCPServer, TurnRequest
    from agents.mcp import forget_listings
    from state import AgentState

    server = McpProcess("own", tmp_path / "seen.jsonl").start()
    forget_listings()
    try:
        settings = ModelSettings(model="m", base_url=model.base_url, retry=RetryPolicy(max_attempts=1))
        agent = Agent(name="traced", model=settings, tools=[MCPServer(server.url, name="own")])
        model.script(Reply.tool_call("shout", {"text": "hi"}), Reply.text("done"))
        request = TurnRequest(correlation_id="mcp-span", messages=[InputMessage("user", "go")])
        assert (await agent.run(AgentState(), request)).status == "succeeded"
    finally:
        server.stop()
        forget_listings()
    attributes = _one(list(spans.get_finished_spans()), "execute_tool shout").attributes or {}
    assert attributes["gen_ai.tool.type"] == "extension"
    assert attributes["gen_ai.tool.server.name"] == "own"
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["server.address"] == "127.0.0.1" and attributes["server.port"] == server.port
