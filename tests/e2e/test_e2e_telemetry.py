"""A turn's trace leaves `python -m devhost` over OTLP/HTTP: a real receiver on a free port decodes
the protobuf `ExportTraceServiceRequest`s the exporter sends (configured only through
`OTEL_EXPORTER_OTLP_ENDPOINT`), and the spans form one tree across the durable hop."""

from __future__ import annotations

import asyncio
import gzip
import pathlib
import socket
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import aiohttp
import pytest
from aiohttp import web
from e2e_support import FUNCTION_KEY, HostProcess, free_port
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from agents.testing import ModelServer, Reply


def _value(value: AnyValue) -> object:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    return getattr(value, kind) if kind else None


@dataclass
class Received:
    """One span as the receiver decoded it."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    status: int
    attributes: dict[str, object]
    service: object


@dataclass
class OtlpReceiver:
    """An OTLP/HTTP trace receiver: `POST /v1/traces` with a protobuf body (gzip or not)."""

    port: int = 0
    spans: list[Received] = field(default_factory=list)
    requests: int = 0

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        assert request.headers.get("Content-Type") == "application/x-protobuf"
        export = ExportTraceServiceRequest.FromString(body)
        self.requests += 1
        for resource_spans in export.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append(
                        Received(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            kind=span.kind,
                            status=span.status.code,
                            attributes={a.key: _value(a.value) for a in span.attributes},
                            service=resource.get("service.name"),
                        )
                    )
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(), content_type="application/x-protobuf"
        )

    def named(self, name: str) -> list[Received]:
        return [s for s in self.spans if s.name == name]


@pytest.fixture
async def receiver() -> AsyncIterator[OtlpReceiver]:
    found = OtlpReceiver(port=free_port())
    app = web.Application()
    app.router.add_post("/v1/traces", found.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", found.port).start()
    try:
        yield found
    finally:
        await runner.cleanup()


@pytest.fixture
def traced_host(
    receiver: OtlpReceiver, model_server: ModelServer, tmp_path: pathlib.Path
) -> Iterator[HostProcess]:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.port}",
        "OTEL_SERVICE_NAME": "e2e-agents",
        "OTEL_BSP_SCHEDULE_DELAY": "50",  # export within 50 ms instead of 5 s
    }
    host = HostProcess(tmp_path / "data", model_server.base_url, tmp_path / "host.log", extra_env=env)
    host.start()
    try:
        yield host
    finally:
        host.stop()


async def _wait_for(receiver: OtlpReceiver, names: list[str], chats: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(receiver.named(n) for n in names) and len(receiver.named("chat e2e-model")) >= chats:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"spans received: {[s.name for s in receiver.spans]}")


async def test_a_turn_with_a_tool_call_reaches_an_otlp_receiver_as_one_tree(
    traced_host: HostProcess, receiver: OtlpReceiver, model: ModelServer
) -> None:
    model.script(Reply.tool_call("get_weather", {"city": "Paris"}, call_id="call-7"), Reply.text("Sunny."))
    caller_trace, caller_span = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    headers = {"x-functions-key": FUNCTION_KEY, "traceparent": f"00-{caller_trace}-{caller_span}-01"}
    async with aiohttp.ClientSession() as http, http.post(
        f"{traced_host.url}/api/agents/concierge/run", json={"message": "Weather in Paris?"}, headers=headers
    ) as response:
        assert response.status == 200, await response.text()
        answer = await response.json()
    names = ["POST /api/agents/{agent}/run", "dafx-concierge run", "dafx-concierge step",
             "invoke_agent concierge", "execute_tool get_weather"]
    await _wait_for(receiver, names, chats=2)
    for _ in range(100):  # the last step's spans may come in a later export than the first's
        steps, agents = receiver.named("dafx-concierge step"), receiver.named("invoke_agent concierge")
        if len(steps) >= 2 and len(agents) >= 3:
            break
        await asyncio.sleep(0.05)
    http_span, entity, _, _, tool_span = (receiver.named(n)[0] for n in names)
    # The turn's three steps (model call, tool call, model call) are three operations: `run`,
    # then two `step`s, each with its span under the request's, and an invoke_agent span each.
    operations = [entity, *receiver.named("dafx-concierge step")]
    agents = receiver.named("invoke_agent concierge")
    chats = receiver.named("chat e2e-model")
    tree = [http_span, *operations, *agents, tool_span, *chats]

    assert len(operations) == 3 and len(agents) == 3
    assert {s.trace_id for s in tree} == {caller_trace}
    assert http_span.parent_id == caller_span
    assert {s.parent_id for s in operations} == {http_span.span_id}  # across the durable hop
    assert {a.parent_id for a in agents} == {s.span_id for s in operations}
    assert {s.parent_id for s in [tool_span, *chats]} == {a.span_id for a in agents}
    assert {a.attributes["dafx.turn.step"] for a in agents} == {0, 1, 2}
    assert {s.service for s in tree} == {"e2e-agents"}
    assert http_span.kind == Span.SPAN_KIND_SERVER
    assert {s.kind for s in operations} == {Span.SPAN_KIND_CONSUMER}
    assert {s.kind for s in chats} == {Span.SPAN_KIND_CLIENT}
    assert all(s.status != Status.STATUS_CODE_ERROR for s in tree)
    assert entity.attributes["gen_ai.conversation.id"] == answer["session_id"]
    assert tool_span.attributes["gen_ai.tool.call.id"] == "call-7"
    assert {c.attributes["gen_ai.response.finish_reasons"] for c in chats} == {("tool_calls",), ("stop",)}
    assert all(isinstance(c.attributes["gen_ai.usage.input_tokens"], int) for c in chats)
    assert "gen_ai.input.messages" not in chats[0].attributes

    # The host's one line per request and per entity operation name the trace. The request's line
    # is written once its answer has been sent: wait for it rather than race it.
    deadline = time.monotonic() + 10
    while "POST /api/agents/concierge/run -> 200" not in (log := traced_host.log()):
        assert time.monotonic() < deadline, log[-3000:]
        await asyncio.sleep(0.05)
    request_line = next(line for line in log.splitlines() if "POST /api/agents/concierge/run ->" in line)
    assert request_line.endswith(f"trace={caller_trace}")
    entity_line = next(line for line in log.splitlines() if "entity dafx-concierge key=" in line)
    assert entity_line.endswith(f"trace={caller_trace}")
    app_line = next(line for line in log.splitlines() if "run concierge session" in line)
    assert f"trace={caller_trace} span={http_span.span_id}" in app_line


async def test_without_a_caller_trace_the_host_starts_one_per_request(
    traced_host: HostProcess, receiver: OtlpReceiver, model: ModelServer
) -> None:
    model.script(Reply.error(500, code="server_error"), Reply.error(500), Reply.error(500), Reply.error(500))
    async with aiohttp.ClientSession() as http, http.post(
        f"{traced_host.url}/api/agents/assistant/run",
        json={"message": "Hi"},
        headers={"x-functions-key": FUNCTION_KEY},
    ) as response:
        assert response.status == 502
        problem = await response.json()
    await _wait_for(
        receiver, ["POST /api/agents/{agent}/run", "dafx-assistant run", "invoke_agent assistant"], chats=1
    )
    http_span = receiver.named("POST /api/agents/{agent}/run")[0]
    entity = receiver.named("dafx-assistant run")[0]
    agent = receiver.named("invoke_agent assistant")[0]
    assert entity.trace_id == http_span.trace_id == agent.trace_id
    assert entity.parent_id == http_span.span_id
    for span in (http_span, entity, agent):
        assert span.status == Status.STATUS_CODE_ERROR, span.name
        assert span.attributes["error.type"] == problem["code"], span.name
    lines = traced_host.log().splitlines()
    request_line = next(line for line in lines if "POST /api/agents/assistant/run ->" in line)
    assert request_line.endswith(f"trace={http_span.trace_id}")


@pytest.fixture
def silent_collector() -> Iterator[int]:
    """A port that accepts connections and never answers (a hung collector)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    accepted: list[socket.socket] = []
    stop = False

    def accept() -> None:
        server.settimeout(0.2)
        while not stop:
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop = True
        thread.join(5)
        for connection in accepted:
            connection.close()
        server.close()


def test_a_hung_collector_does_not_hold_the_shutdown(
    silent_collector: int, model_server: ModelServer, tmp_path: pathlib.Path
) -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{silent_collector}",
        "OTEL_BSP_SCHEDULE_DELAY": "600000",  # the spans wait for the final flush at shutdown
    }
    host = HostProcess(tmp_path / "data", model_server.base_url, tmp_path / "host.log", extra_env=env)
    host.start()
    try:
        with urllib.request.urlopen(f"{host.url}/api/health", timeout=10) as answer:
            assert answer.status == 200  # a traced request: a span waits in the exporter's queue
        assert host.proc is not None
        started = time.monotonic()
        host.proc.terminate()
        host.proc.wait(30)
        took = time.monotonic() - started
    finally:
        host.kill()
    # The unbounded flush took the exporter's 10 s timeout and more; the host's grace is 3 s
    # for in-flight requests, and the flush is bounded well inside a worker's grace time.
    assert took < 6, f"SIGTERM took {took:.1f}s:\n{host.log()[-2000:]}"
