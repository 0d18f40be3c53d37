"""What OpenTelemetry costs per turn: telemetry off, and on with spans exported over OTLP/HTTP.

1. **Through the real host** (`python -m devhost`, the project's `function_app.py`): turns of the
   `concierge` agent that each call one tool (6 spans: HTTP request, entity operation,
   invoke_agent, 2 chat, execute_tool), each in a new session, one at a time, against a model
   that answers at once. Configurations, alternated over several rounds on fresh hosts:
   * ``off``: no exporter variable set (the shipped default; no SDK is even imported);
   * ``otlp``: `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at an OTLP/HTTP receiver in this process
     (it decodes every export request, so the spans really travel);
   * ``otlp+content``: the same with message content captured.
2. **In process, the span code alone**: the six wrappers a tool-calling turn goes through, around
   work that does nothing, with the API's no-op tracer (``off``) and with an SDK provider whose
   batch processor exports to nowhere (``sdk``): the CPU time telemetry adds per turn.

Usage: .venv/bin/python bench/telemetry_bench.py [--turns 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DURABLE_AGENTS_ALLOW_MODEL_REQUESTS", "0")
os.environ.setdefault("PYTHON_ENABLE_INIT_INDEXING", "1")  # build_app needs it, as Azure does

import aiohttp  # noqa: E402
from aiohttp import web  # noqa: E402
from host_bench import Host, _free_port  # noqa: E402

from agents.testing import ModelRequest, ModelServer, Reply  # noqa: E402

RUN = "/api/agents/concierge/run"


class Receiver:
    """An OTLP/HTTP trace receiver that decodes and counts what it gets."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        self.decode = ExportTraceServiceRequest.FromString
        self.spans = 0
        self.port = _free_port()
        self.runner: web.AppRunner | None = None

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        export = self.decode(body)
        self.spans += sum(len(s.spans) for r in export.resource_spans for s in r.scope_spans)
        return web.Response(body=b"", content_type="application/x-protobuf")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/traces", self.handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()


def _tool_turns(request: ModelRequest) -> Reply:
    if request.messages and request.messages[-1].role == "tool":
        return Reply.text("It is sunny.")
    return Reply.tool_call("get_weather", {"city": "Paris"})


async def _turns(url: str, count: int) -> list[float]:
    took: list[float] = []
    async with aiohttp.ClientSession() as http:
        for _ in range(count):
            started = time.perf_counter()
            async with http.post(url + RUN, json={"message": "Weather in Paris?"}) as response:
                await response.read()
                assert response.status == 200, response.status
            took.append((time.perf_counter() - started) * 1000)
    return took


async def host_rounds(turns: int, rounds: int) -> None:
    receiver = Receiver()
    await receiver.start()
    configs = {
        "off": {},
        "otlp": {
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.port}",
            "OTEL_BSP_SCHEDULE_DELAY": "200",
        },
    }
    content = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    configs["otlp+content"] = {**configs["otlp"], **content}
    results: dict[str, list[float]] = {name: [] for name in configs}
    with ModelServer() as model, tempfile.TemporaryDirectory() as tmp:
        model.handler = _tool_turns
        for round_ in range(rounds):
            for name, env in configs.items():
                work = pathlib.Path(tmp) / f"{name}-{round_}"
                work.mkdir()
                host = Host(work / "data", model.base_url, work / "host.log", extra_env=env)
                host.start()
                try:
                    await _turns(host.url, 10)  # warm-up: imports, connections, first entity
                    results[name].extend(await _turns(host.url, turns))
                finally:
                    host.stop()
    assert receiver.runner is not None
    await receiver.runner.cleanup()
    print(f"Through the host: {rounds} rounds x {turns} tool-calling turns per configuration (ms per turn)")
    print(f"{'config':<14}{'mean':>8}{'p50':>8}{'p90':>8}{'p99':>8}   p50 against off")
    base = statistics.median(results["off"])
    for name, took in results.items():
        took.sort()
        mean = statistics.mean(took)
        p50 = took[len(took) // 2]
        extra = "" if name == "off" else f"   {p50 - base:+.2f} ms ({(p50 / base - 1) * 100:+.1f}%)"
        print(
            f"{name:<14}{mean:>8.2f}{took[len(took) // 2]:>8.2f}{took[int(len(took) * 0.9)]:>8.2f}"
            f"{took[int(len(took) * 0.99)]:>8.2f}{extra}"
        )
    print(f"spans received by the OTLP receiver: {receiver.spans}")


IN_PROCESS = r'''
import asyncio, json, os, sys, time
sys.path.insert(0, sys.argv[1])
from agents import Agent, InputMessage, TurnRequest
from agents._telemetry import execute_tool, invoke_agent, model_call
from agents._settings import Endpoint
from hosting._telemetry import traced_entity_run, traced_http
from state import FunctionCallContent, FunctionResultContent
import azure.functions as func
if sys.argv[2] == "sdk":
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    class Nowhere(SpanExporter):
        def export(self, spans): return SpanExportResult.SUCCESS
    provider = TracerProvider(); provider.add_span_processor(BatchSpanProcessor(Nowhere()))
    trace.set_tracer_provider(provider)
agent = Agent(name="concierge", instructions="x")
parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
request = TurnRequest(correlation_id="c", messages=[InputMessage("user", "hi")],
                      trace_context={"traceparent": parent})
endpoint = Endpoint(provider="openai", model="m", base_url="http://127.0.0.1:1/v1")
body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
call = FunctionCallContent(call_id="1", name="get_weather", arguments={"city": "Paris"})
result = FunctionResultContent(call_id="1", result="sunny")
req = func.HttpRequest("POST", "http://h/api/agents/concierge/run", headers={},
                       route_params={"agent": "concierge"}, body=b"")
ok = func.HttpResponse("{}", status_code=200)
async def nothing(value): return value
class Done:
    usage = None
    error = None
async def agent_turn():
    await model_call(endpoint, "/chat/completions", body, nothing(None))
    await execute_tool(call, None, nothing(result))
    await model_call(endpoint, "/chat/completions", body, nothing(None))
    return Done()
async def http_turn(req, client):
    return ok
handler = traced_http("/api/agents/{agent}/run", http_turn)
operation = request.to_json()
async def bare_turn():  # the same work without any span code: the baseline
    await http_turn(req, None)
    (lambda: {"status": "succeeded"})()
    await nothing(None); await nothing(result); await nothing(None)
async def traced_turn():
    await handler(req, None, None)  # the HTTP request's span
    traced_entity_run("dafx-concierge", "concierge", "s", operation, lambda: {"status": "succeeded"})
    await invoke_agent(agent, request, agent_turn())  # invoke_agent, 2 chat, execute_tool
turn = bare_turn if sys.argv[2] == "bare" else traced_turn
async def main(n):
    for _ in range(200): await turn()
    started = time.perf_counter()
    for _ in range(n): await turn()
    return (time.perf_counter() - started) / n * 1e6
print(json.dumps(asyncio.run(main(int(sys.argv[3])))))
'''


def in_process(runs: int) -> None:
    print("In process, the span code of one tool-calling turn (6 spans) around no-op work (us per turn;")
    print("bare = the same work without span code, off = no SDK, sdk = SDK + batch processor)")
    for mode in ("bare", "off", "sdk"):
        figures = []
        for _ in range(3):
            done = subprocess.run(
                [sys.executable, "-c", IN_PROCESS, str(ROOT), mode, str(runs)],
                capture_output=True, text=True, check=True, env={**os.environ, "OTEL_SDK_DISABLED": ""},
            )
            figures.append(float(done.stdout.strip().splitlines()[-1]))
        print(f"{mode:<5} best {min(figures):7.1f} us   median {statistics.median(figures):7.1f} us")
        if mode == "bare":
            bare = min(figures)
        else:
            print(f"      telemetry adds {min(figures) - bare:.1f} us per turn (best against best)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    in_process(3000)
    asyncio.run(host_rounds(args.turns, args.rounds))


if __name__ == "__main__":
    main()
