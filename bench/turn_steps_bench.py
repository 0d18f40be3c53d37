"""What recording a turn step by step costs: the checkpoint of one step, and a 1-step turn's
latency side by side with the code before steps, in one run.

* **Checkpoint per step**: what a step adds besides its model call or tools, on a session of N
  entries: the step's operation loads the state, reads the turn in progress, and saves the state
  with the new progress (the host then commits it with the step's signal). Measured in this
  process with the `state` package and `hosting.stored.ActiveTurn` (progress: one model answer
  with a tool call and its result, as after the first two steps of a tool turn).
* **1-step turn p50**: a `run` operation of a turn without tools (one model call) through the
  app's entity function and the Durable JSON batch protocol, in-process (the SDK's batch handler,
  `hosting.build_app`), its model a local `ModelServer` answering at once, on a session that
  grows from 10 entries. Run in a child process per code tree, alternating rounds (the machine's
  speed drifts): this tree and `--base` (a checkout of the code before steps).

Usage: .venv/bin/python bench/turn_steps_bench.py --base /work/wt-turns-base [--turns 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DURABLE_AGENTS_ALLOW_MODEL_REQUESTS", "0")

# The child's code: only what both trees have (build_app, the agents, the SDK's batch handler).
PROBE = r"""
import json, os, statistics, sys, time, uuid
sys.path.insert(0, os.getcwd())
os.environ["DURABLE_AGENTS_ALLOW_MODEL_REQUESTS"] = "0"
os.environ["PYTHON_ENABLE_INIT_INDEXING"] = "1"
os.environ["DURABLE_AGENTS_STREAM_PATH"] = os.path.join(sys.argv[2], "streams.db")
os.environ["DURABLE_AGENTS_HISTORY_DIR"] = os.path.join(sys.argv[2], "history")
from agents import Agent, ModelSettings, RetryPolicy
from agents.testing import ModelServer, Reply
from devhost import list_functions
from hosting import build_app

turns = int(sys.argv[1])
with ModelServer(mode="scripted") as server:
    server.handler = lambda request: Reply.text("ok")
    settings = ModelSettings(
        model="m", base_url=server.base_url, api_key="k", retry=RetryPolicy(max_attempts=1)
    )
    app = build_app([Agent(name="bench", instructions="Be brief.", model=settings)], console=False)
    handle = {f.get_function_name(): f for f in list_functions(app)}["dafx-bench"].get_user_function()
    state = None
    def turn(i):
        global state
        op = {"correlationId": uuid.uuid4().hex, "messages": [{"role": "user", "text": f"hello {i}"}]}
        operation = {"id": str(i), "name": "run", "signal": True, "input": json.dumps(json.dumps(op))}
        request = {"self": {"name": "dafx-bench", "key": "s"}, "exists": state is not None,
                   "state": state, "batch": [operation]}
        started = time.perf_counter()
        out = json.loads(handle(json.dumps(request)))
        elapsed = time.perf_counter() - started
        assert json.loads(out["results"][0]["result"])["status"] == "succeeded", out
        state = out["entityState"]
        return elapsed
    for i in range(5):
        turn(i)  # seed 10 entries, warm up
    times = [turn(i) for i in range(turns)]
p90 = statistics.quantiles(times, n=10)[-1]
print(json.dumps({"p50_ms": statistics.median(times) * 1000, "p90_ms": p90 * 1000}))
"""


def one_step_turns(tree: pathlib.Path, turns: int, scratch: pathlib.Path) -> dict[str, float]:
    scratch.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_OPENAI_"))}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(turns), str(scratch)],
        cwd=tree, env=env, capture_output=True, text=True, check=True,
    )
    figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def checkpoint_ms(entries: int, repeats: int = 200) -> float:
    """p50 of one step's checkpoint (load, read the turn in progress, save) at `entries` entries."""
    from agents import InputMessage, TurnProgress, TurnRequest
    from hosting.stored import ActiveTurn, active_turn
    from state import AgentRequest, AgentResponse, ChatMessage, TextContent, dump_state, load_state

    state = load_state(dump_state(_history(entries, AgentRequest, AgentResponse, ChatMessage, TextContent)))
    request = TurnRequest(correlation_id="bench", messages=[InputMessage("user", "what is the weather?")])
    progress = TurnProgress(
        steps=2,
        messages=[
            {"role": "assistant", "contents": [
                {"$type": "functionCall", "callId": "c1", "name": "weather", "arguments": {"city": "Oslo"}},
            ]},
            {"role": "tool", "contents": [{"$type": "functionResult", "callId": "c1", "result": {"t": 21}}]},
        ],
        rounds=1,
    )
    state.active_turn = ActiveTurn(request, progress, "2026-11-26T00:00:00+00:00", 7).to_json()
    text = dump_state(state)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        loaded = load_state(text)
        turn = active_turn(loaded)
        assert turn is not None
        loaded.active_turn = ActiveTurn(turn.request, turn.progress, turn.started_at, 9).to_json()
        dump_state(loaded)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def _history(entries: int, request_cls, response_cls, message_cls, text_cls):  # type: ignore[no-untyped-def]
    from state import AgentState

    state = AgentState.new()
    for i in range(entries // 2):
        cid = f"c{i}"
        text = f"message {i} " + "lorem ipsum dolor sit amet " * 20
        state.append_request(request_cls(
            correlation_id=cid, created_at="2026-11-26T00:00:00+00:00",
            messages=[message_cls(role="user", contents=[text_cls(text=text)])],
        ))
        state.append_response(response_cls(
            correlation_id=cid, created_at="2026-11-26T00:00:01+00:00",
            messages=[message_cls(role="assistant", contents=[text_cls(text=text)])],
        ))
    return state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=pathlib.Path, required=True, help="the code before steps")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print("checkpoint per step (load + read the turn in progress + save), p50 of 200:")
    for entries in (10, 100, 1000):
        print(f"  {entries:>5} entries: {checkpoint_ms(entries):.3f} ms")
    print(f"1-step turn through the entity function, p50 / p90 of {args.turns} turns, per round:")
    scratch = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"turn-steps-bench-{os.getpid()}"
    results: dict[str, list[dict[str, float]]] = {"base": [], "steps": []}
    for r in range(args.rounds):
        order = (("base", args.base), ("steps", ROOT))
        for name, tree in order if r % 2 == 0 else order[::-1]:
            figures = one_step_turns(tree, args.turns, scratch / f"{name}-{r}")
            results[name].append(figures)
            p50, p90 = figures["p50_ms"], figures["p90_ms"]
            print(f"  round {r + 1} {name:>5}: p50 {p50:.2f} ms, p90 {p90:.2f} ms")
    base = statistics.median(f["p50_ms"] for f in results["base"])
    steps = statistics.median(f["p50_ms"] for f in results["steps"])
    change = (steps / base - 1) * 100
    print(f"median of the rounds' p50: before steps {base:.2f} ms, with steps {steps:.2f} ms", end=" ")
    print(f"({change:+.1f}%)")


if __name__ == "__main__":
    main()
