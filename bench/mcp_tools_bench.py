"""What a tool step costs when its tool is an MCP server's, side by side with a Python tool's, and
turns per second when every turn makes one MCP call.

* **Tool step**: one `Agent.run_step` that runs the step of one tool call (the model's answer
  asking for it is already in the progress, so no model call is in it), repeated from the same
  progress: a Python tool (`current_time`, in this process) against the same tool on the example
  MCP server (`examples.local_services`, in a process of its own on loopback, streamable HTTP,
  its tool list cached after the first turn). p50 / p99 of each and of the difference.
* **Turns per second**: 20 sessions side by side, each running turns of two model calls (the first
  asks for the MCP tool, the second answers) against a local scripted model that answers at once,
  for `--seconds`; every turn makes one MCP call.

Usage: .venv/bin/python bench/mcp_tools_bench.py [--steps 300] [--seconds 20] [--sessions 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DURABLE_AGENTS_ALLOW_MODEL_REQUESTS", "0")

from agents import Agent, InputMessage, MCPServer, ModelSettings, RetryPolicy, TurnProgress, TurnRequest, tool  # noqa: E402
from agents.testing import ModelRequest, ModelServer, Reply  # noqa: E402
from state import AgentState  # noqa: E402

SERVER = r"""
import asyncio, socket, sys
sys.path.insert(0, sys.argv[1])
import uvicorn
from examples.local_services import example_tools_app
sock = socket.socket(); sock.bind(("127.0.0.1", 0))
print(sock.getsockname()[1], flush=True)
asyncio.run(uvicorn.Server(uvicorn.Config(example_tools_app(), log_level="warning")).serve(sockets=[sock]))
"""


@tool
def current_time(timezone: str = "UTC") -> str:
    """The current date and time in an IANA time zone."""
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    return datetime.now(UTC).astimezone(ZoneInfo(timezone)).isoformat(timespec="seconds")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def step_times(agent: Agent, model: ModelServer, steps: int) -> list[float]:
    model.handler = lambda request: Reply.tool_call(
        "current_time", {"timezone": "Europe/Paris"}, call_id="c-1"
    )
    request = TurnRequest(correlation_id="bench", messages=[InputMessage("user", "time?")])
    first = await agent.run_step(AgentState(), request, None)
    assert isinstance(first, TurnProgress)
    await agent.run_step(AgentState(), request, first)  # warm: the listing, the connections
    times = []
    for _ in range(steps):
        started = time.perf_counter()
        done = await agent.run_step(AgentState(), request, first)
        times.append(time.perf_counter() - started)
        assert isinstance(done, TurnProgress) and not done.messages[-1]["contents"][0].get("isError")
    return times


async def throughput(agent: Agent, model: ModelServer, sessions: int, seconds: float) -> tuple[int, int]:
    def handler(request: ModelRequest) -> Reply:
        if any(m.role == "tool" for m in request.messages[-1:]):
            return Reply.text("done")
        return Reply.tool_call("current_time", {"timezone": "UTC"})

    model.handler = handler
    deadline = time.monotonic() + seconds
    counts = {"ok": 0, "failed": 0}

    async def session(index: int) -> None:
        state, turn = AgentState(), 0
        while time.monotonic() < deadline:
            turn += 1
            request = TurnRequest(
                correlation_id=f"s{index}-t{turn}", messages=[InputMessage("user", "time?")]
            )
            result = await agent.run(state, request)
            counts["ok" if result.status == "succeeded" else "failed"] += 1
            state = AgentState()  # a fresh session each turn: the history's cost is not measured

    await asyncio.gather(*(session(i) for i in range(sessions)))
    return counts["ok"], counts["failed"]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--sessions", type=int, default=20)
    args = parser.parse_args()
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(ROOT)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = f"http://127.0.0.1:{int(proc.stdout.readline())}/mcp"
        with ModelServer(mode="scripted") as model:
            settings = ModelSettings(
                model="m", base_url=model.base_url, api_key="k", retry=RetryPolicy(max_attempts=1)
            )
            python_agent = Agent(name="py", model=settings, tools=[current_time])
            mcp_agent = Agent(name="mcp", model=settings, tools=[MCPServer(url, name="example-tools")])
            py, mcp = [], []
            for _ in range(3):  # interleaved blocks: the machine's drift falls on both alike
                py += await step_times(python_agent, model, args.steps // 3)
                mcp += await step_times(mcp_agent, model, args.steps // 3)
            print(
                f"tool step, Python tool: p50 {pct(py, 0.5) * 1e3:.2f} ms  p99 {pct(py, 0.99) * 1e3:.2f} ms"
            )
            print(
                f"tool step, MCP tool:    p50 {pct(mcp, 0.5) * 1e3:.2f} ms  p99 {pct(mcp, 0.99) * 1e3:.2f} ms"
            )
            print(
                f"MCP overhead: p50 +{(pct(mcp, 0.5) - pct(py, 0.5)) * 1e3:.2f} ms  "
                f"p99 +{(pct(mcp, 0.99) - pct(py, 0.99)) * 1e3:.2f} ms  "
                f"(mean {statistics.mean(mcp) * 1e3:.2f} ms)"
            )
            ok, failed = await throughput(mcp_agent, model, args.sessions, args.seconds)
            print(
                f"{args.sessions} sessions, one MCP call per turn: {ok / args.seconds:.1f} turns/s "
                f"({ok} turns, {failed} failed, {args.seconds:g} s)"
            )
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    asyncio.run(main())
